#!/usr/bin/env bash
# Ranks on two "machines": network namespaces this script makes (a veth pair, addresses in
# 10.231.7.0/24 that exist only inside them) and removes on exit. Every rank runs in one of them,
# meeting at the first one's address (not loopback).
#   1. Sharing the host's /dev/shm, two ranks are one machine to the CPU backend (shared
#      memory): `pagoda generate --axes tp=2` prints the one-device text.
#   2. Each namespace with its own host name and /dev/shm (a tmpfs its ranks share), the ranks
#      are two machines and their collectives go over TCP (Gloo):
#      - `pagoda generate` with tp=2 and with pp=2 prints the one-device text, and so does tp=2
#        under `mpirun --host A,B` (its remote launcher enters the other namespace), and four
#        ranks without axes, planned with the machines as nodes;
#      - the mesh test's 20-request workload (test_engine_mesh --world) with tp=2 and pp=2 over
#        one rank per machine, and pp=2,tp=2 over two ranks per machine, equals one device's
#        tokens, its log-probabilities within 1e-4 (rank 0 prints the worst difference);
#      - `pagoda profile --links` over two ranks per machine measures the shared-memory path
#        and the TCP path, and `pagoda plan` prices communication with them;
#      - a rank killed mid-generation: the other fails naming it within seconds; under `pagoda
#        serve`, rank 0 answers the request in flight with an error and stops serving;
#      - the link cut mid-generation (`ip link set … down`): both fail naming each other within
#        the mesh timeout.
#      Every process exits in each case; none is left.
#
#   netns_machines.sh PAGODA_CLI TEST_ENGINE_MESH
# Exits 77 (skipped, with the reason) where namespaces cannot be made: not root, no `ip netns`,
# no `unshare`.
set -u -o pipefail

pagoda=$1
mesh_test=$2
. "$(dirname "$0")/netns_lib.sh"
netns_make_machines
for i in 0 1; do
    mkdir "$work/shm$i"
    mount -t tmpfs -o size=256m tmpfs "$work/shm$i" || netns_skip "cannot mount a tmpfs"
done

export PAGODA_BACKEND_CPU_CONFIG=threads=1 PAGODA_LOG_LEVEL=error
prompt=(--prompt "Once upon a time" --temperature 0)
port=$((20000 + $$ % 20000))
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# start NAME PER_MACHINE SEPARATE CMD...: starts 2 × PER_MACHINE ranks of CMD, ranks
# 0..PER_MACHINE-1 in the first namespace; SEPARATE=1 gives each namespace its own host name
# and /dev/shm. Output in $work/NAME-RANK.{out,err}; pids in rank_pids.
start() {
    local name=$1 per=$2 separate=$3
    shift 3
    port=$((port + 1))
    rank_pids=()
    local world=$((2 * per))
    for ((r = 0; r < world; ++r)); do
        local m=$((r / per)) setup=""
        [ "$separate" = 1 ] && setup="hostname machine-$m && mount --bind $work/shm$m /dev/shm && "
        PAGODA_RANK=$r PAGODA_WORLD_SIZE=$world PAGODA_RENDEZVOUS="${addr[0]}:$port" \
            timeout 120 ip netns exec "${ns[$m]}" unshare --uts --mount --propagation private \
            sh -c "$setup"'exec "$@"' sh "$@" > "$work/$name-$r.out" 2> "$work/$name-$r.err" &
        rank_pids+=($!)
        pids+=($!)
    done
}

# finish NAME: waits for the ranks start made; fails the case when any exits non-zero.
finish() {
    local name=$1 r=0 bad=0
    for p in "${rank_pids[@]}"; do
        wait "$p" || { echo "rank $r of $name exited with $?:"; cat "$work/$name-$r.err"; bad=1; }
        r=$((r + 1))
    done
    return $bad
}

"$pagoda" generate "${prompt[@]}" --max-tokens 24 > "$work/one.out" 2> "$work/one.err" ||
    { cat "$work/one.err"; echo "FAIL: one device"; exit 1; }

# 1. Two namespaces, one /dev/shm: one machine.
start shared 1 0 "$pagoda" generate "${prompt[@]}" --max-tokens 24 --axes tp=2
if finish shared && cmp -s "$work/one.out" "$work/shared-0.out"; then
    echo "PASS: one /dev/shm over two network namespaces (shared memory): the one-device text"
else
    fail "tp=2 across namespaces sharing /dev/shm printed:"; cat "$work/shared-0.out"
fi

