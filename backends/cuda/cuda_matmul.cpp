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
// Accumulating is beta = 1 with C = D = y (staged half y: its widened old value). Where cuBLASLt
// has no algorithm for a shape or alignment (with the bias epilogue or at all), cublasGemmEx runs
// and bias_kernel.cu adds the bias (D is then f32, so nothing is rounded twice).
//
// cuBLAS is column-major. A row-major matrix with row stride ld is the column-major matrix of
// its transpose with the same ld, so the row-major product y = x·Wᵀ is, column-major,
// yᵀ[n,m] = W'ᵀ · xᵀ where W' is W read column-major ([k,n], ld = ldw): one GEMM with
// transa = T, transb = N, no copies. The bias then runs along D's rows (n of them), which is
// what CUBLASLT_EPILOGUE_BIAS broadcasts.
#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bias_kernel.hpp"
#include "block_formats.hpp"
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

// f32 elements of the widened W panel: 64 MiB holds a whole 4096 × 4096 projection, so most
// GEMMs are one call, and an LM head takes a few. Allocated on first use, halved while the
// device refuses it.
constexpr int64_t kPanelElems = int64_t(1) << 24;
// f32 elements of the staged route's x and y rows: 32 MiB is hundreds of rows of a prefill
// (k + n = 18432 for Llama's FFN gives 455), so its GEMMs stay large. Allocated like the panel.
constexpr int64_t kStageElems = int64_t(1) << 23;
// cuBLASLt workspace: NVIDIA's recommendation for Hopper (split-K and the TMA kernels use it).
constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;
// Cached cuBLASLt algorithm choices; m changes every step in serving, so bound the map.
constexpr size_t kMaxPlans = 4096;

enum class Route { Gemv, F32Gemm, WidenedWeight, HalfGemm, Staged };

int64_t packed_or(int64_t ld, int64_t row_len) { return ld == 0 ? row_len : ld; }

size_t elem_bytes(pagoda_dtype_t d) { return d == PAGODA_DTYPE_F32 ? 4 : 2; }

bool is_half(pagoda_dtype_t d) { return d == PAGODA_DTYPE_BF16 || d == PAGODA_DTYPE_F16; }

// W types our GEMV and the widening read: bf16/f16 and the quantized block types.
bool is_narrow_weight(pagoda_dtype_t d) { return is_half(d) || plugin::is_block_dtype(d); }

// Bytes of `values` values of `d` (whole blocks for a block type).
uint64_t bytes_of(pagoda_dtype_t d, int64_t values) {
    return plugin::is_block_dtype(d) ? uint64_t(plugin::row_bytes(d, values))
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
    return (flags & PAGODA_MATMUL_ROUND_W) != 0 && is_half(x) && plugin::is_block_dtype(w);
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

// The route of a descriptor that passed the shared check (so each dtype is f32, bf16 or f16).
Route route_of(const pagoda_op_matmul_t &a) {
    // A row too long for the panel leaves only the GEMV (in several passes over W).
    if (is_narrow_weight(a.w_dtype) && (a.m <= kGemvMaxM || a.k > kPanelElems)) return Route::Gemv;
    Route direct;
    if (direct_gemm(a.x_dtype, gemm_weight(a), a.y_dtype, a.bias != nullptr, direct)) return direct;
    return Route::Staged;
}

cudaDataType_t cuda_type(pagoda_dtype_t d) {
    switch (d) {
        case PAGODA_DTYPE_BF16: return CUDA_R_16BF;
        case PAGODA_DTYPE_F16: return CUDA_R_16F;
        default: return CUDA_R_32F;
    }
}

// Bytes from the first to one past the last element of a [rows, ld] matrix with `cols` used.
uint64_t span_bytes(int64_t rows, int64_t cols, int64_t ld, pagoda_dtype_t dtype) {
    return bytes_of(dtype, (rows - 1) * ld + cols);
}

bool overlaps(const void *a, uint64_t a_bytes, const void *b, uint64_t b_bytes) {
    auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
    return pa < pb + b_bytes && pb < pa + a_bytes;
}

// The largest power of two (at most 256, cuBLASLt's default assumption) dividing an address.
uint32_t alignment_of(const void *p) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    if (v == 0) return 256;
    return uint32_t(std::min<uintptr_t>(256, v & (~v + 1)));
}

