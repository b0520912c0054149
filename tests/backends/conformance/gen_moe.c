/* The mixture-of-experts ops (ABI 1.8). MOE_ROUTE: logits with many ties and without, both
 * routings, 8 to 1024 experts, top 1 to 64; ids must match exactly (ties go to the lower id),
 * weights within f32 rounding. MOE_MATMUL: every activation type with every weight type, x per
 * token and per slot, with and without routing weights, padded strides, experts held from an
 * offset (the other ids give zeros), an expert picked by 150 rows (several row and output
 * tiles), a route feeding a product as a layer runs them. The experts are one device tensor
 * that the `experts` table points into; the held expert nobody picks is all NaN, so an output
 * with NaN shows a backend read it. Then the data errors (a NaN logit, a negative id, a picked
 * expert's NULL entry), which every backend must refuse, and `supports` on descriptors. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

static const pagoda_dtype_t kActTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
static const pagoda_dtype_t kWeightTypes[] = {
    PAGODA_DTYPE_F32,  PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16,  PAGODA_DTYPE_Q8_0,
    PAGODA_DTYPE_Q4_0, PAGODA_DTYPE_Q4_K, PAGODA_DTYPE_Q5_K, PAGODA_DTYPE_Q6_K};
#define N_WEIGHT_TYPES (sizeof kWeightTypes / sizeof kWeightTypes[0])

static int is_block(pagoda_dtype_t t) { return pagoda_dtype_size(t) == 0; }

static int64_t block_values(pagoda_dtype_t t) {
    int64_t elements = 1;
    if (is_block(t)) pagoda_dtype_block(t, &elements, NULL);
    return elements;
}

/* Bytes of `values` values of `t` (whole blocks for a block type). */
static size_t bytes_of(pagoda_dtype_t t, int64_t values) {
    if (!is_block(t)) return (size_t)values * pagoda_dtype_size(t);
    int64_t elements = 0;
    size_t bytes = 0;
    pagoda_dtype_block(t, &elements, &bytes);
    return (size_t)(values / elements) * bytes;
}

static conf_compare_t compare_of(pagoda_dtype_t t) {
    return t == PAGODA_DTYPE_BF16 ? CONF_BF16 : t == PAGODA_DTYPE_F16 ? CONF_F16 : CONF_F32;
}

/* ------------------------------------------------------------------------------------------ */
/* MOE_ROUTE                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* `tied`: logits from {-2, -1.5, ..., 2}, so most rows hold ties; else uniform in [-6, 6). */
static float *random_logits(test_rng_t *rng, size_t n, int tied) {
    float *logits = conf_random_f32(rng, n, -6.0f, 6.0f);
    if (tied)
        for (size_t i = 0; i < n; ++i) logits[i] = 0.5f * (float)test_rng_int(rng, -4, 4);
    return logits;
}

/* Adds a route step of `n_tokens` rows of `logits` (a tensor); returns the ids tensor, the
 * weights tensor after it. */
static int add_route(conf_case_t *c, int step, int logits, int64_t n_tokens, int64_t n_experts,
                     int64_t top_k, int32_t routing) {
    pagoda_op_moe_route_t *a = &conf_add_step(c, PAGODA_OP_MOE_ROUTE)->moe_route;
    a->n_tokens = n_tokens;
    a->n_experts = n_experts;
    a->top_k = top_k;
    a->routing = routing;
    const size_t picks = (size_t)(n_tokens * top_k);
    int ids = conf_add_tensor(c, "expert_ids", test_xcalloc(picks, sizeof(int32_t)),
                              picks * sizeof(int32_t), CONF_DEVICE, CONF_EXACT, 0);
    int weights = conf_add_tensor(c, "weights", test_xcalloc(picks, sizeof(float)),
                                  picks * sizeof(float), CONF_DEVICE, CONF_F32, 1e-5);
    conf_bind(c, step, logits, offsetof(pagoda_op_moe_route_t, logits));
    conf_bind(c, step, ids, offsetof(pagoda_op_moe_route_t, expert_ids));
    conf_bind(c, step, weights, offsetof(pagoda_op_moe_route_t, weights));
    return ids;
}

