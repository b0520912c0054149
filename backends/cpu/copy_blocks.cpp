// COPY_BLOCKS and SWAP_BLOCKS: whole-block copies across every layer's K and V caches in one
// launch (thesis §5.5.1, optimisation 3: batch the many small copies of copy-on-write).
// On the CPU the device's memory is host memory, so a swap in either direction is the same copy
// and `direction` is only checked, never acted on.
#include <cstring>
#include <string>

#include "kernels.hpp"

namespace pagoda::cpu {

namespace {
// Read as an int: a C caller may store any value in the enum field.
int raw_direction(const pagoda_op_copy_blocks_t &a) {
    int v;
    std::memcpy(&v, &a.direction, sizeof v);
    return v;
}
}  // namespace

pagoda_status_t check_copy_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &a) {
    if (a.src_num_blocks <= 0 || a.dst_num_blocks <= 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "copy_blocks: src_num_blocks " + std::to_string(a.src_num_blocks) +
                            " and dst_num_blocks " + std::to_string(a.dst_num_blocks) +
                            " must be positive");
    if (a.n_caches < 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "copy_blocks: n_caches " + std::to_string(a.n_caches) + " is negative");
    if (a.n_pairs < 0)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "copy_blocks: n_pairs " + std::to_string(a.n_pairs) + " is negative");
    if (a.block_bytes <= 0)
        return cpu.fail(
            PAGODA_ERR_INVALID_ARGUMENT,
            "copy_blocks: block_bytes " + std::to_string(a.block_bytes) + " must be positive");
    return PAGODA_OK;
}

pagoda_status_t run_copy_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &a) {
    if (a.n_pairs == 0 || a.n_caches == 0) return PAGODA_OK;
    if (a.src_caches == nullptr || a.dst_caches == nullptr || a.block_pairs == nullptr)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string("copy_blocks: ") +
                            (a.src_caches == nullptr   ? "src_caches"
                             : a.dst_caches == nullptr ? "dst_caches"
                                                       : "block_pairs") +
                            " is NULL");
    for (int64_t c = 0; c < a.n_caches; ++c) {
        if (a.src_caches[c] == nullptr || a.dst_caches[c] == nullptr)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            std::string("copy_blocks: ") +
                                (a.src_caches[c] == nullptr ? "src_caches[" : "dst_caches[") +
                                std::to_string(c) + "] is NULL");
    }
    // All ids are checked before any copy, so a failed launch changes nothing.
    for (int64_t i = 0; i < 2 * a.n_pairs; ++i) {
        const int64_t block = a.block_pairs[i];
        const int64_t limit = i % 2 ? a.dst_num_blocks : a.src_num_blocks;
        int64_t offset = 0;
        if (block < 0 || block >= limit || __builtin_mul_overflow(block, a.block_bytes, &offset))
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            "copy_blocks: pair " + std::to_string(i / 2) + " has " +
                                (i % 2 ? "destination" : "source") + " block " +
                                std::to_string(block) + " (block_pairs[" + std::to_string(i) +
                                "])" +
                                (block < 0       ? ", which is negative"
                                 : block >= limit ? ", past the cache's " + std::to_string(limit) + " blocks"
                                                  : ", too far to address"));
    }

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

pagoda_status_t check_swap_blocks(CpuBackend &cpu, const pagoda_op_copy_blocks_t &a) {
    const int direction = raw_direction(a);
    if (direction != PAGODA_SWAP_OUT && direction != PAGODA_SWAP_IN)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        "swap_blocks: direction " + std::to_string(direction) +
                            " is neither PAGODA_SWAP_OUT nor PAGODA_SWAP_IN");
    return check_copy_blocks(cpu, a);
}

}  // namespace pagoda::cpu