// One GEMM in cuBLAS's column-major terms: D[rows, cols] = op(A)ᵀ·B (+ bias) (+ C = D).
struct Gemm {
    cudaDataType_t ab_type;  // A and B
    cudaDataType_t d_type;   // C and D
    cublasComputeType_t compute;
    int64_t rows, cols, k;  // n, m, k of the matmul
    const void *a;
    int64_t lda;  // W: column-major [k, rows], transposed
    const void *b;
    int64_t ldb;  // x: column-major [k, cols]
    void *d;
    int64_t ldd;       // y: column-major [rows, cols]
    const float *bias;  // [rows], or nullptr; only with an f32 D
    bool accumulate;
};

// What a cuBLASLt algorithm choice depends on: types, shape, strides, epilogue, alignments.
using PlanKey = std::array<int64_t, 14>;

struct PlanKeyHash {
    size_t operator()(const PlanKey &key) const noexcept {
        uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
        for (int64_t v : key) {
            h ^= uint64_t(v);
            h *= 1099511628211ull;
        }
        return size_t(h);
    }
};

struct Plan {
    bool found = false;  // false: cuBLASLt has no algorithm; use cublasGemmEx
    cublasLtMatmulAlgo_t algo{};
};

PlanKey plan_key(const Gemm &g) {
    return {int64_t(g.ab_type), int64_t(g.d_type), int64_t(g.compute), g.rows, g.cols, g.k,
            g.lda,  g.ldb,       g.ldd,      g.bias != nullptr,     alignment_of(g.a),
            alignment_of(g.b), alignment_of(g.d), alignment_of(g.bias)};
}

// Owns a cuBLASLt descriptor.
template <typename T, cublasStatus_t (*Destroy)(T)>
struct LtObject {
    T handle = nullptr;
    LtObject() = default;
    LtObject(const LtObject &) = delete;
    LtObject &operator=(const LtObject &) = delete;
    ~LtObject() {
        if (handle != nullptr) (void)Destroy(handle);
    }
};
using LtDesc = LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtLayout = LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPreference = LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

std::string shape_text(const pagoda_op_matmul_t &a) {
    return "m=" + std::to_string(a.m) + ", n=" + std::to_string(a.n) + ", k=" + std::to_string(a.k);
}

// A device buffer of f32 scratch: the widened W panel, or the staged route's rows.
struct ScratchArea {
    const char *what;  // "f32 weight panel", for messages
    int64_t preferred_elems;
    float *data = nullptr;
    int64_t elems = 0;
};

}  // namespace

// Per device, under the device's lock (CudaBackend::with_matmul).
struct MatmulState {
    int32_t device = 0;
    cublasLtHandle_t lt = nullptr;
    void *workspace = nullptr;
    size_t workspace_bytes = 0;
    ScratchArea panel{"f32 weight panel", kPanelElems};
    ScratchArea stage{"f32 staging of half activations", kStageElems};
    // The workspace, panel and stage are shared by every stream of the device. Each user makes
    // its stream wait for this event, then records it after its last use, so users on different
    // streams run their scratch work in the order they were queued.
    cudaEvent_t scratch_free = nullptr;
    std::unordered_map<PlanKey, Plan, PlanKeyHash> plans;
    // A graph has recorded a launch using the workspace or scratch areas, and keeps their
    // addresses: an outgrown area is then kept (here) rather than freed, until the backend goes.
    bool recorded = false;
    std::vector<float *> retired_areas;
};

