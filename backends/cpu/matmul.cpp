// PAGODA_OP_MATMUL: y = x·Wᵀ (+bias) (+y), W in [out, in] layout.
//
// Two routes. Decode-sized m is bound by streaming W: our own GEMV (gemv.hpp) reads W once,
// converting bf16/f16 on the fly (block types in registers or a chunk of each row at a time;
// for a few rows, where PAGODA_MATMUL_QUANTIZE_X allows, on int8 activations: gemv_q8x.hpp,
// and per whole K block where PAGODA_MATMUL_QUANTIZE_X_BLOCK widens the leave: gemv_q8k.hpp),
// split over output rows on the backend's pool. Larger m is bound by arithmetic: OpenBLAS's
// sgemm, single-threaded, on panels of W rows our pool's threads take in turn, each widening
// its bf16/f16 or block panel to f32 in its own scratch first, so the panel is still in that
// core's cache when sgemm packs it. OpenBLAS's own threads are not used: after each call they
// keep spinning for a while (OpenBLAS's THREAD_TIMEOUT, about 2^28 cycles by default), and on
// a machine with as many cores as threads that spinning took the cores from our pool's next
// op. A 1.1B F16 prefill of 512 tokens on 2 cores ran at 63-73 tokens/s that way, 81-83 now;
// one shared panel widened by all threads, then split over x's rows, gave 75-76.
//
// A host may pin one route through ops.h's `variant` (kVariantNames, after measuring them on
// its shapes); 0 keeps the rules of run_f32.
//
// bf16/f16 activations (x or y) are staged in f32 a block of rows at a time: x rows widened,
// y computed in f32 (from its widened old value when accumulating) and rounded once, so both
// routes run on f32 exactly as for f32 activations. Staging costs O(m·(k+n)) conversions
// against the O(m·n·k) product.

// OpenBLAS's header declares C99 _Complex types, which -Wpedantic flags in C++ under clang.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cblas.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <atomic>
#include <climits>
#include <new>

#include "block_formats.hpp"
#include "check_helpers.hpp"
#include "gemv.hpp"
#include "gemv_q8k.hpp"
#include "gemv_q8x.hpp"
#include "kernels.hpp"
#include "matmul.hpp"
#include "op_checks.hpp"
#include "scratch.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {

constexpr const char *kOp = "matmul";

// Up to this m the GEMV runs. Measured at k = n = 4096 on Zen 5 (1 and 2 threads), it matched
// or beat sgemm up to m ≈ 64 for every weight type (sgemm led from m ≈ 128, its blocking paying
// off). On a 2-core EPYC VM, `pagoda tune` on the 1.1B F16 shapes found the GEMV 1.18× faster
// than sgemm at 64 rows summed over the shapes, 1.07× at 128 and even from 256 (a 64-token
// prefill ran 83-85 tokens/s against 74 with the switch at 32).
constexpr int64_t kGemvMaxM = 64;

// Multiply-adds worth handing to another thread; fewer cost more in wake-up than they save.
constexpr int64_t kMinMacsPerChunk = 1 << 16;

// f32 elements of one thread's widened W panel (8 MiB): sgemm packs all of x again for every
// panel, so a panel needs a few hundred rows for that copy to stay small against the product
// (256 rows at Llama's k = 8192).
constexpr int64_t kPanelElems = int64_t(1) << 21;

// f32 elements of the staged x and y rows of one block: 32 MiB, so a prefill's block is still
// hundreds of rows (k + n = 18432 for Llama's FFN gives 455), keeping sgemm efficient and the
// re-widening of half W per block small.
constexpr int64_t kStageElems = int64_t(1) << 23;

// cblas takes int dimensions and strides.
constexpr int64_t kBlasMax = INT_MAX;

