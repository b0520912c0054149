/* Cache parallelism on the CPU backend (ABI 1.2): PAGED_ATTENTION over one KV shard with its
 * log-sum-exp, and ATTENTION_MERGE, against plain double-precision attention.
 *
 * A case deals each sequence's blocks to S shards in turn (logical block j goes to shard j % S),
 * each shard with its own cache (a shuffled pool, every slot NaN until written) and block table.
 * Table entries no query can see (past the context, behind every window) hold -1, so reading one
 * fails the launch. Each shard's launch must equal attention over that shard's keys alone (a
 * query that sees none: out 0, lse -inf); the shards' out and lse merged, by ATTENTION_MERGE and
 * by a merge in double, must equal attention over the whole sequence. Also with the scores
 * soft-capped (ABI 1.8). ATTENTION_MERGE on its own is test_cpu_attention_merge.c's. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define MAX_SEQS 8
#define MAX_SHARDS 3

typedef struct shard_case {
    const char *name;
    int n_seqs;
    int q_lens[MAX_SEQS];
    int ctx_lens[MAX_SEQS];
    int n_q_heads;
    int n_kv_heads;
    int head_dim;
    int block_size;
    int causal;
    int sliding_window;
    float softcap; /* ABI 1.8; 0 = off */
} shard_case_t;

/* One shard's cache and block tables. */
typedef struct shard_cache {
    int64_t num_blocks, max_blocks_per_seq;
    void *k, *v;
    int32_t *tables; /* [n_seqs][max_blocks_per_seq] */
} shard_cache_t;

/* Everything one case allocates; fixture_free releases it. */
typedef struct fixture {
    shard_case_t c;
    int shards;
    pagoda_dtype_t cache, act; /* act is F32, BF16 or F16 */
    int64_t total_q, total_ctx, q_row, kv_row;
    int32_t context_lens[MAX_SEQS], query_start[MAX_SEQS + 1], ctx_start[MAX_SEQS + 1];
    double *k_kept, *v_kept; /* [total_ctx][kv_row], the values the caches hold */
    float *q;                /* [total_q][q_row], as the kernel widens it */
    void *q_act;             /* the queries in act */
    shard_cache_t sh[MAX_SHARDS];
} fixture_t;

static size_t act_size(pagoda_dtype_t act) { return act == PAGODA_DTYPE_F32 ? 4 : 2; }

static float load_act(pagoda_dtype_t act, const void *base, int64_t i) {
    if (act == PAGODA_DTYPE_BF16) return test_bf16_to_f32(((const uint16_t *)base)[i]);
    if (act == PAGODA_DTYPE_F16) return test_f16_to_f32(((const uint16_t *)base)[i]);
    return ((const float *)base)[i];
}

/* ops.h: query i of a chunk of q_len sits at position ctx - q_len + i and sees positions
 * [first, last]. */
static void visible_positions(const shard_case_t *c, int64_t ctx, int64_t q_len, int64_t i,
                              int64_t *first, int64_t *last) {
    const int64_t pos = ctx - q_len + i;
    *last = c->causal ? pos : ctx - 1;
    *first = c->sliding_window > 0 && pos - c->sliding_window + 1 > 0
                 ? pos - c->sliding_window + 1
                 : 0;
}

