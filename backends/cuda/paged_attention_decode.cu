#include "paged_attention_decode.hpp"

#include "paged_attention_tile.cuh"

namespace pagoda::cuda {

namespace {

using attention::kThreads;
using attention::kWarps;
// Decode has few query rows (one token of a GQA group), so a warp owns two and the block's
// four warps cover kDecodeRows; the keys of a partition are what the grid spreads out.
constexpr int kRowsPerWarp = kDecodeRows / kWarps;
static_assert(kRowsPerWarp * kWarps == kDecodeRows);

template <typename T, int C>
__global__ void __launch_bounds__(kThreads)
    decode_kernel(PagedAttentionArgs a, PagedAttentionPlan plan) {
    extern __shared__ float4 shared4[];
    float *shared = reinterpret_cast<float *>(shared4);
    if (attention::block_failed(a.error)) return;

    const int32_t s = int32_t(blockIdx.x);
    const int32_t chunks = int32_t(gridDim.y) / a.n_kv_heads;
    const int32_t kv_head = int32_t(blockIdx.y) / chunks, chunk = int32_t(blockIdx.y) % chunks;
    const int32_t part = int32_t(blockIdx.z);
    const attention::SeqView seq = attention::seq_view(a, s);
    // Every branch below depends only on the block's indices and the batch: block-uniform.
    if (seq.q_len == 0 || seq.q_len > kDecodeMaxQueries) return;  // the prefill kernel's
    const int64_t n_rows = int64_t(seq.q_len) * a.group;
    const int64_t row0 = int64_t(chunk) * kDecodeRows;
    if (row0 >= n_rows) return;

    // Partitions of `partition` keys from the tile holding the sequence's first visible key,
    // so they start on tiles and a sliding window costs nothing behind it. Keys before that
    // first one are not read: their table entries may hold anything (ops.h).
    const int32_t first = visible_keys(a, seq.context_len, seq.q_len, 0).first;
    const int64_t start = int64_t(first) / attention::kKeyTile * attention::kKeyTile +
                          int64_t(part) * plan.partition;
    const int32_t key_end = int32_t(min(start + plan.partition, int64_t(seq.context_len)));
    // Empty (key_begin = key_end) for a partition past the context.
    const int32_t key_begin = int32_t(min(max(start, int64_t(first)), int64_t(key_end)));

    attention::RowState<kRowsPerWarp, C> st;
    attention::attend<T, kRowsPerWarp, C>(a, seq, kv_head, row0, key_begin, key_end, shared, st);

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t n_slots = int64_t(a.n_seqs) * kDecodeMaxQueries;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
        const int64_t row = row0 + warp * kRowsPerWarp + r;
        if (row >= n_rows) break;
        const int32_t i = int32_t(row / a.group);
        const int64_t head = int64_t(kv_head) * a.group + row % a.group;
        // A row with no visible key in this partition (a causal chunk's early token, an
        // empty partition) has l = 0: output 0 with weight exp(−∞) = 0 in the merge.
        const float inv = st.l[r] > 0.0f ? 1.0f / st.l[r] : 0.0f;
        if (plan.n_partitions == 1) {
            // Unsplit: the final output, rounded to act_dtype.
            const int64_t dst = (seq.q_begin + i) * a.out_token_stride + head * a.head_dim;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                const int d = lane + 32 * c;
                if (d < a.head_dim)
                    store_from_float(a.out, a.act_dtype, dst + d, st.acc[r][c] * inv);
            }
            continue;
        }
        // Split: an f32 partial for merge_attention, which rounds the merged row.
        const int64_t index = (int64_t(part) * n_slots + int64_t(s) * kDecodeMaxQueries + i) *
                                  a.n_q_heads + head;
        float *dst = plan.partial_out + index * a.head_dim;
        if (lane == 0)
            plan.partial_lse[index] = st.l[r] > 0.0f ? st.m[r] + logf(st.l[r]) : -CUDART_INF_F;
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const int d = lane + 32 * c;
            if (d < a.head_dim) dst[d] = st.acc[r][c] * inv;
        }
    }
}

template <typename T, int C>
cudaError_t launch(const PagedAttentionArgs &a, const PagedAttentionPlan &plan,
                   cudaStream_t stream) {
    const size_t shared = attention::shared_bytes(kDecodeRows, a.head_dim);
    // Past the default 48 KiB a kernel must opt in (per kernel, per device: cheap to repeat).
    if (cudaError_t e = cudaFuncSetAttribute(decode_kernel<T, C>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(shared));
        e != cudaSuccess)
        return e;
    const dim3 grid(unsigned(a.n_seqs), unsigned(a.n_kv_heads * decode_row_chunks(a.group)),
                    unsigned(plan.n_partitions));
    decode_kernel<T, C><<<grid, kThreads, shared, stream>>>(a, plan);
    return cudaGetLastError();
}

}  // namespace

int64_t decode_row_chunks(int64_t group) {
    return (kDecodeMaxQueries * group + kDecodeRows - 1) / kDecodeRows;
}

cudaError_t launch_paged_attention_decode(const PagedAttentionArgs &a,
                                          const PagedAttentionPlan &plan, cudaStream_t stream) {
    (void)cudaGetLastError();  // so the error returned is this launch's
    return with_storage_type(a.cache_dtype, [&](auto tag) -> cudaError_t {
        using T = typename decltype(tag)::type;
        // Output columns per lane: the fewest 32-column groups that cover head_dim.
        if (a.head_dim <= 64) return launch<T, 2>(a, plan, stream);
        if (a.head_dim <= 128) return launch<T, 4>(a, plan, stream);
        if (a.head_dim <= 256) return launch<T, 8>(a, plan, stream);
        return cudaErrorInvalidValue;
    });
}

}  // namespace pagoda::cuda
