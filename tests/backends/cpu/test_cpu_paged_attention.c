/* PAGED_ATTENTION on the CPU backend against a double-precision attention over contiguous K/V.
 *
 * Each case builds a paged cache whose physical blocks are a random permutation of the pool,
 * fills every slot with NaN first (so reading a slot that was never written spoils the result),
 * writes each sequence's context through KV_WRITE (with padding slots mixed in), and compares
 * the kernel with attention computed on the values the cache kept (bf16/f16 rounded). With
 * bf16/f16 queries and outputs (act_dtype) the reference uses the queries as widened, and the
 * output must be the f32 launch's output rounded once. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define MAX_SEQS 16

typedef struct attn_case {
    const char *name;
    int n_seqs;
    int q_lens[MAX_SEQS];
    int ctx_lens[MAX_SEQS];
    int n_q_heads;
    int n_kv_heads;
    int head_dim;
    int block_size;
    pagoda_dtype_t dtype;
    int causal;
    int sliding_window;
    int stride_pad;       /* extra elements per token in q and out rows */
    int give_max_context; /* pass max_context_len (else 0 = unknown) */
} attn_case_t;

/* Everything one case allocates; attn_free releases it. */
typedef struct attn_fixture {
    attn_case_t c;
    pagoda_dtype_t act; /* of q and out; 0 = F32 */
    int64_t num_blocks, max_blocks_per_seq, total_q, total_ctx, q_stride;
    size_t elem_bytes, cache_bytes;
    void *k_cache, *v_cache;
    int32_t *block_tables, *context_lens, *query_start;
    int32_t ctx_start[MAX_SEQS + 1]; /* offsets of each sequence's context in k_kept/v_kept */
    double *k_kept, *v_kept;         /* [total_ctx][n_kv_heads][head_dim] */
    float *q, *out;                  /* [total_q][q_stride]; q as the kernel widens it */
    uint16_t *q_act, *out_act;       /* bf16/f16 act: [total_q][q_stride] (else NULL) */
} attn_fixture_t;

static int is_half(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_BF16 || act == PAGODA_DTYPE_F16;
}

/* Builds the cache, the tables and the queries (of `act`, 0 meaning f32) for `c`; the seed
 * makes every case different. */
