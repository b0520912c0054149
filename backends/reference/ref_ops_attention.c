/* PAGED_ATTENTION, ATTENTION_MERGE and COPY/SWAP_BLOCKS. Attention is the textbook softmax over
 * every key a query may see, one query head at a time, in double: scores, then their maximum,
 * then Σ exp(score − max) and the weighted sum of the values (no tiling, no online softmax, no
 * split-K; the CPU and CUDA backends do those and must agree with this). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_checks.h"

static int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Keys of this launch's shard at positions below `pos`. The blocks of a sequence are dealt to the
 * kv_shards caches in turn (ops.h), so each round of kv_shards blocks holds block_size local
 * keys. Unsharded it is `pos`. */
static int64_t local_keys_before(const pagoda_op_paged_attention_t *a, int64_t pos) {
    const int64_t bs = a->block_size, round = (a->kv_shards > 1 ? a->kv_shards : 1) * bs;
    int64_t part = pos % round - (int64_t)a->kv_shard * bs;
    part = part < 0 ? 0 : part > bs ? bs : part;
    return pos / round * bs + part;
}

/* The data-dependent checks: query offsets, context lengths and the table entries of the blocks
 * some query will read (only those must be valid, ops.h). */
static pagoda_status_t check_batch(const ref_backend_t *b, const pagoda_op_paged_attention_t *a) {
    const char *op = "paged_attention";
    const int32_t *qs = a->query_start;
    if (qs[0] != 0)
        return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: query_start[0] = %d must be 0", op,
                        (int)qs[0]);
    const int64_t capacity =
        a->max_blocks_per_seq * a->block_size * (a->kv_shards > 1 ? a->kv_shards : 1);
    for (int64_t s = 0; s < a->n_seqs; ++s) {
        const int64_t q_len = (int64_t)qs[s + 1] - qs[s], ctx = a->context_lens[s];
        if (q_len < 0)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: query_start[%lld] is below query_start[%lld]", op,
                            (long long)s + 1, (long long)s);
        if (ctx < q_len)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: context_lens[%lld] = %lld is smaller than the sequence's q_len %lld",
                            op, (long long)s, (long long)ctx, (long long)q_len);
        if (ctx > capacity)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: context_lens[%lld] = %lld exceeds the %lld keys its table holds", op,
                            (long long)s, (long long)ctx, (long long)capacity);
        if (a->max_context_len > 0 && ctx > a->max_context_len)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: context_lens[%lld] = %lld exceeds max_context_len %lld", op,
                            (long long)s, (long long)ctx, (long long)a->max_context_len);
        if (q_len == 0) continue;
        /* The first query sees the earliest key any query of the chunk sees. */
        const int64_t first_pos = ctx - q_len;
        const int64_t first = a->sliding_window > 0 ? max_i64(0, first_pos - a->sliding_window + 1) : 0;
        const int64_t begin = local_keys_before(a, first), end = local_keys_before(a, ctx);
        for (int64_t j = begin / a->block_size; begin < end && j <= (end - 1) / a->block_size; ++j) {
            const int32_t id = a->block_tables[s * a->max_blocks_per_seq + j];
            if (id < 0 || id >= a->num_blocks)
                return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                                "%s: block_tables[%lld][%lld] = %d is outside [0, num_blocks %lld)",
                                op, (long long)s, (long long)j, (int)id, (long long)a->num_blocks);
        }
    }
    return PAGODA_OK;
}

/* One query head of one token: softmax(scale · q·K) · V over the keys at positions
 * [first, last] that this shard holds. */
