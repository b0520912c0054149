// KV_WRITE and PAGED_ATTENTION on the GPU: host checks of what the host can see (pointers,
// sizes), the stream scratch for the attention plan, and the launches (kv_write_kernel.cu;
// paged_attention_batch.cu, _decode.cu, _prefill.cu and attention_merge.cu, whose order
// paged_attention_params.hpp explains). What lives in device memory (slots, query offsets,
// context lengths, block ids) is checked by the kernels and reported at the next
// stream_synchronize (device_error.hpp).
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "attention_merge.hpp"
#include "check_helpers.hpp"
#include "cuda_kernels.hpp"
#include "kv_write_kernel.hpp"
#include "op_args.hpp"
#include "op_checks.hpp"
#include "paged_attention_batch.hpp"
#include "paged_attention_decode.hpp"
#include "paged_attention_params.hpp"
#include "paged_attention_prefill.hpp"

namespace pagoda::cuda {

namespace {

constexpr const char *kAttention = "paged_attention";

// The first of `fields` whose pointer is NULL, or nullptr.
const char *first_null(std::initializer_list<std::pair<const char *, const void *>> fields) {
    for (const auto &[name, ptr] : fields)
        if (ptr == nullptr) return name;
    return nullptr;
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Split-K of the decode kernel. Partitions are at least this many keys, so the merge stays a
// small part of the work and short contexts are not split.
constexpr int64_t kMinPartition = 256;
constexpr int64_t kKeyTile = 32;  // the kernels' key tile (paged_attention_tile.cuh)
// The decode grid's partition dimension is gridDim.z.
constexpr int64_t kMaxPartitions = 65535;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct DecodeSplit {
    int64_t partition;
    int64_t n_partitions;
};

// Enough (sequence, KV head, partition) blocks to fill the GPU about four times over when
// every sequence decodes one token; no split when the batch fills it already. The host does
// not know the context lengths (they are in device memory), so partitions are counted over
// the longest context the launch allows; blocks past a sequence's context return at once.
DecodeSplit plan_decode_split(const PagedAttentionArgs &a, int sm_count) {
    // The keys a decode chunk can see, plus the tile its first partition is rounded down to.
    int64_t span = a.context_limit < INT32_MAX ? a.context_limit : INT32_MAX;
    if (a.sliding_window > 0 && int64_t(a.sliding_window) + kDecodeMaxQueries - 1 < span)
        span = int64_t(a.sliding_window) + kDecodeMaxQueries - 1;
    span += kKeyTile - 1;
    const int64_t busy = int64_t(a.n_seqs) * a.n_kv_heads;
    const int64_t target = 4 * int64_t(sm_count > 0 ? sm_count : 1);
    const int64_t wanted = busy >= target ? 1 : ceil_div(target, busy);
    int64_t partition = ceil_div(ceil_div(span, wanted), kKeyTile) * kKeyTile;
    if (partition < kMinPartition) partition = kMinPartition;
    const int64_t fewest = ceil_div(ceil_div(span, kMaxPartitions), kKeyTile) * kKeyTile;
    if (partition < fewest) partition = fewest;
    if (partition > (int64_t(1) << 30)) partition = int64_t(1) << 30;  // stays an int32
    return {partition, ceil_div(span, partition)};
}

// Bytes of `count` items of `size`, rounded up to 256 so the next region stays aligned.
size_t region(int64_t count, size_t size) {
    const size_t bytes = size_t(count) * size;
    return (bytes + 255) / 256 * 256;
}

}  // namespace

pagoda_status_t check_paged_attention_limits(CudaBackend &cuda,
                                             const pagoda_op_paged_attention_t &a) {
    const std::string p = std::string(kAttention) + ": ";
    if (a.head_dim > kMaxAttentionHeadDim)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         p + "head_dim " + std::to_string(a.head_dim) +
                             " is more than the CUDA backend's " +
                             std::to_string(kMaxAttentionHeadDim));
    if (a.n_seqs > INT32_MAX || a.n_q_heads > INT32_MAX)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         p + "n_seqs " + std::to_string(a.n_seqs) + " or n_q_heads " +
                             std::to_string(a.n_q_heads) + " is past the CUDA backend's 2^31 - 1");
    // The decode grid's second dimension: KV heads × row chunks of the GQA group.
    const int64_t group = a.n_q_heads / a.n_kv_heads;  // checked: a positive multiple
    if (a.n_kv_heads * decode_row_chunks(group) > 65535)
        return cuda.fail(PAGODA_ERR_UNSUPPORTED,
                         p + "n_q_heads " + std::to_string(a.n_q_heads) +
                             " is too many for the CUDA backend's decode grid");
    return PAGODA_OK;
}

