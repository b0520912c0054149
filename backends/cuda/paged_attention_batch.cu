#include "paged_attention_batch.hpp"

#include <climits>
#include <cstdint>

#include "device_error.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

namespace {

// One block walks the sequences in chunks of kPlanThreads: batches hold hundreds to a few
// thousand sequences, so a single block costs a few microseconds, and one block can report
// the lowest failing sequence and scan the tile counts without a second kernel.
constexpr int kPlanThreads = 512;
constexpr int kPlanWarps = kPlanThreads / 32;

// Block-wide exclusive prefix sum of one value per thread; `total` gets the sum of all.
__device__ int64_t block_exclusive_scan(int64_t v, int64_t &total) {
    __shared__ int64_t warp_sums[kPlanWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int64_t inclusive = v;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        const int64_t before = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += before;
    }
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        int64_t w = lane < kPlanWarps ? warp_sums[lane] : 0;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            const int64_t before = __shfl_up_sync(0xffffffffu, w, offset);
            if (lane >= offset) w += before;
        }
        if (lane < kPlanWarps) warp_sums[lane] = w;
    }
    __syncthreads();
    const int64_t exclusive = (warp > 0 ? warp_sums[warp - 1] : 0) + inclusive - v;
    total = warp_sums[kPlanWarps - 1];
    __syncthreads();  // warp_sums is reused by the next call
    return exclusive;
}

// What is wrong with one sequence, in the CPU backend's order of checks.
struct SeqFault {
    DeviceErrorField field = DeviceErrorField::None;
    int64_t index = 0;
    int64_t value = 0;
    int64_t limit = 0;
};

__global__ void __launch_bounds__(kPlanThreads)
    plan_kernel(PagedAttentionArgs a, PagedAttentionPlan plan) {
    __shared__ int first_faulty;  // lowest failing thread of the current chunk
    if (__syncthreads_or(threadIdx.x == 0 && failed(a.error))) return;
    if (threadIdx.x == 0) {
        *plan.prefill_next_item = 0;
        if (a.query_start[0] != 0)
            report(a.error, PAGODA_OP_PAGED_ATTENTION, DeviceErrorField::AttentionQueryStart, 0,
                   a.query_start[0], 0);
    }
    int64_t carry = 0;  // tiles of the chunks before this one
    for (int64_t base = 0; base < a.n_seqs; base += kPlanThreads) {
        const int64_t s = base + threadIdx.x;
        SeqFault fault;
        int64_t tiles = 0;
        if (s < a.n_seqs) {
            const int64_t begin = a.query_start[s], end = a.query_start[s + 1];
            const int64_t q_len = end - begin, context = a.context_lens[s];
            if (q_len < 0) {
                fault = {DeviceErrorField::AttentionQueryStart, s + 1, end, begin};
            } else if (context < q_len) {
                fault = {DeviceErrorField::AttentionContext, s, context, q_len};
            } else if (context > a.context_limit) {
                fault = {DeviceErrorField::AttentionContext, s, context, a.context_limit};
            } else {
                const bool decode = q_len <= kDecodeMaxQueries;
                if (!decode) tiles = (q_len * a.group + kPrefillRows - 1) / kPrefillRows;
                if (plan.decode_token_rows != nullptr) {
                    for (int i = 0; i < kDecodeMaxQueries; ++i)
                        plan.decode_token_rows[s * kDecodeMaxQueries + i] =
                            decode && i < q_len ? int32_t(begin + i) : -1;
                }
            }
        }
        // Report the chunk's lowest failing sequence, so the message names the same sequence
        // as the CPU backend's sequential check (chunks go in order, and stop at a failure).
        if (threadIdx.x == 0) first_faulty = INT_MAX;
        __syncthreads();
        const bool faulty = fault.field != DeviceErrorField::None;
        if (faulty) atomicMin(&first_faulty, int(threadIdx.x));
        __syncthreads();
        if (first_faulty != INT_MAX) {
            if (faulty && int(threadIdx.x) == first_faulty)
                report(a.error, PAGODA_OP_PAGED_ATTENTION, fault.field, fault.index, fault.value,
                       fault.limit);
            return;  // uniform: first_faulty is shared
        }
        int64_t chunk_tiles = 0;
        const int64_t before = block_exclusive_scan(tiles, chunk_tiles);
        if (s < a.n_seqs) plan.prefill_tile_start[s] = carry + before;
        carry += chunk_tiles;
    }
    if (threadIdx.x == 0) plan.prefill_tile_start[a.n_seqs] = carry;
}

}  // namespace

cudaError_t plan_paged_attention(const PagedAttentionArgs &a, const PagedAttentionPlan &plan,
                                 cudaStream_t stream) {
    (void)cudaGetLastError();  // so the error read below is this launch's
    plan_kernel<<<1, kPlanThreads, 0, stream>>>(a, plan);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
