#!/usr/bin/env bash
# Installs the build into a fresh prefix and builds a host against it twice, with
# find_package(Pagoda) and with pkg-config, as a user would. Each host runs and must load the
# CPU backend from the installed lib folder (found beside the installed libpagoda).
# Usage: check_install.sh <build-dir> <work-dir> <source-dir> <c-compiler> <generator>
#                         <version> <extra C/link flags, e.g. sanitizers>
set -euo pipefail

build=$1 work=$2 src=$3 cc=$4 generator=$5 version=$6 extra_flags=${7:-}
prefix=$work/prefix
hello=$src/examples/hello_backends.c

# No search path from the caller's environment: plugins must come from libpagoda's folder.
unset PAGODA_BACKEND_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH
export PAGODA_LOG_LEVEL=error

rm -rf "$work"
mkdir -p "$work"
echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"

# Where GNUInstallDirs put things (lib or lib/<multiarch>).
pc=$(find "$prefix" -name pagoda.pc)
[[ -n $pc ]] || { echo "FAIL: no pagoda.pc installed" >&2; exit 1; }
libdir=$(dirname "$(dirname "$pc")")

fail() { echo "FAIL: $*" >&2; exit 1; }
for f in "$libdir/libpagoda.so" "$libdir/libpagoda.so.${version%%.*}" \
         "$libdir/libpagoda-backend-cpu.so" "$libdir/cmake/Pagoda/PagodaConfig.cmake" \
         "$prefix/bin/pagoda"; do
    [[ -e $f ]] || fail "not installed: ${f#"$prefix"/}"
done
# The public headers and nothing else (internal headers live beside their sources).
diff <(cd "$src/include" && find . -type f | sort) <(cd "$prefix/include" && find . -type f | sort) ||
    fail "installed headers differ from include/"

# A host's output must name the CPU backend loaded from the installed lib folder.
check_output() {
    local what=$1 out=$2
    echo "$out"
    grep -q "^libpagoda $version " <<<"$out" || fail "$what: did not report version $version"
    grep -q "^cpu: [1-9][0-9]* device(s), from $libdir/libpagoda-backend-cpu.so\$" <<<"$out" ||
        fail "$what: no CPU backend with devices loaded from $libdir"
}

echo "== find_package(Pagoda)"
cmake -S "$src/tests/install/consumer" -B "$work/cmake-host" -G "$generator" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" -DHELLO_SOURCE="$hello" \
      -DCMAKE_C_FLAGS="$extra_flags" -DCMAKE_EXE_LINKER_FLAGS="$extra_flags" >"$work/cmake-host.log"
found=$(sed -n 's/^Pagoda_DIR:PATH=//p' "$work/cmake-host/CMakeCache.txt")
[[ $found == "$libdir/cmake/Pagoda" ]] || fail "find_package found $found, not the installed tree"
cmake --build "$work/cmake-host" >"$work/cmake-host-build.log"
check_output "find_package host" "$("$work/cmake-host/hello")"

echo "== pkg-config pagoda"
export PKG_CONFIG_PATH=$libdir/pkgconfig
[[ $(pkg-config --modversion pagoda) == "$version" ]] || fail "pkg-config reports another version"
# shellcheck disable=SC2046 # word splitting of pkg-config's flags is intended
"$cc" -std=c11 -Wall -Wextra -pedantic -Werror $extra_flags $(pkg-config --cflags pagoda) \
      "$hello" -o "$work/pc-host" $(pkg-config --libs pagoda)
# pkg-config gives no run path: a prefix outside the loader's path needs LD_LIBRARY_PATH.
check_output "pkg-config host" "$(LD_LIBRARY_PATH=$libdir "$work/pc-host")"

echo "== $prefix/bin/pagoda devices"
"$prefix/bin/pagoda" devices | tee "$work/devices.txt"
grep -q "^  plugin  $libdir/libpagoda-backend-cpu.so\$" "$work/devices.txt" ||
    fail "the installed pagoda command did not load the installed CPU backend"

echo "OK: installed tree at $prefix works with find_package and pkg-config"
