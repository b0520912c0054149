// MOE_ROUTE: one block per token (grid-stride over tokens). The token's logits (at most 1024,
// ops.h) are staged in shared memory; the block reduces their first NaN, their maximum and the
// sum of the softmax numerators, then picks the top_k experts one at a time, each pick a
// block-wide argmax (larger logit, then lower id) over the experts not yet picked: at most 64
// rounds over at most 1024 values, simpler than a sort and no slower at these sizes. Thread 0
// writes the row. Every reduction combines in a fixed order, so results do not vary by run.
#include <cmath>
#include <cstdint>

#include "launch_shape.hpp"
#include "moe_kernel.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

namespace {

constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpThreads;
constexpr int kMaxExperts = 1024;  // ops.h
constexpr int kMaxTopK = 64;
constexpr int32_t kNone = INT32_MAX;  // past any expert id

// A candidate expert; {-inf, kNone} is "none yet", which any expert beats.
struct Pick {
    float logit;
    int32_t id;
};

// Whether `b` goes before `a`: the larger logit, then the lower id (ops.h). Rows with a NaN
// never get here.
__device__ __forceinline__ bool before(const Pick &b, const Pick &a) {
    return b.logit > a.logit || (b.logit == a.logit && b.id < a.id);
}

__device__ __forceinline__ float shuffle(float v, int offset) {
    return __shfl_xor_sync(kFullMask, v, offset);
}
__device__ __forceinline__ int shuffle(int v, int offset) {
    return __shfl_xor_sync(kFullMask, v, offset);
}
__device__ __forceinline__ Pick shuffle(const Pick &p, int offset) {
    return Pick{shuffle(p.logit, offset), shuffle(p.id, offset)};
}

// Every thread's `v` combined, returned to every thread: a shuffle tree per warp, then the
// warps' results in warp order. `partial` is the block's shared scratch for it.
template <typename T, typename Combine>
__device__ T block_reduce(T v, Combine combine, T *partial) {
    for (int offset = kWarpThreads / 2; offset > 0; offset /= 2)
        v = combine(v, shuffle(v, offset));
    const int lane = int(threadIdx.x) % kWarpThreads, warp = int(threadIdx.x) / kWarpThreads;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = partial[0];
    for (int w = 1; w < kWarps; ++w) v = combine(v, partial[w]);
    __syncthreads();  // `partial` is reused by the next reduction
    return v;
}

// exp(x − max), and 1 for every logit equal to the maximum: the same for a finite one, and
// the limit where exp(x − max) is NaN (a +inf maximum takes all the weight, shared by equal
// ones, as SAMPLE weighs +inf; a row of nothing but −inf weighs its experts alike). The CPU
// backend's rule.
__device__ __forceinline__ float numerator(float x, float max) {
    return x == max ? 1.0f : expf(x - max);
}

__global__ void __launch_bounds__(kThreads) moe_route_kernel(MoeRouteArgs a) {
    __shared__ float logit[kMaxExperts];
    __shared__ bool taken[kMaxExperts];
    __shared__ Pick picked[kMaxTopK];
    __shared__ float partial_f[kWarps];
    __shared__ int partial_i[kWarps];
    __shared__ Pick partial_p[kWarps];
    // The record only changes between launches on this stream, so every thread agrees.
    if (__syncthreads_or(failed(a.error))) return;
    const int n = int(a.n_experts), k = int(a.top_k);
    for (int64_t t = blockIdx.x; t < a.n_tokens; t += gridDim.x) {
        const float *row = a.logits + t * a.n_experts;
        int nan_at = kNone;
        float max = -INFINITY;
        for (int j = int(threadIdx.x); j < n; j += kThreads) {
            const float v = row[j];
            logit[j] = v;
            taken[j] = false;
            if (isnan(v) && j < nan_at) nan_at = j;
            max = fmaxf(max, v);
        }
        nan_at = block_reduce(nan_at, [](int x, int y) { return x < y ? x : y; }, partial_i);
        if (nan_at != kNone) {  // the same in every thread
            if (threadIdx.x == 0)
                report(a.error, int32_t(PAGODA_OP_MOE_ROUTE), DeviceErrorField::MoeRouteLogit, t,
                       nan_at, 0);
            continue;
        }
        max = block_reduce(max, [](float x, float y) { return fmaxf(x, y); }, partial_f);
        float sum = 0.0f;
        for (int j = int(threadIdx.x); j < n; j += kThreads) sum += numerator(logit[j], max);
        sum = block_reduce(sum, [](float x, float y) { return x + y; }, partial_f);

        for (int s = 0; s < k; ++s) {
            Pick best{-INFINITY, kNone};
            for (int j = int(threadIdx.x); j < n; j += kThreads) {
                const Pick candidate{logit[j], j};
                if (!taken[j] && before(candidate, best)) best = candidate;
            }
            best = block_reduce(
                best, [](const Pick &x, const Pick &y) { return before(y, x) ? y : x; },
                partial_p);
            if (threadIdx.x == 0) {
                picked[s] = best;
                taken[best.id] = true;
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            float picked_sum = 0.0f;
            for (int s = 0; s < k; ++s) picked_sum += numerator(picked[s].logit, max);
            // SOFTMAX_TOPK_NORM divides by the picked ones' sum: a softmax over them.
            const float denominator = a.normalise ? picked_sum : sum;
            for (int s = 0; s < k; ++s) {
                a.expert_ids[t * k + s] = picked[s].id;
                a.weights[t * k + s] = numerator(picked[s].logit, max) / denominator;
            }
        }
        __syncthreads();  // the shared arrays are rewritten for the next token
    }
}

}  // namespace

cudaError_t launch_moe_route(const MoeRouteArgs &a, cudaStream_t stream) {
    if (a.n_experts > kMaxExperts || a.top_k > kMaxTopK || a.top_k > a.n_experts)
        return cudaErrorInvalidValue;  // the shared checks refuse these first
    // A <<<>>> launch reports only through the thread's last-error slot: empty it first.
    (void)cudaGetLastError();
    moe_route_kernel<<<grid_blocks(a.n_tokens, 1), kThreads, 0, stream>>>(a);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
