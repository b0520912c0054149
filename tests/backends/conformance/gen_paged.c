/* PAGED_ATTENTION cases (KV_WRITE's are in gen_kv_write.c).
 *
 * Physical blocks shuffled, slots no query may see (past a context, inside a block) hold NaN,
 * and table entries no query may see (past a context, wholly behind every window, or of a
 * sequence without queries) hold ids outside the pool, so a kernel that reads what ops.h says
 * it must not read shows up. Batches mix decode, chunked prefill, whole prompts and sequences
 * without queries, over GQA ratios, block sizes, sliding windows, head sizes and long contexts
 * (the decode kernel's split over the context), with f32, bf16 and f16 queries and outputs (a
 * half output may differ by one rounding of its own type), and with ABI 1.8's soft-capping of
 * the scores. */
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

static const pagoda_dtype_t kTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};

/* An act_dtype field's type: 0 means f32 (ops.h). */
static pagoda_dtype_t act_type(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_INVALID ? PAGODA_DTYPE_F32 : act;
}

/* `n` random activations of `act` (0 = f32) in [lo, hi). */
static void *random_act(test_rng_t *rng, pagoda_dtype_t act, size_t n, float lo, float hi) {
    if (act_type(act) == PAGODA_DTYPE_F32) return conf_random_f32(rng, n, lo, hi);
    return conf_random_typed(rng, act, n, lo, hi);
}

static const char *act_label(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_INVALID ? "0 (f32)" : pagoda_dtype_name(act);
}

/* ------------------------------------------------------------------------------------------ */
/* PAGED_ATTENTION                                                                             */
/* ------------------------------------------------------------------------------------------ */

enum { MAX_SEQS = 96 };

typedef struct attention_shape {
    int n_seqs;
    int q_lens[MAX_SEQS], ctx_lens[MAX_SEQS];
    int n_q_heads, n_kv_heads, head_dim, block_size;
    pagoda_dtype_t dtype;
    pagoda_dtype_t act; /* of q and out; 0 = f32 */
    int causal, sliding_window, padded, give_max_context;
    /* 0: a valid batch; 1: a visible block id past the pool; 2: a context past the table. */
    int defect;
    float softcap; /* ABI 1.8; 0 = off */
} attention_shape_t;

/* The first key position any query of a sequence can see (ops.h's window rule). */
static int64_t first_visible(const attention_shape_t *s, int seq) {
    const int64_t first_query_pos = (int64_t)s->ctx_lens[seq] - s->q_lens[seq];
    if (s->sliding_window <= 0) return 0;
    const int64_t first = first_query_pos - s->sliding_window + 1;
    return first > 0 ? first : 0;
}

/* Stores f32 value `x` as element `i` of a `dtype` array. */
static void store_typed(void *base, pagoda_dtype_t dtype, size_t i, float x) {
    test_convert_weights(dtype, &x, 1, (char *)base + i * pagoda_dtype_size(dtype), NULL);
}

