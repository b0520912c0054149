#include "attention_merge.hpp"

#include <math_constants.h>

#include "half_load.cuh"

namespace pagoda::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

// One warp per (token, head) row: the lanes read the parts' log-sum-exps together, then each
// lane merges its columns, so the partial rows are read with coalesced loads. The output's type
// is a run-time switch on a warp-uniform value: one store per element, after the merge.
__global__ void __launch_bounds__(kThreads)
    merge_kernel(AttentionPartials p, const int32_t *token_rows, void *out,
                 pagoda_dtype_t out_dtype, int64_t out_token_stride, const DeviceError *error) {
    if (error != nullptr && failed(error)) return;  // no barriers below: a per-thread check
    const int lane = threadIdx.x & 31;
    const int64_t n_rows = p.n_tokens * p.n_heads;
    const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
    for (int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); row < n_rows;
         row += warps) {
        const int64_t token = row / p.n_heads, head = row % p.n_heads;
        const int64_t dst_token = token_rows != nullptr ? token_rows[token] : token;
        if (dst_token < 0) continue;  // uniform across the warp
        const int64_t dst = dst_token * out_token_stride + head * p.head_dim;

        float m = -CUDART_INF_F;
        for (int64_t part = lane; part < p.n_parts; part += 32)
            m = fmaxf(m, p.lse[part * n_rows + row]);
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1)
            m = fmaxf(m, __shfl_xor_sync(kFullMask, m, offset));
        if (m == -CUDART_INF_F) {  // no part saw a key of this row
            for (int64_t d = lane; d < p.head_dim; d += 32)
                store_from_float(out, out_dtype, dst + d, 0.0f);
            continue;
        }
        float sum = 0.0f;
        for (int64_t part = lane; part < p.n_parts; part += 32)
            sum += expf(p.lse[part * n_rows + row] - m);
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1)
            sum += __shfl_xor_sync(kFullMask, sum, offset);
        const float inv = 1.0f / sum;  // ≥ 1: the largest part contributes exp(0)

        for (int64_t d = lane; d < p.head_dim; d += 32) {
            float acc = 0.0f;
            for (int64_t part = 0; part < p.n_parts; ++part) {
                // The same lse for every lane: one broadcast load, and the weight of a part
                // that saw nothing is exactly 0 (its output is not read into a NaN).
                const float weight = expf(p.lse[part * n_rows + row] - m);
                if (weight != 0.0f) acc = fmaf(weight, p.out[(part * n_rows + row) * p.head_dim + d], acc);
            }
            store_from_float(out, out_dtype, dst + d, acc * inv);
        }
    }
}

}  // namespace

cudaError_t merge_attention(const AttentionPartials &partials, const int32_t *token_rows,
                            void *out, pagoda_dtype_t out_dtype, int64_t out_token_stride,
                            const DeviceError *error, cudaStream_t stream) {
    const int64_t n_rows = partials.n_tokens * partials.n_heads;
    if (n_rows <= 0 || partials.n_parts <= 0) return cudaSuccess;
    const int64_t wanted = (n_rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    // A bounded grid: the warps loop over the rows.
    const unsigned blocks = unsigned(wanted < 65535 ? wanted : 65535);
    (void)cudaGetLastError();  // so the error returned is this launch's
    merge_kernel<<<blocks, kThreads, 0, stream>>>(partials, token_rows, out, out_dtype,
                                                  out_token_stride, error);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