# 2. Two machines: the main job's text.
for axes in tp=2 pp=2; do
    name="text-${axes/=/}"
    t0=$SECONDS
    start "$name" 1 1 "$pagoda" generate "${prompt[@]}" --max-tokens 24 --axes "$axes"
    if finish "$name" && cmp -s "$work/one.out" "$work/$name-0.out"; then
        echo "PASS: $axes over two machines (Gloo over TCP): the one-device text, in $((SECONDS - t0)) s"
    else
        fail "$axes over two machines printed:"; cat "$work/$name-0.out"
    fi
done

# No axes over two machines of two ranks each: the planner's nodes are the machines (stages
# within one machine or whole machines), and the text is the one-device text.
start planned 2 1 env PAGODA_LOG_LEVEL=info "$pagoda" generate "${prompt[@]}" --max-tokens 24
if finish planned && cmp -s "$work/one.out" "$work/planned-0.out" && grep -q "planned over 2x2" "$work/planned-0.err"; then
    echo "PASS: no axes over two machines × 2 ranks: the one-device text; $(grep -o 'planned over 2x2.*' "$work/planned-0.err")"
else
    fail "no axes over two machines × 2 ranks:"; cat "$work/planned-0.out" "$work/planned-0.err"
fi

# The 20-request workload against one device, printed by rank 0.
for case in "1 tp=2" "1 pp=2" "2 pp=2,tp=2"; do
    read -r per axes <<< "$case"
    name="workload-${axes//[=,]/}"
    t0=$SECONDS
    start "$name" "$per" 1 "$mesh_test" --world "$axes"
    if finish "$name"; then
        echo "PASS: $axes over two machines, $per rank(s) each, in $((SECONDS - t0)) s:" \
             "$(grep -h 'worst' "$work/$name-0.out" | sed 's/^ *//')"
    else
        fail "the workload on $axes over two machines"; cat "$work/$name-0.out"
    fi
done

# The links measured over two machines of two ranks each (`pagoda profile --links`): rank 0
# writes the shared-memory path within a machine and the TCP path across; with the layer costs
# beside them, `pagoda plan` prices both levels with the measured links.
costs="$work/costs.json"
model="$(dirname "$0")/../fixtures/models/stories260K/stories260K.gguf"
start links 2 1 "$pagoda" profile --links --out "$costs"
if finish links && grep -q '"path": "within_machine"' "$costs" && grep -q '"path": "across_machines"' "$costs" &&
   grep -q '"transport": "network"' "$costs" &&
   "$pagoda" profile --model "$model" --out "$costs" --max-tokens 16 --grid 2 --repeats 1 2> /dev/null &&
   "$pagoda" plan --model "$model" --mesh 2x2 --cost-file "$costs" --json > "$work/plan.json" &&
   grep -q '"link_source": "measured within_machine within nodes; measured across_machines across nodes"' "$work/plan.json"; then
    echo "PASS: links over two machines × 2 ranks, measured:" $(grep -v 'written to' "$work/links-0.err" | tr -s ' ')
else
    fail "the links over two machines:"; cat "$work/links-0.err" "$work/links-1.err" "$costs" "$work/plan.json"
fi

# The same text under mpirun across the two machines, with the usual host list: mpirun starts in
# the first one, and its remote launcher (what ssh would be) enters the second; the ranks meet at
# PAGODA_RENDEZVOUS, since OpenMPI's loopback default is for one machine only.
if command -v mpirun >/dev/null; then
    cat > "$work/agent.sh" <<AGENT
#!/bin/sh
# ssh for mpirun: HOST COMMAND... runs COMMAND on the machine HOST names.
[ "\$1" = "${addr[1]}" ] || { echo "no machine \$1" >&2; exit 1; }
shift
exec ip netns exec "${ns[1]}" unshare --uts --mount --propagation private \
    sh -c "hostname machine-1 && mount --bind $work/shm1 /dev/shm && \$*"
AGENT
    chmod +x "$work/agent.sh"
    port=$((port + 1))
    timeout 120 ip netns exec "${ns[0]}" unshare --uts --mount --propagation private sh -c \
        "hostname machine-0 && mount --bind $work/shm0 /dev/shm && exec \"\$@\"" sh \
        mpirun --allow-run-as-root --host "${addr[0]},${addr[1]}" -np 2 --mca plm_rsh_agent "$work/agent.sh" \
        --mca oob_tcp_if_include 10.231.7.0/24 --mca btl self,tcp --mca btl_tcp_if_include 10.231.7.0/24 \
        -x PAGODA_RENDEZVOUS="${addr[0]}:$port" -x PAGODA_BACKEND_CPU_CONFIG -x PAGODA_LOG_LEVEL=info \
        "$pagoda" generate "${prompt[@]}" --max-tokens 24 --axes tp=2 > "$work/mpirun.out" 2> "$work/mpirun.err"
    code=$?
    if [ "$code" = 0 ] && cmp -s "$work/one.out" "$work/mpirun.out" &&
       grep -q "on 2 machine(s).*over the network" "$work/mpirun.err"; then
        echo "PASS: mpirun --host ${addr[0]},${addr[1]} -np 2: the one-device text; $(grep -o 'on 2 machine.*' "$work/mpirun.err")"
    else
        fail "mpirun across the two machines exited $code:"; cat "$work/mpirun.out" "$work/mpirun.err"
    fi