static void attention_case(test_rng_t *rng, const attention_shape_t *s, const char *what,
                           conf_tally_t *tally) {
    const int64_t bs = s->block_size, d = s->head_dim, kv = s->n_kv_heads;
    int64_t max_blocks = 1, needed = 0, total_q = 0, max_ctx = 0;
    for (int i = 0; i < s->n_seqs; ++i) {
        const int64_t nb = (s->ctx_lens[i] + bs - 1) / bs;
        needed += nb;
        if (nb > max_blocks) max_blocks = nb;
        total_q += s->q_lens[i];
        if (s->ctx_lens[i] > max_ctx) max_ctx = s->ctx_lens[i];
    }
    max_blocks += 1; /* a trailing entry per row that nobody may read */
    const int64_t num_blocks = needed + 3;

    conf_case_t c;
    conf_case_init(&c, "paged_attention %s: seqs=%d heads=%d/%d head_dim=%d block=%d cache=%s "
                   "act=%s causal=%d window=%d softcap=%g%s (q_len,ctx of seq 0: %d,%d)",
                   what, s->n_seqs, s->n_q_heads, s->n_kv_heads, s->head_dim, s->block_size,
                   pagoda_dtype_name(s->dtype), act_label(s->act), s->causal, s->sliding_window,
                   (double)s->softcap, s->padded ? " strided" : "", s->q_lens[0], s->ctx_lens[0]);
    pagoda_op_paged_attention_t *a = &conf_add_step(&c, PAGODA_OP_PAGED_ATTENTION)->attention;
    a->layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a->cache_dtype = s->dtype;
    a->causal = (uint32_t)s->causal;
    a->n_seqs = s->n_seqs;
    a->n_q_heads = s->n_q_heads;
    a->n_kv_heads = s->n_kv_heads;
    a->head_dim = d;
    a->block_size = bs;
    a->num_blocks = num_blocks;
    a->max_blocks_per_seq = max_blocks;
    a->max_context_len = s->give_max_context ? max_ctx : 0;
    a->scale = 1.0f / sqrtf((float)d);
    a->sliding_window = s->sliding_window;
    a->act_dtype = s->act;
    a->softcap = s->softcap;

    /* Block tables over a shuffled pool; unreadable entries get ids outside the pool. */
    int32_t *perm = test_xmalloc((size_t)num_blocks * sizeof *perm);
    for (int64_t i = 0; i < num_blocks; ++i) perm[i] = (int32_t)i;
    for (int64_t i = num_blocks - 1; i > 0; --i) {
        const int64_t j = test_rng_int(rng, 0, i);
        const int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    int32_t *tables = test_xmalloc((size_t)(s->n_seqs * max_blocks) * sizeof *tables);
    int64_t next = 0;
    for (int i = 0; i < s->n_seqs; ++i) {
        const int64_t nb = (s->ctx_lens[i] + bs - 1) / bs;
        const int64_t first_block = first_visible(s, i) / bs;
        for (int64_t j = 0; j < max_blocks; ++j) {
            int32_t *entry = &tables[i * max_blocks + j];
            if (j >= nb) {
                *entry = -1;
            } else {
                *entry = perm[next++];
                /* Nobody reads it: behind every window, or the sequence has no queries. */
                if (s->q_lens[i] == 0 || j < first_block) *entry = (int32_t)(num_blocks + 1000 + j);
            }
        }
    }

    /* The caches: NaN everywhere, then each sequence's context from random values. */
    const size_t esize = pagoda_dtype_size(s->dtype);
    const size_t cache_n = (size_t)(num_blocks * kv * bs * d);
    unsigned char *k_cache = test_xmalloc(cache_n * esize), *v_cache = test_xmalloc(cache_n * esize);
    memset(k_cache, 0xFF, cache_n * esize);
    memset(v_cache, 0xFF, cache_n * esize);
    for (int i = 0; i < s->n_seqs; ++i) {
        for (int64_t pos = 0; pos < s->ctx_lens[i]; ++pos) {
            const int64_t id = tables[i * max_blocks + pos / bs];
            if (id < 0 || id >= num_blocks) continue; /* an entry nobody reads */
            for (int64_t h = 0; h < kv; ++h)
                for (int64_t e = 0; e < d; ++e) {
                    const size_t at = (size_t)((((id * kv + h) * bs) + pos % bs) * d + e);
                    store_typed(k_cache, s->dtype, at, test_rng_uniform(rng, -1.0f, 1.0f));
                    store_typed(v_cache, s->dtype, at, test_rng_uniform(rng, -1.0f, 1.0f));
                }
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
    if (s->defect == 1) {
        /* The last visible block of the first sequence with queries names a block past the pool. */
        for (int i = 0; i < s->n_seqs; ++i)
            if (s->q_lens[i] > 0) {
                tables[i * max_blocks + (s->ctx_lens[i] - 1) / bs] = (int32_t)num_blocks;
                break;
            }
        c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    } else if (s->defect == 2) {
        context_lens[s->n_seqs - 1] = (int32_t)(max_blocks * bs + 1);
        c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    }

    const int64_t row = (int64_t)s->n_q_heads * d;
    const int64_t q_stride = s->padded ? row + test_rng_int(rng, 1, 9) : row;
    const int64_t o_stride = s->padded ? row + test_rng_int(rng, 1, 9) : row;
    a->q_token_stride = s->padded ? q_stride : 0;
    a->out_token_stride = s->padded ? o_stride : 0;
    const size_t nq = (size_t)(total_q * q_stride), no = (size_t)(total_q * o_stride);
    /* A half output may also differ by one rounding of its own type. */
    const pagoda_dtype_t act = act_type(s->act);
    const double cache_tol = conf_tolerance(s->dtype), act_tol = conf_tolerance(act);
    const double tol = cache_tol > act_tol ? cache_tol : act_tol;
    const conf_compare_t out_compare = act == PAGODA_DTYPE_BF16  ? CONF_BF16
                                       : act == PAGODA_DTYPE_F16 ? CONF_F16
                                                                 : CONF_F32;
    const size_t act_size = pagoda_dtype_size(act);
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
    int out = conf_add_tensor(&c, "out", random_act(rng, act, no, -1.0f, 1.0f), no * act_size,
                              CONF_DEVICE, out_compare, tol);
    conf_bind(&c, 0, q, offsetof(pagoda_op_paged_attention_t, q));
    conf_bind(&c, 0, kc, offsetof(pagoda_op_paged_attention_t, k_cache));
    conf_bind(&c, 0, vc, offsetof(pagoda_op_paged_attention_t, v_cache));
    conf_bind(&c, 0, bt, offsetof(pagoda_op_paged_attention_t, block_tables));
    conf_bind(&c, 0, cl, offsetof(pagoda_op_paged_attention_t, context_lens));
    conf_bind(&c, 0, qs, offsetof(pagoda_op_paged_attention_t, query_start));
    conf_bind(&c, 0, out, offsetof(pagoda_op_paged_attention_t, out));
    conf_check_case(&c, tally);
}

/* A random batch: each sequence decodes, continues a prompt in a chunk, starts one, or waits. */
static void random_batch(test_rng_t *rng, attention_shape_t *s, int n_seqs, int max_ctx) {
    s->n_seqs = n_seqs;
    int any_query = 0;
    for (int i = 0; i < n_seqs; ++i) {
        const int ctx = (int)test_rng_int(rng, 1, max_ctx);
        int q_len;
        switch (test_rng_int(rng, 0, 5)) {
            case 0: q_len = ctx; break;                                  /* whole prompt */
            case 1: q_len = (int)test_rng_int(rng, 1, ctx); break;       /* chunk */
            case 2: q_len = 0; break;                                    /* no queries */
            default: q_len = 1; break;                                   /* decode */
        }
        if (q_len > 64) q_len = 64 + (q_len % 64); /* keep the reference quick */
        s->ctx_lens[i] = ctx;
        s->q_lens[i] = q_len;
        any_query |= q_len > 0;
    }
    if (!any_query) s->q_lens[0] = 1;
}

static const int kGqa[][2] = {{4, 4}, {8, 2}, {8, 1}, {16, 2}, {32, 4}, {12, 3}, {6, 6}, {8, 4}};

/* Mixed batches over head sizes GPUs are built for (64, 128, and the others Llama-family models
 * use), block sizes 1/16/32, every cache type, GQA ratios 1 to 8 and MQA. */
void conf_cases_paged_attention(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x617474ull);
    static const int head_dims[] = {64, 128, 80, 96, 256};
    static const int block_sizes[] = {16, 32, 1};
    static const int windows[] = {0, 0, 0, 1, 7, 33, 100};
    for (int i = 0; i < 45; ++i) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        random_batch(&rng, &s, (int)test_rng_int(&rng, 1, 6), i % 9 == 8 ? 900 : 200);
        const int g = (int)test_rng_int(&rng, 0, 7);
        s.n_q_heads = kGqa[g][0];
        s.n_kv_heads = kGqa[g][1];
        s.head_dim = head_dims[i % 5];
        s.block_size = block_sizes[i % 3];
        s.dtype = kTypes[(i / 3) % 3];
        s.causal = i % 8 != 7;
        s.sliding_window = windows[test_rng_int(&rng, 0, 6)];
        s.padded = i % 4 == 1;
        s.give_max_context = i % 2;
        attention_case(&rng, &s, "mixed batch", tally);
    }
    /* Decode at batch sizes up to 96 and contexts long enough for a split over the context. */
    for (size_t dt = 0; dt < 3; ++dt) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        s.n_seqs = 96;
        for (int i = 0; i < s.n_seqs; ++i) {
            s.q_lens[i] = 1;
            s.ctx_lens[i] = (int)test_rng_int(&rng, 1, 300);
        }
        s.n_q_heads = 32;
        s.n_kv_heads = 8;
        s.head_dim = 128;
        s.block_size = dt == 2 ? 32 : 16;
        s.dtype = kTypes[dt];
        s.causal = 1;
        s.give_max_context = 1;
        attention_case(&rng, &s, "decode batch", tally);

        memset(&s, 0, sizeof s);
        s.n_seqs = 3;
        const int long_ctx[] = {4097, 6000, 1};
        for (int i = 0; i < 3; ++i) {
            s.q_lens[i] = 1;
            s.ctx_lens[i] = long_ctx[i];
        }
        s.n_q_heads = 8;
        s.n_kv_heads = 1;
        s.head_dim = 128;
        s.block_size = 16 << (dt % 2);
        s.dtype = kTypes[dt];
        s.causal = 1;
        s.give_max_context = dt != 1;
        attention_case(&rng, &s, "long decode", tally);

        /* A 384-token chunk after 716 cached tokens: the prefill kernel's tiles, causal with
         * the query offset; and the same with a sliding window. */
        memset(&s, 0, sizeof s);
        s.n_seqs = 2;
        s.q_lens[0] = 384;
        s.ctx_lens[0] = 1100;
        s.q_lens[1] = 129;
        s.ctx_lens[1] = 129;
        s.n_q_heads = 8;
        s.n_kv_heads = 2;
        s.head_dim = 128;
        s.block_size = 16;
        s.dtype = kTypes[dt];
        s.causal = 1;
        attention_case(&rng, &s, "chunked prefill", tally);
        s.sliding_window = 256;
        s.padded = 1;
        attention_case(&rng, &s, "chunked prefill, window", tally);
    }
    /* bf16/f16 queries and outputs: mixed batches, and a long decode whose split partials
     * are merged in f32 before the output's one rounding. */
    for (int i = 0; i < 18; ++i) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        random_batch(&rng, &s, (int)test_rng_int(&rng, 1, 6), i % 6 == 5 ? 900 : 200);
        const int g = (int)test_rng_int(&rng, 0, 7);
        s.n_q_heads = kGqa[g][0];
        s.n_kv_heads = kGqa[g][1];
        s.head_dim = head_dims[i % 5];
        s.block_size = block_sizes[i % 3];
        s.dtype = kTypes[(i / 2) % 3];
        s.act = kTypes[1 + i % 2];
        s.causal = i % 7 != 6;
        s.sliding_window = windows[test_rng_int(&rng, 0, 6)];
        s.padded = i % 4 == 1;
        s.give_max_context = i % 2;
        attention_case(&rng, &s, "mixed batch, half act", tally);
    }
    for (size_t dt = 0; dt < 3; ++dt) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        s.n_seqs = 2;
        s.q_lens[0] = s.q_lens[1] = 1;
        s.ctx_lens[0] = 5000;
        s.ctx_lens[1] = 700;
        s.n_q_heads = 8;
        s.n_kv_heads = 1;
        s.head_dim = 128;
        s.block_size = 16;
        s.dtype = kTypes[dt];
        s.act = kTypes[1 + dt % 2];
        s.causal = 1;
        s.padded = 1;
        s.give_max_context = 1;
        attention_case(&rng, &s, "long decode, half act", tally);
    }
    /* Ids the reference refuses must be refused by every backend. */
    for (int defect = 1; defect <= 2; ++defect) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        random_batch(&rng, &s, 4, 100);
        s.n_q_heads = 8;
        s.n_kv_heads = 2;
        s.head_dim = 64;
        s.block_size = 16;
        s.dtype = PAGODA_DTYPE_BF16;
        s.causal = 1;
        s.defect = defect;
        attention_case(&rng, &s, defect == 1 ? "bad block id" : "context past the table", tally);
    }
}

