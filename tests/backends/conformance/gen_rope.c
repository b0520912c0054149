/* ROPE cases: both pairings, every scaling, partial rotation, frequency divisors, padded token
 * strides, f32/bf16/f16 activations, and positions up to 200k, where an angle computed in f32 is
 * visibly wrong. */
#include <stddef.h>
#include <stdlib.h>

#include "conformance.h"

typedef struct rope_shape {
    int64_t n_tokens, n_heads, head_dim, rot_dim; /* rot_dim 0 = head_dim */
    pagoda_rope_layout_t layout;
    pagoda_rope_scaling_t scaling;
    int freq_factors, padded;
    int32_t max_position;
    pagoda_dtype_t act; /* 0 = f32, as ops.h reads it */
} rope_shape_t;

static void rope_case(test_rng_t *rng, const rope_shape_t *s, conf_tally_t *tally) {
    const int64_t packed = s->n_heads * s->head_dim;
    const int64_t stride = s->padded ? packed + test_rng_int(rng, 1, 6) : packed;
    const int64_t rot = s->rot_dim ? s->rot_dim : s->head_dim;
    static const char *const scalings[] = {"none", "linear", "llama3"};
    conf_case_t c;
    conf_case_init(&c, "rope tokens=%lld heads=%lld head_dim=%lld rot_dim=%lld %s scaling=%s%s%s "
                   "positions<=%d act=%s",
                   (long long)s->n_tokens, (long long)s->n_heads, (long long)s->head_dim,
                   (long long)rot, s->layout == PAGODA_ROPE_HALF_SPLIT ? "half-split" : "interleaved",
                   scalings[s->scaling], s->freq_factors ? " freq_factors" : "",
                   s->padded ? " strided" : "", (int)s->max_position,
                   s->act == PAGODA_DTYPE_INVALID ? "0" : pagoda_dtype_name(s->act));
    pagoda_op_rope_t *a = &conf_add_step(&c, PAGODA_OP_ROPE)->rope;
    a->layout = s->layout;
    a->scaling = s->scaling;
    a->n_tokens = s->n_tokens;
    a->n_heads = s->n_heads;
    a->head_dim = s->head_dim;
    a->rot_dim = s->rot_dim;
    a->token_stride = s->padded ? stride : 0;
    a->theta = s->scaling == PAGODA_ROPE_SCALING_LLAMA3 ? 500000.0f : 10000.0f;
    a->factor = s->scaling == PAGODA_ROPE_SCALING_LINEAR ? 4.0f : 8.0f;
    a->low_freq_factor = 1.0f;
    a->high_freq_factor = 4.0f;
    a->original_max_position = 8192;
    a->act_dtype = s->act;

    const size_t nx = (size_t)(s->n_tokens * stride);
    int x;
    if (s->act == PAGODA_DTYPE_BF16 || s->act == PAGODA_DTYPE_F16)
        /* Rotated in f32 from the widened inputs and rounded once: within a rounding. */
        x = conf_add_tensor(&c, "x", conf_random_typed(rng, s->act, nx, -2.0f, 2.0f),
                            nx * pagoda_dtype_size(s->act), CONF_DEVICE,
                            s->act == PAGODA_DTYPE_BF16 ? CONF_BF16 : CONF_F16,
                            conf_tolerance(s->act));
    else
        x = conf_add_tensor(&c, "x", conf_random_f32(rng, nx, -2.0f, 2.0f), nx * sizeof(float),
                            CONF_DEVICE, CONF_F32, conf_tolerance(PAGODA_DTYPE_F32));
    int32_t *positions = test_xmalloc((size_t)s->n_tokens * sizeof *positions);
    /* Mostly increasing, as a prompt's are, with a few arbitrary ones (other sequences). */
    int32_t start = (int32_t)test_rng_int(rng, 0, s->max_position);
    for (int64_t t = 0; t < s->n_tokens; ++t)
        positions[t] = t % 5 == 4 ? (int32_t)test_rng_int(rng, 0, s->max_position)
                                  : (int32_t)((start + t) % ((int64_t)s->max_position + 1));
    int pos = conf_add_tensor(&c, "positions", positions, (size_t)s->n_tokens * sizeof *positions,
                              CONF_DEVICE, CONF_INPUT, 0);
    conf_bind(&c, 0, x, offsetof(pagoda_op_rope_t, x));
    conf_bind(&c, 0, pos, offsetof(pagoda_op_rope_t, positions));
    if (s->freq_factors) {
        const size_t n = (size_t)(rot / 2);
        int ff = conf_add_tensor(&c, "freq_factors", conf_random_f32(rng, n, 1.0f, 8.0f),
                                 n * sizeof(float), CONF_DEVICE, CONF_INPUT, 0);
        conf_bind(&c, 0, ff, offsetof(pagoda_op_rope_t, freq_factors));
    }
    conf_check_case(&c, tally);
}