pagoda_status_t run_kv_write(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                             const pagoda_op_kv_write_t &a) {
    if (a.n_tokens == 0) return PAGODA_OK;
    if (const char *null = first_null({{"k", a.k},
                                       {"v", a.v},
                                       {"k_cache", a.k_cache},
                                       {"v_cache", a.v_cache},
                                       {"slot_mapping", a.slot_mapping}}))
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string("kv_write: ") + null +
                                                          " is NULL with n_tokens " +
                                                          std::to_string(a.n_tokens));
    // The fused rotation, read as check_kv_write read it; its positions are needed now.
    pagoda_op_rope_t k_rope{};
    if (a.k_rope != nullptr) {
        PAGODA_PLUGIN_CHECK(
            plugin::read_op_args(cuda, plugin::kKvWriteRopeName, a.k_rope, k_rope));
        PAGODA_PLUGIN_CHECK(
            plugin::check_pointer(cuda, "kv_write", "k_rope.positions", k_rope.positions));
    }
    const int64_t row = a.n_kv_heads * a.head_dim;
    KvWriteArgs k{};
    k.cache_dtype = a.cache_dtype;
    k.act_dtype = plugin::act_dtype_of(a.act_dtype);  // 0 means F32 (ops.h)
    k.n_tokens = a.n_tokens;
    k.n_kv_heads = a.n_kv_heads;
    k.head_dim = a.head_dim;
    k.block_size = a.block_size;
    k.num_blocks = a.num_blocks;
    k.k = a.k;
    k.k_token_stride = plugin::packed_or(a.k_token_stride, row);
    k.v = a.v;
    k.v_token_stride = plugin::packed_or(a.v_token_stride, row);
    k.k_cache = a.k_cache;
    k.v_cache = a.v_cache;
    k.slot_mapping = a.slot_mapping;
    k.k_rope = a.k_rope != nullptr ? &k_rope : nullptr;
    k.error = stream.error;
    if (cudaError_t e = launch_kv_write(k, stream.stream); e != cudaSuccess)
        return cuda.fail_cuda(e, "kv_write: kernel launch", stream.device);
    return PAGODA_OK;
}