static void attn_build_act(attn_fixture_t *f, const attn_case_t *c, pagoda_dtype_t act,
                           uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->c = *c;
    f->act = act;
    test_rng_t rng;
    test_rng_seed(&rng, seed);
    const int64_t bs = c->block_size, row = (int64_t)c->n_kv_heads * c->head_dim;

    /* Physical blocks: a shuffled pool with a few blocks that no sequence uses. */
    int64_t needed = 0;
    for (int s = 0; s < c->n_seqs; ++s) {
        int64_t nb = (c->ctx_lens[s] + bs - 1) / bs;
        needed += nb;
        if (nb > f->max_blocks_per_seq) f->max_blocks_per_seq = nb;
    }
    f->max_blocks_per_seq += 1; /* a trailing unused entry per row */
    f->num_blocks = needed + 3;
    int32_t *perm = test_xcalloc((size_t)f->num_blocks, sizeof *perm);
    for (int64_t i = 0; i < f->num_blocks; ++i) perm[i] = (int32_t)i;
    for (int64_t i = f->num_blocks - 1; i > 0; --i) {
        int64_t j = test_rng_int(&rng, 0, i);
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    f->block_tables = test_xcalloc((size_t)(c->n_seqs * f->max_blocks_per_seq), sizeof(int32_t));
    int64_t next = 0;
    for (int s = 0; s < c->n_seqs; ++s) {
        int64_t nb = (c->ctx_lens[s] + bs - 1) / bs;
        for (int64_t j = 0; j < f->max_blocks_per_seq; ++j)
            /* Entries past the context are never read: -1 checks that they are not. */
            f->block_tables[s * f->max_blocks_per_seq + j] = j < nb ? perm[next++] : -1;
    }
    free(perm);

    f->context_lens = test_xcalloc((size_t)c->n_seqs, sizeof(int32_t));
    f->query_start = test_xcalloc((size_t)c->n_seqs + 1, sizeof(int32_t));
    for (int s = 0; s < c->n_seqs; ++s) {
        f->context_lens[s] = c->ctx_lens[s];
        f->query_start[s + 1] = f->query_start[s] + c->q_lens[s];
        f->ctx_start[s + 1] = f->ctx_start[s] + c->ctx_lens[s];
    }
    f->total_q = f->query_start[c->n_seqs];
    f->total_ctx = f->ctx_start[c->n_seqs];

    /* Caches full of NaN (all-ones bits in every dtype). */
    f->elem_bytes = pagoda_dtype_size(c->dtype);
    f->cache_bytes = (size_t)(f->num_blocks * bs * row) * f->elem_bytes;
    f->k_cache = test_xcalloc(f->cache_bytes, 1);
    f->v_cache = test_xcalloc(f->cache_bytes, 1);
    memset(f->k_cache, 0xFF, f->cache_bytes);
    memset(f->v_cache, 0xFF, f->cache_bytes);

    /* The context's K/V, with one padding token (slot -1, its own garbage) after every fifth. */
    const int64_t n_pad = f->total_ctx / 5 + 1, n_write = f->total_ctx + n_pad;
    float *k_in = test_xcalloc((size_t)(n_write * row), sizeof(float));
    float *v_in = test_xcalloc((size_t)(n_write * row), sizeof(float));
    int64_t *slots = test_xcalloc((size_t)n_write, sizeof(int64_t));
    test_fill_uniform(&rng, k_in, (size_t)(n_write * row), -1.0f, 1.0f);
    test_fill_uniform(&rng, v_in, (size_t)(n_write * row), -1.0f, 1.0f);
    f->k_kept = test_xcalloc((size_t)(f->total_ctx * row), sizeof(double));
    f->v_kept = test_xcalloc((size_t)(f->total_ctx * row), sizeof(double));
    void *scratch = test_xcalloc((size_t)row, sizeof(float));
    int64_t w = 0;
    for (int s = 0; s < c->n_seqs; ++s) {
        for (int64_t pos = 0; pos < c->ctx_lens[s]; ++pos) {
            if (w % 6 == 5) slots[w++] = -1;
            const int32_t block = f->block_tables[s * f->max_blocks_per_seq + pos / bs];
            slots[w] = (int64_t)block * bs + pos % bs;
            const int64_t kept = (f->ctx_start[s] + pos) * row;
            test_convert_weights(c->dtype, k_in + w * row, (size_t)row, scratch, f->k_kept + kept);
            test_convert_weights(c->dtype, v_in + w * row, (size_t)row, scratch, f->v_kept + kept);
            ++w;
        }
    }
    for (; w < n_write; ++w) slots[w] = -1;
    free(scratch);

    pagoda_op_kv_write_t kw;
    memset(&kw, 0, sizeof kw);
    kw.struct_size = sizeof kw;
    kw.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    kw.cache_dtype = c->dtype;
    kw.n_tokens = n_write;
    kw.n_kv_heads = c->n_kv_heads;
    kw.head_dim = c->head_dim;
    kw.block_size = bs;
    kw.num_blocks = f->num_blocks;
    kw.k = k_in;
    kw.v = v_in;
    kw.k_cache = f->k_cache;
    kw.v_cache = f->v_cache;
    kw.slot_mapping = slots;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_KV_WRITE, &kw));
    free(k_in);
    free(v_in);
    free(slots);

    f->q_stride = (int64_t)c->n_q_heads * c->head_dim + c->stride_pad;
    f->q = test_xcalloc((size_t)(f->total_q * f->q_stride), sizeof(float));
    f->out = test_xcalloc((size_t)(f->total_q * f->q_stride), sizeof(float));
    test_fill_uniform(&rng, f->q, (size_t)(f->total_q * f->q_stride), -2.0f, 2.0f);
    if (is_half(act)) {
        const size_t n = (size_t)(f->total_q * f->q_stride);
        double *kept = test_xcalloc(n, sizeof(double));
        f->q_act = test_xcalloc(n, sizeof(uint16_t));
        f->out_act = test_xcalloc(n, sizeof(uint16_t));
        test_convert_weights(act, f->q, n, f->q_act, kept);
        for (size_t i = 0; i < n; ++i) f->q[i] = (float)kept[i];
        free(kept);
    }
}

