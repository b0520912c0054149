#!/usr/bin/env bash
# Tests scripts/check_rooms.py, the build step that holds src/'s rooms to their links: on small
# trees made here, a clean one passes, and each kind of fault fails naming the file and include
# at fault (an include of a room not linked, a link not used, a bare include of a file that is
# not beside its includer, a cycle of links, a folder that is no room).
#   check_rooms_test.sh <check_rooms.py>
set -euo pipefail
checker=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# A tree of three rooms: top -> mid -> base, top -> base.
make_tree() {
    rm -rf "$work/src" && mkdir -p "$work/src"/{base,mid,top}
    echo '#pragma once' >"$work/src/base/base.hpp"
    printf '#include "base/base.hpp"\n#include "pagoda/status.h"\n' >"$work/src/mid/mid.hpp"
    printf '#include "mid/mid.hpp"\n#include "base/base.hpp"\n' >"$work/src/top/top.cpp"
    printf '#include "top.hpp"\n' >"$work/src/top/local.cpp"
    echo '#pragma once' >"$work/src/top/top.hpp"
    printf 'base base :\nmid mid : base\ntop top : mid base\n' >"$work/rooms.txt"
}

# expect <exit code> <text the output must hold> <what is tested>
expect() {
    local want=$1 text=$2 what=$3 rc=0 out
    out=$(python3 "$checker" "$work/rooms.txt" "$work/src" --graph 2>&1) || rc=$?
    if [[ $rc != "$want" || $out != *"$text"* ]]; then
        echo "FAIL: $what: exit $rc (wanted $want), output:"
        echo "$out"
        failures=$((failures + 1))
    else
        echo "ok: $what"
    fi
}

make_tree
expect 0 "top        -> mid base" "a clean tree passes and prints its graph"

make_tree
printf '#include "top/top.hpp"\n' >>"$work/src/mid/mid.hpp"
expect 1 'src/mid/mid.hpp:3: #include "top/top.hpp": room mid does not link room top' \
    "an include of a room not linked"

make_tree
printf 'base base :\nmid mid : base\ntop top : mid base\nextra extra : base\n' >"$work/rooms.txt"
mkdir -p "$work/src/extra" && echo '#pragma once' >"$work/src/extra/extra.hpp"
expect 1 "room extra links base but includes none of its headers" "a link not used"

make_tree
printf '#include "missing.hpp"\n' >>"$work/src/top/local.cpp"
expect 1 'src/top/local.cpp:2: #include "missing.hpp": name its room' "a bare include of no file beside it"

make_tree
printf 'base base : top\nmid mid : base\ntop top : mid base\n' >"$work/rooms.txt"
expect 1 "the links form a cycle" "a cycle of links"

make_tree
printf '#include "nowhere/x.hpp"\n' >>"$work/src/mid/mid.hpp"
expect 1 "nowhere/ is no room of src/" "a folder that is no room"

if [[ $failures -gt 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
fi
