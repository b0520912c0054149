// Checks of COPY_BLOCKS and SWAP_BLOCKS: the descriptor (sizes; SWAP_BLOCKS' direction) and, at
// launch, the host arrays it points to. Every message names the op that was asked for, though
// the two share one struct.
#include "check_helpers.hpp"
#include "op_checks.hpp"

namespace pagoda::plugin {

namespace {

pagoda_status_t check_block_copy(const Reporter &r, const char *op,
                                 const pagoda_op_copy_blocks_t &a) {
    const std::string p = std::string(op) + ": ";
    if (a.src_num_blocks <= 0 || a.dst_num_blocks <= 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p + "src_num_blocks " + std::to_string(a.src_num_blocks) +
                          " and dst_num_blocks " + std::to_string(a.dst_num_blocks) +
                          " must be positive");
    // Zero caches or zero pairs is a valid launch that copies nothing.
    if (a.n_caches < 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p + "n_caches " + std::to_string(a.n_caches) + " is negative");
    if (a.n_pairs < 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p + "n_pairs " + std::to_string(a.n_pairs) + " is negative");
    if (a.block_bytes <= 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p + "block_bytes " + std::to_string(a.block_bytes) + " must be positive");
    return PAGODA_OK;
}

}  // namespace

pagoda_status_t check_copy_blocks(const Reporter &r, const pagoda_op_copy_blocks_t &a) {
    return check_block_copy(r, "copy_blocks", a);
}

pagoda_status_t check_swap_blocks(const Reporter &r, const pagoda_op_copy_blocks_t &a) {
    const int64_t direction = raw_enum(a.direction);
    if (direction != PAGODA_SWAP_OUT && direction != PAGODA_SWAP_IN)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      "swap_blocks: direction " + std::to_string(direction) +
                          " is neither PAGODA_SWAP_OUT nor PAGODA_SWAP_IN");
    return check_block_copy(r, "swap_blocks", a);
}

pagoda_status_t check_block_pairs(const Reporter &r, const char *op,
                                  const pagoda_op_copy_blocks_t &a) {
    // An empty launch reads none of the arrays, so they may be NULL.
    if (a.n_pairs == 0 || a.n_caches == 0) return PAGODA_OK;
    const std::string p = std::string(op) + ": ";
    if (a.src_caches == nullptr || a.dst_caches == nullptr || a.block_pairs == nullptr)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p +
                          (a.src_caches == nullptr   ? "src_caches"
                           : a.dst_caches == nullptr ? "dst_caches"
                                                     : "block_pairs") +
                          " is NULL");
    for (int64_t c = 0; c < a.n_caches; ++c) {
        if (a.src_caches[c] == nullptr || a.dst_caches[c] == nullptr)
            return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                          p + (a.src_caches[c] == nullptr ? "src_caches[" : "dst_caches[") +
                              std::to_string(c) + "] is NULL");
    }
    // Even entries are sources, odd ones destinations; each block's byte offset must be
    // addressable, since the copy computes id × block_bytes.
    for (int64_t i = 0; i < 2 * a.n_pairs; ++i) {
        const int64_t block = a.block_pairs[i];
        const bool is_dst = i % 2 != 0;
        const int64_t limit = is_dst ? a.dst_num_blocks : a.src_num_blocks;
        int64_t offset = 0;
        if (block < 0 || block >= limit || __builtin_mul_overflow(block, a.block_bytes, &offset))
            return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                          p + "pair " + std::to_string(i / 2) + " has " +
                              (is_dst ? "destination" : "source") + " block " +
                              std::to_string(block) + " (block_pairs[" + std::to_string(i) +
                              "])" +
                              (block < 0        ? ", which is negative"
                               : block >= limit ? ", past the cache's " + std::to_string(limit) +
                                                      " blocks"
                                                : ", too far to address"));
    }
    return PAGODA_OK;
}

}  // namespace pagoda::plugin