static void attn_build(attn_fixture_t *f, const attn_case_t *c, uint64_t seed) {
    attn_build_act(f, c, PAGODA_DTYPE_INVALID, seed);
}

/* The half output widened into f->out, where attn_error reads it. */
static void attn_widen_out(attn_fixture_t *f) {
    if (!is_half(f->act)) return;
    for (int64_t i = 0; i < f->total_q * f->q_stride; ++i)
        f->out[i] = f->act == PAGODA_DTYPE_BF16 ? test_bf16_to_f32(f->out_act[i])
                                                : test_f16_to_f32(f->out_act[i]);
}

static void attn_free(attn_fixture_t *f) {
    free(f->k_cache);
    free(f->v_cache);
    free(f->block_tables);
    free(f->context_lens);
    free(f->query_start);
    free(f->k_kept);
    free(f->v_kept);
    free(f->q);
    free(f->out);
    free(f->q_act);
    free(f->out_act);
}

static pagoda_op_paged_attention_t attn_args(const attn_fixture_t *f) {
    const attn_case_t *c = &f->c;
    pagoda_op_paged_attention_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = c->dtype;
    a.causal = (uint32_t)c->causal;
    a.n_seqs = c->n_seqs;
    a.n_q_heads = c->n_q_heads;
    a.n_kv_heads = c->n_kv_heads;
    a.head_dim = c->head_dim;
    a.block_size = c->block_size;
    a.num_blocks = f->num_blocks;
    a.max_blocks_per_seq = f->max_blocks_per_seq;
    if (c->give_max_context)
        for (int s = 0; s < c->n_seqs; ++s)
            if (c->ctx_lens[s] > a.max_context_len) a.max_context_len = c->ctx_lens[s];
    a.scale = 1.0f / sqrtf((float)c->head_dim);
    a.sliding_window = c->sliding_window;
    a.q = is_half(f->act) ? (const void *)f->q_act : f->q;
    a.q_token_stride = c->stride_pad ? f->q_stride : 0;
    a.k_cache = f->k_cache;
    a.v_cache = f->v_cache;
    a.block_tables = f->block_tables;
    a.context_lens = f->context_lens;
    a.query_start = f->query_start;
    a.out = is_half(f->act) ? (void *)f->out_act : f->out;
    a.out_token_stride = c->stride_pad ? f->q_stride : 0;
    a.act_dtype = f->act;
    return a;
}

/* Attention over the contiguous kept K/V in double; returns the normwise relative error of
 * the kernel's output. */
static double attn_error(const attn_fixture_t *f) {
    const attn_case_t *c = &f->c;
    const int64_t d = c->head_dim, row = (int64_t)c->n_kv_heads * d;
    const int64_t group = c->n_q_heads / c->n_kv_heads, q_row = (int64_t)c->n_q_heads * d;
    const double scale = 1.0 / sqrt((double)c->head_dim);
    double *ref = test_xcalloc((size_t)(f->total_q * q_row), sizeof(double));
    float *got = test_xcalloc((size_t)(f->total_q * q_row), sizeof(float));
    double *p = test_xcalloc((size_t)f->total_ctx + 1, sizeof(double));
    for (int s = 0; s < c->n_seqs; ++s) {
        const int64_t ctx = c->ctx_lens[s], q_len = c->q_lens[s];
        const double *ks = f->k_kept + f->ctx_start[s] * row,
                     *vs = f->v_kept + f->ctx_start[s] * row;
        for (int64_t i = 0; i < q_len; ++i) {
            const int64_t t = f->query_start[s] + i, pos = ctx - q_len + i;
            const int64_t last = c->causal ? pos : ctx - 1;
            int64_t first = 0;
            if (c->sliding_window > 0 && pos - c->sliding_window + 1 > 0)
                first = pos - c->sliding_window + 1;
            for (int64_t h = 0; h < c->n_q_heads; ++h) {
                const float *q = f->q + t * f->q_stride + h * d;
                const int64_t kvh = h / group;
                double max = -INFINITY, sum = 0.0;
                for (int64_t j = first; j <= last; ++j) {
                    double dot = 0.0;
                    for (int64_t e = 0; e < d; ++e) dot += (double)q[e] * ks[j * row + kvh * d + e];
                    p[j] = scale * dot;
                    if (p[j] > max) max = p[j];
                }
                for (int64_t j = first; j <= last; ++j) sum += (p[j] = exp(p[j] - max));
                double *r = ref + t * q_row + h * d;
                for (int64_t j = first; j <= last; ++j)
                    for (int64_t e = 0; e < d; ++e) r[e] += p[j] / sum * vs[j * row + kvh * d + e];
            }
            memcpy(got + t * q_row, f->out + t * f->q_stride, (size_t)q_row * sizeof(float));
        }
    }
    double err = test_rel_error(got, ref, (size_t)(f->total_q * q_row));
    free(ref);
    free(got);
    free(p);
    return err;
}

