#!/usr/bin/env bash
# pagoda-bench-mesh's cases over two processes with the ranks in two network namespaces (a veth
# pair, tests/mesh/netns_lib.sh) that share /dev/shm: the shared-memory path runs as on one
# machine, and the Gloo path crosses the veth link instead of loopback. Rank 0 prints the JSON.
#
#   bench_mesh_netns.sh PAGODA_BENCH_MESH [its options: --quick, --repeats N, ...]
set -u -o pipefail
bench=$1
shift
. "$(dirname "$0")/../mesh/netns_lib.sh"
netns_make_machines
port=$((20000 + $$ % 20000))
ip netns exec "${ns[1]}" "$bench" --processes --world-rank 1 --rendezvous "${addr[0]}:$port" "$@" &
pids+=($!)
ip netns exec "${ns[0]}" "$bench" --processes --world-rank 0 --rendezvous "${addr[0]}:$port" "$@" > "$work/out.jsonl"
status=$?
wait "${pids[0]}" || status=1
cat "$work/out.jsonl"
# A run that printed no figures did not measure, whatever its exit status.
grep -q '"name":"all_reduce_tp2_processes"' "$work/out.jsonl" || { echo "no figures from rank 0" >&2; status=1; }
exit $status
