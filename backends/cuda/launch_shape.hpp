// Launch shapes of the dense kernels (embedding, rmsnorm, rope, elementwise, rowwise): how many
// threads a row's block gets, how many blocks a grid-stride loop is launched with, and whether
// rows allow 16-byte vector access. Plain C++ without CUDA headers, so a host test checks it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pagoda::cuda {

inline constexpr int kWarpThreads = 32;
inline constexpr int kMaxBlockThreads = 1024;
// Grid-stride kernels are launched with at most this many blocks and loop over the rest, so a
// huge input never asks for an invalid grid (and the block count stays an int).
inline constexpr int64_t kMaxGridBlocks = 65535;

// Threads for a block that works through `units` independent pieces of one row (vectors or
// elements): one piece per thread up to `max_threads`, rounded up to whole warps (the block
// reductions shuffle whole warps), never below one warp. `max_threads` is a multiple of 32.
constexpr int row_block_threads(int64_t units, int max_threads = kMaxBlockThreads) {
    if (units <= kWarpThreads) return kWarpThreads;
    if (units >= max_threads) return max_threads;
    return int((units + kWarpThreads - 1) / kWarpThreads * kWarpThreads);
}

// Blocks for a grid-stride loop over `work` items, `per_block` per block per pass:
// ceil(work / per_block) clamped to [1, kMaxGridBlocks].
constexpr unsigned grid_blocks(int64_t work, int64_t per_block) {
    if (work <= 0 || per_block <= 0) return 1;
    const int64_t wanted = work / per_block + (work % per_block != 0 ? 1 : 0);
    return unsigned(wanted < kMaxGridBlocks ? wanted : kMaxGridBlocks);
}

inline bool is_aligned(const void *p, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// Whether every row of f32 rows `ld` elements apart starting at `p` begins on a 16-byte boundary,
// so that a kernel can read and write each row four floats at a time (its tail one by one).
inline bool rows_allow_float4(const void *p, int64_t ld) {
    return is_aligned(p, 16) && ld % 4 == 0;
}

}  // namespace pagoda::cuda
