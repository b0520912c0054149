/* EMBEDDING, RMSNORM, SILU_MUL, ADD and SOFTCAP cases: odd sizes, padded strides, every table
 * and weight type, f32/bf16/f16 activations, in-place and aliased outputs, and ids out of range
 * (which both backends must refuse); ABI 1.8's embedding scale, GELU (tanh) gate and the SOFTCAP
 * op over values from well inside the cap to far past it. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

static const pagoda_dtype_t kTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};

/* Activation tensors of type `act` (0 is F32, as ops.h reads it). */
static size_t act_size(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_INVALID ? sizeof(float) : pagoda_dtype_size(act);
}

/* An output computed in f32 and rounded once: within summation order of the reference as f32,
 * within a rounding of its type (conf_tolerance) as bf16/f16. */
static conf_compare_t act_compare(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_BF16 ? CONF_BF16 : act == PAGODA_DTYPE_F16 ? CONF_F16 : CONF_F32;
}

static double act_tolerance(pagoda_dtype_t act) {
    return conf_tolerance(act == PAGODA_DTYPE_INVALID ? PAGODA_DTYPE_F32 : act);
}

/* `values` (n f32, freed here) converted to `act`; malloc'd. */
static void *act_from_f32(pagoda_dtype_t act, float *values, size_t n) {
    if (act == PAGODA_DTYPE_INVALID || act == PAGODA_DTYPE_F32) return values;
    void *out = test_xmalloc(n * pagoda_dtype_size(act));
    test_convert_weights(act, values, n, out, NULL);
    free(values);
    return out;
}

static const char *act_label(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_INVALID ? "" : act == PAGODA_DTYPE_F32 ? " act=f32"
                                          : act == PAGODA_DTYPE_BF16 ? " act=bf16" : " act=f16";
}

/* ------------------------------------------------------------------------------------------ */
/* EMBEDDING                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* `bad` ≠ 0 puts that id (out of range) at a random token, and the case expects the refusal. */
/* `scale` is the op's field (ABI 1.8; 0 means 1). */
static void embedding_case(test_rng_t *rng, int64_t vocab, int64_t dim, int64_t n_tokens,
                           pagoda_dtype_t dtype, pagoda_dtype_t out_dtype, int padded, int64_t bad,
                           float scale, conf_tally_t *tally) {
    const int64_t ldo = padded ? dim + test_rng_int(rng, 1, 7) : dim;
    conf_case_t c;
    conf_case_init(&c, "embedding vocab=%lld dim=%lld tokens=%lld table=%s%s scale=%g%s%s",
                   (long long)vocab, (long long)dim, (long long)n_tokens, pagoda_dtype_name(dtype),
                   act_label(out_dtype), (double)scale, padded ? " strided" : "",
                   bad ? " with a bad id" : "");
    pagoda_op_embedding_t *a = &conf_add_step(&c, PAGODA_OP_EMBEDDING)->embedding;
    a->table_dtype = dtype;
    a->out_dtype = out_dtype;
    a->scale = scale;
    a->vocab_size = vocab;
    a->dim = dim;
    a->n_tokens = n_tokens;
    a->ldo = padded ? ldo : 0;
    int32_t *ids = test_xmalloc((size_t)n_tokens * sizeof *ids);
    for (int64_t t = 0; t < n_tokens; ++t) ids[t] = (int32_t)test_rng_int(rng, 0, vocab - 1);
    if (n_tokens > 1) ids[n_tokens - 1] = ids[0]; /* a repeated id */
    if (bad) {
        ids[test_rng_int(rng, 0, n_tokens - 1)] = (int32_t)bad;
        c.expect = PAGODA_ERR_INVALID_ARGUMENT;
    }
    const size_t table_n = (size_t)(vocab * dim), out_n = (size_t)(n_tokens * ldo);
    int table = conf_add_tensor(&c, "table", conf_random_typed(rng, dtype, table_n, -2.0f, 2.0f),
                                table_n * pagoda_dtype_size(dtype), CONF_DEVICE, CONF_INPUT, 0);
    int id = conf_add_tensor(&c, "ids", ids, (size_t)n_tokens * sizeof *ids, CONF_DEVICE,
                             CONF_INPUT, 0);
    /* Widening to f32 is exact, the scaling one f32 product and rounding to bf16/f16 happens
     * once, so the rows must match bit for bit. */
    int out = conf_add_tensor(&c, "out",
                              act_from_f32(out_dtype, conf_random_f32(rng, out_n, -1.0f, 1.0f),
                                           out_n),
                              out_n * act_size(out_dtype), CONF_DEVICE, CONF_EXACT, 0);
    conf_bind(&c, 0, table, offsetof(pagoda_op_embedding_t, table));
    conf_bind(&c, 0, id, offsetof(pagoda_op_embedding_t, ids));
    conf_bind(&c, 0, out, offsetof(pagoda_op_embedding_t, out));
    conf_check_case(&c, tally);
}

