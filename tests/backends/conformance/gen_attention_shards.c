/* Cache parallelism cases (ABI 1.2): PAGED_ATTENTION over one KV shard, with its log-sum-exp,
 * and ATTENTION_MERGE.
 *
 * A sharded launch sees every kv_shards-th block of each sequence (ops.h). As in gen_paged.c,
 * physical blocks are shuffled, slots nobody may see hold NaN, and table entries nobody may
 * see (past the context, wholly behind every window, of a sequence without queries) name blocks
 * outside the pool. Batches mix decode, chunks and whole prompts, so some queries see no key
 * of the shard (out 0, lse -inf). ATTENTION_MERGE gets random parts with a part that saw no key
 * in some rows and a row where no part did. A backend may refuse these cases as unsupported
 * (the CUDA backend does so far); they are then skipped for it. Some shards soft-cap their
 * scores (ABI 1.8), so lse is over the capped scores. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

enum { SHARD_MAX_SEQS = 6 };

typedef struct shard_shape {
    int n_seqs;
    int q_lens[SHARD_MAX_SEQS], ctx_lens[SHARD_MAX_SEQS];
    int n_q_heads, n_kv_heads, head_dim, block_size;
    int kv_shards, kv_shard;
    pagoda_dtype_t dtype, act; /* act: 0 = f32 */
    int causal, sliding_window;
    float softcap; /* ABI 1.8; 0 = off (lse is then over the capped scores) */
} shard_shape_t;

static pagoda_dtype_t act_type(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_INVALID ? PAGODA_DTYPE_F32 : act;
}

static conf_compare_t act_compare(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_BF16 ? CONF_BF16 : act == PAGODA_DTYPE_F16 ? CONF_F16 : CONF_F32;
}

static void *random_act(test_rng_t *rng, pagoda_dtype_t act, size_t n, float lo, float hi) {
    if (act_type(act) == PAGODA_DTYPE_F32) return conf_random_f32(rng, n, lo, hi);
    return conf_random_typed(rng, act, n, lo, hi);
}

/* The first position any query of sequence `seq` sees (ops.h's window rule). */
static int64_t first_visible(const shard_shape_t *s, int seq) {
    if (s->sliding_window <= 0) return 0;
    const int64_t first = (int64_t)s->ctx_lens[seq] - s->q_lens[seq] - s->sliding_window + 1;
    return first > 0 ? first : 0;
}

