#!/usr/bin/env bash
# Two ranks on two "machines": network namespaces this script makes (a veth pair, addresses in
# 10.231.7.0/24 that exist only inside them) and removes on exit. It runs `pagoda generate` with
# tp=2, one rank in each namespace, meeting at the first one's address (not loopback):
#   1. sharing the host's /dev/shm, the ranks are one machine to the CPU backend: the text is
#      the one-device text;
#   2. each with its own host name and /dev/shm (a tmpfs of its own), they are two machines:
#      both ranks fail within seconds with an error naming the machines, none waits out its
#      timeout.
#
#   netns_machines.sh PAGODA_CLI
# Exits 77 (skipped, with the reason) where namespaces cannot be made: not root, no `ip netns`,
# no `unshare`.
set -u -o pipefail

pagoda=$1
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip command (iproute2)"
command -v unshare >/dev/null || skip "no unshare command (util-linux)"

tag=$$
ns=("pagoda-m0-$tag" "pagoda-m1-$tag")
addr=("10.231.7.1" "10.231.7.2")
work=$(mktemp -d)
cleanup() {
    for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
for n in "${ns[@]}"; do ip netns add "$n" || skip "ip netns add failed (no namespace support here)"; done
ip link add "pgv0-$tag" type veth peer name "pgv1-$tag" || skip "cannot make a veth pair"
for i in 0 1; do
    ip link set "pgv$i-$tag" netns "${ns[$i]}"
    ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev "pgv$i-$tag"
    ip -n "${ns[$i]}" link set "pgv$i-$tag" up
    ip -n "${ns[$i]}" link set lo up
done

export PAGODA_BACKEND_CPU_CONFIG=threads=1 PAGODA_LOG_LEVEL=error
args=(generate --device cpu:0 --axes tp=2 --prompt "Once upon a time" --max-tokens 24 --temperature 0)
port=$((20000 + tag % 20000))
failed=0

# launch NAME SEPARATE: starts both ranks (SEPARATE=1: own host name and /dev/shm) and waits.
launch() {
    local name=$1 separate=$2
    port=$((port + 1))
    for i in 0 1; do
        local setup=""
        if [ "$separate" = 1 ]; then
            setup="hostname machine-$i && mount -t tmpfs -o size=256m tmpfs /dev/shm && "
        fi
        PAGODA_RANK=$i PAGODA_WORLD_SIZE=2 PAGODA_RENDEZVOUS="${addr[0]}:$port" \
            timeout 60 ip netns exec "${ns[$i]}" unshare --uts --mount --propagation private \
            sh -c "$setup"'exec "$@"' sh "$pagoda" "${args[@]}" \
            > "$work/$name-$i.out" 2> "$work/$name-$i.err" &
    done
    local start=$SECONDS
    wait
    echo "$name: both ranks ended after $((SECONDS - start)) s"
}

"$pagoda" generate --prompt "Once upon a time" --max-tokens 24 --temperature 0 > "$work/one.out" 2> "$work/one.err" ||
    { cat "$work/one.err"; echo "FAIL: one device"; exit 1; }

launch shared 0
if cmp -s "$work/one.out" "$work/shared-0.out"; then
    echo "PASS: one /dev/shm over two network namespaces: the one-device text"
else
    echo "FAIL: tp=2 across namespaces sharing /dev/shm printed:"; cat "$work/shared-0.out" "$work/shared-0.err" "$work/shared-1.err"
    failed=1
fi

start=$SECONDS
launch separate 1
took=$((SECONDS - start))
for i in 0 1; do
    if grep -q "2 machines (rank 0 on machine-0 (machine 0), rank 1 on machine-1 (machine 1))" "$work/separate-$i.err" &&
       grep -q "processes of one machine only" "$work/separate-$i.err"; then
        echo "PASS: rank $i on its own machine fails naming both: $(tail -n 1 "$work/separate-$i.err")"
    else
        echo "FAIL: rank $i on its own machine said:"; cat "$work/separate-$i.out" "$work/separate-$i.err"
        failed=1
    fi
done
if [ "$took" -ge 20 ]; then
    echo "FAIL: the ranks took $took s to fail; the world's timeout is 30 s, the refusal should come at once"
    failed=1
fi
exit $failed
