// PAGODA_OP_MATMUL: y[m,n] = x[m,k] · W[n,k]ᵀ (+ bias) (+ y), W in Hugging Face's [out, in]
// layout; x, W and y each f32, bf16 or f16 (ops.h), W also a quantized block type (Q8_0, Q4_0,
// Q4_K, Q5_K, Q6_K), the bias f32. Five routes, by types and m:
//   bf16/f16 or block W, m ≤ kGemvMaxM, any x and y
//                           our GEMV (gemv_kernel.cu): decode is bound by streaming W once;
//                           blocks are decoded in registers;
//   f32 x, f32 W, f32 y     cuBLASLt GEMM, f32 compute, bias fused as the epilogue;
//   f32 x, bf16/f16 or block W, f32 y, larger m
//                           W widened (blocks decoded exactly) to f32 a panel of rows at a time
//                           into per-device scratch (widen_kernel.cu), then the f32 GEMM on each
//                           panel: ops.h promises f32 compute, so x must not be rounded to W's
//                           type;
//   x and W of one half type, y f32 (or y of that type too and no bias)
//                           cuBLASLt GEMM on tensor cores straight on x and W with f32 compute
//                           and output in y's type (the f32 bias epilogue needs an f32 D:
//                           cuBLASLt's bias has D's type outside FP8). Block W with half x and
//                           PAGODA_MATMUL_ROUND_W counts as x's type: each panel of rows is
//                           decoded and rounded to it in scratch first (widen_kernel.cu);
//   anything else, larger m ("staged")
//                           a block of rows at a time: half x whose type W does not share
//                           widened to f32, y computed in f32 by one of the routes above into
//                           per-device scratch and rounded once into half y (widen_kernel.cu).
// A host may pin the route through ops.h's `variant`: 1 "gemv" (our GEMV, any m on bf16/f16 or
// block W, one pass over W per kGemvRowsPerPass rows of x), 2 "gemm" (the cuBLAS(Lt) routes
// below, for rows that fit a panel), so that the GEMV/GEMM switch point is measured per shape.
// Accumulating is beta = 1 with C = D = y (staged half y: its widened old value). Where cuBLASLt
// has no algorithm for a shape or alignment (with the bias epilogue or at all), cublasGemmEx runs
// and bias_kernel.cu adds the bias (D is then f32, so nothing is rounded twice).
//
// cuBLAS is column-major. A row-major matrix with row stride ld is the column-major matrix of
// its transpose with the same ld, so the row-major product y = x·Wᵀ is, column-major,
// yᵀ[n,m] = W'ᵀ · xᵀ where W' is W read column-major ([k,n], ld = ldw): one GEMM with
// transa = T, transb = N, no copies. The bias then runs along D's rows (n of them), which is
// what CUBLASLT_EPILOGUE_BIAS broadcasts.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>

#include "block_formats.hpp"
#include "cuda_gemm.hpp"
#include "cuda_kernels.hpp"
#include "gemv_kernel.hpp"
#include "names.hpp"
#include "widen_kernel.hpp"

