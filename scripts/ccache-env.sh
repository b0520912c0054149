# Sourced by scripts/build.sh and tests/fuzz/run.sh: the compiler cache both builds share.
# The cache lives outside the clone (default ~/.cache/pagoda-ccache, or $PAGODA_CCACHE_DIR), so
# a fresh clone in another folder (CI's) hits what an earlier build compiled. base_dir makes the
# paths under the clone relative before hashing; hash_dir=false leaves the build folder's own
# path out of the hash (debug info then names the folder of the build that filled the entry).
# Sets PAGODA_CCACHE_ARGS to the CMake options that put ccache in front of C, C++ and CUDA, or
# take it away when ccache is missing or PAGODA_CCACHE=0 turns it off. Under CI a missing ccache
# is an error.
# Without ccache the launchers are set empty, so that a build folder configured with them once
# stops using them.
PAGODA_CCACHE_ARGS=(-DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER=
                    -DCMAKE_CUDA_COMPILER_LAUNCHER=)
pagoda_ccache_on=0
if [[ ${PAGODA_CCACHE:-1} != 0 ]] && command -v ccache >/dev/null; then
    pagoda_ccache_on=1
    export CCACHE_DIR=${PAGODA_CCACHE_DIR:-${CCACHE_DIR:-$HOME/.cache/pagoda-ccache}}
    export CCACHE_BASEDIR=$root
    export CCACHE_NOHASHDIR=1
    # Three build folders (RelWithDebInfo, ASan, fuzzers) with debug info fit in this.
    export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-12G}
    # ccache knows nvcc too, so the CUDA backend's .cu files are cached as well.
    PAGODA_CCACHE_ARGS=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                        -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
elif [[ ${CI:-} == true && ${PAGODA_CCACHE:-1} != 0 ]]; then
    echo "ccache-env: ccache is not installed (scripts/install-deps.sh installs it)" >&2
    exit 1
fi

# Prints the cache's statistics for this build step, then zeroes them for the next one.
pagoda_ccache_report() {
    if [[ $pagoda_ccache_on == 1 ]]; then
        echo "--- ccache ($CCACHE_DIR):"
        ccache --show-stats | sed -n '1,12p'
        ccache --zero-stats >/dev/null
    fi
}