/* Runs one case with activations of `act` (0 = f32) and fails with its name if the error is
 * above the dtypes' bound. */
static void run_case_act(const attn_case_t *c, pagoda_dtype_t act, uint64_t seed) {
    attn_fixture_t f;
    attn_build_act(&f, c, act, seed);
    pagoda_op_paged_attention_t a = attn_args(&f);
    TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_PAGED_ATTENTION, &a));
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &a));
    attn_widen_out(&f);
    const double err = attn_error(&f);
    /* f32 accumulation (or the cache's rounding), plus the output's own rounding. */
    const double bound = (c->dtype == PAGODA_DTYPE_F32 ? 1e-5 : 1e-2) +
                         (act == PAGODA_DTYPE_BF16  ? 1.0 / 256
                          : act == PAGODA_DTYPE_F16 ? 1.0 / 2048
                                                    : 0.0);
    attn_free(&f);
    if (!(err <= bound))
        fail_msg("%s (%s cache, %s act, block %d, head_dim %d, %d/%d heads): relative error "
                 "%.3g > %.1e",
                 c->name, pagoda_dtype_name(c->dtype),
                 pagoda_dtype_name(act ? act : PAGODA_DTYPE_F32), c->block_size, c->head_dim,
                 c->n_q_heads, c->n_kv_heads, err, bound);
}

static void run_case(const attn_case_t *c, uint64_t seed) {
    run_case_act(c, PAGODA_DTYPE_INVALID, seed);
}

static const pagoda_dtype_t kDtypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};

/* run_case with each cache dtype in turn, on seeds seed, seed + 1 and seed + 2. */
static void run_case_each_dtype(attn_case_t c, uint64_t seed) {
    for (size_t i = 0; i < 3; ++i) {
        c.dtype = kDtypes[i];
        run_case(&c, seed + i);
    }
}

/* Many sequences decoding one token each; contexts of one token, just below, at and past block
 * boundaries, and long ones. */
