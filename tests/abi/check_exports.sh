#!/usr/bin/env bash
# Checks the dynamic symbols of everything a build ships (STYLE.md #13, #14):
#  - libpagoda.so has SONAME libpagoda.so.<major> and exports exactly the names in pagoda.map,
#    all pagoda_*;
#  - every backend plugin libpagoda-backend-*.so beside it exports only pagoda_backend_entry
#    and does not need libpagoda.
# Usage: check_exports.sh <libpagoda.so> <pagoda.map> <major version>
set -euo pipefail

lib=$1 map=$2 major=$3
dir=$(dirname "$lib")
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

# Defined dynamic symbols, without the version-node names (type A) that a version script adds.
exports() {
    nm -D --defined-only "$1" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u
}
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# --- libpagoda -----------------------------------------------------------------------------
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == "libpagoda.so.$major" ]] ||
    fail "$lib: SONAME is '$soname', expected libpagoda.so.$major"

# The names listed between `global:` and `local:` in the version script.
expected=$(sed 's#/\*.*\*/##' "$map" | awk '/global:/ { on = 1; next } /local:/ { on = 0 } on' |
           tr -d ' \t;' | grep -v '^$' | sort -u)
actual=$(exports "$lib")

outside=$(grep -v '^pagoda_' <<<"$actual" || true)
[[ -z $outside ]] || fail "$lib exports names outside pagoda_*: $(echo $outside)"
missing=$(comm -23 <(echo "$expected") <(echo "$actual"))
[[ -z $missing ]] || fail "$lib lacks exports that pagoda.map lists: $(echo $missing)"
extra=$(comm -13 <(echo "$expected") <(echo "$actual"))
[[ -z $extra ]] || fail "$lib exports names pagoda.map does not list: $(echo $extra)"
echo "libpagoda: SONAME $soname, $(wc -l <<<"$actual") exports, all listed in $(basename "$map")"

# --- plugins -------------------------------------------------------------------------------
shopt -s nullglob
plugins=("$dir"/libpagoda-backend-*.so)
[[ ${#plugins[@]} -gt 0 ]] || fail "no backend plugin (libpagoda-backend-*.so) in $dir"
for plugin in "${plugins[@]}"; do
    name=$(basename "$plugin")
    symbols=$(exports "$plugin")
    if [[ $symbols != pagoda_backend_entry ]]; then
        fail "$name must export only pagoda_backend_entry; it exports: $(echo $symbols)"
    elif needed "$plugin" | grep -q '^libpagoda\.so'; then
        fail "$name links libpagoda (DT_NEEDED); plugins get host services through the host table"
    else
        echo "$name: exports pagoda_backend_entry only; needs $(needed "$plugin" | tr '\n' ' ')"
    fi
done

exit $failed