void conf_cases_embedding(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0xe3bedull);
    for (int i = 0; i < 24; ++i)
        embedding_case(&rng, test_rng_int(&rng, 1, 700), test_rng_int(&rng, 1, 300),
                       test_rng_int(&rng, 1, 40), kTypes[i % 3], PAGODA_DTYPE_INVALID, i % 2, 0,
                       0.0f, tally);
    /* Every table type into every activation type, dims with and without whole vectors. */
    for (int i = 0; i < 18; ++i)
        embedding_case(&rng, test_rng_int(&rng, 1, 700), i % 2 ? 8 * test_rng_int(&rng, 1, 40)
                                                               : test_rng_int(&rng, 1, 300),
                       test_rng_int(&rng, 1, 40), kTypes[i % 3], kTypes[(i / 3) % 3], (i / 2) % 2,
                       0, 0.0f, tally);
    embedding_case(&rng, 32000, 4096, 3, PAGODA_DTYPE_BF16, PAGODA_DTYPE_INVALID, 0, 0, 0.0f,
                   tally);
    embedding_case(&rng, 32000, 4096, 3, PAGODA_DTYPE_BF16, PAGODA_DTYPE_BF16, 0, 0, 0.0f, tally);
    embedding_case(&rng, 32000, 4096, 3, PAGODA_DTYPE_F32, PAGODA_DTYPE_F16, 0, 0, 0.0f, tally);
    embedding_case(&rng, 50, 64, 9, PAGODA_DTYPE_F32, PAGODA_DTYPE_INVALID, 0, 50, 0.0f, tally);
    embedding_case(&rng, 50, 64, 9, PAGODA_DTYPE_F16, PAGODA_DTYPE_INVALID, 1, -1, 0.0f, tally);
    embedding_case(&rng, 50, 64, 9, PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, 1, 50, 0.0f, tally);
    /* ABI 1.8's scale (Gemma's √hidden and others) on every table type into every output
     * type, with and without whole vectors; 1 is the unscaled copy's own path. */
    static const float scales[] = {48.0f, 0.0625f, 1.0f, -3.5f, 33.9411255f};
    for (int i = 0; i < 18; ++i)
        embedding_case(&rng, test_rng_int(&rng, 1, 700), i % 2 ? 8 * test_rng_int(&rng, 1, 40)
                                                               : test_rng_int(&rng, 1, 300),
                       test_rng_int(&rng, 1, 40), kTypes[i % 3], kTypes[(i / 3) % 3], (i / 2) % 2,
                       0, scales[i % 5], tally);
    embedding_case(&rng, 4000, 2304, 3, PAGODA_DTYPE_BF16, PAGODA_DTYPE_BF16, 0, 0, 48.0f, tally);
    embedding_case(&rng, 50, 64, 9, PAGODA_DTYPE_F16, PAGODA_DTYPE_INVALID, 0, 50, 8.0f, tally);
}