/* Head sizes off the usual ones (small, odd, not a multiple of a vector), and block sizes that
 * divide no tile; a backend may not support every one, but must say so as the reference would. */
void conf_cases_paged_attention_odd(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x6f6464ull);
    static const int head_dims[] = {8, 5, 40, 36, 72, 112, 160, 192};
    static const int block_sizes[] = {3, 8, 48, 128, 2};
    for (int i = 0; i < 24; ++i) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        random_batch(&rng, &s, (int)test_rng_int(&rng, 1, 4), 150);
        s.n_q_heads = kGqa[i % 8][0];
        s.n_kv_heads = kGqa[i % 8][1];
        s.head_dim = head_dims[i % 8];
        s.block_size = block_sizes[i % 5];
        s.dtype = kTypes[i % 3];
        s.causal = i % 5 != 4;
        s.sliding_window = i % 6 == 5 ? 9 : 0;
        s.padded = i % 2;
        s.give_max_context = 1;
        s.act = i % 3 == 1 ? kTypes[1 + (i / 3) % 2] : PAGODA_DTYPE_INVALID;
        attention_case(&rng, &s, "odd shape", tally);
    }
}

/* Soft-capped scores (ABI 1.8): caps from Gemma 2's 50, which barely bends these scores, down
 * to 0.5, which flattens most of them; mixed batches over GQA ratios, windows, every cache and
 * act type; a long decode (split over the context, merged by log-sum-exp over capped scores);
 * and chunked prefill with and without a window. */