void MatmulStateDeleter::operator()(MatmulState *s) const noexcept {
    if (s == nullptr) return;
    // Frees work from any current device, but make the owner current for good measure.
    (void)cudaSetDevice(s->device);
    if (s->scratch_free != nullptr) (void)cudaEventDestroy(s->scratch_free);
    if (s->workspace != nullptr) (void)cudaFree(s->workspace);
    if (s->panel.data != nullptr) (void)cudaFree(s->panel.data);
    if (s->stage.data != nullptr) (void)cudaFree(s->stage.data);
    for (float *old : s->retired_areas) (void)cudaFree(old);
    if (s->lt != nullptr) (void)cublasLtDestroy(s->lt);
    delete s;
}

namespace {

pagoda_status_t make_state(CudaBackend &cuda, int32_t device, MatmulStatePtr &out) {
    MatmulStatePtr s(new MatmulState);
    s->device = device;
    if (cublasStatus_t st = cublasLtCreate(&s->lt); st != CUBLAS_STATUS_SUCCESS)
        return cuda.fail_cublas(st, "matmul: cublasLtCreate", device);
    if (cudaError_t e = cudaEventCreateWithFlags(&s->scratch_free, cudaEventDisableTiming);
        e != cudaSuccess)
        return cuda.fail_cuda(e, "matmul: cudaEventCreateWithFlags", device);
    // Without a workspace cuBLASLt still runs, choosing among fewer algorithms: worth a warning,
    // not a failure, when the device is full.
    if (cudaMalloc(&s->workspace, kLtWorkspaceBytes) == cudaSuccess) {
        s->workspace_bytes = kLtWorkspaceBytes;
    } else {
        (void)cudaGetLastError();
        s->workspace = nullptr;
        cuda.log(PAGODA_LOG_WARN, "matmul: no device memory for a " +
                                      format_bytes(kLtWorkspaceBytes) +
                                      " cuBLASLt workspace on " + device_name(device) +
                                      "; GEMMs run without one");
    }
    out = std::move(s);
    return PAGODA_OK;
}

// Runs `body` with the calling thread allowed to allocate while one of its streams records a
// graph: the device state made this way is real memory, not part of the recording.
template <typename Body>
auto outside_capture(Body &&body) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    auto result = body();
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    return result;
}

// Makes sure `area` (the state's panel or stage) holds at least `min_elems` floats (at most
// its preferred size), preferring that size and halving while the device refuses. The caller
// holds the scratch.
pagoda_status_t ensure_area(CudaBackend &cuda, MatmulState &s, pagoda_backend_stream_t &stream,
                            ScratchArea &area, int64_t min_elems) {
    if (area.data != nullptr && area.elems >= min_elems) return PAGODA_OK;
    if (area.data != nullptr) {
        // An area cut short by an earlier shortage. Replacing it cannot be recorded: the
        // synchronisation below is not allowed while capturing, and earlier graphs hold it.
        if (stream.capturing)
            return refuse_during_capture(
                cuda, stream,
                std::string(kOp) + ": the " + area.what +
                    " must be grown by an eager run before capture: " +
                    std::to_string(min_elems) + " floats needed, " + std::to_string(area.elems) +
                    " held");
        if (s.recorded) {
            s.retired_areas.push_back(area.data);  // a graph may still run on it
        } else {
            // Let the work queued on it finish (this stream waits for every earlier scratch
            // user), then start over.
            if (cudaError_t e = cudaStreamSynchronize(stream.stream); e != cudaSuccess)
                return cuda.fail_cuda(e, std::string(kOp) + ": cudaStreamSynchronize", s.device);
            (void)cudaFree(area.data);
        }
        area.data = nullptr;
        area.elems = 0;
    }
    for (int64_t elems = area.preferred_elems;; elems = std::max(min_elems, elems / 2)) {
        void *p = nullptr;
        if (outside_capture([&] { return cudaMalloc(&p, size_t(elems) * sizeof(float)); }) ==
            cudaSuccess) {
            area.data = static_cast<float *>(p);
            area.elems = elems;
            return PAGODA_OK;
        }
        (void)cudaGetLastError();
        if (elems <= min_elems) break;
    }
    return cuda.fail(PAGODA_ERR_OUT_OF_MEMORY,
                     std::string(kOp) + ": no device memory on " + device_name(s.device) +
                         " for the " + area.what + " (" +
                         format_bytes(size_t(min_elems) * sizeof(float)) + " at least)");
}