/* ------------------------------------------------------------------------------------------ */
/* RMSNORM                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void rmsnorm_case(test_rng_t *rng, int64_t rows, int64_t dim, pagoda_dtype_t dtype,
                         pagoda_dtype_t act, int padded, int residual, int in_place,
                         conf_tally_t *tally) {
    const int64_t ldx = padded ? dim + test_rng_int(rng, 1, 5) : dim;
    const int64_t ldr = padded ? dim + test_rng_int(rng, 1, 5) : dim;
    const int64_t ldo = in_place ? ldx : (padded ? dim + test_rng_int(rng, 1, 5) : dim);
    conf_case_t c;
    conf_case_init(&c, "rmsnorm rows=%lld dim=%lld weight=%s%s%s%s%s", (long long)rows,
                   (long long)dim, pagoda_dtype_name(dtype), act_label(act),
                   padded ? " strided" : "", residual ? " +residual" : "",
                   in_place ? " out=x" : "");
    pagoda_op_rmsnorm_t *a = &conf_add_step(&c, PAGODA_OP_RMSNORM)->rmsnorm;
    a->weight_dtype = dtype;
    a->act_dtype = act;
    a->rows = rows;
    a->dim = dim;
    a->eps = test_rng_int(rng, 0, 1) ? 1e-5f : 1e-6f;
    a->ldx = padded ? ldx : 0;
    a->ld_residual = padded ? ldr : 0;
    a->ldo = padded ? ldo : 0;
    const double tol = act_tolerance(act); /* weights are widened exactly */
    const size_t nx = (size_t)(rows * ldx);
    /* Rows of very different scales: the normalisation must not depend on it. */
    float *xv = conf_random_f32(rng, nx, -1.0f, 1.0f);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) xv[r * ldx + i] *= (float)(1 << (r % 9)) / 16.0f;
    int x = conf_add_tensor(&c, "x", act_from_f32(act, xv, nx), nx * act_size(act), CONF_DEVICE,
                            in_place ? act_compare(act) : CONF_INPUT, tol);
    int w = conf_add_tensor(&c, "weight", conf_random_typed(rng, dtype, (size_t)dim, 0.5f, 1.5f),
                            (size_t)dim * pagoda_dtype_size(dtype), CONF_DEVICE, CONF_INPUT, 0);
    conf_bind(&c, 0, x, offsetof(pagoda_op_rmsnorm_t, x));
    conf_bind(&c, 0, w, offsetof(pagoda_op_rmsnorm_t, weight));
    if (in_place) {
        conf_bind(&c, 0, x, offsetof(pagoda_op_rmsnorm_t, out));
    } else {
        const size_t no = (size_t)(rows * ldo);
        int out = conf_add_tensor(&c, "out",
                                  act_from_f32(act, conf_random_f32(rng, no, -1.0f, 1.0f), no),
                                  no * act_size(act), CONF_DEVICE, act_compare(act), tol);
        conf_bind(&c, 0, out, offsetof(pagoda_op_rmsnorm_t, out));
    }
    if (residual) {
        const size_t nr = (size_t)(rows * ldr);
        /* residual += x (widened) is one f32 addition per element: exact on every backend. */
        int res = conf_add_tensor(&c, "residual", conf_random_f32(rng, nr, -1.0f, 1.0f),
                                  nr * sizeof(float), CONF_DEVICE, CONF_EXACT, 0);
        conf_bind(&c, 0, res, offsetof(pagoda_op_rmsnorm_t, residual));
    }
    conf_check_case(&c, tally);
}