else
    echo "SKIP: no mpirun: the launch across machines under mpirun is not tried"
fi

# Waits until rank 0 of NAME has printed some text (it is generating), at most 20 s.
generating() {
    for _ in $(seq 200); do
        [ -s "$work/$1-0.out" ] && return 0
        sleep 0.1
    done
    return 1
}

# 3. A rank killed mid-generation: rank 0 fails naming rank 1, within seconds.
long=(generate "${prompt[@]}" --max-tokens 400 --axes tp=2 --mesh-timeout 8000)
start killed 1 1 "$pagoda" "${long[@]}"
generating killed || fail "rank 0 never started generating"
ip netns pids "${ns[1]}" | xargs -r kill -9
t0=$(date +%s.%N)
wait "${rank_pids[0]}"
code=$?
took=$(echo "$(date +%s.%N) - $t0" | bc)
wait "${rank_pids[1]}" 2>/dev/null
if [ "$code" != 0 ] && grep -q "rank 1 (at ${addr[1]})" "$work/killed-0.err" && [ "$(echo "$took < 3" | bc)" = 1 ]; then
    echo "PASS: rank 1 killed mid-generation: rank 0 exited $code after ${took%???????} s: $(grep -o 'rank 0 of 2.*' "$work/killed-0.err" | head -n 1)"
else
    fail "after rank 1 was killed, rank 0 exited $code after $took s saying:"; cat "$work/killed-0.err"
fi

# 3b. The same under `pagoda serve`: rank 0's server answers the request in flight with an error,
# then stops by itself (its engine cannot step again), and the process exits non-zero.
start served 1 1 "$pagoda" serve --axes tp=2 --port 0 --mesh-timeout 8000
for _ in $(seq 200); do grep -q "serving" "$work/served-0.out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$work/served-0.out" | head -n 1)
ip netns exec "${ns[0]}" python3 - "$url" > "$work/client.out" 2>&1 <<'PY' &
import json, sys, urllib.error, urllib.request
body = json.dumps({"prompt": "Once upon a time", "max_tokens": 400, "temperature": 0}).encode()
request = urllib.request.Request(sys.argv[1] + "/v1/completions", body, {"Content-Type": "application/json"})
try:
    print(urllib.request.urlopen(request, timeout=60).read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
client=$!
sleep 0.3
ip netns pids "${ns[1]}" | xargs -r kill -9
t0=$(date +%s.%N)
wait "${rank_pids[0]}"
code=$?
took=$(echo "$(date +%s.%N) - $t0" | bc)
wait "$client"
if [ "$code" != 0 ] && grep -q "rank 1 (at ${addr[1]})" "$work/served-0.err" &&
   grep -q "stopped by itself" "$work/served-0.err" && [ "$(echo "$took < 15" | bc)" = 1 ]; then
    echo "PASS: rank 1 killed under pagoda serve: the request got '$(cut -c1-60 "$work/client.out" | head -n 1)…';" \
         "rank 0 stopped serving and exited $code after ${took%???????} s"
else
    fail "after rank 1 was killed under pagoda serve, rank 0 exited $code after $took s saying:"
    cat "$work/served-0.out" "$work/served-0.err" "$work/client.out"
fi

# 4. The link cut mid-generation: both ranks fail within the mesh timeout (8 s), naming the peer.
start cut 1 1 "$pagoda" "${long[@]}"
generating cut || fail "rank 0 never started generating"
ip -n "${ns[0]}" link set "${link[0]}" down
t0=$SECONDS
for r in 0 1; do
    wait "${rank_pids[$r]}"
    code=$?
    peer=$((1 - r))
    if [ "$code" != 0 ] && grep -q "rank $peer (at ${addr[$peer]})" "$work/cut-$r.err"; then
        echo "PASS: link cut: rank $r exited $code after $((SECONDS - t0)) s: $(grep -o "rank $r of 2.*" "$work/cut-$r.err" | head -n 1)"
    else
        fail "after the link was cut, rank $r exited $code saying:"; cat "$work/cut-$r.err"
    fi
done
if [ $((SECONDS - t0)) -gt 15 ]; then fail "the ranks took $((SECONDS - t0)) s to fail; the mesh timeout is 8 s"; fi
exit $failed