static void shuffle(test_rng_t *rng, int32_t *x, int64_t n) {
    for (int64_t i = n - 1; i > 0; --i) {
        const int64_t j = test_rng_int(rng, 0, i);
        const int32_t t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

/* Shard s's cache: its blocks of every sequence, written from the converted keys and values
 * (`k_conv`, `v_conv`: [total_ctx][kv_row] of the cache dtype). */
static void build_shard(fixture_t *f, int s, test_rng_t *rng, const unsigned char *k_conv,
                        const unsigned char *v_conv) {
    const shard_case_t *c = &f->c;
    const int64_t bs = c->block_size, S = f->shards, d = c->head_dim;
    const size_t elem = pagoda_dtype_size(f->cache);
    shard_cache_t *sh = &f->sh[s];
    int64_t local[MAX_SEQS], used = 0;
    for (int q = 0; q < c->n_seqs; ++q) {
        const int64_t nb = (c->ctx_lens[q] + bs - 1) / bs;
        local[q] = nb > s ? (nb - s + S - 1) / S : 0;
        used += local[q];
        if (local[q] > sh->max_blocks_per_seq) sh->max_blocks_per_seq = local[q];
    }
    sh->max_blocks_per_seq += 1; /* a trailing unused entry per row */
    sh->num_blocks = used + 2;
    int32_t *pool = test_xcalloc((size_t)sh->num_blocks, sizeof *pool);
    for (int64_t i = 0; i < sh->num_blocks; ++i) pool[i] = (int32_t)i;
    shuffle(rng, pool, sh->num_blocks);
    sh->tables = test_xcalloc((size_t)(c->n_seqs * sh->max_blocks_per_seq), sizeof(int32_t));
    const size_t bytes = (size_t)(sh->num_blocks * bs) * (size_t)f->kv_row * elem;
    sh->k = test_xmalloc(bytes);
    sh->v = test_xmalloc(bytes);
    memset(sh->k, 0xFF, bytes); /* NaN in every dtype */
    memset(sh->v, 0xFF, bytes);
    int64_t next = 0;
    for (int q = 0; q < c->n_seqs; ++q) {
        /* Blocks ending before the first query's first key are never read: -1 checks it. */
        int64_t first = INT64_MAX, last = 0; /* no queries: no entry is read */
        if (c->q_lens[q] > 0) visible_positions(c, c->ctx_lens[q], c->q_lens[q], 0, &first, &last);
        int32_t *row = sh->tables + q * sh->max_blocks_per_seq;
        for (int64_t j = 0; j < sh->max_blocks_per_seq; ++j) {
            const int64_t block = j * S + s; /* the sequence's logical block */
            const int visible = j < local[q] && (block + 1) * bs > first;
            row[j] = visible ? pool[next++] : -1;
            if (!visible) continue;
            for (int64_t o = 0; o < bs && block * bs + o < c->ctx_lens[q]; ++o) {
                const int64_t src = (f->ctx_start[q] + block * bs + o) * f->kv_row;
                for (int64_t h = 0; h < c->n_kv_heads; ++h) {
                    const int64_t dst = ((row[j] * c->n_kv_heads + h) * bs + o) * d;
                    memcpy((unsigned char *)sh->k + (size_t)dst * elem,
                           k_conv + (size_t)(src + h * d) * elem, (size_t)d * elem);
                    memcpy((unsigned char *)sh->v + (size_t)dst * elem,
                           v_conv + (size_t)(src + h * d) * elem, (size_t)d * elem);
                }
            }
        }
    }
    free(pool);
}

static void fixture_build(fixture_t *f, const shard_case_t *c, int shards, pagoda_dtype_t cache,
                          pagoda_dtype_t act, uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->c = *c;
    f->shards = shards;
    f->cache = cache;
    f->act = act;
    test_rng_t rng;
    test_rng_seed(&rng, seed);
    f->q_row = (int64_t)c->n_q_heads * c->head_dim;
    f->kv_row = (int64_t)c->n_kv_heads * c->head_dim;
    for (int s = 0; s < c->n_seqs; ++s) {
        f->context_lens[s] = c->ctx_lens[s];
        f->query_start[s + 1] = f->query_start[s] + c->q_lens[s];
        f->ctx_start[s + 1] = f->ctx_start[s] + c->ctx_lens[s];
    }
    f->total_q = f->query_start[c->n_seqs];
    f->total_ctx = f->ctx_start[c->n_seqs];

    const size_t n_kv = (size_t)(f->total_ctx * f->kv_row), elem = pagoda_dtype_size(cache);
    float *k_in = test_xcalloc(n_kv, sizeof(float)), *v_in = test_xcalloc(n_kv, sizeof(float));
    test_fill_uniform(&rng, k_in, n_kv, -1.0f, 1.0f);
    test_fill_uniform(&rng, v_in, n_kv, -1.0f, 1.0f);
    unsigned char *k_conv = test_xcalloc(n_kv, elem), *v_conv = test_xcalloc(n_kv, elem);
    f->k_kept = test_xcalloc(n_kv, sizeof(double));
    f->v_kept = test_xcalloc(n_kv, sizeof(double));
    test_convert_weights(cache, k_in, n_kv, k_conv, f->k_kept);
    test_convert_weights(cache, v_in, n_kv, v_conv, f->v_kept);
    for (int s = 0; s < shards; ++s) build_shard(f, s, &rng, k_conv, v_conv);
    free(k_in);
    free(v_in);
    free(k_conv);
    free(v_conv);

    const size_t n_q = (size_t)(f->total_q * f->q_row);
    f->q = test_xcalloc(n_q, sizeof(float));
    f->q_act = test_xcalloc(n_q, act_size(act));
    test_fill_uniform(&rng, f->q, n_q, -2.0f, 2.0f);
    double *kept = test_xcalloc(n_q, sizeof(double));
    test_convert_weights(act, f->q, n_q, f->q_act, kept);
    for (size_t i = 0; i < n_q; ++i) f->q[i] = (float)kept[i];
    free(kept);
}

static void fixture_free(fixture_t *f) {
    for (int s = 0; s < f->shards; ++s) {
        free(f->sh[s].k);
        free(f->sh[s].v);
        free(f->sh[s].tables);
    }
    free(f->k_kept);
    free(f->v_kept);
    free(f->q);
    free(f->q_act);
}

/* Shard s's launch writing `out` (act, packed rows) and `lse`; kv_shards as given (0 or 1 for
 * an unsharded launch). */
static pagoda_op_paged_attention_t shard_args(const fixture_t *f, int s, int32_t kv_shards,
                                              void *out, float *lse) {
    const shard_case_t *c = &f->c;
    pagoda_op_paged_attention_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = f->cache;
    a.causal = (uint32_t)c->causal;
    a.n_seqs = c->n_seqs;
    a.n_q_heads = c->n_q_heads;
    a.n_kv_heads = c->n_kv_heads;
    a.head_dim = c->head_dim;
    a.block_size = c->block_size;
    a.num_blocks = f->sh[s].num_blocks;
    a.max_blocks_per_seq = f->sh[s].max_blocks_per_seq;
    a.scale = 1.0f / sqrtf((float)c->head_dim);
    a.sliding_window = c->sliding_window;
    a.q = f->q_act;
    a.k_cache = f->sh[s].k;
    a.v_cache = f->sh[s].v;
    a.block_tables = f->sh[s].tables;
    a.context_lens = f->context_lens;
    a.query_start = f->query_start;
    a.out = out;
    a.act_dtype = f->act;
    a.kv_shards = kv_shards;
    a.kv_shard = s;
    a.lse = lse;
    a.softcap = c->softcap;
    return a;
}

/* Attention of query token t, head h over the positions it sees that lie on shard `shard` of
 * `shards` (all of them with shards = 1), in double: `out` [head_dim] and the log-sum-exp of
 * the scaled (and, with a softcap, capped) scores; returns how many keys it saw (0: out 0, lse
 * -inf). */
static int64_t reference(const fixture_t *f, int64_t t, int64_t h, int shards, int shard,
                         double *out, double *lse) {
    const shard_case_t *c = &f->c;
    const int64_t d = c->head_dim, kvh = h / (c->n_q_heads / c->n_kv_heads);
    int seq = 0;
    while (f->query_start[seq + 1] <= t) ++seq;
    int64_t first, last;
    visible_positions(c, c->ctx_lens[seq], c->q_lens[seq], t - f->query_start[seq], &first, &last);
    const double scale = 1.0 / sqrt((double)d);
    const float *q = f->q + t * f->q_row + h * d;
    double max = -INFINITY;
    int64_t seen = 0;
    for (int pass = 0; pass < 2; ++pass) {
        double sum = 0.0;
        for (int64_t e = 0; e < d; ++e) out[e] = 0.0;
        for (int64_t p = first; p <= last; ++p) {
            if ((p / c->block_size) % shards != shard) continue;
            const int64_t kv = (f->ctx_start[seq] + p) * f->kv_row + kvh * d;
            double dot = 0.0;
            for (int64_t e = 0; e < d; ++e) dot += (double)q[e] * f->k_kept[kv + e];
            double score = scale * dot;
            if (c->softcap != 0.0f) score = c->softcap * tanh(score / c->softcap);
            if (pass == 0) {
                if (score > max) max = score;
                ++seen;
                continue;
            }
            const double w = exp(score - max);
            sum += w;
            for (int64_t e = 0; e < d; ++e) out[e] += w * f->v_kept[kv + e];
        }
        if (pass == 1 && seen > 0) {
            for (int64_t e = 0; e < d; ++e) out[e] /= sum;
            *lse = max + log(sum);
        }
    }
    if (seen == 0) *lse = -INFINITY;
    return seen;
}

/* Bounds: f32 accumulation (or the cache's rounding) plus each rounding of half activations. */
static double out_bound(pagoda_dtype_t cache, pagoda_dtype_t act, int roundings) {
    const double eps = act == PAGODA_DTYPE_BF16  ? 1.0 / 256
                       : act == PAGODA_DTYPE_F16 ? 1.0 / 2048
                                                 : 0.0;
    return (cache == PAGODA_DTYPE_F32 ? 1e-5 : 1e-2) + roundings * eps;
}

static int lse_close(float got, double want, pagoda_dtype_t cache) {
    if (isinf(want)) return isinf(got) && got < 0;
    const double tol =
        (cache == PAGODA_DTYPE_F32 ? 1e-4 : 1e-2) * (fabs(want) > 1 ? fabs(want) : 1);
    return fabs((double)got - want) <= tol;
}

/* Checks `out` (of `type`, token rows `stride` apart) and `lse` against the reference over
 * shard `shard` of `shards`, within `bound` (normwise relative error of out). */
static void check_against_reference(const fixture_t *f, const char *what, int shards, int shard,
                                     const void *out, pagoda_dtype_t type, int64_t stride,
                                     const float *lse, double bound) {
    const int64_t n = f->total_q * f->q_row, d = f->c.head_dim;
    double *ref = test_xcalloc((size_t)n + 1, sizeof(double));
    float *got = test_xcalloc((size_t)n + 1, sizeof(float));
    for (int64_t t = 0; t < f->total_q; ++t)
        for (int64_t h = 0; h < f->c.n_q_heads; ++h) {
            const int64_t i = t * f->q_row + h * d;
            double ref_lse;
            const int64_t seen = reference(f, t, h, shards, shard, ref + i, &ref_lse);
            for (int64_t e = 0; e < d; ++e)
                got[i + e] = load_act(type, out, t * stride + h * d + e);
            if (seen == 0)
                for (int64_t e = 0; e < d; ++e)
                    if (got[i + e] != 0.0f)
                        fail_msg("%s: %s: token %lld head %lld sees no key but out[%lld] = %g",
                                 f->c.name, what, (long long)t, (long long)h, (long long)e,
                                 got[i + e]);
            if (lse != NULL && !lse_close(lse[t * f->c.n_q_heads + h], ref_lse, f->cache))
                fail_msg("%s: %s (%d shards, %s cache, %s act): token %lld head %lld lse %.7g, "
                         "want %.7g",
                         f->c.name, what, f->shards, pagoda_dtype_name(f->cache),
                         pagoda_dtype_name(f->act), (long long)t, (long long)h,
                         lse[t * f->c.n_q_heads + h], ref_lse);
        }
    const double err = test_rel_error(got, ref, (size_t)n);
    free(ref);
    free(got);
    if (!(err <= bound))
        fail_msg("%s: %s (%d shards, %s cache, %s act, block %d): relative error %.3g > %.1e",
                 f->c.name, what, f->shards, pagoda_dtype_name(f->cache),
                 pagoda_dtype_name(f->act), f->c.block_size, err, bound);
}

/* The shards' parts merged in double, as ops.h defines ATTENTION_MERGE; out in f32. */
static void merge_in_double(const fixture_t *f, const void *parts, const float *lse, float *out,
                            float *lse_out) {
    const int64_t rows = f->total_q * f->c.n_q_heads, d = f->c.head_dim;
    for (int64_t r = 0; r < rows; ++r) {
        double max = -INFINITY, sum = 0.0, w[MAX_SHARDS];
        for (int p = 0; p < f->shards; ++p)
            if (lse[p * rows + r] > max) max = lse[p * rows + r];
        for (int p = 0; p < f->shards; ++p)
            sum += w[p] = isinf(max) ? 0.0 : exp((double)lse[p * rows + r] - max);
        for (int64_t e = 0; e < d; ++e) {
            double acc = 0.0;
            for (int p = 0; p < f->shards; ++p)
                if (w[p] > 0) acc += w[p] / sum * load_act(f->act, parts, (p * rows + r) * d + e);
            out[r * d + e] = (float)acc;
        }
        lse_out[r] = sum > 0 ? (float)(max + log(sum)) : -INFINITY;
    }
}

/* One case with `shards` shards: every shard against its own keys, then both merges against
 * the whole sequence. */
static void run_sharded(const shard_case_t *c, int shards, pagoda_dtype_t cache,
                        pagoda_dtype_t act, uint64_t seed) {
    fixture_t f;
    fixture_build(&f, c, shards, cache, act, seed);
    const int64_t rows = f.total_q * c->n_q_heads, n = f.total_q * f.q_row;
    const size_t elem = act_size(act);
    unsigned char *parts = test_xcalloc((size_t)(shards * n) + 1, elem);
    float *lse = test_xcalloc((size_t)(shards * rows) + 1, sizeof(float));
    for (int s = 0; s < shards; ++s) {
        unsigned char *out = parts + (size_t)(s * n) * elem;
        pagoda_op_paged_attention_t a = shard_args(&f, s, shards, out, lse + s * rows);
        TEST_ASSERT_OK(test_cpu_supports(PAGODA_OP_PAGED_ATTENTION, &a));
        TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &a));
        check_against_reference(&f, "one shard", shards, s, out, act, f.q_row, lse + s * rows,
                                out_bound(cache, act, 1));
    }

    /* ATTENTION_MERGE into padded rows, and the same merge in double. */
    const int64_t stride = f.q_row + 3;
    unsigned char *merged = test_xcalloc((size_t)(f.total_q * stride) + 1, elem);
    float *merged_lse = test_xcalloc((size_t)rows + 1, sizeof(float));
    pagoda_op_attention_merge_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.n_parts = shards;
    m.n_tokens = f.total_q;
    m.n_heads = c->n_q_heads;
    m.head_dim = c->head_dim;
    m.parts = parts;
    m.lse = lse;
    m.out = merged;
    m.out_token_stride = stride;
    m.lse_out = merged_lse;
    m.act_dtype = act;
    if (f.total_q > 0) {
        TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ATTENTION_MERGE, &m));
        check_against_reference(&f, "merged", 1, 0, merged, act, stride, merged_lse,
                                out_bound(cache, act, 2));
    }
    float *dmerged = test_xcalloc((size_t)n + 1, sizeof(float));
    float *dmerged_lse = test_xcalloc((size_t)rows + 1, sizeof(float));
    merge_in_double(&f, parts, lse, dmerged, dmerged_lse);
    /* Its output is f32; the parts were rounded once, to act. */
    check_against_reference(&f, "merged in double", 1, 0, dmerged, PAGODA_DTYPE_F32, f.q_row,
                            dmerged_lse, out_bound(cache, act, 1));
    free(dmerged);
    free(dmerged_lse);
    free(merged);
    free(merged_lse);
    free(parts);
    free(lse);
    fixture_free(&f);
}