pagoda_status_t lt_fail(CudaBackend &cuda, cublasStatus_t st, const char *call, int32_t device) {
    return cuda.fail_cublas(st, std::string(kOp) + ": " + call, device);
}

// Finds (or recalls) the cuBLASLt algorithm for `g`, building the descriptors it runs with.
pagoda_status_t lt_prepare(CudaBackend &cuda, MatmulState &s, const Gemm &g, LtDesc &desc,
                           LtLayout &la, LtLayout &lb, LtLayout &ld, Plan &plan) {
    const int32_t dev = s.device;
    if (cublasStatus_t st = cublasLtMatmulDescCreate(&desc.handle, g.compute, CUDA_R_32F);
        st != CUBLAS_STATUS_SUCCESS)
        return lt_fail(cuda, st, "cublasLtMatmulDescCreate", dev);
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue =
        g.bias != nullptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    cublasStatus_t st = cublasLtMatmulDescSetAttribute(desc.handle, CUBLASLT_MATMUL_DESC_TRANSA,
                                                       &trans_a, sizeof trans_a);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(desc.handle, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                            sizeof trans_b);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(desc.handle, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof epilogue);
    if (st == CUBLAS_STATUS_SUCCESS && g.bias != nullptr) {
        // f32 (ops.h), which is D's type whenever a bias is fused (route_of), cuBLASLt's default
        // outside FP8; said explicitly so a changed default cannot misread it.
        const int32_t bias_type = int32_t(CUDA_R_32F);
        st = cublasLtMatmulDescSetAttribute(desc.handle, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                            &g.bias, sizeof g.bias);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulDescSetAttribute(desc.handle, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                &bias_type, sizeof bias_type);
    }
    if (st != CUBLAS_STATUS_SUCCESS) return lt_fail(cuda, st, "cublasLtMatmulDescSetAttribute", dev);

    if ((st = cublasLtMatrixLayoutCreate(&la.handle, g.ab_type, uint64_t(g.k), uint64_t(g.rows),
                                         g.lda)) != CUBLAS_STATUS_SUCCESS ||
        (st = cublasLtMatrixLayoutCreate(&lb.handle, g.ab_type, uint64_t(g.k), uint64_t(g.cols),
                                         g.ldb)) != CUBLAS_STATUS_SUCCESS ||
        (st = cublasLtMatrixLayoutCreate(&ld.handle, g.d_type, uint64_t(g.rows), uint64_t(g.cols),
                                         g.ldd)) != CUBLAS_STATUS_SUCCESS)
        return lt_fail(cuda, st, "cublasLtMatrixLayoutCreate", dev);

    const PlanKey key = plan_key(g);
    if (auto it = s.plans.find(key); it != s.plans.end()) {
        plan = it->second;
        return PAGODA_OK;
    }
    LtPreference pref;
    if ((st = cublasLtMatmulPreferenceCreate(&pref.handle)) != CUBLAS_STATUS_SUCCESS)
        return lt_fail(cuda, st, "cublasLtMatmulPreferenceCreate", dev);
    const uint64_t workspace = s.workspace_bytes;
    st = cublasLtMatmulPreferenceSetAttribute(pref.handle, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &workspace, sizeof workspace);
    // Algorithms may assume these alignments of A, B and of C = D (the output, read when
    // accumulating).
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(g.a)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(g.b)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(g.d)},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(g.d)}};
    for (const auto &[attribute, bytes] : alignments)
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulPreferenceSetAttribute(pref.handle, attribute, &bytes, sizeof bytes);
    if (st != CUBLAS_STATUS_SUCCESS)
        return lt_fail(cuda, st, "cublasLtMatmulPreferenceSetAttribute", dev);

    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    st = cublasLtMatmulAlgoGetHeuristic(s.lt, desc.handle, la.handle, lb.handle, ld.handle,
                                        ld.handle, pref.handle, 1, &result, &count);
    // NOT_SUPPORTED (or no result) means no algorithm for this configuration: cublasGemmEx
    // covers it. Anything else is a real failure.
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
        return lt_fail(cuda, st, "cublasLtMatmulAlgoGetHeuristic", dev);
    plan = Plan{};
    if (st == CUBLAS_STATUS_SUCCESS && count > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
        plan.found = true;
        plan.algo = result.algo;
    }
    if (s.plans.size() >= kMaxPlans) s.plans.clear();
    s.plans.emplace(key, plan);
    return PAGODA_OK;
}

