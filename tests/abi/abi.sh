#!/usr/bin/env bash
# The ABI gate (STYLE.md #7, #22): compares libpagoda.so with the baseline committed in
# tests/abi/libpagoda.abi, written by abidw (Debian's abigail-tools).
#
#   abi.sh check <libpagoda.so> [baseline]   fails on any change to what shipped; passes on
#                                            growth: new functions, struct fields appended at
#                                            the end, new enumerators (and says so)
#   abi.sh refresh [build-dir]               records the build's ABI as the new baseline (after
#                                            the same check, so only growth is recorded; pass
#                                            --break to record a break with a major version bump)
#
# abidw reads the library's DWARF, so the library must be built with -g (the default
# RelWithDebInfo, or Debug); a build without it makes `check` skip (exit 77), or fail when
# PAGODA_REQUIRE_ABI_CHECK=1 (as .ci/run sets it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
headers=$root/include/pagoda
default_baseline=$here/libpagoda.abi

die() { echo "abi.sh: $*" >&2; exit 1; }

# Only what the exported functions reach, and only types from the public headers.
diff_abi() { abidiff --exported-interfaces-only --hd2 "$headers" "$@"; }

has_debug_info() { readelf -S "$1" | grep -q '\.debug_info'; }

# What the exported functions reach, public types only, with no paths that depend on where the
# tree or the build is and with stable type ids, so that the baseline's diff shows real changes.
dump() {
    abidw --exported-interfaces-only --headers-dir "$headers" --drop-private-types \
          --no-corpus-path --no-comp-dir-path --short-locs --type-id-style hash \
          --out-file "$2" "$1"
}

# abidiff's leaf report for changes other than additions lists, per changed type, what changed.
# Growth is a struct whose size grew with data members inserted at or past its old end; any
# other line (moved or changed members, changed or removed functions, ...) is a break.
only_appended_fields() {
    awk '
        /^(Leaf changes|Changed leaf types) summary/ { next }
        /^Removed\/Changed\/Added (functions|variables) summary/ { next }
        /^[[:space:]]*$/ { next }
        /^'"'"'struct [^'"'"']*'"'"' changed:$/ { old = -1; next }
        /^  type size changed from [0-9]+ to [0-9]+ \(in bits\)$/ {
            old = $5 + 0; if ($7 + 0 <= old) bad = 1; next
        }
        /^  [0-9]+ data member insertions?:$/ { next }
        /^    '"'"'.*'"'"', at offset [0-9]+ \(in bits\)/ {
            match($0, /at offset [0-9]+/); offset = substr($0, RSTART + 10, RLENGTH - 10) + 0
            if (old < 0 || offset < old) bad = 1; next
        }
        { bad = 1 }
        END { exit bad }'
}

check() {
    local lib=$1 baseline=${2:-$default_baseline} report rc
    [[ -f $lib ]] || die "no library at $lib"
    [[ -f $baseline ]] || die "no baseline at $baseline (create it with: $0 refresh <build-dir>)"
    if ! has_debug_info "$lib"; then
        [[ ${PAGODA_REQUIRE_ABI_CHECK:-0} == 1 ]] &&
            die "$lib has no debug information, and PAGODA_REQUIRE_ABI_CHECK=1"
        echo "SKIP: $lib has no debug information; build with -g (RelWithDebInfo) to check the ABI"
        exit 77
    fi

    # Everything but added functions and variables, which are always compatible.
    rc=0
    report=$(diff_abi --no-added-syms "$baseline" "$lib") || rc=$?
    if (( rc & 3 )); then
        echo "$report"
        die "abidiff failed (status $rc)"
    fi
    if (( rc & 12 )); then
        rc=0
        report=$(diff_abi --leaf-changes-only --no-added-syms "$baseline" "$lib") || rc=$?
        if (( rc & 8 )) || ! only_appended_fields <<<"$report"; then
            echo "$report"
            echo
            echo "FAIL: libpagoda's ABI changed incompatibly against $(basename "$baseline")."
            echo "A shipped function, field or value must not change (STYLE.md #7): append instead,"
            echo "or add a _v2 function beside the old one."
            return 1
        fi
    fi

    # Growth passes; show it, because the baseline should record it.
    rc=0
    report=$(diff_abi "$baseline" "$lib") || rc=$?
    if (( rc != 0 )); then
        echo "$report"
        echo
        echo "OK: compatible growth only. Record it in the baseline:"
        echo "    tests/abi/abi.sh refresh <build-dir>"
    else
        echo "OK: libpagoda's ABI matches $(basename "$baseline")"
    fi
}

refresh() {
    local allow_break=0 build=
    for arg in "$@"; do
        case $arg in
            --break) allow_break=1 ;;
            -*) die "unknown option $arg" ;;
            *) build=$arg ;;
        esac
    done
    build=${build:-$root/build}
    local lib=$build/lib/libpagoda.so
    [[ -f $lib ]] || die "no $lib: build first (./scripts/build.sh)"
    has_debug_info "$lib" || die "$lib has no debug information: build with RelWithDebInfo or Debug"
    if [[ -f $default_baseline && $allow_break == 0 ]]; then
        check "$lib" "$default_baseline" ||
            die "refusing to record a break; after bumping PAGODA_VERSION_MAJOR, rerun with --break"
    fi
    dump "$lib" "$default_baseline"
    echo "wrote $default_baseline from $lib; commit it with the change that grew the API"
}

case ${1:-} in
    check) shift; [[ $# -ge 1 ]] || die "usage: $0 check <libpagoda.so> [baseline]"; check "$@" ;;
    refresh) shift; refresh "$@" ;;
    *) die "usage: $0 check <libpagoda.so> [baseline] | $0 refresh [build-dir] [--break]" ;;
esac