// ops.h's `variant` values, 1-based in kVariantNames' order; 0 = the rules of run_f32.
enum Variant : int32_t { kRules = 0, kGemv = 1, kGemvInt8 = 2, kSgemm = 3 };
constexpr const char *kVariantNames[] = {"gemv", "gemv_int8", "sgemm"};
constexpr int32_t kVariants = int32_t(sizeof kVariantNames / sizeof kVariantNames[0]);

int64_t elem_bytes(pagoda_dtype_t d) { return d == PAGODA_DTYPE_F32 ? 4 : 2; }

// W's rows split over the pool in whole tiles: `rows(row_begin, row_end)` per chunk.
template <typename Rows>
void split_rows(CpuBackend &cpu, const GemvProblem &p, Rows rows) {
    const int64_t tiles = (p.n + kGemvTileRows - 1) / kGemvTileRows;
    const int64_t macs_per_tile = kGemvTileRows * p.k * p.m;
    const int64_t grain = std::max<int64_t>(1, kMinMacsPerChunk / macs_per_tile);
    cpu.pool().parallel_for(tiles, grain, [&](int64_t begin, int64_t end) {
        rows(begin * kGemvTileRows, std::min(p.n, end * kGemvTileRows));
    });
}

// The GEMV streams W once per block of x rows, which stays in cache while every W tile meets
// it; a block of many MiB falls out between tiles.
constexpr int64_t kGemvXBlockBytes = int64_t(2) << 20;

void run_gemv(CpuBackend &cpu, const GemvProblem &p) {
    const GemvRowsFn rows = cpu.features().avx2_fma_f16c ? gemv_avx2 : gemv_portable;
    const int64_t block =
        std::max<int64_t>(kGemvMaxM, kGemvXBlockBytes / (p.k * int64_t(sizeof(float))));
    for (int64_t i0 = 0; i0 < p.m; i0 += block) {
        GemvProblem q = p;
        q.m = std::min(block, p.m - i0);
        q.x = p.x + i0 * p.ldx;
        q.y = p.y + i0 * p.ldy;
        split_rows(cpu, q, [&](int64_t begin, int64_t end) { rows(q, begin, end); });
    }
}

bool blas_can_run(const GemvProblem &p) {
    return p.k <= kBlasMax && p.ldx <= kBlasMax && p.ldy <= kBlasMax &&
           (p.w_dtype != PAGODA_DTYPE_F32 || p.ldw <= kBlasMax);
}

// y[i0.., j0..] (= or +=) x[i0..] · W_panelᵀ for `rows` W rows at `w` (f32, stride ldw); m and
// the panel are cut to int-sized pieces.
void sgemm_panel(const GemvProblem &p, int64_t j0, int64_t rows, const float *w, int64_t ldw,
                 float beta) {
    for (int64_t i0 = 0; i0 < p.m; i0 += kBlasMax) {
        const int64_t mi = std::min(kBlasMax, p.m - i0);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(mi), int(rows), int(p.k), 1.0f,
                    p.x + i0 * p.ldx, int(p.ldx), w, int(ldw), beta, p.y + i0 * p.ldy + j0,
                    int(p.ldy));
    }
}

// W rows per sgemm call: as many as kPanelElems allows (whole 16-row groups), but no more than
// keeps every thread busy.
int64_t blas_panel_rows(const GemvProblem &p, int threads) {
    const int64_t by_memory = std::max<int64_t>(16, kPanelElems / p.k / 16 * 16);
    const int64_t per_thread = (p.n + threads - 1) / threads;
    return std::min(by_memory, std::max<int64_t>(16, (per_thread + 15) / 16 * 16));
}