static void route_case(test_rng_t *rng, int64_t n_tokens, int64_t n_experts, int64_t top_k,
                       int32_t routing, int tied, conf_tally_t *tally) {
    conf_case_t c;
    conf_case_init(&c, "moe_route tokens=%lld experts=%lld top_k=%lld routing=%d%s",
                   (long long)n_tokens, (long long)n_experts, (long long)top_k, (int)routing,
                   tied ? " tied" : "");
    const size_t n = (size_t)(n_tokens * n_experts);
    int logits = conf_add_tensor(&c, "logits", random_logits(rng, n, tied), n * sizeof(float),
                                 CONF_DEVICE, CONF_INPUT, 0);
    add_route(&c, 0, logits, n_tokens, n_experts, top_k, routing);
    conf_check_case(&c, tally);
}

/* ------------------------------------------------------------------------------------------ */
/* MOE_MATMUL                                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct moe_spec {
    pagoda_dtype_t x, w, y;
    int64_t n_tokens, top_k;
    int64_t held, offset, global; /* experts held here, the first one's id, all of them */
    int64_t n, k;
    int per_slot, weighted, strided;
    int crowd; /* every token's first slot picks the first held expert */
} moe_spec_t;

static moe_spec_t spec_default(pagoda_dtype_t x, pagoda_dtype_t w, pagoda_dtype_t y) {
    moe_spec_t s;
    memset(&s, 0, sizeof s);
    s.x = x;
    s.w = w;
    s.y = y;
    s.n_tokens = 6;
    s.top_k = 2;
    s.held = 4;
    s.offset = 1;
    s.global = 7;
    s.n = 70; /* two output tiles of 64, the second partial */
    s.k = is_block(w) ? 2 * block_values(w) : 100;
    return s;
}

/* Each token's top_k distinct ids from [0, global), never `avoid`. */
static int32_t *random_ids(test_rng_t *rng, const moe_spec_t *s, int64_t avoid) {
    int32_t *ids = test_xmalloc(sizeof(int32_t) * (size_t)(s->n_tokens * s->top_k));
    int32_t *pool = test_xmalloc(sizeof(int32_t) * (size_t)s->global);
    for (int64_t t = 0; t < s->n_tokens; ++t) {
        int64_t left = 0;
        for (int64_t e = 0; e < s->global; ++e)
            if (e != avoid) pool[left++] = (int32_t)e;
        for (int64_t q = 0; q < s->top_k; ++q) {
            const int64_t at = test_rng_int(rng, 0, left - 1);
            ids[t * s->top_k + q] = pool[at];
            pool[at] = pool[--left];
        }
        if (s->crowd) ids[t * s->top_k] = (int32_t)s->offset;
    }
    free(pool);
    return ids;
}

/* Adds a MOE_MATMUL step reading ids (and, weighted, weights) from those tensors: the experts
 * as one tensor of `held` matrices 256 bytes apart at least, the last one all NaN (nobody
 * picks it), the table pointing into it (`skip_entry`'s entry left NULL). */
