#!/usr/bin/env bash
# tests/gpu/prebuilt.sh: runs tests/gpu/run.sh on a GPU machine from a build packed elsewhere.
#
#   tests/gpu/prebuilt.sh BUNDLE          (run.sh's environment variables apply)
#
# BUNDLE is tests/gpu/pack.sh's archive. Its binaries name the checkout and build folder they
# were made in (the archive's PATHS file), so this links that checkout path to this checkout when
# they differ, unpacks the bundle into the build folder, puts its deps/ and the machine's own
# CUDA libraries (the toolkit's, or the ones Python's nvidia-* packages carry) on
# LD_LIBRARY_PATH, and calls run.sh without its build step (STEPS). Logs: BUILD/gpu-validation
# unless LOGS says otherwise.
set -u -o pipefail

bundle=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
{ read -r built_at; read -r build; } < <(tar xJOf "$bundle" ./PATHS)

if [ "$here" != "$built_at" ]; then
    if [ -e "$built_at" ] && [ ! -L "$built_at" ]; then
        echo "prebuilt.sh: $built_at exists and is not a link; cannot place the build there" >&2
        exit 2
    fi
    mkdir -p "$(dirname "$built_at")"
    ln -sfn "$here" "$built_at"
fi
mkdir -p "$build"
tar xJf "$bundle" -C "$build" || exit 2

# CUDA's libraries as this machine has them: the folder of each, the first found.
cuda_dirs=()
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    found=$(find /usr/local/cuda/lib64 /usr/local/cuda/ /usr/lib/x86_64-linux-gnu /opt \
                 -name "$lib" -print -quit 2>/dev/null)
    if [ -z "$found" ]; then
        echo "prebuilt.sh: $lib not found on this machine" >&2
        continue
    fi
    cuda_dirs+=("$(dirname "$found")")
done
joined=$(printf '%s:' "$build/deps" "${cuda_dirs[@]}")
export LD_LIBRARY_PATH="${joined%:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

# Anything left unresolved shows here rather than as a test that cannot start.
for f in "$build"/bin/* "$build"/lib/*.so; do
    missing=$(ldd "$f" 2>&1 | grep -E 'not found' || true)
    if [ -n "$missing" ]; then echo "$(basename "$f"): $missing"; fi
done

STEPS="${STEPS:-test sanitize kernels generate quantized}"
STEPS="${STEPS//build/}"
export STEPS
exec "$here/tests/gpu/run.sh" "$build"