pagoda_status_t run_blas(CpuBackend &cpu, const GemvProblem &p) {
    // OpenBLAS's thread count is process-wide: set it to 1 before each use, in case the host or
    // another library changed it.
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);

    // sgemm has no bias term: put the bias in y first and let sgemm add onto it (beta = 1).
    float beta = p.accumulate ? 1.0f : 0.0f;
    if (p.bias != nullptr) {
        cpu.pool().parallel_for(p.m, rows_per_chunk(p.n), [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                float *y = p.y + i * p.ldy;
                if (p.accumulate)
                    for (int64_t j = 0; j < p.n; ++j) y[j] += p.bias[j];
                else
                    for (int64_t j = 0; j < p.n; ++j) y[j] = p.bias[j];
            }
        });
        beta = 1.0f;
    }

    const int64_t panel_rows = blas_panel_rows(p, cpu.threads());
    const int64_t panels = (p.n + panel_rows - 1) / panel_rows;
    std::atomic<bool> out_of_memory{false};
    cpu.pool().parallel_for(panels, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t j0 = i * panel_rows, rows = std::min(panel_rows, p.n - j0);
            if (p.w_dtype == PAGODA_DTYPE_F32) {
                sgemm_panel(p, j0, rows, static_cast<const float *>(p.w) + j0 * p.ldw, p.ldw, beta);
                continue;
            }
            float *panel = nullptr;
            try {
                panel = thread_scratch<struct MatmulPanelScratch>(size_t(rows * p.k));
            } catch (const std::bad_alloc &) {
                out_of_memory = true;
                return;
            }
            for (int64_t r = 0; r < rows; ++r)
                widen_to_f32(cpu.features(),
                             static_cast<const char *>(p.w) + (j0 + r) * p.w_row_bytes, p.w_dtype,
                             p.k, panel + r * p.k);
            sgemm_panel(p, j0, rows, panel, p.k, beta);
        }
    });
    if (out_of_memory)
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, std::string(kOp) + ": no memory for a " +
                                                      std::to_string(panel_rows) + " x " +
                                                      std::to_string(p.k) + " f32 weight panel");
    return PAGODA_OK;
}

// The GEMV on x rounded to int8 (gemv_q8x.hpp): x is quantized once on the calling thread
// (m·k values against W's n·k), then the pool splits W's rows as for run_gemv.
pagoda_status_t run_gemv_q8x(CpuBackend &cpu, const GemvProblem &p) {
    const int64_t runs = p.k / kQ8Run;
    const bool avx2 = cpu.features().avx2_fma_f16c, avx512 = cpu.features().avx512_vnni;
    const bool tiles = q8x_tiles_serve(p.w_dtype, p.m, p.k, avx2, avx512);
    // Per row: the int8 values (k/4 floats' room), two floats per run; and as much again for
    // the tiled kernel's regrouped copy.
    const int64_t row_floats = p.k / 4 + 2 * runs;
    int8_t *q = nullptr;
    float *scale = nullptr;
    try {
        float *area = thread_scratch<struct MatmulQ8Scratch>(size_t(p.m * row_floats * (tiles ? 2 : 1)));
        scale = area;
        q = reinterpret_cast<int8_t *>(area + 2 * p.m * runs);
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, std::string(kOp) + ": no memory to round " +
                                                      std::to_string(p.m) + " x " +
                                                      std::to_string(p.k) + " activations to int8");
    }
    float *sum = scale + p.m * runs;
    if (avx2)
        quantize_rows_avx2(p.x, p.ldx, p.m, p.k, q, scale, sum);
    else
        quantize_rows_portable(p.x, p.ldx, p.m, p.k, q, scale, sum);
    const Q8Rows x{p.m, p.k, q, scale, sum};
    if (tiles) {
        float *tile_scale = scale + p.m * row_floats;
        auto *tile_q = reinterpret_cast<unsigned char *>(tile_scale + 2 * p.m * runs);
        auto build = gemv_q8x_tiles_avx512;
        if (avx512) {
            regroup_q8x_rows_avx512(x, tile_q, tile_scale);
        } else {
            regroup_q8x_rows_avx2(x, tile_q);
            tile_scale = scale;  // the AVX2 build reads x's own scales
            build = gemv_q8x_tiles_avx2;
        }
        const Q8TileRows xt{p.m, p.k, tile_q, tile_scale};
        split_rows(cpu, p, [&](int64_t begin, int64_t end) { build(p, xt, begin, end); });
        return PAGODA_OK;
    }
    const auto rows = avx512 && p.w_dtype == PAGODA_DTYPE_Q8_0 ? gemv_q8x_avx512
                      : avx2                                     ? gemv_q8x_avx2
                                                                 : gemv_q8x_portable;
    split_rows(cpu, p, [&](int64_t begin, int64_t end) { rows(p, x, begin, end); });
    return PAGODA_OK;
}

