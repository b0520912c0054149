// PAGODA_OP_MATMUL: y = x·Wᵀ (+bias) (+y), W in [out, in] layout.
//
// Two routes. Decode-sized m is bound by streaming W: our own GEMV (gemv.hpp) reads W once,
// converting bf16/f16 on the fly, split over output rows on the backend's pool. Larger m is
// bound by arithmetic: OpenBLAS's sgemm, with bf16/f16 W widened to f32 a panel of rows at a
// time. sgemm runs on the calling thread with OpenBLAS's own threads (as many as the pool has)
// while our workers sleep, so the two never run on the cores at once.

// OpenBLAS's header declares C99 _Complex types, which -Wpedantic flags in C++ under clang.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cblas.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <climits>
#include <new>

#include "check_helpers.hpp"
#include "gemv.hpp"
#include "kernels.hpp"
#include "scratch.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {

constexpr const char *kOp = "matmul";

// Up to this m the GEMV runs. Measured at k = n = 4096 on Zen 5 (1 and 2 threads), it matched
// or beat sgemm up to m ≈ 64 for every weight type (sgemm led from m ≈ 128, its blocking paying
// off); 32 leaves a margin for cores with smaller L2, where re-reading a W tile per 3 x rows
// costs more.
constexpr int64_t kGemvMaxM = 32;

// Multiply-adds worth handing to another thread; fewer cost more in wake-up than they save.
constexpr int64_t kMinMacsPerChunk = 1 << 16;

// f32 elements of one widened W panel: 4 MiB stays in L2/L3 while sgemm packs it.
constexpr int64_t kPanelElems = 1 << 20;

// cblas takes int dimensions and strides.
constexpr int64_t kBlasMax = INT_MAX;

int64_t w_elem_bytes(pagoda_dtype_t d) { return d == PAGODA_DTYPE_F32 ? 4 : 2; }

void run_gemv(CpuBackend &cpu, const GemvProblem &p) {
    const int64_t tiles = (p.n + kGemvTileRows - 1) / kGemvTileRows;
    const int64_t macs_per_tile = kGemvTileRows * p.k * p.m;
    const int64_t grain = std::max<int64_t>(1, kMinMacsPerChunk / macs_per_tile);
    const bool avx2 = cpu.features().avx2_fma_f16c;
    cpu.pool().parallel_for(tiles, grain, [&](int64_t begin, int64_t end) {
        const int64_t rb = begin * kGemvTileRows, re = std::min(p.n, end * kGemvTileRows);
        if (avx2)
            gemv_avx2(p, rb, re);
        else
            gemv_portable(p, rb, re);
    });
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

pagoda_status_t run_blas(CpuBackend &cpu, const GemvProblem &p) {
    // OpenBLAS's thread count is process-wide; match it to ours before each use in case the
    // host or another library changed it.
    if (openblas_get_num_threads() != cpu.threads()) openblas_set_num_threads(cpu.threads());

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

    if (p.w_dtype == PAGODA_DTYPE_F32) {
        const auto *w = static_cast<const float *>(p.w);
        for (int64_t j0 = 0; j0 < p.n; j0 += kBlasMax)
            sgemm_panel(p, j0, std::min(kBlasMax, p.n - j0), w + j0 * p.ldw, p.ldw, beta);
        return PAGODA_OK;
    }

    // bf16/f16: widen a panel of W rows (in parallel: it is memory work), then sgemm on it.
    const int64_t panel_rows = std::min(p.n, std::max<int64_t>(16, kPanelElems / p.k / 16 * 16));
    float *panel = nullptr;
    try {
        panel = thread_scratch<struct MatmulPanelScratch>(size_t(panel_rows * p.k));
    } catch (const std::bad_alloc &) {
        return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, std::string(kOp) + ": no memory for a " +
                                                      std::to_string(panel_rows) + " x " +
                                                      std::to_string(p.k) + " f32 weight panel");
    }
    const int64_t w_bytes = w_elem_bytes(p.w_dtype);
    for (int64_t j0 = 0; j0 < p.n; j0 += panel_rows) {
        const int64_t rows = std::min(panel_rows, p.n - j0);
        cpu.pool().parallel_for(rows, rows_per_chunk(p.k), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r)
                widen_to_f32(cpu.features(),
                             static_cast<const char *>(p.w) + (j0 + r) * p.ldw * w_bytes, p.w_dtype,
                             p.k, panel + r * p.k);
        });
        sgemm_panel(p, j0, rows, panel, p.k, beta);
    }
    return PAGODA_OK;
}

}  // namespace

pagoda_status_t run_matmul(CpuBackend &cpu, const pagoda_op_matmul_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "w", a.w));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "y", a.y));
    GemvProblem p{};
    p.m = a.m;
    p.n = a.n;
    p.k = a.k;
    p.x = static_cast<const float *>(a.x);
    p.ldx = plugin::packed_or(a.ldx, a.k);
    p.w = a.w;
    p.w_dtype = a.w_dtype;
    p.ldw = plugin::packed_or(a.ldw, a.k);
    p.bias = static_cast<const float *>(a.bias);
    p.y = static_cast<float *>(a.y);
    p.ldy = plugin::packed_or(a.ldy, a.n);
    p.accumulate = (a.flags & PAGODA_MATMUL_ACCUMULATE) != 0;

    if (p.m <= kGemvMaxM || !blas_can_run(p)) {
        run_gemv(cpu, p);
        return PAGODA_OK;
    }
    return run_blas(cpu, p);
}

}  // namespace pagoda::cpu