static const pagoda_dtype_t kCaches[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_F16};
static const pagoda_dtype_t kActs[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16};

/* run_sharded with 2 and 3 shards, f32 and f16 caches, f32 and bf16 activations. */
static void run_all(const shard_case_t *c, uint64_t seed) {
    for (int shards = 2; shards <= 3; ++shards)
        for (size_t i = 0; i < 2; ++i)
            for (size_t j = 0; j < 2; ++j)
                run_sharded(c, shards, kCaches[i], kActs[j],
                            seed + (uint64_t)(10 * shards + 2 * i + j));
}

/* Decode: contexts of one token (shards past the first hold nothing), around block boundaries
 * and long; GQA. */
static void test_decode(void **state) {
    (void)state;
    const shard_case_t c = {"decode", 7, {1, 1, 1, 1, 1, 1, 1}, {1, 15, 16, 17, 40, 100, 257},
                            8, 2, 64, 16, 1, 0, 0.0f};
    run_all(&c, 100);
}

/* Prefill chunks: after cached context, crossing block boundaries, a whole prompt whose first
 * queries see no key of the later shards, and a batch with a sequence without queries. */
static void test_prefill(void **state) {
    (void)state;
    const shard_case_t chunk = {"chunk after context", 1, {37}, {100}, 8, 4, 32, 16, 1, 0, 0.0f};
    const shard_case_t prompt = {"whole prompt", 1, {29}, {29}, 4, 1, 16, 8, 1, 0, 0.0f};
    const shard_case_t mixed = {"mixed batch", 3, {5, 0, 9}, {21, 10, 9}, 6, 2, 16, 4, 1, 0, 0.0f};
    run_all(&chunk, 200);
    run_all(&prompt, 300);
    run_all(&mixed, 400);
}