void conf_cases_rmsnorm(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x726d73ull);
    for (int i = 0; i < 30; ++i)
        rmsnorm_case(&rng, test_rng_int(&rng, 1, 33), test_rng_int(&rng, 1, 1100), kTypes[i % 3],
                     PAGODA_DTYPE_INVALID, (i / 3) % 2, (i / 2) % 2, i % 5 == 4, tally);
    /* bf16/f16 activations with every weight type; dims with and without whole vectors. */
    for (int i = 0; i < 24; ++i)
        rmsnorm_case(&rng, test_rng_int(&rng, 1, 33),
                     i % 3 ? test_rng_int(&rng, 1, 1100) : 8 * test_rng_int(&rng, 1, 130),
                     kTypes[i % 3], kTypes[1 + (i / 3) % 2], (i / 6) % 2, (i / 2) % 2,
                     i % 5 == 4, tally);
    for (size_t d = 0; d < 3; ++d) {
        rmsnorm_case(&rng, 7, 4096, kTypes[d], PAGODA_DTYPE_INVALID, 0, 1, 0, tally);
        rmsnorm_case(&rng, 2, 8192, kTypes[d], PAGODA_DTYPE_INVALID, 1, 1, 1, tally);
        rmsnorm_case(&rng, 300, 128, kTypes[d], PAGODA_DTYPE_INVALID, 1, 0, 0, tally);
        rmsnorm_case(&rng, 7, 4096, kTypes[d], PAGODA_DTYPE_BF16, 0, 1, 0, tally);
        rmsnorm_case(&rng, 2, 8192, kTypes[d], PAGODA_DTYPE_F16, 1, 1, 1, tally);
        rmsnorm_case(&rng, 300, 128, kTypes[d], PAGODA_DTYPE_F32, 1, 0, 0, tally);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* SILU_MUL and ADD                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* `fused`: gate and up are the halves of one [rows, 2·dim + pad] buffer, as a fused gate_up
 * projection leaves them; `alias`: out is gate. `activation` is the op's (ABI 1.8; 0 = SiLU). */
static void silu_mul_case(test_rng_t *rng, int64_t rows, int64_t dim, pagoda_dtype_t act,
                          int32_t activation, int fused, int alias, conf_tally_t *tally) {
    const int64_t ld_in = fused ? 2 * dim + test_rng_int(rng, 0, 3) : dim + test_rng_int(rng, 0, 2);
    const int64_t ldo = alias ? ld_in : dim + test_rng_int(rng, 0, 2);
    conf_case_t c;
    conf_case_init(&c, "silu_mul %s rows=%lld dim=%lld ld_in=%lld ldo=%lld%s%s%s",
                   activation == PAGODA_GLU_GELU_TANH ? "gelu_tanh" : "silu", (long long)rows,
                   (long long)dim, (long long)ld_in, (long long)ldo, act_label(act),
                   fused ? " fused" : "", alias ? " out=gate" : "");
    pagoda_op_silu_mul_t *a = &conf_add_step(&c, PAGODA_OP_SILU_MUL)->silu_mul;
    a->act_dtype = act;
    a->activation = activation;
    a->rows = rows;
    a->dim = dim;
    a->ld_in = ld_in;
    a->ldo = ldo;
    const double tol = act_tolerance(act);
    const size_t n_in = (size_t)(rows * ld_in);
    /* Gates from -12 to 12 reach both tails of the sigmoid (and of GELU's tanh). */
    int gate = conf_add_tensor(&c, "gate",
                               act_from_f32(act, conf_random_f32(rng, n_in, -12.0f, 12.0f), n_in),
                               n_in * act_size(act), CONF_DEVICE,
                               alias ? act_compare(act) : CONF_INPUT, tol);
    conf_bind(&c, 0, gate, offsetof(pagoda_op_silu_mul_t, gate));
    if (fused) {
        conf_bind_at(&c, 0, gate, offsetof(pagoda_op_silu_mul_t, up), (size_t)dim * act_size(act));
    } else {
        int up = conf_add_tensor(&c, "up",
                                 act_from_f32(act, conf_random_f32(rng, n_in, -2.0f, 2.0f), n_in),
                                 n_in * act_size(act), CONF_DEVICE, CONF_INPUT, 0);
        conf_bind(&c, 0, up, offsetof(pagoda_op_silu_mul_t, up));
    }
    if (alias) {
        conf_bind(&c, 0, gate, offsetof(pagoda_op_silu_mul_t, out));
    } else {
        const size_t no = (size_t)(rows * ldo);
        int out = conf_add_tensor(&c, "out",
                                  act_from_f32(act, conf_random_f32(rng, no, -1.0f, 1.0f), no),
                                  no * act_size(act), CONF_DEVICE, act_compare(act), tol);
        conf_bind(&c, 0, out, offsetof(pagoda_op_silu_mul_t, out));
    }
    conf_check_case(&c, tally);
}

/* `alias`: 0 = a separate out, 1 = out is a, 2 = out is b. */
static void add_case(test_rng_t *rng, int64_t n, pagoda_dtype_t act, int alias,
                     conf_tally_t *tally) {
    conf_case_t c;
    conf_case_init(&c, "add n=%lld%s%s", (long long)n, act_label(act),
                   alias == 1 ? " out=a" : alias == 2 ? " out=b" : "");
    pagoda_op_add_t *a = &conf_add_step(&c, PAGODA_OP_ADD)->add;
    a->act_dtype = act;
    a->n = n;
    const size_t bytes = (size_t)n * act_size(act);
    /* One f32 addition per element, rounded once: exact on every backend. */
    int ta = conf_add_tensor(&c, "a",
                             act_from_f32(act, conf_random_f32(rng, (size_t)n, -4.0f, 4.0f),
                                          (size_t)n),
                             bytes, CONF_DEVICE, alias == 1 ? CONF_EXACT : CONF_INPUT, 0);
    int tb = conf_add_tensor(&c, "b",
                             act_from_f32(act, conf_random_f32(rng, (size_t)n, -4.0f, 4.0f),
                                          (size_t)n),
                             bytes, CONF_DEVICE, alias == 2 ? CONF_EXACT : CONF_INPUT, 0);
    conf_bind(&c, 0, ta, offsetof(pagoda_op_add_t, a));
    conf_bind(&c, 0, tb, offsetof(pagoda_op_add_t, b));
    if (alias == 0) {
        int out = conf_add_tensor(&c, "out",
                                  act_from_f32(act, conf_random_f32(rng, (size_t)n, -1.0f, 1.0f),
                                               (size_t)n),
                                  bytes, CONF_DEVICE, CONF_EXACT, 0);
        conf_bind(&c, 0, out, offsetof(pagoda_op_add_t, out));
    } else {
        conf_bind(&c, 0, alias == 1 ? ta : tb, offsetof(pagoda_op_add_t, out));
    }
    conf_check_case(&c, tally);
}

void conf_cases_elementwise(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x73696c75ull);
    for (int i = 0; i < 24; ++i)
        silu_mul_case(&rng, test_rng_int(&rng, 1, 20), test_rng_int(&rng, 1, 700),
                      PAGODA_DTYPE_INVALID, PAGODA_GLU_SILU, i % 2, (i / 2) % 3 == 0, tally);
    /* bf16/f16: dims with and without whole 8-element vectors. */
    for (int i = 0; i < 16; ++i)
        silu_mul_case(&rng, test_rng_int(&rng, 1, 20),
                      i % 4 < 2 ? 8 * test_rng_int(&rng, 1, 90) : test_rng_int(&rng, 1, 700),
                      kTypes[1 + i % 2], PAGODA_GLU_SILU, (i / 2) % 2, (i / 4) % 3 == 0, tally);
    silu_mul_case(&rng, 3, 14336, PAGODA_DTYPE_INVALID, PAGODA_GLU_SILU, 1, 0, tally);
    silu_mul_case(&rng, 64, 1000, PAGODA_DTYPE_INVALID, PAGODA_GLU_SILU, 0, 1, tally);
    silu_mul_case(&rng, 3, 14336, PAGODA_DTYPE_BF16, PAGODA_GLU_SILU, 1, 0, tally);
    silu_mul_case(&rng, 64, 1000, PAGODA_DTYPE_F16, PAGODA_GLU_SILU, 0, 1, tally);
    silu_mul_case(&rng, 5, 200, PAGODA_DTYPE_F32, PAGODA_GLU_SILU, 0, 0, tally);
    /* GELU (tanh, ABI 1.8) with every act_dtype (0 too), fused or not, aliased or not, dims
     * with and without whole vectors; then Gemma-sized rows. */
    static const pagoda_dtype_t gelu_acts[] = {PAGODA_DTYPE_INVALID, PAGODA_DTYPE_F32,
                                               PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    for (int i = 0; i < 16; ++i)
        silu_mul_case(&rng, test_rng_int(&rng, 1, 20),
                      i % 3 ? test_rng_int(&rng, 1, 700) : 8 * test_rng_int(&rng, 1, 90),
                      gelu_acts[i % 4], PAGODA_GLU_GELU_TANH, (i / 4) % 2, (i / 2) % 3 == 0,
                      tally);
    silu_mul_case(&rng, 3, 9216, PAGODA_DTYPE_BF16, PAGODA_GLU_GELU_TANH, 1, 0, tally);
    silu_mul_case(&rng, 40, 16384, PAGODA_DTYPE_INVALID, PAGODA_GLU_GELU_TANH, 1, 1, tally);
    static const int64_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 4097, 65536 + 5,
                                    1 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i)
        for (size_t t = 0; t < 3; ++t)
            add_case(&rng, sizes[i], t == 0 ? PAGODA_DTYPE_INVALID : kTypes[t], (int)((i + t) % 3),
                     tally);
}