static void shard_case(test_rng_t *rng, const shard_shape_t *s, conf_tally_t *tally) {
    const int64_t bs = s->block_size, d = s->head_dim, kv = s->n_kv_heads, S = s->kv_shards;
    int64_t local[SHARD_MAX_SEQS], max_blocks = 0, needed = 0, total_q = 0;
    for (int i = 0; i < s->n_seqs; ++i) {
        const int64_t nb = (s->ctx_lens[i] + bs - 1) / bs;
        local[i] = nb > s->kv_shard ? (nb - s->kv_shard + S - 1) / S : 0;
        needed += local[i];
        if (local[i] > max_blocks) max_blocks = local[i];
        total_q += s->q_lens[i];
    }
    max_blocks += 1;
    const int64_t num_blocks = needed + 2;

    conf_case_t c;
    conf_case_init(&c, "paged_attention shard %d of %d: seqs=%d heads=%d/%d head_dim=%d block=%d "
                   "cache=%s act=%s causal=%d window=%d softcap=%g (q_len,ctx of seq 0: %d,%d)",
                   s->kv_shard, s->kv_shards, s->n_seqs, s->n_q_heads, s->n_kv_heads, s->head_dim,
                   s->block_size, pagoda_dtype_name(s->dtype),
                   pagoda_dtype_name(act_type(s->act)), s->causal, s->sliding_window,
                   (double)s->softcap, s->q_lens[0], s->ctx_lens[0]);
    c.may_refuse = 1;
    pagoda_op_paged_attention_t *a = &conf_add_step(&c, PAGODA_OP_PAGED_ATTENTION)->attention;
    a->layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a->cache_dtype = s->dtype;
    a->causal = (uint32_t)s->causal;
    a->n_seqs = s->n_seqs;
    a->n_q_heads = s->n_q_heads;
    a->n_kv_heads = kv;
    a->head_dim = d;
    a->block_size = bs;
    a->num_blocks = num_blocks;
    a->max_blocks_per_seq = max_blocks;
    a->scale = 1.0f / sqrtf((float)d);
    a->sliding_window = s->sliding_window;
    a->act_dtype = s->act;
    a->kv_shards = s->kv_shards;
    a->kv_shard = s->kv_shard;
    a->softcap = s->softcap;

    int32_t *perm = test_xmalloc((size_t)num_blocks * sizeof *perm);
    for (int64_t i = 0; i < num_blocks; ++i) perm[i] = (int32_t)i;
    for (int64_t i = num_blocks - 1; i > 0; --i) {
        const int64_t j = test_rng_int(rng, 0, i);
        const int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    const size_t esize = pagoda_dtype_size(s->dtype);
    const size_t cache_n = (size_t)(num_blocks * kv * bs * d);
    unsigned char *k_cache = test_xmalloc(cache_n * esize);
    unsigned char *v_cache = test_xmalloc(cache_n * esize);
    memset(k_cache, 0xFF, cache_n * esize);
    memset(v_cache, 0xFF, cache_n * esize);
    int32_t *tables = test_xmalloc((size_t)(s->n_seqs * max_blocks) * sizeof *tables);
    int64_t next = 0;
    for (int i = 0; i < s->n_seqs; ++i)
        for (int64_t j = 0; j < max_blocks; ++j) {
            const int64_t block = j * S + s->kv_shard; /* the sequence's logical block */
            const int visible = j < local[i] && s->q_lens[i] > 0 &&
                                (block + 1) * bs > first_visible(s, i);
            int32_t *entry = &tables[i * max_blocks + j];
            *entry = visible ? perm[next++] : (int32_t)(num_blocks + 1000 + j);
            if (!visible) continue;
            for (int64_t o = 0; o < bs && block * bs + o < s->ctx_lens[i]; ++o)
                for (int64_t h = 0; h < kv; ++h)
                    for (int64_t e = 0; e < d; ++e) {
                        const size_t at = (size_t)(((*entry * kv + h) * bs + o) * d + e);
                        const float kx = test_rng_uniform(rng, -1.0f, 1.0f);
                        const float vx = test_rng_uniform(rng, -1.0f, 1.0f);
                        test_convert_weights(s->dtype, &kx, 1, k_cache + at * esize, NULL);
                        test_convert_weights(s->dtype, &vx, 1, v_cache + at * esize, NULL);
                    }
        }
    free(perm);

    int32_t *context_lens = test_xmalloc((size_t)s->n_seqs * sizeof *context_lens);
    int32_t *query_start = test_xmalloc((size_t)(s->n_seqs + 1) * sizeof *query_start);
    query_start[0] = 0;
    for (int i = 0; i < s->n_seqs; ++i) {
        context_lens[i] = s->ctx_lens[i];
        query_start[i + 1] = query_start[i] + s->q_lens[i];
    }

    const pagoda_dtype_t act = act_type(s->act);
    const double cache_tol = conf_tolerance(s->dtype), act_tol = conf_tolerance(act);
    const double tol = cache_tol > act_tol ? cache_tol : act_tol;
    const size_t nq = (size_t)(total_q * s->n_q_heads * d), act_size = pagoda_dtype_size(act);
    const size_t n_lse = (size_t)(total_q * s->n_q_heads);
    int q = conf_add_tensor(&c, "q", random_act(rng, act, nq, -2.0f, 2.0f), nq * act_size,
                            CONF_DEVICE, CONF_INPUT, 0);
    int kc = conf_add_tensor(&c, "k_cache", k_cache, cache_n * esize, CONF_DEVICE, CONF_INPUT, 0);
    int vc = conf_add_tensor(&c, "v_cache", v_cache, cache_n * esize, CONF_DEVICE, CONF_INPUT, 0);
    int bt = conf_add_tensor(&c, "block_tables", tables,
                             (size_t)(s->n_seqs * max_blocks) * sizeof *tables, CONF_DEVICE,
                             CONF_INPUT, 0);
    int cl = conf_add_tensor(&c, "context_lens", context_lens,
                             (size_t)s->n_seqs * sizeof *context_lens, CONF_DEVICE, CONF_INPUT, 0);
    int qs = conf_add_tensor(&c, "query_start", query_start,
                             (size_t)(s->n_seqs + 1) * sizeof *query_start, CONF_DEVICE,
                             CONF_INPUT, 0);
    int out = conf_add_tensor(&c, "out", random_act(rng, act, nq, -1.0f, 1.0f), nq * act_size,
                              CONF_DEVICE, act_compare(act), tol);
    int lse = conf_add_tensor(&c, "lse", conf_random_f32(rng, n_lse, -1.0f, 1.0f),
                              n_lse * sizeof(float), CONF_DEVICE, CONF_F32, tol);
    conf_bind(&c, 0, q, offsetof(pagoda_op_paged_attention_t, q));
    conf_bind(&c, 0, kc, offsetof(pagoda_op_paged_attention_t, k_cache));
    conf_bind(&c, 0, vc, offsetof(pagoda_op_paged_attention_t, v_cache));
    conf_bind(&c, 0, bt, offsetof(pagoda_op_paged_attention_t, block_tables));
    conf_bind(&c, 0, cl, offsetof(pagoda_op_paged_attention_t, context_lens));
    conf_bind(&c, 0, qs, offsetof(pagoda_op_paged_attention_t, query_start));
    conf_bind(&c, 0, out, offsetof(pagoda_op_paged_attention_t, out));
    conf_bind(&c, 0, lse, offsetof(pagoda_op_paged_attention_t, lse));
    conf_check_case(&c, tally);
}

static void merge_case(test_rng_t *rng, int64_t n_parts, int64_t n_tokens, int64_t n_heads,
                       int64_t head_dim, pagoda_dtype_t act, int padded, conf_tally_t *tally) {
    conf_case_t c;
    conf_case_init(&c, "attention_merge parts=%lld tokens=%lld heads=%lld head_dim=%lld act=%s%s",
                   (long long)n_parts, (long long)n_tokens, (long long)n_heads,
                   (long long)head_dim, pagoda_dtype_name(act_type(act)),
                   padded ? " strided" : "");
    c.may_refuse = 1;
    pagoda_op_attention_merge_t *a = &conf_add_step(&c, PAGODA_OP_ATTENTION_MERGE)->merge;
    const int64_t row = n_heads * head_dim, rows = n_tokens * n_heads;
    const int64_t stride = padded ? row + test_rng_int(rng, 1, 7) : row;
    a->n_parts = n_parts;
    a->n_tokens = n_tokens;
    a->n_heads = n_heads;
    a->head_dim = head_dim;
    a->out_token_stride = padded ? stride : 0;
    a->act_dtype = act;

    /* With several parts, part 0 saw no key in every third row; with 3 rows or more, row 0
     * saw none in any part. The middle row, which the perturbed check moves, keeps a key. */
    float *lse_in = conf_random_f32(rng, (size_t)(n_parts * rows), -8.0f, 8.0f);
    for (int64_t r = 1; r < rows && n_parts > 1; r += 3) lse_in[r] = -INFINITY;
    for (int64_t p = 0; p < n_parts && rows > 2; ++p) lse_in[p * rows] = -INFINITY;
    const size_t act_size = pagoda_dtype_size(act_type(act));
    const size_t n_in = (size_t)(n_parts * rows * head_dim), n_out = (size_t)(n_tokens * stride);
    int parts = conf_add_tensor(&c, "parts", random_act(rng, act, n_in, -1.0f, 1.0f),
                                n_in * act_size, CONF_DEVICE, CONF_INPUT, 0);
    int lse = conf_add_tensor(&c, "lse", lse_in, (size_t)(n_parts * rows) * sizeof(float),
                              CONF_DEVICE, CONF_INPUT, 0);
    const double tol = conf_tolerance(act_type(act));
    int out = conf_add_tensor(&c, "out", random_act(rng, act, n_out, -1.0f, 1.0f),
                              n_out * act_size, CONF_DEVICE, act_compare(act_type(act)), tol);
    int lse_out = conf_add_tensor(&c, "lse_out", conf_random_f32(rng, (size_t)rows, 0.0f, 1.0f),
                                  (size_t)rows * sizeof(float), CONF_DEVICE, CONF_F32, tol);
    conf_bind(&c, 0, parts, offsetof(pagoda_op_attention_merge_t, parts));
    conf_bind(&c, 0, lse, offsetof(pagoda_op_attention_merge_t, lse));
    conf_bind(&c, 0, out, offsetof(pagoda_op_attention_merge_t, out));
    conf_bind(&c, 0, lse_out, offsetof(pagoda_op_attention_merge_t, lse_out));
    conf_check_case(&c, tally);
}

void conf_cases_attention_shards(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x5348415244ull);
    static const pagoda_dtype_t types[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    static const pagoda_dtype_t acts[] = {PAGODA_DTYPE_INVALID, PAGODA_DTYPE_BF16,
                                          PAGODA_DTYPE_F16};
    static const int windows[] = {0, 0, 5, 40};
    static const int block_sizes[] = {16, 8, 1};
    for (int i = 0; i < 18; ++i) {
        shard_shape_t s;
        memset(&s, 0, sizeof s);
        s.n_seqs = (int)test_rng_int(&rng, 1, SHARD_MAX_SEQS);
        for (int q = 0; q < s.n_seqs; ++q) {
            s.ctx_lens[q] = (int)test_rng_int(&rng, 1, i % 4 == 3 ? 1500 : 150);
            /* A (capped) whole prompt, a chunk, or decode. */
            const int ctx = s.ctx_lens[q];
            const int64_t kind = test_rng_int(&rng, 0, 3);
            s.q_lens[q] = kind == 0   ? (ctx < 40 ? ctx : 40)
                          : kind == 1 ? (int)test_rng_int(&rng, 1, ctx < 9 ? ctx : 9)
                                      : 1;
        }
        s.n_q_heads = i % 2 ? 8 : 4;
        s.n_kv_heads = i % 3 ? 2 : 1;
        s.head_dim = i % 2 ? 64 : 40;
        s.block_size = block_sizes[i % 3];
        s.kv_shards = 2 + i % 2;
        s.kv_shard = (int)test_rng_int(&rng, 0, s.kv_shards - 1);
        s.dtype = types[i % 3];
        s.act = acts[(i / 3) % 3];
        s.causal = i % 5 != 4;
        s.sliding_window = windows[i % 4];
        /* The last six soft-capped (ABI 1.8), from barely (50) to strongly (0.5). */
        s.softcap = i < 12 ? 0.0f : i % 2 ? 50.0f : 0.5f;
        shard_case(&rng, &s, tally);
    }
    for (int i = 0; i < 6; ++i)
        merge_case(&rng, 1 + i % 3, (int64_t)test_rng_int(&rng, 1, 9), 1 + i % 4,
                   i % 2 ? 64 : 24, acts[i % 3], i % 2, tally);
}