// int8 x rows per pass over W in run_gemv_q8k: 256 KiB of them (so they and a W tile stay in
// L2), and at least 16.
constexpr int64_t kQ8XBlockBytes = int64_t(256) << 10, kQ8XBlockRowsMin = 16;

// The same on x rounded per W block (gemv_q8k.hpp), for the K types.
pagoda_status_t run_gemv_q8k(CpuBackend &cpu, const GemvProblem &p) {
    const int64_t blocks = p.k / kQ8Block, groups = p.k / kQ8Group;
    int8_t *q = nullptr;
    float *scale = nullptr;
    int16_t *sum = nullptr;
    try {
        // Scales, then the group sums (two per float), then the int8 values (four per float).
        float *area = thread_scratch<struct MatmulQ8BlockScratch>(
            size_t(p.m * (blocks + groups / 2 + p.k / 4)));
        scale = area;
        sum = reinterpret_cast<int16_t *>(area + p.m * blocks);
        q = reinterpret_cast<int8_t *>(area + p.m * (blocks + groups / 2));
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, std::string(kOp) + ": no memory to round " +
                                                      std::to_string(p.m) + " x " +
                                                      std::to_string(p.k) + " activations to int8");
    }
    const bool avx2 = cpu.features().avx2_fma_f16c;
    const auto quantize = avx2 ? quantize_blocks_avx2 : quantize_blocks_portable;
    cpu.pool().parallel_for(p.m, rows_per_chunk(p.k), [&](int64_t begin, int64_t end) {
        quantize(p.x + begin * p.ldx, p.ldx, end - begin, p.k, q + begin * p.k,
                 scale + begin * blocks, sum + begin * groups);
    });
    const auto rows = cpu.features().avx512_vnni ? gemv_q8k_avx512
                      : avx2                     ? gemv_q8k_avx2
                                                 : gemv_q8k_portable;
    // Blocks of x rows that stay in cache while every W tile meets them (a prefill's x would
    // not), each block a pass over W.
    const int64_t block_rows = std::max<int64_t>(kQ8XBlockRowsMin, kQ8XBlockBytes / p.k);
    for (int64_t i0 = 0; i0 < p.m; i0 += block_rows) {
        GemvProblem part = p;
        part.m = std::min(block_rows, p.m - i0);
        part.x = p.x + i0 * p.ldx;
        part.y = p.y + i0 * p.ldy;
        const Q8BlockRows x{part.m, p.k, q + i0 * p.k, scale + i0 * blocks, sum + i0 * groups};
        split_rows(cpu, part, [&](int64_t begin, int64_t end) { rows(part, x, begin, end); });
    }
    return PAGODA_OK;
}

// The int8 route that the flags allow for W's type: per block where the leave is that wide and
// the type's blocks are K blocks, else per 32 values.
pagoda_status_t run_int8(CpuBackend &cpu, const GemvProblem &p) {
    if (p.quantize_x_block && q8k_serves(p.w_dtype)) return run_gemv_q8k(cpu, p);
    return run_gemv_q8x(cpu, p);
}