// cublasGemmEx, then the bias kernel: for what cuBLASLt has no algorithm for.
pagoda_status_t blas_gemm(CudaBackend &cuda, cublasHandle_t blas, cudaStream_t stream,
                          int32_t device, const Gemm &g, pagoda_dtype_t y_dtype) {
    const float alpha = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
    cublasStatus_t st = cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, int(g.rows), int(g.cols),
                                     int(g.k), &alpha, g.a, g.ab_type, int(g.lda), g.b, g.ab_type,
                                     int(g.ldb), &beta, g.d, g.d_type, int(g.ldd), g.compute,
                                     CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS)
        return cuda.fail_cublas(st,
                                std::string(kOp) + ": cublasGemmEx (rows=" + std::to_string(g.rows) +
                                    ", cols=" + std::to_string(g.cols) +
                                    ", k=" + std::to_string(g.k) + ")",
                                device);
    if (g.bias != nullptr) {
        if (cudaError_t e = add_bias(g.d, y_dtype, g.ldd, g.bias, g.cols, g.rows, stream);
            e != cudaSuccess)
            return cuda.fail_cuda(e, std::string(kOp) + ": bias kernel launch", device);
    }
    return PAGODA_OK;
}

// One GEMM through cuBLASLt, or cublasGemmEx where cuBLASLt has no algorithm. The caller holds
// the scratch (the workspace is used here).
pagoda_status_t gemm(CudaBackend &cuda, cublasHandle_t blas, MatmulState &s, cudaStream_t stream,
                     const Gemm &g, pagoda_dtype_t y_dtype) {
    LtDesc desc;
    LtLayout la, lb, ld;
    Plan plan;
    if (pagoda_status_t r = lt_prepare(cuda, s, g, desc, la, lb, ld, plan); r != PAGODA_OK)
        return r;
    if (!plan.found) return blas_gemm(cuda, blas, stream, s.device, g, y_dtype);
    const float alpha = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
    cublasStatus_t st = cublasLtMatmul(s.lt, desc.handle, &alpha, g.a, la.handle, g.b, lb.handle,
                                       &beta, g.d, ld.handle, g.d, ld.handle, &plan.algo,
                                       s.workspace, s.workspace_bytes, stream);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) {
        // The heuristic offered an algorithm the call then refused (an alignment it did not
        // model): remember that, and take the route that always runs.
        s.plans[plan_key(g)] = Plan{};
        return blas_gemm(cuda, blas, stream, s.device, g, y_dtype);
    }
    if (st != CUBLAS_STATUS_SUCCESS)
        return cuda.fail_cublas(st,
                                std::string(kOp) + ": cublasLtMatmul (rows=" +
                                    std::to_string(g.rows) + ", cols=" + std::to_string(g.cols) +
                                    ", k=" + std::to_string(g.k) + ")",
                                s.device);
    return PAGODA_OK;
}

