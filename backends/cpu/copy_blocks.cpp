// COPY_BLOCKS and SWAP_BLOCKS: whole-block copies across every layer's K and V caches in one
// launch (thesis §5.5.1, optimisation 3: batch the many small copies of copy-on-write).
// On the CPU the device's memory is host memory, so a swap in either direction is the same copy
// and `direction` is only checked (plugin::check_swap_blocks), never acted on.
#include <cstring>

#include "check_helpers.hpp"
#include "kernels.hpp"
#include "op_checks.hpp"

namespace pagoda::cpu {

namespace {

// `op` names the requested op in messages.
pagoda_status_t copy_blocks(CpuBackend &cpu, const char *op, const pagoda_op_copy_blocks_t &a) {
    // All arrays and ids are checked before any copy, so a failed launch changes nothing.
    PAGODA_PLUGIN_CHECK(plugin::check_block_pairs(cpu, op, a));
    if (a.n_pairs == 0 || a.n_caches == 0) return PAGODA_OK;

    // One cache per work item, its pairs in order, so a list that chains copies (a→b, b→c)
    // reads as it would sequentially.
    const size_t bytes = size_t(a.block_bytes);
    cpu.pool().parallel_for(a.n_caches, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
            const auto *src = static_cast<const unsigned char *>(a.src_caches[c]);
            auto *dst = static_cast<unsigned char *>(a.dst_caches[c]);
            for (int64_t p = 0; p < a.n_pairs; ++p) {
                // memmove: a block copied onto itself in the same cache is allowed.
                std::memmove(dst + int64_t(a.block_pairs[2 * p + 1]) * a.block_bytes,
                             src + int64_t(a.block_pairs[2 * p]) * a.block_bytes, bytes);
            }
        }
    });
    return PAGODA_OK;
}

}  // namespace

pagoda_status_t run_copy_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &a) {
    return copy_blocks(cpu, "copy_blocks", a);
}

pagoda_status_t run_swap_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &a) {
    return copy_blocks(cpu, "swap_blocks", a);
}

}  // namespace pagoda::cpu
