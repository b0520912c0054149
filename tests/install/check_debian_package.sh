#!/usr/bin/env bash
# The Debian packages of the CMake target `deb` (cmake/PagodaDebian.cmake), checked as a user
# of them would find them:
#   1. lintian reports no error in any of them;
#   2. their dependencies resolve against this system's packages (apt-get --simulate);
#   3. unpacked into a scratch root (dpkg-deb -x; installing into / would need root and change
#      this machine), `pagoda generate` writes the main job's story with the bundled model and
#      the CPU backend of the root, and examples/hello_backends.c builds with pkg-config alone
#      against the root's libpagoda-dev and runs; pagoda-conformance passes on the root's
#      reference plugin (a few op families: the whole suite runs in pagoda_conformance_*).
# Usage: check_debian_package.sh <deb-dir> <work-dir> <source-dir> <c-compiler> <version>
set -euo pipefail
debs=$1 work=$2 src=$3 cc=$4 version=$5
unset PAGODA_BACKEND_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH
export PAGODA_LOG_LEVEL=error
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"

packages=()
for name in libpagoda0 libpagoda-dev pagoda-tools; do
    deb=$(ls "$debs/${name}_${version}-"*.deb 2>/dev/null | head -n 1)
    [[ -n $deb ]] || fail "no ${name}_${version}-*.deb in $debs"
    packages+=("$(realpath "$deb")")  # apt takes a file for a package only by its path
done

echo "== lintian"
command -v lintian > /dev/null || fail "lintian is not installed (apt install lintian)"
# lintian refuses to run as root without this, and is slow to start: all packages in one call.
lintian --allow-root --fail-on error --tag-display-limit 0 "${packages[@]}" > "$work/lintian.txt" 2>&1 ||
    { cat "$work/lintian.txt"; fail "lintian found errors"; }
echo "PASS: lintian: no error ($(grep -c '^W:' "$work/lintian.txt" || true) warnings, listed below)"
sed 's/^/  /' "$work/lintian.txt"

echo "== dependencies"
for deb in "${packages[@]}"; do
    echo "  $(dpkg-deb -f "$deb" Package): Depends: $(dpkg-deb -f "$deb" Depends)"
done
dpkg-deb -f "${packages[1]}" Depends | grep -q "libpagoda0 (= $version-" || fail "libpagoda-dev does not depend on its libpagoda0"
dpkg-deb -f "${packages[2]}" Depends | grep -q "libpagoda0" || fail "pagoda-tools does not depend on libpagoda0"
apt-get install --simulate "${packages[@]}" > "$work/apt.txt" 2>&1 || { cat "$work/apt.txt"; fail "apt cannot install them"; }
echo "PASS: apt-get install --simulate resolves all three"

echo "== unpacked into $work/root"
for deb in "${packages[@]}"; do dpkg-deb -x "$deb" "$work/root"; done
root=$work/root
libdir=$(dirname "$(dirname "$(find "$root" -name pagoda.pc)")")
[[ $libdir == "$root/usr/"* ]] || fail "pagoda.pc is not under /usr"
if readelf -d "$root/usr/bin/pagoda" | grep -qE "RPATH|RUNPATH"; then fail "/usr/bin/pagoda has a run path"; fi
# The root is not /: its library folder is named to the loader, as a chroot would make it the
# default one. The model is the bundled one, found from the program's folder.
got=$(LD_LIBRARY_PATH=$libdir "$root/usr/bin/pagoda" generate --prompt "Once upon a time" --temperature 0 --max-tokens 24 2> "$work/generate.err") ||
    fail "pagoda generate failed"
echo "  $got"
[[ $got == "Once upon a time, there was a little girl named Lily. She loved to play outside in the p" ]] ||
    fail "the unpacked pagoda wrote another story"
LD_LIBRARY_PATH=$libdir "$root/usr/bin/pagoda" devices > "$work/devices.txt"
grep -q "^  plugin  $libdir/libpagoda-backend-cpu.so\$" "$work/devices.txt" ||
    { cat "$work/devices.txt"; fail "the unpacked pagoda did not load the root's CPU backend"; }
echo "PASS: the unpacked pagoda generate: the story, with the root's CPU backend"

export PKG_CONFIG_PATH=$libdir/pkgconfig
[[ $(pkg-config --modversion pagoda) == "$version" ]] || fail "pkg-config reports another version"
# shellcheck disable=SC2046 # word splitting of pkg-config's flags is intended
"$cc" -std=c11 -Wall -Wextra -pedantic -Werror $(pkg-config --cflags pagoda) "$src/examples/hello_backends.c" \
    -o "$work/hello" $(pkg-config --libs pagoda) || fail "hello_backends.c does not build with pkg-config"
out=$(LD_LIBRARY_PATH=$libdir "$work/hello") || fail "hello_backends failed"
echo "$out" | sed 's/^/  /'
grep -q "^cpu: [1-9][0-9]* device(s), from $libdir/libpagoda-backend-cpu.so\$" <<<"$out" ||
    fail "hello_backends did not load the root's CPU backend"
echo "PASS: examples/hello_backends.c built with pkg-config against libpagoda-dev, ran on the root's CPU backend"

out=$(LD_LIBRARY_PATH=$libdir "$root/usr/bin/pagoda-conformance" --plugin "$libdir/pagoda/libpagoda-backend-reference.so" \
      --only rmsnorm,rope,rowwise --strict 2>&1) || { echo "$out"; fail "pagoda-conformance failed on the root's reference plugin"; }
echo "$out" | sed 's/^/  /'
grep -q "^  against the CPU backend from $libdir/libpagoda-backend-cpu.so" <<<"$out" || fail "pagoda-conformance's reference is not the root's CPU backend"
echo "PASS: the unpacked pagoda-conformance passes on the root's reference plugin"
