/* MATMUL cases: decode GEMVs (m of 1 to 8) and prefill GEMMs, odd sizes, padded strides, bias,
 * accumulation, every weight type, and every mix of f32/bf16/f16 x, W and y. */
#include <stddef.h>
#include <stdlib.h>

#include "conformance.h"

static const pagoda_dtype_t kWeightTypes[] = {PAGODA_DTYPE_F32, PAGODA_DTYPE_BF16,
                                              PAGODA_DTYPE_F16};

static double max_d(double a, double b) { return a > b ? a : b; }

static void typed_case(test_rng_t *rng, int64_t m, int64_t n, int64_t k, pagoda_dtype_t x_dtype,
                       pagoda_dtype_t w_dtype, pagoda_dtype_t y_dtype, int padded, int bias,
                       int accumulate, conf_tally_t *tally) {
    const int64_t ldx = padded ? k + test_rng_int(rng, 1, 9) : k;
    const int64_t ldw = padded ? k + test_rng_int(rng, 1, 9) : k;
    const int64_t ldy = padded ? n + test_rng_int(rng, 1, 9) : n;
    conf_case_t c;
    conf_case_init(&c, "matmul m=%lld n=%lld k=%lld x=%s w=%s y=%s%s%s%s", (long long)m,
                   (long long)n, (long long)k, pagoda_dtype_name(x_dtype),
                   pagoda_dtype_name(w_dtype), pagoda_dtype_name(y_dtype),
                   padded ? " strided" : "", bias ? " bias" : "", accumulate ? " accumulate" : "");
    pagoda_op_matmul_t *a = &conf_add_step(&c, PAGODA_OP_MATMUL)->matmul;
    a->flags = accumulate ? PAGODA_MATMUL_ACCUMULATE : 0;
    a->x_dtype = x_dtype;
    a->y_dtype = y_dtype;
    a->w_dtype = w_dtype;
    a->m = m;
    a->n = n;
    a->k = k;
    a->ldx = padded ? ldx : 0;
    a->ldw = padded ? ldw : 0;
    a->ldy = padded ? ldy : 0;

    const size_t nx = (size_t)(m * ldx), nw = (size_t)(n * ldw), ny = (size_t)(m * ldy);
    int x = conf_add_tensor(&c, "x", conf_random_typed(rng, x_dtype, nx, -1.0f, 1.0f),
                            nx * pagoda_dtype_size(x_dtype), CONF_DEVICE, CONF_INPUT, 0);
    int w = conf_add_tensor(&c, "w", conf_random_typed(rng, w_dtype, nw, -1.0f, 1.0f),
                            nw * pagoda_dtype_size(w_dtype), CONF_DEVICE, CONF_INPUT, 0);
    /* y starts random: accumulation adds to it, and an element the kernel forgets stands out.
     * A half y may also differ by one rounding of its own type. */
    const conf_compare_t y_compare = y_dtype == PAGODA_DTYPE_BF16  ? CONF_BF16
                                     : y_dtype == PAGODA_DTYPE_F16 ? CONF_F16
                                                                   : CONF_F32;
    int y = conf_add_tensor(&c, "y", conf_random_typed(rng, y_dtype, ny, -1.0f, 1.0f),
                            ny * pagoda_dtype_size(y_dtype), CONF_DEVICE, y_compare,
                            max_d(conf_tolerance(w_dtype), conf_tolerance(y_dtype)));
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

static void matmul_case(test_rng_t *rng, int64_t m, int64_t n, int64_t k, pagoda_dtype_t w_dtype,
                        int padded, int bias, int accumulate, conf_tally_t *tally) {
    typed_case(rng, m, n, k, PAGODA_DTYPE_F32, w_dtype, PAGODA_DTYPE_F32, padded, bias, accumulate,
               tally);
}

void conf_cases_matmul(conf_tally_t *tally) {
    test_rng_t rng;
    test_rng_seed(&rng, 0x6d61746d756cull);
    static const int64_t decode_m[] = {1, 2, 3, 4, 5, 7, 8};
    /* Random decode and prefill shapes, each weight type, every flag combination in turn. */
    for (int i = 0; i < 36; ++i) {
        const int prefill = i % 3 == 2;
        const int64_t m = prefill ? test_rng_int(&rng, 9, 80) : decode_m[i % 7];
        const int64_t n = test_rng_int(&rng, 1, 300), k = test_rng_int(&rng, 1, 520);
        matmul_case(&rng, m, n, k, kWeightTypes[i % 3], (i / 3) % 2, (i / 2) % 2, (i / 5) % 2,
                    tally);
    }
    /* Sizes where kernels change strategy: tiny, vector-width edges, and model-sized rows. */
    static const int64_t shapes[][3] = {{1, 1, 1},     {1, 1, 2048}, {1, 4096, 64}, {8, 33, 255},
                                        {9, 17, 129},  {1, 512, 4096}, {4, 1000, 1024},
                                        {128, 256, 512}, {64, 96, 128}, {257, 65, 96}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (size_t d = 0; d < 3; ++d)
            matmul_case(&rng, shapes[s][0], shapes[s][1], shapes[s][2], kWeightTypes[d], s % 2,
                        d == 1, s % 3 == 0, tally);
    /* Every mix of activation and weight types, on a decode GEMV and on a prefill GEMM (on CUDA:
     * tensor cores straight on half x and W, or the staged route), flags in turn. */
    int turn = 0;
    for (size_t xt = 0; xt < 3; ++xt)
        for (size_t wt = 0; wt < 3; ++wt)
            for (size_t yt = 0; yt < 3; ++yt) {
                const int64_t m = turn % 2 ? test_rng_int(&rng, 1, 8) : test_rng_int(&rng, 9, 100);
                typed_case(&rng, m, test_rng_int(&rng, 1, 200), test_rng_int(&rng, 1, 300),
                           kWeightTypes[xt], kWeightTypes[wt], kWeightTypes[yt], turn % 3 == 0,
                           (turn / 2) % 2, (turn / 4) % 2, tally);
                typed_case(&rng, turn % 2 ? 64 : 3, 256, 512, kWeightTypes[xt], kWeightTypes[wt],
                           kWeightTypes[yt], 0, turn % 2, 1, tally);
                ++turn;
            }
}
