# Two "machines" for tests and benchmarks: network namespaces joined by a veth pair, with
# addresses in 10.231.7.0/24 that exist only inside them. Sourced by the scripts that need them:
#   netns_make_machines   makes ns[0..1], link[0..1] (the veth ends), addr[0..1] and a scratch
#                         folder $work, and removes them all on exit (also killing $pids);
#                         exits 77 (skipped, with the reason) where namespaces cannot be made:
#                         not root, no `ip netns`, no `unshare`.
netns_skip() { echo "SKIP: $*"; exit 77; }

netns_cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null; done
    for d in "$work"/shm*; do umount "$d" 2>/dev/null; done
    rm -rf "$work"
}

netns_make_machines() {
    [ "$(id -u)" = 0 ] || netns_skip "network namespaces need root"
    command -v ip >/dev/null || netns_skip "no ip command (iproute2)"
    command -v unshare >/dev/null || netns_skip "no unshare command (util-linux)"
    local tag=$$
    ns=("pagoda-m0-$tag" "pagoda-m1-$tag")
    link=("pgv0-$tag" "pgv1-$tag")
    addr=("10.231.7.1" "10.231.7.2")
    work=$(mktemp -d)
    pids=()
    trap netns_cleanup EXIT
    for n in "${ns[@]}"; do ip netns add "$n" || netns_skip "ip netns add failed (no namespace support here)"; done
    ip link add "${link[0]}" type veth peer name "${link[1]}" || netns_skip "cannot make a veth pair"
    for i in 0 1; do
        ip link set "${link[$i]}" netns "${ns[$i]}"
        ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev "${link[$i]}"
        ip -n "${ns[$i]}" link set "${link[$i]}" up
        ip -n "${ns[$i]}" link set lo up
    done
}