void conf_cases_paged_attention_softcap(conf_tally_t *tally) {
    test_rng_t state;
    test_rng_seed(&state, 0x736361ull);
    test_rng_t *rng = &state;
    static const float caps[] = {50.0f, 2.0f, 1.0f, 0.5f};
    static const int windows[] = {0, 0, 7, 33};
    static const int head_dims[] = {64, 128, 256, 80};
    for (int i = 0; i < 16; ++i) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        random_batch(rng, &s, (int)test_rng_int(rng, 1, 6), i % 8 == 7 ? 900 : 200);
        const int g = (int)test_rng_int(rng, 0, 7);
        s.n_q_heads = kGqa[g][0];
        s.n_kv_heads = kGqa[g][1];
        s.head_dim = head_dims[i % 4];
        s.block_size = i % 3 == 2 ? 32 : 16;
        s.dtype = kTypes[i % 3];
        s.act = i % 4 == 3 ? kTypes[1 + (i / 4) % 2] : PAGODA_DTYPE_INVALID;
        s.causal = i % 6 != 5;
        s.sliding_window = windows[(i / 2) % 4];
        s.padded = i % 5 == 1;
        s.give_max_context = i % 2;
        s.softcap = caps[i % 4];
        attention_case(rng, &s, "softcap, mixed batch", tally);
    }
    for (size_t dt = 0; dt < 3; ++dt) {
        attention_shape_t s;
        memset(&s, 0, sizeof s);
        s.n_seqs = 3;
        s.q_lens[0] = s.q_lens[1] = s.q_lens[2] = 1;
        s.ctx_lens[0] = 4500;
        s.ctx_lens[1] = 700;
        s.ctx_lens[2] = 1;
        s.n_q_heads = 8;
        s.n_kv_heads = 4;
        s.head_dim = 256; /* Gemma 2's */
        s.block_size = 16;
        s.dtype = kTypes[dt];
        s.act = dt == 1 ? PAGODA_DTYPE_BF16 : PAGODA_DTYPE_INVALID;
        s.causal = 1;
        s.give_max_context = 1;
        s.softcap = dt == 2 ? 1.0f : 50.0f;
        attention_case(rng, &s, "softcap, long decode", tally);

        memset(&s, 0, sizeof s);
        s.n_seqs = 2;
        s.q_lens[0] = 200;
        s.ctx_lens[0] = 700;
        s.q_lens[1] = 65;
        s.ctx_lens[1] = 65;
        s.n_q_heads = 8;
        s.n_kv_heads = 2;
        s.head_dim = 128;
        s.block_size = 16;
        s.dtype = kTypes[dt];
        s.causal = 1;
        s.softcap = 0.5f;
        attention_case(rng, &s, "softcap, chunked prefill", tally);
        s.sliding_window = 128;
        s.act = kTypes[1 + dt % 2];
        s.padded = 1;
        attention_case(rng, &s, "softcap, chunked prefill, window", tally);
    }
}