// Whether the rules take the int8 route (where the flag allows it): for the few rows where it
// beats the float GEMV, and at every m where a tiled Q8_0 kernel runs, which beats the float
// GEMV and, with AVX-512, sgemm on widened panels too (gemv_q8x.hpp).
bool int8_pays(const CpuBackend &cpu, const GemvProblem &p) {
    if (p.quantize_x_block && q8k_serves(p.w_dtype)) return p.m <= q8k_max_rows(p.w_dtype);
    const bool avx2 = cpu.features().avx2_fma_f16c, avx512 = cpu.features().avx512_vnni;
    return p.m <= q8x_max_rows(p.w_dtype, avx512) ||
           q8x_tiles_serve(p.w_dtype, p.m, p.k, avx2, avx512);
}

// The f32 problem on f32 activations: the pinned variant, or by the rules the GEMV for
// decode-sized m (on int8 x where the flag allows it and that pays, gemv_q8x.hpp), else sgemm.
pagoda_status_t run_f32(CpuBackend &cpu, const GemvProblem &p, int32_t variant) {
    switch (variant) {
        case kGemv: run_gemv(cpu, p); return PAGODA_OK;
        case kGemvInt8: return run_int8(cpu, p);
        case kSgemm: return run_blas(cpu, p);
        default: break;
    }
    if (p.quantize_x && int8_pays(cpu, p)) return run_int8(cpu, p);
    if (p.m <= kGemvMaxM || !blas_can_run(p)) {
        run_gemv(cpu, p);
        return PAGODA_OK;
    }
    return run_blas(cpu, p);
}

// Half x or y: each block of rows is staged in f32 (see the top of the file) and run by run_f32.
pagoda_status_t run_staged(CpuBackend &cpu, const pagoda_op_matmul_t &a, const GemvProblem &p) {
    // A pinned GEMV takes a whole prefill's rows in one block; sgemm wants hundreds per block.
    const int64_t min_block = a.variant == kGemv || a.variant == kGemvInt8 ? 1 : kGemvMaxM + 1;
    const bool half_x = a.x_dtype != PAGODA_DTYPE_F32, half_y = a.y_dtype != PAGODA_DTYPE_F32;
    const int64_t staged_row = (half_x ? p.k : 0) + (half_y ? p.n : 0);
    // Blocks past the GEMV's m, so a prefill's blocks stay on sgemm.
    const int64_t block =
        std::min(p.m, std::max(min_block, kStageElems / std::max<int64_t>(1, staged_row)));
    float *x_stage = nullptr, *y_stage = nullptr;
    try {
        if (half_x) x_stage = thread_scratch<struct MatmulXStage>(size_t(block * p.k));
        if (half_y) y_stage = thread_scratch<struct MatmulYStage>(size_t(block * p.n));
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY,
                        std::string(kOp) + ": no memory to stage " + std::to_string(block) +
                            " rows of bf16/f16 activations in f32 (k = " + std::to_string(p.k) +
                            ", n = " + std::to_string(p.n) + ")");
    }
    const auto *x = static_cast<const char *>(a.x);
    auto *y = static_cast<char *>(a.y);
    const int64_t x_bytes = elem_bytes(a.x_dtype), y_bytes = elem_bytes(a.y_dtype);
    for (int64_t i0 = 0; i0 < p.m; i0 += block) {
        const int64_t rows = std::min(block, p.m - i0);
        GemvProblem q = p;
        q.m = rows;
        if (!half_x) q.x = p.x + i0 * p.ldx;
        if (!half_y) q.y = p.y + i0 * p.ldy;
        if (half_x) {
            cpu.pool().parallel_for(rows, rows_per_chunk(p.k), [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r)
                    widen_to_f32(cpu.features(), x + (i0 + r) * p.ldx * x_bytes, a.x_dtype, p.k,
                                 x_stage + r * p.k);
            });
            q.x = x_stage;
            q.ldx = p.k;
        }
        if (half_y) {
            if (p.accumulate)
                cpu.pool().parallel_for(rows, rows_per_chunk(p.n), [&](int64_t begin, int64_t end) {
                    for (int64_t r = begin; r < end; ++r)
                        widen_to_f32(cpu.features(), y + (i0 + r) * p.ldy * y_bytes, a.y_dtype,
                                     p.n, y_stage + r * p.n);
                });
            q.y = y_stage;
            q.ldy = p.n;
        }
        PAGODA_PLUGIN_CHECK(run_f32(cpu, q, a.variant));
        if (half_y)
            cpu.pool().parallel_for(rows, rows_per_chunk(p.n), [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r)
                    narrow_from_f32(cpu.features(), y_stage + r * p.n, a.y_dtype, p.n,
                                    y + (i0 + r) * p.ldy * y_bytes);
            });
    }
    return PAGODA_OK;
}

}  // namespace

