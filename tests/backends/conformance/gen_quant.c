/* Quantized block weights (ABI 1.3): MATMUL with a Q8_0, Q4_0, Q4_K, Q5_K or Q6_K W, on decode
 * GEMVs (m of 1 to 8) and prefill GEMMs, odd n, padded strides (whole blocks), bias,
 * accumulation, f32/bf16/f16 x and y; EMBEDDING from block tables into every activation type.
 * The blocks are random bytes with finite random scales, so every bit pattern of the values is
 * met. Both backends decode exactly and compute in f32 (no PAGODA_MATMUL_QUANTIZE_X here: that
 * leave lets backends differ), so the f32 tolerance holds; cases with PAGODA_MATMUL_ROUND_W
 * (half x) allow a rounding of x's type, which a backend taking that leave adds to each weight. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

static const pagoda_dtype_t kBlockTypes[] = {PAGODA_DTYPE_Q8_0, PAGODA_DTYPE_Q4_0,
                                             PAGODA_DTYPE_Q4_K, PAGODA_DTYPE_Q5_K,
                                             PAGODA_DTYPE_Q6_K};
#define N_BLOCK_TYPES (sizeof kBlockTypes / sizeof kBlockTypes[0])

static const pagoda_dtype_t kActTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16, PAGODA_DTYPE_F16};

static int64_t block_values(pagoda_dtype_t t) {
    int64_t elements = 0;
    pagoda_dtype_block(t, &elements, NULL);
    return elements;
}

/* Bytes of `values` values of block type `t` (whole blocks). */
static size_t block_bytes(pagoda_dtype_t t, int64_t values) {
    int64_t elements = 0;
    size_t bytes = 0;
    pagoda_dtype_block(t, &elements, &bytes);
    return (size_t)(values / elements) * bytes;
}

/* A finite half in ±[2^-10, 2^-6): scales of the size real weights have. */
static uint16_t random_scale(test_rng_t *rng) {
    const uint32_t r = test_rng_next(rng);
    const uint32_t exp = 5 + r % 4, mant = (r >> 2) & 0x3ff, sign = (r >> 12) & 1;
    return (uint16_t)((sign << 15) | (exp << 10) | mant);
}

/* conformance.h: random bytes, random finite scales. */
void *conf_random_blocks(test_rng_t *rng, pagoda_dtype_t t, int64_t values) {
    int64_t elements = 0;
    size_t bytes = 0;
    pagoda_dtype_block(t, &elements, &bytes);
    const int64_t blocks = values / elements;
    unsigned char *out = test_xmalloc((size_t)blocks * bytes);
    for (size_t i = 0; i < (size_t)blocks * bytes; ++i) out[i] = (unsigned char)test_rng_next(rng);
    /* Offsets of the f16 scales in a block (block_formats.cpp's layouts). */
    const int q6 = t == PAGODA_DTYPE_Q6_K, with_min = t == PAGODA_DTYPE_Q4_K || t == PAGODA_DTYPE_Q5_K;
    for (int64_t b = 0; b < blocks; ++b) {
        unsigned char *block = out + (size_t)b * bytes;
        uint16_t h = random_scale(rng);
        memcpy(block + (q6 ? 208 : 0), &h, 2);
        if (with_min) {
            h = random_scale(rng);
            memcpy(block + 2, &h, 2);
        }
    }
    return out;
}

static conf_compare_t compare_of(pagoda_dtype_t act) {
    return act == PAGODA_DTYPE_BF16 ? CONF_BF16 : act == PAGODA_DTYPE_F16 ? CONF_F16 : CONF_F32;
}