static void test_decode_batch(void **state) {
    (void)state;
    attn_case_t c = {"decode batch",
                     12,
                     {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                     {1, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257, 700},
                     8,
                     2,
                     64,
                     16,
                     PAGODA_DTYPE_F32,
                     1,
                     0,
                     0,
                     1};
    run_case_each_dtype(c, 100);
}

/* A prompt chunk that attends to earlier chunks, and a whole prompt at once. */
static void test_prefill(void **state) {
    (void)state;
    const attn_case_t chunk = {"prefill chunk after earlier chunks",
                               1,
                               {37},
                               {100},
                               8,
                               4,
                               128,
                               32,
                               PAGODA_DTYPE_F32,
                               1,
                               0,
                               0,
                               1};
    const attn_case_t prompt = {"whole prompt",   1, {77}, {77}, 4, 4, 64, 16,
                                PAGODA_DTYPE_F32, 1, 0,    0,    0};
    const attn_case_t long_prompt = {"prompt longer than a score tile",
                                     1,
                                     {300},
                                     {300},
                                     4,
                                     1,
                                     64,
                                     16,
                                     PAGODA_DTYPE_F32,
                                     1,
                                     0,
                                     0,
                                     0};
    run_case_each_dtype(chunk, 200);
    run_case_each_dtype(prompt, 210);
    run_case(&long_prompt, 220);
}

/* Prefill, chunked prefill and decode sequences in one launch, plus a sequence with no queries
 * this step; q and out with padded token strides. */
static void test_mixed_batch(void **state) {
    (void)state;
    attn_case_t c = {"mixed batch",
                     6,
                     {1, 20, 9, 0, 1, 13},
                     {50, 20, 40, 10, 1, 129},
                     8,
                     2,
                     64,
                     16,
                     PAGODA_DTYPE_F32,
                     1,
                     0,
                     5,
                     1};
    run_case_each_dtype(c, 300);
}

/* GQA ratios 1, 2, 4, 8 and MQA (one KV head for all query heads). */
static void test_gqa_ratios(void **state) {
    (void)state;
    static const int kv_heads[][2] = {{8, 8}, {8, 4}, {8, 2}, {16, 2}, {8, 1}, {6, 1}, {12, 4}};
    for (size_t i = 0; i < sizeof kv_heads / sizeof kv_heads[0]; ++i) {
        attn_case_t c = {"gqa",
                         3,
                         {1, 5, 1},
                         {40, 21, 3},
                         kv_heads[i][0],
                         kv_heads[i][1],
                         64,
                         16,
                         PAGODA_DTYPE_F32,
                         1,
                         0,
                         0,
                         1};
        run_case(&c, 400 + i);
        c.dtype = PAGODA_DTYPE_BF16;
        run_case(&c, 420 + i);
    }
}

/* Block sizes from 1 to the maximum of 128, including ones that do not divide the tile. */
static void test_block_sizes(void **state) {
    (void)state;
    static const int sizes[] = {1, 2, 3, 16, 32, 48, 128};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        attn_case_t c = {"block size",
                         4,
                         {1, 1, 6, 1},
                         {1, 129, 140, 300},
                         4,
                         2,
                         64,
                         sizes[i],
                         PAGODA_DTYPE_F32,
                         1,
                         0,
                         0,
                         1};
        run_case(&c, 500 + i);
        c.dtype = PAGODA_DTYPE_F16;
        run_case(&c, 520 + i);
    }
}

/* Head sizes with and without a tail after the 8- and 16-wide vector steps. */
static void test_head_dims(void **state) {
    (void)state;
    static const int dims[] = {8, 40, 64, 128, 36, 5, 256};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; ++i)
        for (size_t j = 0; j < 3; ++j) {
            attn_case_t c = {
                "head dim", 3, {1, 4, 1}, {17, 30, 64}, 4, 2, dims[i], 16, kDtypes[j], 1, 0, 0, 1};
            run_case(&c, 600 + 10 * i + j);
        }
}

/* A sliding window over decode and chunked prefill; a window of one; a window wider than the
 * context; and a window without causality. */
static void test_sliding_window(void **state) {
    (void)state;
    static const int windows[] = {1, 7, 16, 33, 1000};
    for (size_t i = 0; i < sizeof windows / sizeof windows[0]; ++i) {
        attn_case_t c = {"sliding window",
                         4,
                         {1, 12, 1, 30},
                         {90, 60, 5, 30},
                         8,
                         2,
                         64,
                         16,
                         PAGODA_DTYPE_F32,
                         1,
                         windows[i],
                         0,
                         1};
        run_case(&c, 700 + i);
        c.dtype = PAGODA_DTYPE_BF16;
        run_case(&c, 710 + i);
        c.causal = 0;
        c.name = "sliding window, not causal";
        run_case(&c, 720 + i);
    }
}

/* Without causality every query sees the whole context. */
static void test_non_causal(void **state) {
    (void)state;
    attn_case_t c = {"not causal",     3, {5, 1, 17}, {30, 9, 17}, 4, 1, 40, 8,
                     PAGODA_DTYPE_F32, 0, 0,          0,           0};
    run_case_each_dtype(c, 800);
}