namespace pagoda::cuda {

namespace {

constexpr const char *kOp = "matmul";

// Up to this m, bf16/f16 or block W runs our GEMV rather than a GEMM. A first guess from the GEMV
// reading W once per kGemvRowsPerPass rows of x while widening costs 6 extra bytes per weight.
// On an H200 (tests/gpu/NOTES.md) the widening route at m = 16 ran 10× slower than cuBLAS on
// half x, and the GEMV at m = 4 at 0.4-0.6 of cuBLAS's speed: the switch point and the GEMV's
// shape for 2-8 rows are still to be tuned against the tensor-core GEMM.
constexpr int64_t kGemvMaxM = 8;
static_assert(kGemvMaxM <= kGemvRowsPerPass, "the GEMV route must be one pass over W");


enum class Route { Gemv, F32Gemm, WidenedWeight, HalfGemm, Staged };

// ops.h's `variant` values, 1-based in kVariantNames' order; 0 = the rules of takes_gemv.
enum Variant : int32_t { kRules = 0, kGemvVariant = 1, kGemmVariant = 2 };
constexpr const char *kVariantNames[] = {"gemv", "gemm"};
constexpr int32_t kVariants = int32_t(sizeof kVariantNames / sizeof kVariantNames[0]);

int64_t packed_or(int64_t ld, int64_t row_len) { return ld == 0 ? row_len : ld; }

size_t elem_bytes(pagoda_dtype_t d) { return d == PAGODA_DTYPE_F32 ? 4 : 2; }

bool is_half(pagoda_dtype_t d) { return d == PAGODA_DTYPE_BF16 || d == PAGODA_DTYPE_F16; }

// W types our GEMV and the widening read: bf16/f16 and the quantized block types.
bool is_narrow_weight(pagoda_dtype_t d) { return is_half(d) || formats::is_block_dtype(d); }

// Bytes of `values` values of `d` (whole blocks for a block type).
uint64_t bytes_of(pagoda_dtype_t d, int64_t values) {
    return formats::is_block_dtype(d) ? uint64_t(formats::row_bytes(d, values))
                                     : uint64_t(values) * elem_bytes(d);
}

// A checked matmul with its strides resolved (never 0); also one block of the staged route.
struct Operands {
    int64_t m, n, k;
    const void *x;
    pagoda_dtype_t x_dtype;
    int64_t ldx;
    const void *w;
    pagoda_dtype_t w_dtype;
    int64_t ldw;
    const float *bias;  // or nullptr
    void *y;
    pagoda_dtype_t y_dtype;
    int64_t ldy;
    bool accumulate;
    bool round_w;  // rounds_w() of the descriptor: block W decoded to x's half type
};

// The GEMM route that runs these types as they are, if any (not the GEMV, not staged).
bool direct_gemm(pagoda_dtype_t x, pagoda_dtype_t w, pagoda_dtype_t y, bool bias, Route &out) {
    if (x == PAGODA_DTYPE_F32 && y == PAGODA_DTYPE_F32) {
        out = w == PAGODA_DTYPE_F32 ? Route::F32Gemm : Route::WidenedWeight;
        return true;
    }
    if (is_half(x) && w == x && (y == PAGODA_DTYPE_F32 || (y == x && !bias))) {
        out = Route::HalfGemm;
        return true;
    }
    return false;
}

// PAGODA_MATMUL_ROUND_W taken: block W with half x, decoded to x's type for the tensor cores.
bool rounds_w(uint32_t flags, pagoda_dtype_t x, pagoda_dtype_t w) {
    return (flags & PAGODA_MATMUL_ROUND_W) != 0 && is_half(x) && formats::is_block_dtype(w);
}

// The type the GEMM routes see W as: x's half type where W is rounded to it.
pagoda_dtype_t gemm_weight(const pagoda_op_matmul_t &a) {
    return rounds_w(a.flags, a.x_dtype, a.w_dtype) ? a.x_dtype : a.w_dtype;
}

// What the staged route converts: half x whose type W does not share (the tensor cores take x
// as it is otherwise), and half y, which is computed in f32 and rounded once.
bool stages_x(pagoda_dtype_t x, pagoda_dtype_t w) { return is_half(x) && w != x; }
bool stages_y(pagoda_dtype_t y) { return is_half(y); }

// f32 elements one staged row takes.
int64_t staged_row_elems(const pagoda_op_matmul_t &a) {
    return (stages_x(a.x_dtype, gemm_weight(a)) ? a.k : 0) + (stages_y(a.y_dtype) ? a.n : 0);
}

// Whether the GEMV runs the product: pinned, or by the rules for decode-sized m; a row too long
// for the panel leaves only the GEMV (in several passes over W). check_matmul_limits refuses
// the pins that cannot run.
bool takes_gemv(const pagoda_op_matmul_t &a) {
    if (a.variant == kGemvVariant) return true;
    if (a.variant == kGemmVariant) return false;
    return is_narrow_weight(a.w_dtype) && (a.m <= kGemvMaxM || a.k > kPanelElems);
}

// The route of a descriptor that passed the shared check (so each dtype is f32, bf16 or f16).
Route route_of(const pagoda_op_matmul_t &a) {
    if (takes_gemv(a)) return Route::Gemv;
    Route direct;
    if (direct_gemm(a.x_dtype, gemm_weight(a), a.y_dtype, a.bias != nullptr, direct)) return direct;
    return Route::Staged;
}

// Bytes from the first to one past the last element of a [rows, ld] matrix with `cols` used.
uint64_t span_bytes(int64_t rows, int64_t cols, int64_t ld, pagoda_dtype_t dtype) {
    return bytes_of(dtype, (rows - 1) * ld + cols);
}

bool overlaps(const void *a, uint64_t a_bytes, const void *b, uint64_t b_bytes) {
    auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return pa < pb + b_bytes && pb < pa + a_bytes;
}

std::string shape_text(const pagoda_op_matmul_t &a) {
    return "m=" + std::to_string(a.m) + ", n=" + std::to_string(a.n) + ", k=" + std::to_string(a.k);
}

// Row `i` of an array of `dtype` with row stride `ld`.
const void *row_at(const void *base, pagoda_dtype_t dtype, int64_t ld, int64_t i) {
    return static_cast<const char *>(base) + bytes_of(dtype, i * ld);
}
void *row_at(void *base, pagoda_dtype_t dtype, int64_t ld, int64_t i) {
    return static_cast<char *>(base) + bytes_of(dtype, i * ld);
}

pagoda_status_t run_gemv(CudaBackend &cuda, pagoda_backend_stream_t &stream, const Operands &o) {
    GemvArgs g{};
    g.m = o.m;
    g.n = o.n;
    g.k = o.k;
    g.x = o.x;
    g.x_dtype = o.x_dtype;
    g.ldx = o.ldx;
    g.w = o.w;
    g.w_dtype = o.w_dtype;
    g.ldw = o.ldw;
    g.bias = o.bias;
    g.y = o.y;
    g.y_dtype = o.y_dtype;
    g.ldy = o.ldy;
    g.accumulate = o.accumulate;
    g.error = stream.error;
    if (cudaError_t e = launch_gemv(g, stream.stream); e != cudaSuccess)
        return cuda.fail_cuda(e,
                              std::string(kOp) + ": GEMV kernel launch (m=" + std::to_string(o.m) +
                                  ", n=" + std::to_string(o.n) + ", k=" + std::to_string(o.k) + ")",
                              stream.device);
    return PAGODA_OK;
}

// The direct GEMM routes, run with the scratch held (with_scratch). W decoded a panel of rows at
// a time into the per-device panel, then one GEMM per panel: WidenedWeight (f32 x and y, half or
// block W) widens to f32 (widen_kernel.cu) for the f32 GEMM; `rounded` (HalfGemm on block W with
// PAGODA_MATMUL_ROUND_W) decodes and rounds to x's half type for the tensor cores.
pagoda_status_t panel_gemm(CudaBackend &cuda, cublasHandle_t blas, MatmulState &s,
                           pagoda_backend_stream_t &stream, const Operands &o, bool rounded) {
    const int64_t per_float = rounded ? 2 : 1;  // panel values per float of scratch
    if (pagoda_status_t st = ensure_area(cuda, s, stream, s.panel, (o.k + per_float - 1) / per_float);
        st != PAGODA_OK)
        return st;
    // Whole panels of 64 rows keep each panel's slice of y and bias aligned.
    int64_t panel_rows = std::min(o.n, s.panel.elems * per_float / o.k);
    if (panel_rows > 64) panel_rows -= panel_rows % 64;
    for (int64_t j0 = 0; j0 < o.n; j0 += panel_rows) {
        const int64_t rows = std::min(panel_rows, o.n - j0);
        const void *w = row_at(o.w, o.w_dtype, o.ldw, j0);
        if (cudaError_t e = rounded ? round_blocks_to_half(w, o.w_dtype, o.ldw, rows, o.k,
                                                           s.panel.data, o.x_dtype, stream.stream)
                                    : widen_to_f32(w, o.w_dtype, o.ldw, rows, o.k, s.panel.data,
                                                   stream.stream);
            e != cudaSuccess)
            return cuda.fail_cuda(e, std::string(kOp) + ": panel decoding kernel launch",
                                  stream.device);
        Gemm g{};
        g.ab_type = rounded ? cuda_type(o.x_dtype) : CUDA_R_32F;
        g.d_type = cuda_type(o.y_dtype);
        // Half products are exact in f32, so rounded panels keep f32 compute without TF32.
        g.compute = rounded ? CUBLAS_COMPUTE_32F : f32_compute(cuda);
        g.rows = rows;
        g.cols = o.m;
        g.k = o.k;
        g.a = s.panel.data;
        g.lda = o.k;
        g.b = o.x;
        g.ldb = o.ldx;
        g.d = static_cast<char *>(o.y) + bytes_of(o.y_dtype, j0);
        g.ldd = o.ldy;
        g.bias = o.bias != nullptr ? o.bias + j0 : nullptr;
        g.accumulate = o.accumulate;
        if (pagoda_status_t st = gemm(cuda, blas, s, stream.stream, g, o.y_dtype); st != PAGODA_OK)
            return st;
    }
    return PAGODA_OK;
}

// F32Gemm (f32 x, W and y) and HalfGemm (x and W of one half type, y f32 or, without a bias,
// that type too): one GEMM straight on the operands.
pagoda_status_t plain_gemm(CudaBackend &cuda, cublasHandle_t blas, MatmulState &s,
                           pagoda_backend_stream_t &stream, const Operands &o) {
    const bool half = is_half(o.w_dtype);
    Gemm g{};
    g.ab_type = cuda_type(o.w_dtype);
    g.d_type = cuda_type(o.y_dtype);
    // Half inputs are exact in the tensor cores' products, so CUBLAS_COMPUTE_32F keeps the f32
    // promise there; TF32 only ever applies to f32 inputs, when the host asked for it.
    g.compute = half ? CUBLAS_COMPUTE_32F : f32_compute(cuda);
    g.rows = o.n;
    g.cols = o.m;
    g.k = o.k;
    g.a = o.w;
    g.lda = o.ldw;
    g.b = o.x;
    g.ldb = o.ldx;
    g.d = o.y;
    g.ldd = o.ldy;
    g.bias = o.bias;
    g.accumulate = o.accumulate;
    return gemm(cuda, blas, s, stream.stream, g, o.y_dtype);
}

pagoda_status_t direct_body(CudaBackend &cuda, cublasHandle_t blas, MatmulState &s,
                            pagoda_backend_stream_t &stream, const Operands &o, Route route) {
    if (route == Route::WidenedWeight) return panel_gemm(cuda, blas, s, stream, o, false);
    if (o.round_w) return panel_gemm(cuda, blas, s, stream, o, true);
    return plain_gemm(cuda, blas, s, stream, o);
}

// The staged route (see the top of the file): blocks of rows through the stage, each run by a
// direct route on f32 y and, unless W shares x's half type, f32 x.
pagoda_status_t staged_body(CudaBackend &cuda, cublasHandle_t blas, MatmulState &s,
                            pagoda_backend_stream_t &stream, const Operands &o) {
    const pagoda_dtype_t w_gemm = o.round_w ? o.x_dtype : o.w_dtype;
    const bool stage_x = stages_x(o.x_dtype, w_gemm), stage_y = stages_y(o.y_dtype);
    const int64_t row_elems = (stage_x ? o.k : 0) + (stage_y ? o.n : 0);
    if (pagoda_status_t st = ensure_area(cuda, s, stream, s.stage, row_elems); st != PAGODA_OK)
        return st;
    const int64_t block = std::min(o.m, s.stage.elems / row_elems);
    float *x_stage = s.stage.data;
    float *y_stage = s.stage.data + (stage_x ? block * o.k : 0);
    const pagoda_dtype_t inner_x = stage_x ? PAGODA_DTYPE_F32 : o.x_dtype;
    Route route;
    if (!direct_gemm(inner_x, w_gemm, PAGODA_DTYPE_F32, o.bias != nullptr, route))
        return cuda.fail(PAGODA_ERR_INTERNAL, std::string(kOp) + ": no route for a staged block");
    for (int64_t i0 = 0; i0 < o.m; i0 += block) {
        Operands b = o;
        b.m = std::min(block, o.m - i0);
        b.x = row_at(o.x, o.x_dtype, o.ldx, i0);
        b.y = row_at(o.y, o.y_dtype, o.ldy, i0);
        if (stage_x) {
            if (cudaError_t e =
                    widen_to_f32(b.x, o.x_dtype, o.ldx, b.m, o.k, x_stage, stream.stream);
                e != cudaSuccess)
                return cuda.fail_cuda(e, std::string(kOp) + ": widen kernel launch (x)",
                                      stream.device);
            b.x = x_stage;
            b.x_dtype = PAGODA_DTYPE_F32;
            b.ldx = o.k;
        }
        if (stage_y) {
            if (o.accumulate) {
                if (cudaError_t e =
                        widen_to_f32(b.y, o.y_dtype, o.ldy, b.m, o.n, y_stage, stream.stream);
                    e != cudaSuccess)
                    return cuda.fail_cuda(e, std::string(kOp) + ": widen kernel launch (y)",
                                          stream.device);
            }
            b.y = y_stage;
            b.y_dtype = PAGODA_DTYPE_F32;
            b.ldy = o.n;
        }
        if (pagoda_status_t st = direct_body(cuda, blas, s, stream, b, route); st != PAGODA_OK)
            return st;
        if (stage_y) {
            if (cudaError_t e = narrow_from_f32(y_stage, b.m, o.n, row_at(o.y, o.y_dtype, o.ldy, i0),
                                                o.y_dtype, o.ldy, stream.stream);
                e != cudaSuccess)
                return cuda.fail_cuda(e, std::string(kOp) + ": narrow kernel launch",
                                      stream.device);
        }
    }
    return PAGODA_OK;
}

}  // namespace

const char *matmul_variant_name(int32_t variant) {
    return variant >= 1 && variant <= kVariants ? kVariantNames[variant - 1] : nullptr;
}

int32_t matmul_variants() { return kVariants; }

pagoda_status_t check_matmul_limits(CudaBackend &cuda, const pagoda_op_matmul_t &a) {
    // cublasGemmEx, the fallback of every GEMM route, takes int sizes and strides.
    const std::pair<const char *, int64_t> fields[] = {
        {"m", a.m},
        {"n", a.n},
        {"k", a.k},
        {"ldx", packed_or(a.ldx, a.k)},
        {"ldw", packed_or(a.ldw, a.k)},
        {"ldy", packed_or(a.ldy, a.n)}};
    for (const auto &[name, value] : fields)
        if (value > int64_t(INT_MAX))
            return cuda.fail(PAGODA_ERR_UNSUPPORTED, std::string(kOp) + ": " + name + " = " +
                                                         std::to_string(value) +
                                                         " exceeds cuBLAS's 32-bit limit");
    if (a.variant == kGemvVariant && !is_narrow_weight(a.w_dtype))
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string(kOp) + ": variant gemv reads bf16/f16 or block weights, not " +
                             formats::dtype_name(a.w_dtype));
    if (a.variant == kGemmVariant && is_narrow_weight(a.w_dtype) && a.k > kPanelElems)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string(kOp) + ": variant gemm widens rows of at most " +
                             std::to_string(kPanelElems) + " values (k = " + std::to_string(a.k) +
                             ")");
    // Whether the route stages depends on the bias (NULL in a supports query): assume one.
    Route direct;
    const bool gemv = takes_gemv(a);
    if (!gemv && !direct_gemm(a.x_dtype, gemm_weight(a), a.y_dtype, true, direct) &&
        staged_row_elems(a) > kStageElems)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string(kOp) + ": " + shape_text(a) + " with x_dtype = " +
                             formats::dtype_name(a.x_dtype) + ", w_dtype = " +
                             formats::dtype_name(a.w_dtype) + ", y_dtype = " +
                             formats::dtype_name(a.y_dtype) + " needs " +
                             std::to_string(staged_row_elems(a)) +
                             " f32 elements per staged row, more than the CUDA backend's " +
                             std::to_string(kStageElems));
    return PAGODA_OK;
}