/* k and the padding are in whole blocks of `w_dtype`. */
static void quant_matmul_case(test_rng_t *rng, int64_t m, int64_t n, int64_t k_blocks,
                              pagoda_dtype_t w_dtype, pagoda_dtype_t x_dtype,
                              pagoda_dtype_t y_dtype, int padded, int bias, int accumulate,
                              int round_w, conf_tally_t *tally) {
    const int64_t block = block_values(w_dtype), k = k_blocks * block;
    const int64_t ldx = padded ? k + test_rng_int(rng, 1, 9) : k;
    const int64_t ldw = padded ? k + block * test_rng_int(rng, 1, 2) : k;
    const int64_t ldy = padded ? n + test_rng_int(rng, 1, 9) : n;
    conf_case_t c;
    conf_case_init(&c, "matmul m=%lld n=%lld k=%lld x=%s w=%s y=%s%s%s%s%s", (long long)m,
                   (long long)n, (long long)k, pagoda_dtype_name(x_dtype),
                   pagoda_dtype_name(w_dtype), pagoda_dtype_name(y_dtype),
                   padded ? " strided" : "", bias ? " bias" : "", accumulate ? " accumulate" : "",
                   round_w ? " round_w" : "");
    pagoda_op_matmul_t *a = &conf_add_step(&c, PAGODA_OP_MATMUL)->matmul;
    a->flags = (accumulate ? PAGODA_MATMUL_ACCUMULATE : 0) | (round_w ? PAGODA_MATMUL_ROUND_W : 0);
    a->x_dtype = x_dtype;
    a->w_dtype = w_dtype;
    a->y_dtype = y_dtype;
    a->m = m;
    a->n = n;
    a->k = k;
    a->ldx = padded ? ldx : 0;
    a->ldw = padded ? ldw : 0;
    a->ldy = padded ? ldy : 0;

    const size_t nx = (size_t)(m * ldx), ny = (size_t)(m * ldy);
    int x = conf_add_tensor(&c, "x", conf_random_typed(rng, x_dtype, nx, -1.0f, 1.0f),
                            nx * pagoda_dtype_size(x_dtype), CONF_DEVICE, CONF_INPUT, 0);
    int w = conf_add_tensor(&c, "w", conf_random_blocks(rng, w_dtype, n * ldw),
                            block_bytes(w_dtype, n * ldw), CONF_DEVICE, CONF_INPUT, 0);
    const double tolerance = round_w && conf_tolerance(x_dtype) > conf_tolerance(y_dtype)
                                 ? conf_tolerance(x_dtype)
                                 : conf_tolerance(y_dtype);
    int y = conf_add_tensor(&c, "y", conf_random_typed(rng, y_dtype, ny, -1.0f, 1.0f),
                            ny * pagoda_dtype_size(y_dtype), CONF_DEVICE, compare_of(y_dtype),
                            tolerance);
    conf_bind(&c, 0, x, offsetof(pagoda_op_matmul_t, x));
    conf_bind(&c, 0, w, offsetof(pagoda_op_matmul_t, w));
    conf_bind(&c, 0, y, offsetof(pagoda_op_matmul_t, y));
    if (bias) {
        int b = conf_add_tensor(&c, "bias", conf_random_f32(rng, (size_t)n, -1.0f, 1.0f),
                                (size_t)n * sizeof(float), CONF_DEVICE, CONF_INPUT, 0);
        conf_bind(&c, 0, b, offsetof(pagoda_op_matmul_t, bias));
    }
    conf_check_case(&c, tally);
}

static void quant_embedding_case(test_rng_t *rng, int64_t vocab, int64_t dim_blocks,
                                 int64_t n_tokens, pagoda_dtype_t table_dtype,
                                 pagoda_dtype_t out_dtype, int padded, float scale,
                                 conf_tally_t *tally) {
    const int64_t dim = dim_blocks * block_values(table_dtype);
    const int64_t ldo = padded ? dim + test_rng_int(rng, 1, 7) : dim;
    conf_case_t c;
    conf_case_init(&c, "embedding vocab=%lld dim=%lld tokens=%lld table=%s out=%s scale=%g%s",
                   (long long)vocab, (long long)dim, (long long)n_tokens,
                   pagoda_dtype_name(table_dtype), pagoda_dtype_name(out_dtype), (double)scale,
                   padded ? " strided" : "");
    pagoda_op_embedding_t *a = &conf_add_step(&c, PAGODA_OP_EMBEDDING)->embedding;
    a->table_dtype = table_dtype;
    a->out_dtype = out_dtype;
    a->scale = scale;
    a->vocab_size = vocab;
    a->dim = dim;
    a->n_tokens = n_tokens;
    a->ldo = padded ? ldo : 0;
    int32_t *ids = test_xmalloc((size_t)n_tokens * sizeof *ids);
    for (int64_t t = 0; t < n_tokens; ++t) ids[t] = (int32_t)test_rng_int(rng, 0, vocab - 1);
    const size_t out_n = (size_t)(n_tokens * ldo);
    int table = conf_add_tensor(&c, "table", conf_random_blocks(rng, table_dtype, vocab * dim),
                                block_bytes(table_dtype, vocab * dim), CONF_DEVICE, CONF_INPUT, 0);
    int id = conf_add_tensor(&c, "ids", ids, (size_t)n_tokens * sizeof *ids, CONF_DEVICE,
                             CONF_INPUT, 0);
    /* Decoding is exact, scaling one f32 product and rounding to bf16/f16 happens once: bit
     * for bit. */
    int out = conf_add_tensor(&c, "out", conf_random_typed(rng, out_dtype, out_n, -1.0f, 1.0f),
                              out_n * pagoda_dtype_size(out_dtype), CONF_DEVICE, CONF_EXACT, 0);
    conf_bind(&c, 0, table, offsetof(pagoda_op_embedding_t, table));
    conf_bind(&c, 0, id, offsetof(pagoda_op_embedding_t, ids));
    conf_bind(&c, 0, out, offsetof(pagoda_op_embedding_t, out));
    conf_check_case(&c, tally);
}

