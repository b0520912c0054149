// What the int8 GEMV kernels share around their arithmetic: writing a finished output, and the
// row-at-a-time builds' walk over W rows and groups of x rows. Internal linkage: each kernel file
// compiles its own copy with its own instruction set, so an AVX-512 build of these never stands
// in for the portable one at link time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "gemv.hpp"

namespace pagoda::cpu {
namespace {

// y[i][j] = dot, plus W row j's bias and y's old value where the product asks for them.
inline void store_output(const GemvProblem &p, int64_t i, int64_t j, float dot) {
    float &y = p.y[i * p.ldy + j];
    if (p.bias != nullptr) dot += p.bias[j];
    if (p.accumulate) dot += y;
    y = dot;
}

// Calls f(std::integral_constant<int, group>{}) for a group size in 1..kMax known only at run
// time, so the kernel's loops over the group's rows unroll.
template <int kMax, int G = 1, typename F>
inline void with_group_size(int64_t group, F &&f) {
    if constexpr (G < kMax) {
        if (group == G) return f(std::integral_constant<int, G>{});
        with_group_size<kMax, G + 1>(group, f);
    } else {
        f(std::integral_constant<int, kMax>{});
    }
}

// Outputs [row_begin, row_end) of every x row: W rows in tiles of kGemvTileRows (kept in cache
// while x goes by), x rows in groups of up to kGroup that meet each W row together.
// dots(size, w_row, i0, dot) fills dot[0 .. size) for x rows i0 .. i0 + size, `size` a
// std::integral_constant.
template <int kGroup, typename Dots>
void rows_in_groups(const GemvProblem &p, int64_t row_begin, int64_t row_end, Dots &&dots) {
    for (int64_t j0 = row_begin; j0 < row_end; j0 += kGemvTileRows) {
        const int64_t tile_end = std::min(row_end, j0 + kGemvTileRows);
        for (int64_t i0 = 0; i0 < p.m; i0 += kGroup) {
            const int64_t group = std::min<int64_t>(kGroup, p.m - i0);
            for (int64_t j = j0; j < tile_end; ++j) {
                const auto *w = static_cast<const unsigned char *>(p.w) + j * p.w_row_bytes;
                float dot[kGroup];
                with_group_size<kGroup>(group, [&](auto size) { dots(size, w, i0, dot); });
                for (int64_t g = 0; g < group; ++g) store_output(p, i0 + g, j, dot[g]);
            }
        }
    }
}

// The tiled kernels' walk over outputs [row_begin, row_end) of m x rows: W rows in chunks of 32
// (32 · k bytes, 68 KiB of Q8_0 at k = 2048, stay in L2 while every block of x rows meets them,
// so W crosses from memory once however many rows x has), x rows in blocks of up to kXRows, and
// each chunk in tiles of kTileRows W rows and a smaller last one. tile(size, i0, rows, j) does
// W rows j .. j + size for x rows i0 .. i0 + rows, `size` a std::integral_constant.
template <int kTileRows, int64_t kXRows, typename Tile>
void tiles_in_chunks(int64_t m, int64_t row_begin, int64_t row_end, Tile &&tile) {
    constexpr int64_t kChunkRows = 32;
    for (int64_t c0 = row_begin; c0 < row_end; c0 += kChunkRows) {
        const int64_t c1 = std::min(row_end, c0 + kChunkRows);
        for (int64_t i0 = 0; i0 < m; i0 += kXRows) {
            const int64_t rows = std::min(kXRows, m - i0);
            int64_t j = c0;
            for (; j + kTileRows <= c1; j += kTileRows)
                tile(std::integral_constant<int, kTileRows>{}, i0, rows, j);
            if (j < c1) with_group_size<kTileRows>(c1 - j, [&](auto size) { tile(size, i0, rows, j); });
        }
    }
}

}  // namespace
}  // namespace pagoda::cpu