pagoda_status_t run_matmul(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                           const pagoda_op_matmul_t &a) {
    if (a.x == nullptr || a.w == nullptr || a.y == nullptr)
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT,
                         std::string(kOp) + ": " +
                             (a.x == nullptr ? "x" : a.w == nullptr ? "w" : "y") + " is NULL");
    const Operands o{a.m,
                     a.n,
                     a.k,
                     a.x,
                     a.x_dtype,
                     packed_or(a.ldx, a.k),
                     a.w,
                     a.w_dtype,
                     packed_or(a.ldw, a.k),
                     static_cast<const float *>(a.bias),
                     a.y,
                     a.y_dtype,
                     packed_or(a.ldy, a.n),
                     (a.flags & PAGODA_MATMUL_ACCUMULATE) != 0,
                     rounds_w(a.flags, a.x_dtype, a.w_dtype)};
    const uint64_t y_bytes = span_bytes(o.m, o.n, o.ldy, o.y_dtype);
    if (overlaps(o.y, y_bytes, o.x, span_bytes(o.m, o.k, o.ldx, o.x_dtype)) ||
        overlaps(o.y, y_bytes, o.w, span_bytes(o.n, o.k, o.ldw, o.w_dtype)))
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(kOp) + ": y overlaps x or w");
    // The block decoders load 2 or 8 bytes at a time (block_decode.cuh); weights placed in
    // device memory (cudaMalloc's 256-byte alignment, whole-block offsets) always qualify.
    if (formats::is_block_dtype(o.w_dtype) && !gemv_takes(o.w_dtype, o.w))
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string(kOp) + ": " + formats::dtype_name(o.w_dtype) +
                             " weights at a misaligned address (" + kBlockAlignmentRule + ")");

    const Route route = route_of(a);
    if (route == Route::Gemv) return run_gemv(cuda, stream, o);
    return with_scratch(cuda, stream, [&](cublasHandle_t blas, MatmulState &s) {
        if (route == Route::Staged) return staged_body(cuda, blas, s, stream, o);
        return direct_body(cuda, blas, s, stream, o, route);
    });
}

}  // namespace pagoda::cuda