void conf_cases_rope(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x726f7065ull);
    static const int64_t head_dims[] = {2, 4, 6, 32, 64, 80, 96, 128, 256};
    static const int32_t max_positions[] = {16, 4096, 131072, 200000};
    for (int i = 0; i < 48; ++i) {
        rope_shape_t s;
        s.n_tokens = test_rng_int(&rng, 1, 37);
        s.n_heads = test_rng_int(&rng, 1, 9);
        s.head_dim = head_dims[test_rng_int(&rng, 0, 8)];
        /* Every fourth case rotates only part of each head (an even count). */
        s.rot_dim = i % 4 == 3 && s.head_dim > 2 ? 2 * test_rng_int(&rng, 1, s.head_dim / 2 - 1) : 0;
        s.layout = (pagoda_rope_layout_t)(i % 2);
        s.scaling = (pagoda_rope_scaling_t)((i / 2) % 3);
        s.freq_factors = i % 7 == 5;
        s.padded = (i / 3) % 2;
        s.max_position = max_positions[i % 4];
        /* Every third case on bf16 or f16 heads, a few with act_dtype spelled F32. */
        static const pagoda_dtype_t acts[] = {PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16,
                                              PAGODA_DTYPE_F32};
        s.act = i % 3 == 2 ? acts[(i / 3) % 3] : PAGODA_DTYPE_INVALID;
        rope_case(&rng, &s, tally);
    }
    /* An odd head size rotated on its even part, and a prompt of Llama 3's shape. */
    const rope_shape_t odd = {5, 3, 67, 64, PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_NONE, 0, 1, 999,
                              PAGODA_DTYPE_INVALID};
    const rope_shape_t llama3 = {200, 32, 128, 0, PAGODA_ROPE_HALF_SPLIT, PAGODA_ROPE_SCALING_LLAMA3,
                                 0, 0, 131072, PAGODA_DTYPE_INVALID};
    const rope_shape_t gguf = {64, 8, 128, 0, PAGODA_ROPE_INTERLEAVED, PAGODA_ROPE_SCALING_NONE,
                               1, 1, 100000, PAGODA_DTYPE_INVALID};
    rope_case(&rng, &odd, tally);
    rope_case(&rng, &llama3, tally);
    rope_case(&rng, &gguf, tally);
    /* The same shapes on half-precision heads, and more pairs than one block holds. */
    rope_shape_t half = odd;
    half.act = PAGODA_DTYPE_F16;
    rope_case(&rng, &half, tally);
    half = llama3;
    half.act = PAGODA_DTYPE_BF16;
    rope_case(&rng, &half, tally);
    half = gguf;
    half.act = PAGODA_DTYPE_F16;
    rope_case(&rng, &half, tally);
    const rope_shape_t wide = {9, 2, 600, 520, PAGODA_ROPE_INTERLEAVED, PAGODA_ROPE_SCALING_LINEAR,
                               0, 1, 60000, PAGODA_DTYPE_BF16};
    rope_case(&rng, &wide, tally);
}