/* ------------------------------------------------------------------------------------------ */
/* Half-precision queries and outputs (act_dtype)                                              */
/* ------------------------------------------------------------------------------------------ */

/* Rounds an f32 value as the output's type; the tests' own conversion. */
static uint16_t round_act(pagoda_dtype_t act, float x) {
    return act == PAGODA_DTYPE_BF16 ? test_f32_to_bf16(x) : test_f32_to_f16(x);
}

/* One case with half activations: within the bound of the f64 reference (run_case), and equal,
 * element for element, to an f32 launch on the widened queries rounded once: the compute is
 * the same f32 whatever act_dtype is. Padding between token rows is left alone. */
static void run_half_case(const attn_case_t *c, pagoda_dtype_t act, uint64_t seed) {
    run_case_act(c, act, seed);

    attn_fixture_t f;
    attn_build_act(&f, c, act, seed);
    const int64_t n = f.total_q * f.q_stride;
    memset(f.out_act, 0xA5, (size_t)n * sizeof(uint16_t));
    pagoda_op_paged_attention_t half = attn_args(&f);
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &half));
    pagoda_op_paged_attention_t wide = half;
    wide.act_dtype = PAGODA_DTYPE_F32;
    wide.q = f.q;
    wide.out = f.out;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &wide));
    const int64_t row = (int64_t)c->n_q_heads * c->head_dim;
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; ++i) {
        const uint16_t want = i % f.q_stride < row ? round_act(act, f.out[i]) : 0xA5A5;
        if (f.out_act[i] != want) bad = i;
    }
    attn_free(&f);
    if (bad >= 0)
        fail_msg("%s (%s cache, %s act): element %lld is not the f32 launch's output rounded",
                 c->name, pagoda_dtype_name(c->dtype), pagoda_dtype_name(act), (long long)bad);
}

/* Decode, prefill, a mixed batch with padded strides and split contexts, with bf16 and f16
 * activations over every cache type. */
static void test_half_activations(void **state) {
    (void)state;
    const attn_case_t cases[] = {
        {"half: decode", 5, {1, 1, 1, 1, 1}, {1, 16, 33, 100, 257}, 8, 2, 64, 16,
         PAGODA_DTYPE_F32, 1, 0, 0, 1},
        {"half: prefill chunk", 1, {37}, {100}, 8, 4, 40, 32, PAGODA_DTYPE_F32, 1, 0, 0, 1},
        {"half: mixed batch", 4, {1, 20, 0, 13}, {50, 20, 10, 129}, 8, 2, 64, 16,
         PAGODA_DTYPE_F32, 1, 9, 5, 1},
        {"half: split MQA decode", 1, {1}, {1000}, 4, 1, 64, 16, PAGODA_DTYPE_F32, 1, 0, 3, 1},
        {"half: split non-causal", 1, {3}, {600}, 2, 1, 36, 32, PAGODA_DTYPE_F32, 0, 0, 0, 0},
    };
    static const pagoda_dtype_t acts[] = {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    uint64_t seed = 1100;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        for (size_t a = 0; a < 2; ++a)
            for (size_t d = 0; d < 3; ++d) {
                attn_case_t c = cases[i];
                c.dtype = kDtypes[d];
                run_half_case(&c, acts[a], seed++);
            }
}

/* act_dtype 0 (a caller of an ABI 1.0 header, also by a struct_size that ends before the field)
 * and F32 are f32; any type but f32/bf16/f16 is unsupported. */
static void test_act_dtype_field(void **state) {
    (void)state;
    const attn_case_t c = {"act_dtype", 3, {1, 4, 1}, {20, 40, 3}, 4, 2, 16, 8,
                           PAGODA_DTYPE_BF16, 1, 0, 0, 1};
    for (int i = 0; i < 3; ++i) {
        attn_fixture_t f;
        attn_build(&f, &c, 1200 + (uint64_t)i);
        pagoda_op_paged_attention_t a = attn_args(&f);
        if (i == 0) a.act_dtype = PAGODA_DTYPE_F32;
        if (i == 2) a.struct_size = (uint32_t)offsetof(pagoda_op_paged_attention_t, act_dtype);
        TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &a));
        const double err = attn_error(&f);
        attn_free(&f);
        if (!(err <= 1e-2)) fail_msg("act_dtype case %d: relative error %.3g", i, err);
    }
    attn_fixture_t f;
    attn_build(&f, &c, 1210);
    pagoda_op_paged_attention_t a = attn_args(&f);
    a.act_dtype = PAGODA_DTYPE_I64;
    test_cpu_expect_rejected(PAGODA_OP_PAGED_ATTENTION, &a, PAGODA_ERR_UNSUPPORTED,
                             "paged_attention: act_dtype = i64 (5) is not supported");
    a.act_dtype = (pagoda_dtype_t)-3;
    test_cpu_expect_rejected(PAGODA_OP_PAGED_ATTENTION, &a, PAGODA_ERR_UNSUPPORTED,
                             "paged_attention: act_dtype = unknown (-3) is not supported");
    attn_free(&f);
}

