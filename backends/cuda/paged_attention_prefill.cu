#include "paged_attention_prefill.hpp"

#include "paged_attention_tile.cuh"

namespace pagoda::cuda {

namespace {

using attention::kThreads;
using attention::kWarps;
constexpr int kRowsPerWarp = kPrefillRows / kWarps;
static_assert(kRowsPerWarp * kWarps == kPrefillRows);

// The sequence whose tiles include `tile`: the last s with tile_start[s] ≤ tile (sequences
// without tiles have tile_start[s] = tile_start[s + 1] and are passed over).
__device__ int32_t sequence_of_tile(const int64_t *tile_start, int32_t n_seqs, int64_t tile) {
    int32_t lo = 0, hi = n_seqs;  // tile_start[lo] ≤ tile < tile_start[hi]
    while (hi - lo > 1) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (tile_start[mid] <= tile)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

template <typename T, int C>
__global__ void __launch_bounds__(kThreads)
    prefill_kernel(PagedAttentionArgs a, PagedAttentionPlan plan) {
    extern __shared__ float4 shared4[];
    float *shared = reinterpret_cast<float *>(shared4);
    __shared__ unsigned long long item_shared;
    if (attention::block_failed(a.error)) return;

    const int64_t n_tiles = plan.prefill_tile_start[a.n_seqs];
    const unsigned long long n_items = (unsigned long long)(n_tiles) * unsigned(a.n_kv_heads);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (;;) {
        // A shared counter rather than a fixed share per block: causal tiles differ in cost.
        if (threadIdx.x == 0) item_shared = atomicAdd(plan.prefill_next_item, 1ull);
        __syncthreads();  // also: every warp finished the previous item's tiles
        const unsigned long long item = item_shared;
        __syncthreads();  // every thread read it before thread 0 takes the next
        if (item >= n_items) return;

        const int64_t tile = int64_t(item / unsigned(a.n_kv_heads));
        const int32_t kv_head = int32_t(item % unsigned(a.n_kv_heads));
        const int32_t s = sequence_of_tile(plan.prefill_tile_start, a.n_seqs, tile);
        const attention::SeqView seq = attention::seq_view(a, s);
        // The sequence's last tiles first: under a causal mask they see the most keys, and
        // starting the longest work first shortens the tail of the launch.
        const int64_t seq_tiles = plan.prefill_tile_start[s + 1] - plan.prefill_tile_start[s];
        const int64_t local = seq_tiles - 1 - (tile - plan.prefill_tile_start[s]);
        const int64_t n_rows = int64_t(seq.q_len) * a.group;
        const int64_t row0 = local * kPrefillRows;
        const int64_t row_end = min(row0 + kPrefillRows, n_rows);

        // Keys the tile's tokens can see: from the first token's first to the last token's
        // last (both grow with the token). Whole key tiles outside are never loaded.
        const int32_t first_token = int32_t(row0 / a.group);
        const int32_t last_token = int32_t((row_end - 1) / a.group);
        const int32_t key_begin = visible_keys(a, seq.context_len, seq.q_len, first_token).first;
        const int32_t key_end = visible_keys(a, seq.context_len, seq.q_len, last_token).last + 1;

        attention::RowState<kRowsPerWarp, C> st;
        attention::attend<T, kRowsPerWarp, C>(a, seq, kv_head, row0, key_begin, key_end, shared,
                                              st);

#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
            const int64_t row = row0 + warp * kRowsPerWarp + r;
            if (row >= row_end) break;
            const int64_t token = seq.q_begin + row / a.group;
            const int64_t head = int64_t(kv_head) * a.group + row % a.group;
            // Every valid row sees its own key, so l > 0 unless a bad block id zeroed rows.
            const float inv = st.l[r] > 0.0f ? 1.0f / st.l[r] : 0.0f;
            const int64_t dst = token * a.out_token_stride + head * a.head_dim;
#pragma unroll
            for (int c = 0; c < C; ++c) {
                const int d = lane + 32 * c;
                if (d < a.head_dim)
                    store_from_float(a.out, a.act_dtype, dst + d, st.acc[r][c] * inv);
            }
        }
    }
}

template <typename T, int C>
cudaError_t launch(const PagedAttentionArgs &a, const PagedAttentionPlan &plan, int sm_count,
                   cudaStream_t stream) {
    const size_t shared = attention::shared_bytes(kPrefillRows, a.head_dim);
    // Past the default 48 KiB a kernel must opt in (per kernel, per device: cheap to repeat).
    if (cudaError_t e = cudaFuncSetAttribute(prefill_kernel<T, C>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(shared));
        e != cudaSuccess)
        return e;
    int per_sm = 0;
    if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, prefill_kernel<T, C>, kThreads, shared);
        e != cudaSuccess)
        return e;
    // One resident wave; the blocks loop over the work.
    const int blocks = (per_sm > 0 ? per_sm : 1) * (sm_count > 0 ? sm_count : 1);
    prefill_kernel<T, C><<<blocks, kThreads, shared, stream>>>(a, plan);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_paged_attention_prefill(const PagedAttentionArgs &a,
                                           const PagedAttentionPlan &plan, int sm_count,
                                           cudaStream_t stream) {
    (void)cudaGetLastError();  // so the error returned is this launch's
    return with_storage_type(a.cache_dtype, [&](auto tag) -> cudaError_t {
        using T = typename decltype(tag)::type;
        // Output columns per lane: the fewest 32-column groups that cover head_dim.
        if (a.head_dim <= 64) return launch<T, 2>(a, plan, sm_count, stream);
        if (a.head_dim <= 128) return launch<T, 4>(a, plan, sm_count, stream);
        if (a.head_dim <= 256) return launch<T, 8>(a, plan, sm_count, stream);
        return cudaErrorInvalidValue;
    });
}

}  // namespace pagoda::cuda
