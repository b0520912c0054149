#!/bin/sh
# expect_one_failure.sh PROGRAM PLUGIN FAMILY [ARGS...]: runs `PROGRAM --plugin PLUGIN ARGS...`
# (pagoda-conformance) and passes when it exits 1 with a "FAIL FAMILY: case N: ..." line and no
# other family failing: the suite must catch a deliberately broken kernel and name its op.
program=$1 plugin=$2 family=$3
shift 3
out=$("$program" --plugin "$plugin" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 1 ]; then
    echo "expect_one_failure: exit status $rc, expected 1"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -q "^FAIL $family: case [0-9]*: "; then
    echo "expect_one_failure: no line 'FAIL $family: case N: ...'"
    exit 1
fi
others=$(printf '%s\n' "$out" | grep '^FAIL' | grep -v "^FAIL $family:")
if [ -n "$others" ]; then
    echo "expect_one_failure: other families failed too"
    exit 1
fi
echo "expect_one_failure: $family failed, as it must, and nothing else did"