void conf_cases_quantized(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x7175616e74ull);
    static const int64_t decode_m[] = {1, 2, 3, 4, 5, 7, 8};
    for (size_t t = 0; t < N_BLOCK_TYPES; ++t) {
        const pagoda_dtype_t w = kBlockTypes[t];
        const int64_t per_block = block_values(w);
        /* Decode GEMVs and prefill GEMMs, f32 x and y, flags in turn; k up to ~2k values. */
        for (int i = 0; i < 10; ++i) {
            const int prefill = i % 3 == 2;
            const int64_t m = prefill ? test_rng_int(&rng, 9, 70) : decode_m[i % 7];
            quant_matmul_case(&rng, m, test_rng_int(&rng, 1, 300),
                              test_rng_int(&rng, 1, 2048 / per_block), w, PAGODA_DTYPE_F32,
                              PAGODA_DTYPE_F32, i % 2, (i / 2) % 2, (i / 3) % 2, 0, tally);
        }
        /* Half x and y, decode and prefill. */
        for (int i = 0; i < 4; ++i)
            quant_matmul_case(&rng, i % 2 ? test_rng_int(&rng, 1, 8) : test_rng_int(&rng, 9, 40),
                              test_rng_int(&rng, 1, 200), test_rng_int(&rng, 1, 1024 / per_block),
                              w, kActTypes[1 + i % 2], kActTypes[(i + 1) % 3], i / 2, i % 2, 1,
                              0, tally);
        /* A model-sized row: several x tiles of the GEMV, a panel of the GEMM. */
        quant_matmul_case(&rng, 1, 512, 4096 / per_block, w, PAGODA_DTYPE_F32, PAGODA_DTYPE_F32,
                          0, 0, 0, 0, tally);
        quant_matmul_case(&rng, 33, 256, 4096 / per_block, w, PAGODA_DTYPE_F32, PAGODA_DTYPE_F32,
                          0, 1, 0, 0, tally);
        /* Leave to round W to half x: GEMMs (where a GPU takes it), a GEMV, every y type. */
        for (int i = 0; i < 4; ++i)
            quant_matmul_case(&rng, i == 3 ? test_rng_int(&rng, 1, 8) : test_rng_int(&rng, 9, 70),
                              test_rng_int(&rng, 1, 300), test_rng_int(&rng, 1, 2048 / per_block),
                              w, kActTypes[1 + i % 2], kActTypes[i % 3], i % 2, i / 2, i == 1, 1,
                              tally);
        /* Embedding rows into every activation type, unscaled and (ABI 1.8) scaled. */
        for (int i = 0; i < 3; ++i)
            quant_embedding_case(&rng, test_rng_int(&rng, 1, 300),
                                 test_rng_int(&rng, 1, 1024 / per_block), test_rng_int(&rng, 1, 30),
                                 w, kActTypes[i], i == 1, 0.0f, tally);
        quant_embedding_case(&rng, test_rng_int(&rng, 1, 300),
                             test_rng_int(&rng, 1, 1024 / per_block), test_rng_int(&rng, 1, 30), w,
                             kActTypes[t % 3], 0, 48.0f, tally);
    }
}