static void add_moe_matmul(conf_case_t *c, test_rng_t *rng, const moe_spec_t *s, int step,
                           int ids, int weights, int64_t skip_entry) {
    const int64_t block = block_values(s->w);
    const int64_t ldx = s->strided ? s->k + 3 : s->k;
    const int64_t ldw = s->strided ? s->k + (is_block(s->w) ? block : 5) : s->k;
    const int64_t ldy = s->strided ? s->n + 4 : s->n;
    const int64_t slots = s->n_tokens * s->top_k;
    const int64_t x_rows = s->per_slot ? slots : s->n_tokens;
    const int64_t y_rows = s->weighted ? s->n_tokens : slots;

    pagoda_op_moe_matmul_t *a = &conf_add_step(c, PAGODA_OP_MOE_MATMUL)->moe_matmul;
    a->x_dtype = s->x;
    a->w_dtype = s->w;
    a->y_dtype = s->y;
    a->n_tokens = s->n_tokens;
    a->top_k = s->top_k;
    a->n_experts = s->held;
    a->expert_offset = s->offset;
    a->n = s->n;
    a->k = s->k;
    a->ldx = s->strided ? ldx : 0;
    a->x_per_slot = (uint32_t)s->per_slot;
    a->ldw = s->strided ? ldw : 0;
    a->ldy = s->strided ? ldy : 0;

    const size_t matrix = bytes_of(s->w, s->n * ldw), stride = (matrix + 255) / 256 * 256;
    unsigned char *all = test_xmalloc(stride * (size_t)s->held);
    for (int64_t h = 0; h < s->held; ++h) {
        void *m = is_block(s->w) ? conf_random_blocks(rng, s->w, s->n * ldw)
                                 : conf_random_typed(rng, s->w, (size_t)(s->n * ldw), -1.0f, 1.0f);
        memcpy(all + (size_t)h * stride, m, matrix);
        free(m);
    }
    memset(all + (size_t)(s->held - 1) * stride, 0xFF, matrix); /* NaN in every type */
    int experts = conf_add_tensor(c, "experts", all, stride * (size_t)s->held, CONF_DEVICE,
                                  CONF_INPUT, 0);
    int table = conf_add_tensor(c, "experts table", test_xcalloc((size_t)s->held, sizeof(void *)),
                                (size_t)s->held * sizeof(void *), CONF_DEVICE, CONF_INPUT, 0);
    for (int64_t h = 0; h < s->held; ++h)
        if (h != skip_entry)
            conf_bind_table_entry(c, table, (size_t)h, experts, (size_t)h * stride);

    const size_t nx = (size_t)(x_rows * ldx), ny = (size_t)(y_rows * ldy);
    int x = conf_add_tensor(c, "x", conf_random_typed(rng, s->x, nx, -1.0f, 1.0f),
                            nx * pagoda_dtype_size(s->x), CONF_DEVICE, CONF_INPUT, 0);
    int y = conf_add_tensor(c, "y", conf_random_typed(rng, s->y, ny, -1.0f, 1.0f),
                            ny * pagoda_dtype_size(s->y), CONF_DEVICE, compare_of(s->y),
                            conf_tolerance(s->y));
    conf_bind(c, step, x, offsetof(pagoda_op_moe_matmul_t, x));
    conf_bind(c, step, table, offsetof(pagoda_op_moe_matmul_t, experts));
    conf_bind(c, step, ids, offsetof(pagoda_op_moe_matmul_t, expert_ids));
    if (s->weighted) conf_bind(c, step, weights, offsetof(pagoda_op_moe_matmul_t, weights));
    conf_bind(c, step, y, offsetof(pagoda_op_moe_matmul_t, y));
}

/* `bad_id`: slot 1's id made -1; `null_expert`: the entry of a picked expert left NULL. Both
 * are errors every backend must report (the CUDA backend on the device, at the sync). */
static void matmul_case(test_rng_t *rng, const moe_spec_t *s, int bad_id, int null_expert,
                        conf_tally_t *tally) {
    conf_case_t c;
    conf_case_init(&c,
                   "moe_matmul x=%s w=%s y=%s tokens=%lld top_k=%lld held=%lld from %lld of "
                   "%lld n=%lld k=%lld%s%s%s%s%s%s",
                   pagoda_dtype_name(s->x), pagoda_dtype_name(s->w), pagoda_dtype_name(s->y),
                   (long long)s->n_tokens, (long long)s->top_k, (long long)s->held,
                   (long long)s->offset, (long long)s->global, (long long)s->n, (long long)s->k,
                   s->per_slot ? " per_slot" : "", s->weighted ? " weighted" : "",
                   s->strided ? " strided" : "", s->crowd ? " crowd" : "",
                   bad_id ? " negative id" : "", null_expert ? " NULL expert" : "");
    const int64_t slots = s->n_tokens * s->top_k;
    int32_t *id_values = random_ids(rng, s, s->offset + s->held - 1);
    if (bad_id) id_values[1] = -1;
    if (null_expert) id_values[0] = (int32_t)s->offset; /* held expert 0, its entry NULL */
    int ids = conf_add_tensor(&c, "expert_ids", id_values, (size_t)slots * sizeof(int32_t),
                              CONF_DEVICE, CONF_INPUT, 0);
    int weights = conf_add_tensor(&c, "weights", conf_random_f32(rng, (size_t)slots, -1.0f, 1.0f),
                                  (size_t)slots * sizeof(float), CONF_DEVICE, CONF_INPUT, 0);
    add_moe_matmul(&c, rng, s, 0, ids, weights, null_expert ? 0 : -1);
    if (bad_id || null_expert) c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    conf_check_case(&c, tally);
}