static void attend_head(const pagoda_op_paged_attention_t *a, int64_t seq, int64_t token,
                        int64_t q_head, int64_t first, int64_t last, double *scores, double *acc) {
    const pagoda_dtype_t act = ref_act(a->act_dtype);
    const int64_t d = a->head_dim, bs = a->block_size;
    const int64_t shards = a->kv_shards > 1 ? a->kv_shards : 1;
    const int64_t kv_head = q_head / (a->n_q_heads / a->n_kv_heads);
    const int64_t q_at = token * ref_packed_or(a->q_token_stride, a->n_q_heads * d) + q_head * d;
    const int64_t out_at = token * ref_packed_or(a->out_token_stride, a->n_q_heads * d) + q_head * d;
    double max = -INFINITY;
    int64_t n = 0;
    for (int64_t pos = first; pos <= last; ++pos) {
        const int64_t logical = pos / bs;
        if (logical % shards != a->kv_shard) continue; /* another shard's key */
        const int32_t block = a->block_tables[seq * a->max_blocks_per_seq + logical / shards];
        const int64_t k_at = ((block * a->n_kv_heads + kv_head) * bs + pos % bs) * d;
        double dot = 0.0;
        for (int64_t e = 0; e < d; ++e)
            dot += (double)ref_load(a->q, act, q_at + e) *
                   (double)ref_load(a->k_cache, a->cache_dtype, k_at + e);
        double score = (double)a->scale * dot;
        if (a->softcap > 0.0f) score = (double)a->softcap * tanh(score / (double)a->softcap);
        scores[n++] = score;
        if (score > max) max = score;
    }
    double sum = 0.0;
    for (int64_t e = 0; e < d; ++e) acc[e] = 0.0;
    n = 0;
    for (int64_t pos = first; pos <= last; ++pos) {
        const int64_t logical = pos / bs;
        if (logical % shards != a->kv_shard) continue;
        const int32_t block = a->block_tables[seq * a->max_blocks_per_seq + logical / shards];
        const int64_t v_at = ((block * a->n_kv_heads + kv_head) * bs + pos % bs) * d;
        const double w = exp(scores[n++] - max);
        sum += w;
        for (int64_t e = 0; e < d; ++e) acc[e] += w * (double)ref_load(a->v_cache, a->cache_dtype, v_at + e);
    }
    /* A query that saw no key of this shard gets 0 and an lse of −inf (ops.h). */
    for (int64_t e = 0; e < d; ++e) ref_store(a->out, act, out_at + e, n > 0 ? (float)(acc[e] / sum) : 0.0f);
    if (a->lse != NULL) a->lse[token * a->n_q_heads + q_head] = n > 0 ? (float)(max + log(sum)) : -INFINITY;
}

pagoda_status_t ref_run_paged_attention(const ref_backend_t *b,
                                        const pagoda_op_paged_attention_t *a) {
    const char *op = "paged_attention";
    if (a->n_seqs == 0) return PAGODA_OK;
    REF_CHECK(ref_check_pointer(b, op, "query_start", a->query_start));
    REF_CHECK(ref_check_pointer(b, op, "context_lens", a->context_lens));
    REF_CHECK(ref_check_pointer(b, op, "block_tables", a->block_tables));
    REF_CHECK(check_batch(b, a));
    if (a->query_start[a->n_seqs] == 0) return PAGODA_OK;
    REF_CHECK(ref_check_pointer(b, op, "q", a->q));
    REF_CHECK(ref_check_pointer(b, op, "k_cache", a->k_cache));
    REF_CHECK(ref_check_pointer(b, op, "v_cache", a->v_cache));
    REF_CHECK(ref_check_pointer(b, op, "out", a->out));
    int64_t longest = 1;
    for (int64_t s = 0; s < a->n_seqs; ++s) longest = max_i64(longest, a->context_lens[s]);
    double *scores = malloc((size_t)longest * sizeof *scores);
    double *acc = malloc((size_t)a->head_dim * sizeof *acc);
    if (scores == NULL || acc == NULL) {
        free(scores);
        free(acc);
        return ref_fail(b, PAGODA_ERR_OUT_OF_MEMORY, "%s: no memory for %lld scores", op,
                        (long long)longest);
    }
    for (int64_t s = 0; s < a->n_seqs; ++s) {
        const int64_t q_len = (int64_t)a->query_start[s + 1] - a->query_start[s];
        const int64_t ctx = a->context_lens[s];
        for (int64_t i = 0; i < q_len; ++i) {
            /* Query i of the chunk sits at position ctx − q_len + i (ops.h). */
            const int64_t pos = ctx - q_len + i;
            const int64_t last = a->causal ? pos : ctx - 1;
            const int64_t first = a->sliding_window > 0 ? max_i64(0, pos - a->sliding_window + 1) : 0;
            for (int64_t h = 0; h < a->n_q_heads; ++h)
                attend_head(a, s, a->query_start[s] + i, h, first, last, scores, acc);
        }
    }
    free(scores);
    free(acc);
    return PAGODA_OK;
}