/* Sliding windows over decode and chunks (table entries wholly behind the window are -1),
 * causal and not. */
static void test_sliding_window(void **state) {
    (void)state;
    shard_case_t c = {"window", 3, {1, 12, 1}, {90, 60, 5}, 4, 2, 16, 8, 1, 7, 0.0f};
    run_all(&c, 500);
    c.sliding_window = 33;
    run_all(&c, 600);
    c.causal = 0;
    c.name = "window, not causal";
    run_all(&c, 700);
}

/* Few items over long contexts: each shard splits its keys into partitions (flash-decoding)
 * when the backend has more than one thread, as the tests run by default. */
static void test_split(void **state) {
    (void)state;
    const shard_case_t decode = {"split decode", 1, {1}, {2000}, 4, 1, 32, 16, 1, 0, 0.0f};
    const shard_case_t chunk = {"split chunk", 1, {4}, {1600}, 2, 1, 32, 16, 1, 0, 0.0f};
    const shard_case_t window = {"split window", 1, {2}, {1500}, 2, 1, 16, 32, 1, 1000, 0.0f};
    const shard_case_t wide = {"split not causal", 1, {3}, {1800}, 2, 1, 16, 16, 0, 0, 0.0f};
    run_all(&decode, 800);
    run_all(&chunk, 900);
    run_all(&window, 1000);
    run_all(&wide, 1100);
}

