// COPY_BLOCKS within the device (one kernel for all pairs of all caches) and SWAP_BLOCKS between
// device and host memory (one cudaMemcpyAsync per run of consecutive blocks), the batched
// block copies of copy-on-write and of swapping (vLLM thesis §5.5.1, optimisation 3).
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "check_helpers.hpp"
#include "copy_blocks_kernel.hpp"
#include "cuda_kernels.hpp"
#include "op_checks.hpp"

namespace pagoda::cuda {

namespace {

// Whether applying the pairs all at once could differ from applying them in order (ops.h): a
// pair reads a block an earlier pair wrote, or writes a block an earlier pair read or wrote.
// Source and destination ids are taken as one space, since the caches may be the same.
bool pairs_need_order(const pagoda_op_copy_blocks_t &a) {
    std::unordered_set<int32_t> read, written;
    for (int64_t p = 0; p < a.n_pairs; ++p) {
        const int32_t src = a.block_pairs[2 * p], dst = a.block_pairs[2 * p + 1];
        if (written.count(src) != 0 || written.count(dst) != 0 || read.count(dst) != 0)
            return true;
        read.insert(src);
        written.insert(dst);
    }
    return false;
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

pagoda_status_t run_copy_blocks(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                const pagoda_op_copy_blocks_t &a) {
    // Every array and id is checked before anything is queued: a failed launch changes nothing.
    PAGODA_PLUGIN_CHECK(plugin::check_block_pairs(cuda, "copy_blocks", a));
    // Its pair table is uploaded from host memory, which a graph would read again at each run.
    if (stream.capturing)
        return refuse_during_capture(cuda, stream,
                                     "copy_blocks cannot be recorded into a graph (its block "
                                     "pairs are host arrays): run it before or after the capture");
    if (a.n_pairs == 0 || a.n_caches == 0) return PAGODA_OK;

    // The kernel reads the cache addresses and the pairs from the stream's scratch:
    // [src addresses][dst addresses][pairs]. Pageable host memory is staged by the driver
    // before cudaMemcpyAsync returns, so `table` may go when this function does.
    const size_t n_caches = size_t(a.n_caches), n_pairs = size_t(a.n_pairs);
    std::vector<unsigned long long> table(2 * n_caches + (n_pairs * 2 * sizeof(int32_t) + 7) / 8);
    bool vector16 = a.block_bytes % 16 == 0;
    for (size_t c = 0; c < n_caches; ++c) {
        table[c] = reinterpret_cast<uintptr_t>(a.src_caches[c]);
        table[n_caches + c] = reinterpret_cast<uintptr_t>(a.dst_caches[c]);
        vector16 = vector16 && aligned16(a.src_caches[c]) && aligned16(a.dst_caches[c]);
    }
    std::memcpy(table.data() + 2 * n_caches, a.block_pairs, n_pairs * 2 * sizeof(int32_t));
    const size_t table_bytes = table.size() * sizeof(unsigned long long);
    void *scratch = nullptr;
    PAGODA_PLUGIN_CHECK(stream_scratch(cuda, stream, table_bytes, &scratch));
    if (cudaError_t e = cudaMemcpyAsync(scratch, table.data(), table_bytes,
                                        cudaMemcpyHostToDevice, stream.stream);
        e != cudaSuccess)
        return cuda.fail_cuda(e, "copy_blocks: cudaMemcpyAsync of the block table", stream.device);

    const auto *device_table = static_cast<const unsigned long long *>(scratch);
    CopyBlocksArgs k{};
    k.src_caches = device_table;
    k.dst_caches = device_table + n_caches;
    k.block_pairs = reinterpret_cast<const int32_t *>(device_table + 2 * n_caches);
    k.n_caches = a.n_caches;
    k.n_pairs = a.n_pairs;
    k.block_bytes = a.block_bytes;
    k.ordered = pairs_need_order(a);
    k.vector16 = vector16;
    k.error = stream.error;
    if (cudaError_t e = launch_copy_blocks(k, stream.stream); e != cudaSuccess)
        return cuda.fail_cuda(e, "copy_blocks: kernel launch", stream.device);
    return PAGODA_OK;
}

pagoda_status_t run_swap_blocks(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                const pagoda_op_copy_blocks_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_block_pairs(cuda, "swap_blocks", a));
    if (stream.capturing)
        return refuse_during_capture(cuda, stream,
                                     "swap_blocks cannot be recorded into a graph (it copies "
                                     "host memory): run it before or after the capture");
    if (a.n_pairs == 0 || a.n_caches == 0) return PAGODA_OK;
    const cudaMemcpyKind kind =
        a.direction == PAGODA_SWAP_OUT ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    const size_t block_bytes = size_t(a.block_bytes);
    // One copy per run of pairs whose source and destination both advance by one block,
    // issued in pair order, so the stream applies them in order (chains included). Pinned
    // host memory makes each a DMA that overlaps with kernels on other streams.
    for (int64_t c = 0; c < a.n_caches; ++c) {
        const auto *src = static_cast<const unsigned char *>(a.src_caches[c]);
        auto *dst = static_cast<unsigned char *>(a.dst_caches[c]);
        for (int64_t p = 0; p < a.n_pairs;) {
            const int64_t from = a.block_pairs[2 * p], to = a.block_pairs[2 * p + 1];
            int64_t run = 1;
            while (p + run < a.n_pairs && a.block_pairs[2 * (p + run)] == from + run &&
                   a.block_pairs[2 * (p + run) + 1] == to + run)
                ++run;
            if (cudaError_t e = cudaMemcpyAsync(dst + to * a.block_bytes, src + from * a.block_bytes,
                                                size_t(run) * block_bytes, kind, stream.stream);
                e != cudaSuccess)
                return cuda.fail_cuda(e,
                                      "swap_blocks: cudaMemcpyAsync of " +
                                          format_bytes(size_t(run) * block_bytes) + " (cache " +
                                          std::to_string(c) + ", pair " + std::to_string(p) + ")",
                                      stream.device);
            p += run;
        }
    }
    return PAGODA_OK;
}

}  // namespace pagoda::cuda