// Runs `body(blas, state)` holding the device's matmul state and its scratch: the state is made
// on first use, and `stream` is ordered after every earlier scratch user of any stream.
template <typename Body>
pagoda_status_t with_scratch(CudaBackend &cuda, pagoda_backend_stream_t &stream, Body &&body) {
    return cuda.with_matmul(stream.device, stream.stream,
                            [&](cublasHandle_t blas, MatmulStatePtr &state) {
        if (state == nullptr) {
            if (pagoda_status_t r = outside_capture([&] { return make_state(cuda, stream.device, state); });
                r != PAGODA_OK)
                return r;
            // cublasGemmEx (the fallback) otherwise allocates its own workspace on first use,
            // which a recording stream cannot do; the two libraries run in turn on this one.
            if (state->workspace != nullptr) {
                if (cublasStatus_t st =
                        cublasSetWorkspace(blas, state->workspace, state->workspace_bytes);
                    st != CUBLAS_STATUS_SUCCESS)
                    return cuda.fail_cublas(st, std::string(kOp) + ": cublasSetWorkspace",
                                            stream.device);
            }
        }
        if (stream.capturing) {
            // The event cannot join a recording (waiting on it would tie the graph to work
            // outside it; recording it would make it the graph's). graph_launch orders the
            // whole graph with the scratch instead (order_with_matmul_scratch).
            state->recorded = true;
            return body(blas, *state);
        }
        if (cudaError_t e = cudaStreamWaitEvent(stream.stream, state->scratch_free, 0);
            e != cudaSuccess)
            return cuda.fail_cuda(e, std::string(kOp) + ": cudaStreamWaitEvent", stream.device);
        pagoda_status_t r = body(blas, *state);
        // Recorded even after a failure: whatever was queued before it may still use the scratch.
        if (cudaError_t e = cudaEventRecord(state->scratch_free, stream.stream);
            e != cudaSuccess && r == PAGODA_OK)
            r = cuda.fail_cuda(e, std::string(kOp) + ": cudaEventRecord", stream.device);
        return r;
    });
}