/* A layer's two ops: the router's top_k of `global` experts, then the product over the
 * experts held here, weighted by what the router wrote. */
static void layer_case(test_rng_t *rng, const moe_spec_t *s, int32_t routing, conf_tally_t *tally) {
    conf_case_t c;
    conf_case_init(&c, "moe_route then moe_matmul x=%s w=%s y=%s tokens=%lld top %lld of %lld, "
                       "held %lld from %lld, routing=%d",
                   pagoda_dtype_name(s->x), pagoda_dtype_name(s->w), pagoda_dtype_name(s->y),
                   (long long)s->n_tokens, (long long)s->top_k, (long long)s->global,
                   (long long)s->held, (long long)s->offset, (int)routing);
    const size_t n = (size_t)(s->n_tokens * s->global);
    float *logit_values = random_logits(rng, n, 0);
    /* Nobody picks the NaN expert: its logit is the lowest of every row. */
    const int64_t nobody = s->offset + s->held - 1;
    for (int64_t t = 0; t < s->n_tokens; ++t) logit_values[t * s->global + nobody] = -100.0f;
    int logits = conf_add_tensor(&c, "logits", logit_values, n * sizeof(float), CONF_DEVICE,
                                 CONF_INPUT, 0);
    const int ids = add_route(&c, 0, logits, s->n_tokens, s->global, s->top_k, routing);
    add_moe_matmul(&c, rng, s, 1, ids, ids + 1, -1);
    conf_check_case(&c, tally);
}

static void supports_cases(conf_tally_t *tally) {
    pagoda_op_moe_route_t r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.n_tokens = 4;
    r.n_experts = 64;
    r.top_k = 8;
    conf_check_supports("route, top 8 of 64", PAGODA_OP_MOE_ROUTE, &r, 1, tally);
    r.top_k = 65;
    conf_check_supports("route, top_k 65", PAGODA_OP_MOE_ROUTE, &r, 0, tally);
    r.top_k = 8;
    r.routing = 2;
    conf_check_supports("route, routing 2", PAGODA_OP_MOE_ROUTE, &r, 0, tally);
    r.routing = 0;
    r.n_experts = 1025;
    conf_check_supports("route, 1025 experts", PAGODA_OP_MOE_ROUTE, &r, 0, tally);

    pagoda_op_moe_matmul_t m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.x_dtype = m.y_dtype = PAGODA_DTYPE_BF16;
    m.w_dtype = PAGODA_DTYPE_Q4_K;
    m.n_tokens = 16;
    m.top_k = 8;
    m.n_experts = 32;
    m.expert_offset = 32;
    m.n = 768;
    m.k = 2048;
    for (size_t w = 0; w < N_WEIGHT_TYPES; ++w) {
        m.w_dtype = kWeightTypes[w];
        conf_check_supports(pagoda_dtype_name(kWeightTypes[w]), PAGODA_OP_MOE_MATMUL, &m, 1, tally);
    }
    m.w_dtype = PAGODA_DTYPE_I8;
    conf_check_supports("w_dtype i8", PAGODA_OP_MOE_MATMUL, &m, 0, tally);
    m.w_dtype = PAGODA_DTYPE_Q4_K;
    m.k = 2048 + 32;
    conf_check_supports("k of part of a block", PAGODA_OP_MOE_MATMUL, &m, 0, tally);
    m.k = 2048;
    m.x_dtype = PAGODA_DTYPE_INVALID;
    conf_check_supports("x_dtype unset", PAGODA_OP_MOE_MATMUL, &m, 0, tally);
    m.x_dtype = PAGODA_DTYPE_F32;
    m.expert_offset = -1;
    conf_check_supports("expert_offset -1", PAGODA_OP_MOE_MATMUL, &m, 0, tally);
    m.expert_offset = 0;
    m.ldy = 100;
    conf_check_supports("ldy < n", PAGODA_OP_MOE_MATMUL, &m, 0, tally);
}