/* out = Σ_p exp(lse_p − L)·part_p with L = log Σ_p exp(lse_p), computed with the largest lse
 * subtracted; a part whose lse is −inf weighs 0 and is not read. */
pagoda_status_t ref_run_attention_merge(const ref_backend_t *b,
                                        const pagoda_op_attention_merge_t *a) {
    const char *op = "attention_merge";
    REF_CHECK(ref_check_pointer(b, op, "parts", a->parts));
    REF_CHECK(ref_check_pointer(b, op, "lse", a->lse));
    REF_CHECK(ref_check_pointer(b, op, "out", a->out));
    const pagoda_dtype_t act = ref_act(a->act_dtype);
    const int64_t rows = a->n_tokens * a->n_heads, d = a->head_dim;
    const int64_t stride = ref_packed_or(a->out_token_stride, a->n_heads * d);
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t out_at = row / a->n_heads * stride + row % a->n_heads * d;
        double max = -INFINITY, sum = 0.0;
        for (int64_t p = 0; p < a->n_parts; ++p)
            if (a->lse[p * rows + row] > max) max = a->lse[p * rows + row];
        if (max != -INFINITY)
            for (int64_t p = 0; p < a->n_parts; ++p) sum += exp((double)a->lse[p * rows + row] - max);
        for (int64_t e = 0; e < d; ++e) {
            double v = 0.0;
            for (int64_t p = 0; sum > 0.0 && p < a->n_parts; ++p) {
                const double w = exp((double)a->lse[p * rows + row] - max) / sum;
                if (w != 0.0) v += w * (double)ref_load(a->parts, act, (p * rows + row) * d + e);
            }
            ref_store(a->out, act, out_at + e, (float)v);
        }
        if (a->lse_out != NULL) a->lse_out[row] = sum > 0.0 ? (float)(max + log(sum)) : -INFINITY;
    }
    return PAGODA_OK;
}

/* Block `pairs[2p]` of each source cache to block `pairs[2p+1]` of its destination, pairs in
 * order. Device memory is host memory here, so COPY_BLOCKS and SWAP_BLOCKS are the same copy.
 * Every array and id is checked before the first byte moves. */
pagoda_status_t ref_run_copy_blocks(const ref_backend_t *b, const pagoda_op_copy_blocks_t *a,
                                    const char *op) {
    if (a->n_pairs == 0 || a->n_caches == 0) return PAGODA_OK;
    REF_CHECK(ref_check_pointer(b, op, "src_caches", a->src_caches));
    REF_CHECK(ref_check_pointer(b, op, "dst_caches", a->dst_caches));
    REF_CHECK(ref_check_pointer(b, op, "block_pairs", a->block_pairs));
    for (int64_t c = 0; c < a->n_caches; ++c)
        if (a->src_caches[c] == NULL || a->dst_caches[c] == NULL)
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT, "%s: %s[%lld] is NULL", op,
                            a->src_caches[c] == NULL ? "src_caches" : "dst_caches", (long long)c);
    for (int64_t i = 0; i < 2 * a->n_pairs; ++i) {
        const int64_t block = a->block_pairs[i], limit = i % 2 ? a->dst_num_blocks : a->src_num_blocks;
        int64_t offset = 0;
        if (block < 0 || block >= limit || __builtin_mul_overflow(block, a->block_bytes, &offset))
            return ref_fail(b, PAGODA_ERR_INVALID_ARGUMENT,
                            "%s: pair %lld has %s block %lld (block_pairs[%lld]), outside [0, %lld)",
                            op, (long long)i / 2, i % 2 ? "destination" : "source",
                            (long long)block, (long long)i, (long long)limit);
    }
    for (int64_t c = 0; c < a->n_caches; ++c)
        for (int64_t p = 0; p < a->n_pairs; ++p)
            memmove((char *)a->dst_caches[c] + a->block_pairs[2 * p + 1] * a->block_bytes,
                    (const char *)a->src_caches[c] + a->block_pairs[2 * p] * a->block_bytes,
                    (size_t)a->block_bytes);
    return PAGODA_OK;
}