cublasComputeType_t f32_compute(const CudaBackend &cuda) {
    return cuda.options().tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
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

// The direct GEMM routes, run with the scratch held (with_scratch). WidenedWeight: `o` has
// f32 x and y and half or block W.
pagoda_status_t widened_gemm(CudaBackend &cuda, cublasHandle_t blas, MatmulState &s,
                             pagoda_backend_stream_t &stream, const Operands &o) {
    if (pagoda_status_t st = ensure_area(cuda, s, stream, s.panel, o.k); st != PAGODA_OK)
        return st;
    // Whole panels of 64 rows keep each panel's slice of y and bias aligned.
    int64_t panel_rows = std::min(o.n, s.panel.elems / o.k);
    if (panel_rows > 64) panel_rows -= panel_rows % 64;
    for (int64_t j0 = 0; j0 < o.n; j0 += panel_rows) {
        const int64_t rows = std::min(panel_rows, o.n - j0);
        if (cudaError_t e = widen_to_f32(row_at(o.w, o.w_dtype, o.ldw, j0), o.w_dtype, o.ldw, rows,
                                         o.k, s.panel.data, stream.stream);
            e != cudaSuccess)
            return cuda.fail_cuda(e, std::string(kOp) + ": widen kernel launch", stream.device);
        Gemm g{};
        g.ab_type = CUDA_R_32F;
        g.d_type = CUDA_R_32F;
        g.compute = f32_compute(cuda);
        g.rows = rows;
        g.cols = o.m;
        g.k = o.k;
        g.a = s.panel.data;
        g.lda = o.k;
        g.b = o.x;
        g.ldb = o.ldx;
        g.d = static_cast<float *>(o.y) + j0;
        g.ldd = o.ldy;
        g.bias = o.bias != nullptr ? o.bias + j0 : nullptr;
        g.accumulate = o.accumulate;
        if (pagoda_status_t st = gemm(cuda, blas, s, stream.stream, g, PAGODA_DTYPE_F32);
            st != PAGODA_OK)
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

// HalfGemm on block W rounded to x's half type (PAGODA_MATMUL_ROUND_W): W decoded a panel of rows
// at a time into the per-device panel, as halves (widen_kernel.cu), then the tensor-core GEMM
// on each panel, f32 accumulation.
pagoda_status_t rounded_gemm(CudaBackend &cuda, cublasHandle_t blas, MatmulState &s,
                             pagoda_backend_stream_t &stream, const Operands &o) {
    constexpr int64_t kHalvesPerFloat = 2;
    if (pagoda_status_t st = ensure_area(cuda, s, stream, s.panel, (o.k + 1) / kHalvesPerFloat);
        st != PAGODA_OK)
        return st;
    // Whole panels of 64 rows keep each panel's slice of y and bias aligned.
    int64_t panel_rows = std::min(o.n, s.panel.elems * kHalvesPerFloat / o.k);
    if (panel_rows > 64) panel_rows -= panel_rows % 64;
    for (int64_t j0 = 0; j0 < o.n; j0 += panel_rows) {
        const int64_t rows = std::min(panel_rows, o.n - j0);
        if (cudaError_t e = round_blocks_to_half(row_at(o.w, o.w_dtype, o.ldw, j0), o.w_dtype,
                                                 o.ldw, rows, o.k, s.panel.data, o.x_dtype,
                                                 stream.stream);
            e != cudaSuccess)
            return cuda.fail_cuda(e, std::string(kOp) + ": block rounding kernel launch",
                                  stream.device);
        Gemm g{};
        g.ab_type = cuda_type(o.x_dtype);
        g.d_type = cuda_type(o.y_dtype);
        g.compute = CUBLAS_COMPUTE_32F;  // half products are exact; sums stay f32
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

pagoda_status_t direct_body(CudaBackend &cuda, cublasHandle_t blas, MatmulState &s,
                            pagoda_backend_stream_t &stream, const Operands &o, Route route) {
    if (route == Route::WidenedWeight) return widened_gemm(cuda, blas, s, stream, o);
    if (o.round_w) return rounded_gemm(cuda, blas, s, stream, o);
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

pagoda_status_t order_with_matmul_scratch(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                          pagoda_status_t (*launch)(void *), void *context) {
    return cuda.with_matmul(stream.device, stream.stream,
                            [&](cublasHandle_t, MatmulStatePtr &state) {
        if (state == nullptr || !state->recorded) return launch(context);  // no matmul recorded
        if (cudaError_t e = cudaStreamWaitEvent(stream.stream, state->scratch_free, 0);
            e != cudaSuccess)
            return cuda.fail_cuda(e, "graph_launch: cudaStreamWaitEvent", stream.device);
        pagoda_status_t r = launch(context);
        if (cudaError_t e = cudaEventRecord(state->scratch_free, stream.stream);
            e != cudaSuccess && r == PAGODA_OK)
            r = cuda.fail_cuda(e, "graph_launch: cudaEventRecord", stream.device);
        return r;
    });
}

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
    // Whether the route stages depends on the bias (NULL in a supports query): assume one.
    Route direct;
    const bool gemv = is_narrow_weight(a.w_dtype) && (a.m <= kGemvMaxM || a.k > kPanelElems);
    if (!gemv && !direct_gemm(a.x_dtype, gemm_weight(a), a.y_dtype, true, direct) &&
        staged_row_elems(a) > kStageElems)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string(kOp) + ": " + shape_text(a) + " with x_dtype = " +
                             plugin::dtype_name(a.x_dtype) + ", w_dtype = " +
                             plugin::dtype_name(a.w_dtype) + ", y_dtype = " +
                             plugin::dtype_name(a.y_dtype) + " needs " +
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
    if (plugin::is_block_dtype(o.w_dtype) && !gemv_takes(o.w_dtype, o.w))
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         std::string(kOp) + ": " + plugin::dtype_name(o.w_dtype) +
                             " weights at a misaligned address (" + kBlockAlignmentRule + ")");

    const Route route = route_of(a);
    if (route == Route::Gemv) return run_gemv(cuda, stream, o);
    return with_scratch(cuda, stream, [&](cublasHandle_t blas, MatmulState &s) {
        if (route == Route::Staged) return staged_body(cuda, blas, s, stream, o);
        return direct_body(cuda, blas, s, stream, o, route);
    });
}

}  // namespace pagoda::cuda