pagoda_status_t run_paged_attention(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                    const pagoda_op_paged_attention_t &a) {
    if (a.n_seqs == 0) return PAGODA_OK;
    // The batch's own arrays are read on the device, so unlike the CPU backend (which sees
    // whether any query token exists) every pointer must be set for a non-empty batch.
    if (const char *null = first_null({{"query_start", a.query_start},
                                       {"context_lens", a.context_lens},
                                       {"block_tables", a.block_tables},
                                       {"q", a.q},
                                       {"k_cache", a.k_cache},
                                       {"v_cache", a.v_cache},
                                       {"out", a.out}}))
        return cuda.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(kAttention) + ": " + null +
                                                          " is NULL with n_seqs " +
                                                          std::to_string(a.n_seqs));

    const int64_t row = a.n_q_heads * a.head_dim;
    const int64_t elem = a.cache_dtype == PAGODA_DTYPE_F32 ? 4 : 2;
    int64_t context_limit = a.max_blocks_per_seq * a.block_size;  // checked: no overflow
    if (a.max_context_len > 0 && a.max_context_len < context_limit)
        context_limit = a.max_context_len;

    PagedAttentionArgs k{};
    k.cache_dtype = a.cache_dtype;
    k.act_dtype = plugin::act_dtype_of(a.act_dtype);  // 0 means F32 (ops.h)
    k.causal = a.causal != 0;
    k.vector_rows = (a.head_dim * elem) % 16 == 0 && aligned16(a.k_cache) && aligned16(a.v_cache);
    k.n_seqs = int32_t(a.n_seqs);
    k.n_q_heads = int32_t(a.n_q_heads);
    k.n_kv_heads = int32_t(a.n_kv_heads);
    k.group = int32_t(a.n_q_heads / a.n_kv_heads);
    k.head_dim = int32_t(a.head_dim);
    k.block_size = int32_t(a.block_size);
    k.sliding_window = a.sliding_window;
    k.num_blocks = a.num_blocks;
    k.max_blocks_per_seq = a.max_blocks_per_seq;
    k.context_limit = context_limit;
    k.scale = a.scale;
    k.softcap = a.softcap;
    k.q = a.q;
    k.q_token_stride = plugin::packed_or(a.q_token_stride, row);
    k.k_cache = a.k_cache;
    k.v_cache = a.v_cache;
    k.block_tables = a.block_tables;
    k.context_lens = a.context_lens;
    k.query_start = a.query_start;
    k.out = a.out;
    k.out_token_stride = plugin::packed_or(a.out_token_stride, row);
    k.error = stream.error;

    int sm_count = 0;
    if (cudaError_t e = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount,
                                               stream.device);
        e != cudaSuccess)
        return cuda.fail_cuda(e, "cudaDeviceGetAttribute(multiprocessors)", stream.device);
    const DecodeSplit split = plan_decode_split(k, sm_count);
    const bool splits = split.n_partitions > 1;

    // The plan in the stream's scratch: tile offsets, the work counter, and when the decode
    // kernel splits, its slot map and partial results.
    const int64_t n_slots = a.n_seqs * kDecodeMaxQueries;
    const int64_t partial_rows = splits ? split.n_partitions * n_slots * a.n_q_heads : 0;
    const size_t tiles_bytes = region(a.n_seqs + 1, sizeof(int64_t));
    const size_t counter_bytes = region(1, sizeof(unsigned long long));
    const size_t slots_bytes = splits ? region(n_slots, sizeof(int32_t)) : 0;
    const size_t lse_bytes = region(partial_rows, sizeof(float));
    const size_t out_bytes = region(partial_rows * a.head_dim, sizeof(float));
    void *scratch = nullptr;
    PAGODA_PLUGIN_CHECK(stream_scratch(
        cuda, stream, tiles_bytes + counter_bytes + slots_bytes + lse_bytes + out_bytes, &scratch));
    auto *base = static_cast<unsigned char *>(scratch);
    PagedAttentionPlan plan{};
    plan.prefill_tile_start = reinterpret_cast<int64_t *>(base);
    plan.prefill_next_item = reinterpret_cast<unsigned long long *>(base + tiles_bytes);
    base += tiles_bytes + counter_bytes;
    plan.decode_token_rows = splits ? reinterpret_cast<int32_t *>(base) : nullptr;
    plan.partition = int32_t(split.partition);
    plan.n_partitions = int32_t(split.n_partitions);
    plan.partial_lse = splits ? reinterpret_cast<float *>(base + slots_bytes) : nullptr;
    plan.partial_out = splits ? reinterpret_cast<float *>(base + slots_bytes + lse_bytes) : nullptr;

    if (cudaError_t e = plan_paged_attention(k, plan, stream.stream); e != cudaSuccess)
        return cuda.fail_cuda(e, "paged_attention: plan kernel launch", stream.device);
    if (cudaError_t e = launch_paged_attention_decode(k, plan, stream.stream); e != cudaSuccess)
        return cuda.fail_cuda(e, "paged_attention: decode kernel launch", stream.device);
    if (splits) {
        AttentionPartials partials{};
        partials.out = plan.partial_out;
        partials.lse = plan.partial_lse;
        partials.n_parts = split.n_partitions;
        partials.n_tokens = n_slots;
        partials.n_heads = a.n_q_heads;
        partials.head_dim = a.head_dim;
        if (cudaError_t e = merge_attention(partials, plan.decode_token_rows, k.out, k.act_dtype,
                                            k.out_token_stride, stream.error, stream.stream);
            e != cudaSuccess)
            return cuda.fail_cuda(e, "paged_attention: merge kernel launch", stream.device);
    }
    if (cudaError_t e = launch_paged_attention_prefill(k, plan, sm_count, stream.stream);
        e != cudaSuccess)
        return cuda.fail_cuda(e, "paged_attention: prefill kernel launch", stream.device);
    return PAGODA_OK;
}

}  // namespace pagoda::cuda
