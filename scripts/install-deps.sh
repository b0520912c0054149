#!/usr/bin/env bash
# Installs what building, testing and documenting Pagoda needs on Debian 12, with apt.
# Does nothing when everything is installed already; otherwise needs root (or sudo).
# The CUDA toolkit is not installed here: the CUDA backend is built when nvcc is present.
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config binutils  # compilers, build tools, nm/readelf
    ccache                                               # compiler cache (scripts/ccache-env.sh)
    libopenblas-dev                                      # CPU backend GEMMs
    libcmocka-dev                                        # unit tests
    libuv1-dev nlohmann-json3-dev libpcre2-dev           # server, JSON, tokenizer patterns
    libhttp-parser-dev                                   # the server's HTTP/1.1 parser
    prometheus                                           # promtool checks the server's /metrics
    libicu-dev                                           # tokenizer Unicode normalization (NFC)
    doxygen                                              # API docs (Doxyfile)
    abigail-tools                                        # ABI gate (abidw, abidiff)
    python3                                              # test fixtures (make_random_model.py)
    python3-jinja2                                       # chat template parity (chat_template_reference.py)
    python3-numpy                                        # float64 reference forward passes (tests/arch)
    python3-pip python3-venv                             # the Python binding's wheel and venv installs
    python3-setuptools-whl python3-wheel-whl             #   built offline from these (bindings/python)
    clang libclang-rt-14-dev                             # libFuzzer targets (tests/fuzz)
    cargo golang-go                                      # the Rust and Go bindings' tests (bindings/)
    openmpi-bin libopenmpi-dev                           # meshes over processes: ranks under mpirun
    libgloo-dev                                          # CPU collectives between machines (TCP)
    iproute2                                             # "machines" as network namespaces (tests/mesh)
    lintian dpkg-dev file                                # the Debian packages' checks (cmake/PagodaDebian.cmake)
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-deps: all ${#packages[@]} packages are installed"
    exit 0
fi

as_root=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null ||
        { echo "install-deps: run as root to install: ${missing[*]}" >&2; exit 1; }
    as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
