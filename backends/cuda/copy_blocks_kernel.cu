#include "copy_blocks_kernel.hpp"

namespace pagoda::cuda {

namespace {

// A grid-stride loop over the units (16 bytes, or bytes) of the blocks. Unordered, a thread
// copies one unit of one pair of one cache. Ordered, a thread owns one unit offset of one
// cache and copies it for every pair in turn: each byte then goes through the pairs in order,
// so a chain reads what the earlier pair wrote, with no synchronisation between threads.
template <typename Unit>
__global__ void copy_blocks_kernel(CopyBlocksArgs a) {
    if (a.error != nullptr && failed(a.error)) return;  // no barriers: a per-thread check
    const int64_t units = a.block_bytes / int64_t(sizeof(Unit));
    const int64_t pairs_per_thread = a.ordered ? a.n_pairs : 1;
    const int64_t lanes_per_cache = a.ordered ? units : a.n_pairs * units;
    const int64_t total = a.n_caches * lanes_per_cache;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
        const int64_t cache = e / lanes_per_cache, rest = e % lanes_per_cache;
        const int64_t first_pair = a.ordered ? 0 : rest / units, unit = rest % units;
        const auto *src = reinterpret_cast<const Unit *>(a.src_caches[cache]);
        auto *dst = reinterpret_cast<Unit *>(a.dst_caches[cache]);
        for (int64_t p = first_pair; p < first_pair + pairs_per_thread; ++p) {
            const int64_t from = int64_t(a.block_pairs[2 * p]) * units + unit;
            const int64_t to = int64_t(a.block_pairs[2 * p + 1]) * units + unit;
            dst[to] = src[from];
        }
    }
}

}  // namespace

cudaError_t launch_copy_blocks(const CopyBlocksArgs &a, cudaStream_t stream) {
    if (a.n_caches <= 0 || a.n_pairs <= 0) return cudaSuccess;
    const int64_t unit_bytes = a.vector16 ? 16 : 1;
    const int64_t units = a.block_bytes / unit_bytes;
    const int64_t total = a.n_caches * units * (a.ordered ? 1 : a.n_pairs);
    constexpr int kThreads = 256;
    const int64_t wanted = (total + kThreads - 1) / kThreads;
    const unsigned blocks = unsigned(wanted < 65535 ? wanted : 65535);
    (void)cudaGetLastError();  // so the error returned is this launch's
    if (a.vector16)
        copy_blocks_kernel<uint4><<<blocks, kThreads, 0, stream>>>(a);
    else
        copy_blocks_kernel<unsigned char><<<blocks, kThreads, 0, stream>>>(a);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