/* Soft-capped scores (ABI 1.8): every shard's out and lse, and both merges, against attention
 * over the capped scores; decode, a chunk, a window and a split, at a cap that barely bends
 * these scores (50) and at caps that flatten them (1, 0.5). */
static void test_softcap(void **state) {
    (void)state;
    const shard_case_t decode = {"softcap decode", 4, {1, 1, 1, 1}, {1, 17, 40, 257},
                                 8, 2, 64, 16, 1, 0, 50.0f};
    const shard_case_t chunk = {"softcap chunk", 2, {37, 1}, {100, 30}, 8, 4, 32, 16, 1, 0, 0.5f};
    const shard_case_t window = {"softcap window", 3, {1, 12, 1}, {90, 60, 5},
                                 4, 2, 16, 8, 1, 7, 1.0f};
    const shard_case_t split = {"softcap split", 1, {2}, {1800}, 4, 1, 32, 16, 1, 0, 1.0f};
    run_all(&decode, 1500);
    run_all(&chunk, 1600);
    run_all(&window, 1700);
    run_all(&split, 1800);
}

/* Unsharded (kv_shards 0 or 1) with lse: out as before, lse the reference log-sum-exp; split and
 * unsplit. */
static void test_unsharded_lse(void **state) {
    (void)state;
    const shard_case_t cases[] = {
        {"unsharded", 3, {1, 7, 1}, {30, 40, 3}, 4, 2, 16, 8, 1, 5, 0.0f},
        {"unsharded split", 1, {1}, {1000}, 4, 1, 32, 16, 1, 0, 0.0f},
        {"unsharded softcap", 2, {9, 1}, {40, 1000}, 4, 2, 32, 16, 1, 0, 0.5f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        for (int32_t kv_shards = 0; kv_shards <= 1; ++kv_shards) {
            fixture_t f;
            fixture_build(&f, &cases[i], 1, PAGODA_DTYPE_F32, PAGODA_DTYPE_F32, 1200 + i);
            float *out = test_xcalloc((size_t)(f.total_q * f.q_row), sizeof(float));
            float *lse = test_xcalloc((size_t)(f.total_q * cases[i].n_q_heads), sizeof(float));
            pagoda_op_paged_attention_t a = shard_args(&f, 0, kv_shards, out, lse);
            TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &a));
            check_against_reference(&f, "unsharded", 1, 0, out, PAGODA_DTYPE_F32, f.q_row, lse,
                                    out_bound(PAGODA_DTYPE_F32, PAGODA_DTYPE_F32, 0));
            free(out);
            free(lse);
            fixture_free(&f);
        }
}