void conf_cases_moe(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x6d6f65ull);
    static const int64_t experts[] = {8, 60, 128};
    for (int32_t routing = 0; routing <= 1; ++routing)
        for (size_t e = 0; e < 3; ++e)
            for (int tied = 0; tied <= 1; ++tied) {
                route_case(&rng, 1, experts[e], 1 + (int64_t)e, routing, tied, tally);
                route_case(&rng, 37, experts[e], 8, routing, tied, tally);
            }
    route_case(&rng, 5, 1024, 64, PAGODA_MOE_SOFTMAX_TOPK_NORM, 0, tally);
    route_case(&rng, 5, 1024, 64, PAGODA_MOE_SOFTMAX_TOPK, 1, tally);

    int i = 0;
    for (size_t x = 0; x < 3; ++x)
        for (size_t w = 0; w < N_WEIGHT_TYPES; ++w)
            for (int variant = 0; variant < 4; ++variant) {
                const pagoda_dtype_t y = kActTypes[(size_t)i++ % 3];
                moe_spec_t s = spec_default(kActTypes[x], kWeightTypes[w], y);
                s.per_slot = variant & 1;
                s.weighted = (variant >> 1) & 1;
                s.strided = i % 2;
                matmul_case(&rng, &s, 0, 0, tally);
            }
    for (size_t w = 0; w < N_WEIGHT_TYPES; ++w) {
        /* 150 rows on one expert: several row tiles; and more slots than experts held. */
        moe_spec_t crowd = spec_default(PAGODA_DTYPE_BF16, kWeightTypes[w], PAGODA_DTYPE_F32);
        crowd.n_tokens = 150;
        crowd.crowd = 1;
        crowd.weighted = (int)(w % 2);
        crowd.n = 200;
        matmul_case(&rng, &crowd, 0, 0, tally);
        moe_spec_t ep = spec_default(PAGODA_DTYPE_F32, kWeightTypes[w], PAGODA_DTYPE_BF16);
        ep.held = 2;
        ep.offset = 6;
        ep.global = 16;
        ep.top_k = 6;
        ep.n_tokens = 11;
        ep.weighted = (int)(1 - w % 2);
        matmul_case(&rng, &ep, 0, 0, tally);
    }
    moe_spec_t layer = spec_default(PAGODA_DTYPE_BF16, PAGODA_DTYPE_Q4_K, PAGODA_DTYPE_BF16);
    layer.n_tokens = 40;
    layer.global = 16;
    layer.top_k = 4;
    layer.held = 8;
    layer.offset = 4;
    layer.weighted = 1;
    layer.k = 512;
    layer.n = 300;
    layer_case(&rng, &layer, PAGODA_MOE_SOFTMAX_TOPK_NORM, tally);
    layer.w = PAGODA_DTYPE_F16;
    layer.held = layer.global;
    layer.offset = 0;
    layer_case(&rng, &layer, PAGODA_MOE_SOFTMAX_TOPK, tally);

    /* Data errors. */
    moe_spec_t s = spec_default(PAGODA_DTYPE_F32, PAGODA_DTYPE_Q8_0, PAGODA_DTYPE_F32);
    matmul_case(&rng, &s, 1, 0, tally);
    matmul_case(&rng, &s, 0, 1, tally);
    conf_case_t c;
    conf_case_init(&c, "moe_route with a NaN logit");
    float *logits = random_logits(&rng, 3 * 16, 0);
    logits[2 * 16 + 9] = NAN;
    int l = conf_add_tensor(&c, "logits", logits, 3 * 16 * sizeof(float), CONF_DEVICE,
                            CONF_INPUT, 0);
    add_route(&c, 0, l, 3, 16, 2, PAGODA_MOE_SOFTMAX_TOPK_NORM);
    c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    conf_check_case(&c, tally);

    supports_cases(tally);
}