/* ------------------------------------------------------------------------------------------ */
/* Invalid and unsupported launches                                                            */
/* ------------------------------------------------------------------------------------------ */

/* A valid small launch to break one field at a time. */
static const attn_case_t kSmall = {"small",          3, {1, 4, 1}, {20, 40, 3}, 4, 2, 16, 8,
                                   PAGODA_DTYPE_F32, 1, 0,         0,           1};

static void expect_launch_failure(const pagoda_op_paged_attention_t *a, pagoda_status_t want,
                                  const char *needle) {
    test_expect_failure(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, a), want, needle);
}

/* Descriptor errors, found by supports() (pointers NULL) and by launch() alike. */
static void expect_descriptor_failure(const pagoda_op_paged_attention_t *a, pagoda_status_t want,
                                      const char *needle) {
    pagoda_op_paged_attention_t shape = *a;
    shape.q = shape.k_cache = shape.v_cache = NULL;
    shape.out = NULL;
    shape.block_tables = shape.context_lens = shape.query_start = NULL;
    test_expect_failure(test_cpu_supports(PAGODA_OP_PAGED_ATTENTION, &shape), want, needle);
    expect_launch_failure(a, want, needle);
}

static void test_bad_descriptors(void **state) {
    (void)state;
    attn_fixture_t f;
    attn_build(&f, &kSmall, 900);
    const pagoda_op_paged_attention_t good = attn_args(&f);
    pagoda_op_paged_attention_t a;

    a = good;
    a.n_q_heads = 6;
    a.n_kv_heads = 4;
    expect_descriptor_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "n_q_heads 6");
    a = good;
    a.block_size = 0;
    expect_descriptor_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "block_size 0");
    a = good;
    a.block_size = 129;
    expect_descriptor_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "block_size 129");
    a = good;
    a.head_dim = 0;
    expect_descriptor_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "head_dim 0");
    a = good;
    a.n_kv_heads = 0;
    expect_descriptor_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "n_kv_heads 0");
    a = good;
    a.sliding_window = -2;
    expect_descriptor_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "sliding_window -2");
    a = good;
    a.q_token_stride = 3;
    expect_descriptor_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "q_token_stride 3");
    a = good;
    a.cache_dtype = PAGODA_DTYPE_I8;
    expect_descriptor_failure(&a, PAGODA_ERR_UNSUPPORTED, "cache_dtype i8");
    a = good;
    a.layout = (pagoda_kv_layout_t)7;
    expect_descriptor_failure(&a, PAGODA_ERR_UNSUPPORTED, "layout 7");
    a = good;
    a.struct_size = 8;
    expect_descriptor_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "struct_size");
    expect_launch_failure(NULL, PAGODA_ERR_INVALID_ARGUMENT, "NULL");
    attn_free(&f);
}

