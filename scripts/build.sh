#!/usr/bin/env bash
# Installs the dependencies (Debian 12), then configures and builds Pagoda: the library, the
# backends (CUDA too when nvcc exists), the `pagoda` command, the examples, tests and benchmarks.
#
#   ./scripts/build.sh                          build/ (RelWithDebInfo)
#   ./scripts/build.sh -DPAGODA_WITH_CUDA=OFF   extra options go to CMake
#   BUILD_DIR=build-asan ./scripts/build.sh -DPAGODA_SANITIZE=ON -DPAGODA_WITH_CUDA=OFF
#
# Environment: BUILD_DIR (default build, relative to the repository), JOBS (default: all cores).
# Compiles go through ccache when it is installed (scripts/ccache-env.sh: the cache's folder,
# PAGODA_CCACHE=0 to go without).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}

./scripts/install-deps.sh
source scripts/ccache-env.sh

args=(-S . -B "$build")
# A fresh build folder gets Ninja where it is installed; an existing one keeps its generator.
if [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null; then
    args+=(-G Ninja)
fi
# CMake finds nvcc only on PATH; the toolkit's usual home is /usr/local/cuda. Point CMake at it
# unless the caller turned CUDA off (a CUDA-less configure skips the nvcc probe).
if [[ " $* " != *" -DPAGODA_WITH_CUDA=OFF "* ]] && ! command -v nvcc >/dev/null &&
   [[ -x /usr/local/cuda/bin/nvcc ]]; then
    args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi

cmake "${args[@]}" "${PAGODA_CCACHE_ARGS[@]}" "$@"
cmake --build "$build" --parallel "${JOBS:-$(nproc)}"
pagoda_ccache_report
