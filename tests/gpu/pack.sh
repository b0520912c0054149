#!/usr/bin/env bash
# tests/gpu/pack.sh: packs a GPU build made on this machine for a GPU machine that cannot build it.
#
#   tests/gpu/pack.sh BUILD_DIR OUT_TAR
#
# The lent GPU machines have nvcc, cuBLAS and NCCL but not the Debian development packages the
# core needs (ICU, PCRE2, OpenBLAS, libuv, http-parser, cmocka), and their small upload limit
# rules out a whole build folder. So the build is made here (Release, the GPU's architecture only:
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_WITH_CUDA=ON \
#         -DPAGODA_BUILD_BENCH=ON -DPAGODA_BUILD_TESTS=ON -DCMAKE_CUDA_ARCHITECTURES=90a-real)
# and this script keeps what tests/gpu/run.sh needs: the libraries and plugins, the CUDA and
# conformance tests, the benchmarks and the `pagoda` command (stripped), CTest's test files, and
# under deps/ every shared library they load that is neither glibc's nor CUDA's (the GPU machine
# brings its own CUDA libraries). Binaries keep this machine's absolute paths (RUNPATH, plugin
# and fixture folders), which the file PATHS in the archive records (the checkout, then the build
# folder), so the GPU machine links this checkout's path to its copy first (tests/gpu/prebuilt.sh).
set -euo pipefail

build=$(cd "$1" && pwd)
out=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

binaries=(test_cuda_backend test_cuda_engine test_cuda_graph test_cuda_launch_shape
          test_cuda_device_error test_backend_conformance pagoda-bench-kernels
          pagoda-bench-generate pagoda)
mkdir -p "$stage/bin" "$stage/lib" "$stage/deps"
for b in "${binaries[@]}"; do
    strip -o "$stage/bin/$b" "$build/bin/$b"
done
for l in "$build"/lib/*.so*; do
    if [[ -L $l ]]; then cp -P "$l" "$stage/lib/"; else strip -o "$stage/lib/$(basename "$l")" "$l"; fi
done
# CTest's files, so `ctest --test-dir BUILD_DIR -L cuda` works on the copy.
(cd "$build" && find . -name CTestTestfile.cmake -print0 | xargs -0 tar cf - | tar xf - -C "$stage")

# Dependencies: what ldd resolves, minus glibc's own libraries and CUDA's.
skip='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|linux-vdso|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.'
for f in "$stage"/bin/* "$build"/lib/*.so; do
    LD_LIBRARY_PATH="$build/lib" ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
    if [[ ! $name =~ $skip && $path != "$build"/* ]]; then
        cp -L "$path" "$stage/deps/$name"
    fi
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
printf '%s\n%s\n' "$root" "$build" > "$stage/PATHS"
tar cJf "$out" -C "$stage" .
ls -la "$out"
