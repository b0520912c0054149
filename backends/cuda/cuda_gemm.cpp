#include "cuda_gemm.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "bias_kernel.hpp"
#include "names.hpp"

namespace pagoda::cuda {

namespace {

constexpr const char *kOp = "matmul";

// cuBLASLt workspace: NVIDIA's recommendation for Hopper (split-K and the TMA kernels use it).
constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;
// Cached cuBLASLt algorithm choices; m changes every step in serving, so bound the map.
constexpr size_t kMaxPlans = 4096;

// The largest power of two (at most 256, cuBLASLt's default assumption) dividing an address.
uint32_t alignment_of(const void *p) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    if (v == 0) return 256;
    return uint32_t(std::min<uintptr_t>(256, v & (~v + 1)));
}

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

}  // namespace

cudaDataType_t cuda_type(pagoda_dtype_t d) {
    switch (d) {
        case PAGODA_DTYPE_BF16: return CUDA_R_16BF;
        case PAGODA_DTYPE_F16: return CUDA_R_16F;
        default: return CUDA_R_32F;
    }
}

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

namespace {

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

}  // namespace

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

cublasComputeType_t f32_compute(const CudaBackend &cuda) {
    return cuda.options().tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

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

}  // namespace pagoda::cuda
