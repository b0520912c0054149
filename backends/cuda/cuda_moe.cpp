// The mixture-of-experts ops' glue (ABI 1.8) over moe_route_kernel.cu and moe_matmul_kernel.cu:
// the descriptor has passed the shared checks (op_checks.hpp); what is left is what a launch
// can see on the host (NULL pointers, y overlapping x), the CUDA backend's own limits, and
// cutting MOE_MATMUL into chunks of tokens whose f32 products fit the stream's scratch. The
// expert ids, the experts' pointers and the logits are device data: the kernels check them
// and report through the stream's error record (device_error.hpp).
#include <algorithm>
#include <cstdint>
#include <string>

#include "check_helpers.hpp"
#include "cuda_kernels.hpp"
#include "moe_kernel.hpp"

namespace pagoda::cuda {

namespace {

using plugin::check_pointer;
using plugin::packed_or;

// f32 products held per chunk (64 MiB): a decode batch or a prefill of a few hundred tokens is
// one chunk; a larger one takes several, each bucketing and multiplying its own tokens.
constexpr int64_t kChunkProducts = int64_t(1) << 24;
// The bucketing counts slots and experts in int32 and keeps a counter per held expert.
constexpr int64_t kMaxSlotsPerToken = int64_t(1) << 20;
constexpr int64_t kMaxHeldExperts = int64_t(1) << 20;

pagoda_status_t launched(CudaBackend &cuda, const pagoda_backend_stream_t &stream,
                         const char *op, cudaError_t e) {
    if (e == cudaSuccess) return PAGODA_OK;
    return cuda.fail_cuda(e, std::string(op) + ": kernel launch", stream.device);
}

int64_t span_bytes(int64_t rows, int64_t ld, int64_t row_len, int64_t elem_bytes) {
    return ((rows - 1) * ld + row_len) * elem_bytes;
}

bool overlaps(const void *p, int64_t p_bytes, const void *q, int64_t q_bytes) {
    const auto *a = static_cast<const char *>(p), *b = static_cast<const char *>(q);
    return a < b + q_bytes && b < a + p_bytes;
}

}  // namespace

pagoda_status_t check_moe_matmul_limits(CudaBackend &cuda, const pagoda_op_moe_matmul_t &a) {
    if (a.top_k > kMaxSlotsPerToken)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED, "moe_matmul: top_k = " + std::to_string(a.top_k) +
                                                     " is more than the CUDA backend's " +
                                                     std::to_string(kMaxSlotsPerToken));
    if (a.n_experts > kMaxHeldExperts)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         "moe_matmul: n_experts = " + std::to_string(a.n_experts) +
                             " is more than the CUDA backend's " + std::to_string(kMaxHeldExperts));
    return PAGODA_OK;
}

pagoda_status_t run_moe_route(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                              const pagoda_op_moe_route_t &a) {
    constexpr const char *kOp = "moe_route";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "logits", a.logits));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "expert_ids", a.expert_ids));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "weights", a.weights));
    MoeRouteArgs r{};
    r.n_tokens = a.n_tokens;
    r.n_experts = a.n_experts;
    r.top_k = a.top_k;
    r.normalise = a.routing == PAGODA_MOE_SOFTMAX_TOPK_NORM;
    r.logits = a.logits;
    r.expert_ids = a.expert_ids;
    r.weights = a.weights;
    r.error = stream.error;
    return launched(cuda, stream, kOp, launch_moe_route(r, stream.stream));
}

pagoda_status_t run_moe_matmul(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                               const pagoda_op_moe_matmul_t &a) {
    constexpr const char *kOp = "moe_matmul";
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "x", a.x));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "experts", a.experts));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "expert_ids", a.expert_ids));
    PAGODA_PLUGIN_CHECK(check_pointer(cuda, kOp, "y", a.y));
    const bool weighted = a.weights != nullptr;
    const int64_t slots = a.n_tokens * a.top_k;
    const int64_t ldx = packed_or(a.ldx, a.k), ldw = packed_or(a.ldw, a.k),
                  ldy = packed_or(a.ldy, a.n);
    const auto x_bytes = int64_t(formats::dtype_size(a.x_dtype)),
               y_bytes = int64_t(formats::dtype_size(a.y_dtype));
    const int64_t x_rows = a.x_per_slot != 0 ? slots : a.n_tokens;
    const int64_t y_rows = weighted ? a.n_tokens : slots;
    if (overlaps(a.y, span_bytes(y_rows, ldy, a.n, y_bytes), a.x,
                 span_bytes(x_rows, ldx, a.k, x_bytes)))
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(kOp) + ": y overlaps x");

    // Whole tokens per chunk, at least one (its products may then pass kChunkProducts).
    const int64_t chunk_tokens =
        std::clamp<int64_t>(kChunkProducts / (a.top_k * a.n), 1, a.n_tokens);
    void *scratch = nullptr;
    PAGODA_PLUGIN_CHECK(stream_scratch(
        cuda, stream, moe_scratch_bytes(a.n_experts, chunk_tokens * a.top_k, a.n), &scratch));
    const MoeScratch s = moe_scratch_at(scratch, a.n_experts, chunk_tokens * a.top_k);

    MoeChunkArgs c{};
    c.top_k = a.top_k;
    c.n_experts = a.n_experts;
    c.expert_offset = a.expert_offset;
    c.n = a.n;
    c.k = a.k;
    c.x_dtype = a.x_dtype;
    c.ldx = ldx;
    c.x_per_slot = a.x_per_slot != 0;
    c.experts = a.experts;
    c.w_dtype = a.w_dtype;
    c.ldw = ldw;
    c.y_dtype = a.y_dtype;
    c.ldy = ldy;
    c.error = stream.error;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += chunk_tokens) {
        const int64_t first_slot = t0 * a.top_k;
        c.n_tokens = std::min(chunk_tokens, a.n_tokens - t0);
        c.first_slot = first_slot;
        const int64_t first_x_row = a.x_per_slot != 0 ? first_slot : t0;
        c.x = static_cast<const char *>(a.x) + first_x_row * ldx * x_bytes;
        c.expert_ids = a.expert_ids + first_slot;
        c.weights = weighted ? a.weights + first_slot : nullptr;
        c.y = static_cast<char *>(a.y) + (weighted ? t0 : first_slot) * ldy * y_bytes;
        PAGODA_PLUGIN_CHECK(launched(cuda, stream, kOp, launch_moe_chunk(c, s, stream.stream)));
    }
    return PAGODA_OK;
}

}  // namespace pagoda::cuda