/* Descriptors and batches the backend refuses. */
static void test_refused(void **state) {
    (void)state;
    const shard_case_t c = {"refused", 2, {1, 3}, {20, 30}, 4, 2, 16, 8, 1, 0, 0.0f};
    fixture_t f;
    fixture_build(&f, &c, 2, PAGODA_DTYPE_F32, PAGODA_DTYPE_F32, 1400);
    float out[4 * 64], lse[4 * 4];
    const pagoda_op_paged_attention_t good = shard_args(&f, 1, 2, out, lse);
    pagoda_op_paged_attention_t a = good;
    a.kv_shard = 2;
    test_cpu_expect_rejected(PAGODA_OP_PAGED_ATTENTION, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "paged_attention: kv_shard 2 is outside [0, kv_shards 2)");
    a.kv_shards = 0;
    a.kv_shard = 1;
    test_cpu_expect_rejected(PAGODA_OP_PAGED_ATTENTION, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "kv_shard 1 is outside [0, kv_shards 1)");
    a.kv_shards = -1;
    a.kv_shard = 0;
    test_cpu_expect_rejected(PAGODA_OP_PAGED_ATTENTION, &a, PAGODA_ERR_INVALID_ARGUMENT,
                             "kv_shards -1 is negative");
    /* A context past max_blocks_per_seq × block_size × kv_shards. */
    a = good;
    const int32_t saved = f.context_lens[1];
    f.context_lens[1] = (int32_t)(a.max_blocks_per_seq * a.block_size * 2 + 1);
    test_expect_failure(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &a),
                        PAGODA_ERR_INVALID_ARGUMENT, "× kv_shards 2");
    f.context_lens[1] = saved;
    /* A visible block's entry out of range. */
    int32_t *entry = &f.sh[1].tables[1 * f.sh[1].max_blocks_per_seq + 1];
    const int32_t saved_entry = *entry;
    *entry = -1;
    test_expect_failure(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &a),
                        PAGODA_ERR_INVALID_ARGUMENT, "block_tables[1][1] = -1");
    *entry = saved_entry;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &a));
    /* An ABI 1.1 caller's struct ends before kv_shards, which then reads as unsharded: the
     * whole context of sequence 0 would need the row's entry 1, which this shard left -1. */
    a.struct_size = (uint32_t)offsetof(pagoda_op_paged_attention_t, kv_shards);
    test_expect_failure(test_cpu_launch(PAGODA_OP_PAGED_ATTENTION, &a),
                        PAGODA_ERR_INVALID_ARGUMENT, "block_tables[0][1] = -1");
    fixture_free(&f);

    pagoda_op_attention_merge_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.n_parts = 2;
    m.n_tokens = 2;
    m.n_heads = 2;
    m.head_dim = 4;
    float parts[2 * 2 * 2 * 4] = {0}, mlse[2 * 2 * 2] = {0}, mout[2 * 2 * 4];
    m.parts = parts;
    m.lse = mlse;
    m.out = mout;
    TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_ATTENTION_MERGE, &m));
    pagoda_op_attention_merge_t bad = m;
    bad.n_parts = 0;
    test_cpu_expect_rejected(PAGODA_OP_ATTENTION_MERGE, &bad, PAGODA_ERR_INVALID_ARGUMENT,
                             "attention_merge: n_parts = 0 must be positive");
    bad = m;
    bad.out_token_stride = 7;
    test_cpu_expect_rejected(PAGODA_OP_ATTENTION_MERGE, &bad, PAGODA_ERR_INVALID_ARGUMENT,
                             "out_token_stride 7");
    bad = m;
    bad.lse = NULL;
    test_expect_failure(test_cpu_launch(PAGODA_OP_ATTENTION_MERGE, &bad),
                        PAGODA_ERR_INVALID_ARGUMENT, "attention_merge: lse is NULL");
    bad = m;
    bad.struct_size = 8;
    test_cpu_expect_rejected(PAGODA_OP_ATTENTION_MERGE, &bad, PAGODA_ERR_INVALID_ARGUMENT,
                             "struct_size");
    assert_string_equal(pagoda_op_name(PAGODA_OP_ATTENTION_MERGE), "attention_merge");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),         cmocka_unit_test(test_prefill),
        cmocka_unit_test(test_sliding_window), cmocka_unit_test(test_split),
        cmocka_unit_test(test_softcap),        cmocka_unit_test(test_unsharded_lse),
        cmocka_unit_test(test_refused),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    pagoda_backends_unload_all();
    return failed;
}