pagoda_status_t run_f32_product(CpuBackend &cpu, const GemvProblem &p) {
    return run_f32(cpu, p, kRules);
}

const char *matmul_variant_name(int32_t variant) {
    return variant >= 1 && variant <= kVariants ? kVariantNames[variant - 1] : nullptr;
}

pagoda_status_t check_cpu_matmul(const plugin::Reporter &r, const pagoda_op_matmul_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_matmul_variants(r, a, kVariants));
    if (a.variant == kGemvInt8 && (a.flags & PAGODA_MATMUL_QUANTIZE_X) == 0)
        return r.fail(PAGODA_ERR_UNSUPPORTED,
                      std::string(kOp) + ": variant gemv_int8 rounds x to int8, which needs "
                                         "PAGODA_MATMUL_QUANTIZE_X (and block-quantized W)");
    if (a.variant == kSgemm) {
        // As blas_can_run, on the strides the route will see (half activations are staged
        // packed).
        const bool half_x = a.x_dtype != PAGODA_DTYPE_F32, half_y = a.y_dtype != PAGODA_DTYPE_F32;
        const int64_t ldx = half_x ? a.k : plugin::packed_or(a.ldx, a.k);
        const int64_t ldy = half_y ? a.n : plugin::packed_or(a.ldy, a.n);
        const int64_t ldw = a.w_dtype == PAGODA_DTYPE_F32 ? plugin::packed_or(a.ldw, a.k) : a.k;
        if (a.k > kBlasMax || ldx > kBlasMax || ldy > kBlasMax || ldw > kBlasMax)
            return r.fail(PAGODA_ERR_UNSUPPORTED,
                          std::string(kOp) + ": variant sgemm takes int-sized k and strides "
                                             "(k = " + std::to_string(a.k) + ")");
    }
    return PAGODA_OK;
}

pagoda_status_t run_matmul(CpuBackend &cpu, const pagoda_op_matmul_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "w", a.w));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "y", a.y));
    GemvProblem p{};
    p.m = a.m;
    p.n = a.n;
    p.k = a.k;
    // Through p.x and p.y only as f32; run_staged addresses half ones itself.
    p.x = static_cast<const float *>(a.x);
    p.ldx = plugin::packed_or(a.ldx, a.k);
    p.w = a.w;
    p.w_dtype = a.w_dtype;
    p.ldw = plugin::packed_or(a.ldw, a.k);
    const formats::BlockShape block = formats::block_shape(a.w_dtype);
    p.w_block_values = block.elements;
    p.w_block_bytes = block.bytes;
    p.w_row_bytes = p.ldw / block.elements * block.bytes;
    p.bias = static_cast<const float *>(a.bias);
    p.y = static_cast<float *>(a.y);
    p.ldy = plugin::packed_or(a.ldy, a.n);
    p.accumulate = (a.flags & PAGODA_MATMUL_ACCUMULATE) != 0;
    p.quantize_x = (a.flags & PAGODA_MATMUL_QUANTIZE_X) != 0;
    p.quantize_x_block = (a.flags & PAGODA_MATMUL_QUANTIZE_X_BLOCK) != 0;

    if (a.x_dtype == PAGODA_DTYPE_F32 && a.y_dtype == PAGODA_DTYPE_F32)
        return run_f32(cpu, p, a.variant);
    return run_staged(cpu, a, p);
}

}  // namespace pagoda::cpu