/* ------------------------------------------------------------------------------------------ */
/* SOFTCAP                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* n values of `dtype` (0 = f32) capped in place, spread over ±4·cap so that both the nearly
 * linear middle and the saturated ends are hit; `offset` elements into the buffer, so the
 * vector paths meet unaligned starts. */
static void softcap_case(test_rng_t *rng, int64_t n, float cap, pagoda_dtype_t dtype,
                         int64_t offset, conf_tally_t *tally) {
    conf_case_t c;
    conf_case_init(&c, "softcap n=%lld cap=%g%s offset=%lld", (long long)n, (double)cap,
                   act_label(dtype), (long long)offset);
    pagoda_op_softcap_t *a = &conf_add_step(&c, PAGODA_OP_SOFTCAP)->softcap;
    a->n = n;
    a->cap = cap;
    a->dtype = dtype;
    const size_t total = (size_t)(n + offset);
    float *values = conf_random_f32(rng, total, -4.0f * cap, 4.0f * cap);
    /* A few tiny values, where tanh(x) ≈ x must keep its relative precision. */
    for (size_t i = 0; i < total; i += 7) values[i] *= 1e-4f;
    int x = conf_add_tensor(&c, "x", act_from_f32(dtype, values, total), total * act_size(dtype),
                            CONF_DEVICE, act_compare(dtype), act_tolerance(dtype));
    conf_bind_at(&c, 0, x, offsetof(pagoda_op_softcap_t, x), (size_t)offset * act_size(dtype));
    conf_check_case(&c, tally);
}

void conf_cases_softcap(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x736f6674ull);
    static const pagoda_dtype_t dtypes[] = {PAGODA_DTYPE_INVALID, PAGODA_DTYPE_F32,
                                            PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};
    static const float caps[] = {30.0f, 50.0f, 1.0f, 0.125f, 1000.0f};
    static const int64_t sizes[] = {1, 7, 8, 9, 17, 1000, 4097, 65536 + 5};
    for (int i = 0; i < 32; ++i)
        softcap_case(&rng, sizes[i % 8], caps[i % 5], dtypes[i % 4], (i / 4) % 3, tally);
    /* A batch of Gemma 2 logits rows. */
    for (size_t d = 0; d < 4; ++d) softcap_case(&rng, 4 * 256000, 30.0f, dtypes[d], 0, tally);
}