static void test_bad_batches(void **state) {
    (void)state;
    attn_fixture_t f;
    attn_build(&f, &kSmall, 901);
    const pagoda_op_paged_attention_t good = attn_args(&f);
    pagoda_op_paged_attention_t a = good;
    int32_t *table = f.block_tables;
    const int64_t m = f.max_blocks_per_seq;

    /* Block table entries outside [0, num_blocks) among the blocks a sequence uses. */
    int32_t saved = table[1 * m + 2];
    table[1 * m + 2] = (int32_t)f.num_blocks;
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "block_tables[1][2]");
    table[1 * m + 2] = -5;
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "-5");
    table[1 * m + 2] = saved;

    /* A context shorter than the sequence's queries, or longer than its table row. */
    f.context_lens[1] = 3;
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "context_lens[1] = 3");
    f.context_lens[1] = (int32_t)(m * kSmall.block_size + 1);
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "context_lens[1]");
    f.context_lens[1] = kSmall.ctx_lens[1];
    a.max_context_len = 30;
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "max_context_len 30");
    a = good;

    /* Query offsets that decrease or do not start at 0. */
    f.query_start[2] = 0;
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "query_start[2]");
    f.query_start[2] = 5;
    f.query_start[0] = 1;
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "query_start[0]");
    f.query_start[0] = 0;

    /* NULL arrays. */
    a.q = NULL;
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "q is NULL");
    a = good;
    a.block_tables = NULL;
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "block_tables is NULL");
    a = good;
    a.out = NULL;
    expect_launch_failure(&a, PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");

    /* After all that the launch still works. */
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &good));
    assert_true(attn_error(&f) <= 1e-5);
    attn_free(&f);
}

/* Entries of blocks no query can see (behind a sliding window, past the context) are ignored. */
static void test_unread_table_entries(void **state) {
    (void)state;
    attn_case_t c = {"window hides blocks", 1, {1}, {70}, 4, 2, 16, 8,
                     PAGODA_DTYPE_F32,      1, 10,  0,    1};
    attn_fixture_t f;
    attn_build(&f, &c, 902);
    for (int j = 0; j < 7; ++j) f.block_tables[j] = -1; /* keys 0..55; the window starts at 60 */
    pagoda_op_paged_attention_t a = attn_args(&f);
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &a));
    assert_true(attn_error(&f) <= 1e-5);
    attn_free(&f);
}

/* Few (token, KV head) items over long contexts, so the launch splits each item's keys into
 * partitions and merges them (flash-decoding): partitions ending inside a block and a tile,
 * sequences with fewer partitions than others, a window starting inside a partition, and a
 * non-causal chunk whose queries share their partitions. Splitting needs more than one thread,
 * as the tests run by default. */
static void test_split_contexts(void **state) {
    (void)state;
    const attn_case_t cases[] = {
        {"split: MQA decode", 1, {1}, {1000}, 4, 1, 64, 16, PAGODA_DTYPE_F32, 1, 0, 0, 1},
        {"split: uneven contexts", 2, {1, 1}, {700, 130}, 6, 2, 64, 16, PAGODA_DTYPE_F32, 1, 0, 0,
         0},
        {"split: window", 1, {1}, {900}, 8, 1, 40, 48, PAGODA_DTYPE_F32, 1, 300, 0, 1},
        {"split: non-causal chunk", 1, {3}, {600}, 2, 1, 128, 32, PAGODA_DTYPE_F32, 0, 0, 3, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        run_case_each_dtype(cases[i], 1000 + 10 * i);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_batch),         cmocka_unit_test(test_prefill),
        cmocka_unit_test(test_mixed_batch),          cmocka_unit_test(test_gqa_ratios),
        cmocka_unit_test(test_block_sizes),          cmocka_unit_test(test_head_dims),
        cmocka_unit_test(test_sliding_window),       cmocka_unit_test(test_non_causal),
        cmocka_unit_test(test_bad_descriptors),      cmocka_unit_test(test_bad_batches),
        cmocka_unit_test(test_unread_table_entries), cmocka_unit_test(test_split_contexts),
        cmocka_unit_test(test_half_activations),     cmocka_unit_test(test_act_dtype_field),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    pagoda_backends_unload_all();
    return failed;
}
