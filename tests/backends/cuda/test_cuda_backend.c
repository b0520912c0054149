/* The CUDA backend through the plugin ABI: device description, memory, copies of every kind,
 * streams and events, the matmul routes (cuBLASLt f32 and all-half GEMMs, the half-weight GEMV
 * and widened GEMM) against the CPU backend and a double-precision reference, a one-rank NCCL
 * communicator, NCCL's join timeout, and the plugin's configuration. On a machine without a
 * CUDA device every test but the configuration one is skipped. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

#define CUDA_PLUGIN PAGODA_TEST_CUDA_BACKEND_DIR "/libpagoda-backend-cuda.so"

static int g_no_device = 0;

/* The CUDA backend's table, loaded once; skips the calling test when there is no device. */
static const pagoda_backend_iface_t *cuda_iface(void) {
    static pagoda_backend_t *backend = NULL;
    if (backend == NULL && !g_no_device) {
        pagoda_status_t s = pagoda_backend_load(CUDA_PLUGIN, NULL, &backend);
        if (s != PAGODA_OK) {
            const char *message = pagoda_last_error_message();
            if ((s == PAGODA_ERR_NOT_FOUND || s == PAGODA_ERR_BACKEND) && strstr(message, "no CUDA device") != NULL) {
                fprintf(stderr, "skipping: %s\n", message);
                g_no_device = 1;
            } else {
                fail_msg("loading %s failed: %s: %s", CUDA_PLUGIN, pagoda_status_string(s),
                         message);
            }
        }
    }
    if (g_no_device) skip();
    return pagoda_backend_interface(backend);
}

static void *device_alloc(const pagoda_backend_iface_t *cuda, size_t bytes) {
    void *p = NULL;
    TEST_ASSERT_OK(cuda->buffer_alloc(cuda->self, 0, bytes, &p));
    assert_non_null(p);
    return p;
}

static void test_device_info(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    assert_string_equal(cuda->name, "cuda");
    int32_t count = 0;
    TEST_ASSERT_OK(cuda->device_count(cuda->self, &count));
    assert_true(count >= 1);
    pagoda_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(cuda->device_info(cuda->self, 0, &info));
    assert_int_equal(info.kind, PAGODA_DEVICE_GPU);
    assert_int_equal(info.flags, 0);
    assert_true(info.compute_units > 0);
    assert_true(info.total_memory > 0 && info.free_memory <= info.total_memory);
    assert_true(strncmp(info.arch, "sm_", 3) == 0);
    assert_true(strlen(info.name) > 0);
    /* A device that does not exist is named in the error. */
    assert_int_equal(cuda->device_info(cuda->self, count, &info), PAGODA_ERR_NOT_FOUND);
    assert_non_null(strstr(pagoda_last_error_message(), "does not exist"));
}

/* Host → device → device → host across two streams joined by an event, a host-to-host copy
 * ordered after them, and a memset, all compared with the source. */
static void test_copies_streams_events(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    const size_t n = (size_t)1 << 20, bytes = n * sizeof(float);
    test_rng_t rng;
    test_rng_seed(&rng, 11);

    float *pinned_src = NULL, *pinned_dst = NULL;
    TEST_ASSERT_OK(cuda->host_buffer_alloc(cuda->self, bytes, (void **)&pinned_src));
    TEST_ASSERT_OK(cuda->host_buffer_alloc(cuda->self, bytes, (void **)&pinned_dst));
    float *pageable = test_xmalloc(bytes);
    test_fill_uniform(&rng, pinned_src, n, -1.0f, 1.0f);
    void *a = device_alloc(cuda, bytes), *b = device_alloc(cuda, bytes);

    pagoda_backend_stream_t *s1 = test_stream_create(cuda), *s2 = test_stream_create(cuda);
    pagoda_backend_event_t *done = NULL;
    TEST_ASSERT_OK(cuda->event_create(cuda->self, 0, 0, &done));

    TEST_ASSERT_OK(cuda->copy(cuda->self, s1, a, pinned_src, bytes, PAGODA_COPY_HOST_TO_DEVICE));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s1, b, a, bytes, PAGODA_COPY_DEVICE_TO_DEVICE));
    TEST_ASSERT_OK(cuda->event_record(cuda->self, done, s1));
    TEST_ASSERT_OK(cuda->stream_wait_event(cuda->self, s2, done));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s2, pinned_dst, b, bytes, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s2, pageable, pinned_dst, bytes, PAGODA_COPY_HOST_TO_HOST));
    TEST_ASSERT_OK(cuda->stream_synchronize(cuda->self, s2));
    TEST_ASSERT_OK(cuda->event_synchronize(cuda->self, done));
    assert_memory_equal(pinned_dst, pinned_src, bytes);
    assert_memory_equal(pageable, pinned_src, bytes);

    /* memset the middle half of `a`, read all of it back into pageable memory. */
    TEST_ASSERT_OK(cuda->memset(cuda->self, s1, (char *)a + bytes / 4, 0x5A, bytes / 2));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s1, pageable, a, bytes, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(cuda->stream_synchronize(cuda->self, s1));
    const unsigned char *got = (const unsigned char *)pageable;
    assert_memory_equal(got, pinned_src, bytes / 4);
    for (size_t i = bytes / 4; i < 3 * bytes / 4; ++i) assert_int_equal(got[i], 0x5A);
    assert_memory_equal(got + 3 * bytes / 4, (const char *)pinned_src + 3 * bytes / 4, bytes / 4);

    /* Bad arguments fail with a status, never a crash. */
    assert_int_equal(cuda->copy(cuda->self, s1, a, NULL, 16, PAGODA_COPY_HOST_TO_DEVICE),
                     PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(cuda->copy(cuda->self, s1, a, b, 16, (pagoda_copy_kind_t)42),
                     PAGODA_ERR_INVALID_ARGUMENT);

    /* Queries never block; after a synchronisation both report completion. */
    uint32_t complete = 0;
    TEST_ASSERT_OK(cuda->stream_query(cuda->self, s2, &complete));
    assert_int_equal(complete, 1);
    complete = 0;
    TEST_ASSERT_OK(cuda->event_query(cuda->self, done, &complete));
    assert_int_equal(complete, 1);

    /* Timing events measure a copy; an event without timing cannot. */
    pagoda_backend_event_t *t0 = NULL, *t1 = NULL;
    TEST_ASSERT_OK(cuda->event_create(cuda->self, 0, PAGODA_EVENT_TIMING, &t0));
    TEST_ASSERT_OK(cuda->event_create(cuda->self, 0, PAGODA_EVENT_TIMING, &t1));
    TEST_ASSERT_OK(cuda->event_record(cuda->self, t0, s1));
    TEST_ASSERT_OK(cuda->copy(cuda->self, s1, b, a, bytes, PAGODA_COPY_DEVICE_TO_DEVICE));
    TEST_ASSERT_OK(cuda->event_record(cuda->self, t1, s1));
    TEST_ASSERT_OK(cuda->event_synchronize(cuda->self, t1));
    float ms = -1.0f;
    TEST_ASSERT_OK(cuda->event_elapsed(cuda->self, t0, t1, &ms));
    assert_true(ms >= 0.0f);
    assert_int_not_equal(cuda->event_elapsed(cuda->self, t0, done, &ms), PAGODA_OK);
    cuda->event_destroy(cuda->self, t0);
    cuda->event_destroy(cuda->self, t1);
    pagoda_backend_event_t *bad = NULL;
    assert_int_equal(cuda->event_create(cuda->self, 0, 0x80, &bad), PAGODA_ERR_INVALID_ARGUMENT);
    assert_null(bad);

    cuda->event_destroy(cuda->self, done);
    test_stream_destroy(cuda, s1);
    test_stream_destroy(cuda, s2);
    cuda->buffer_free(cuda->self, 0, a);
    cuda->buffer_free(cuda->self, 0, b);
    cuda->host_buffer_free(cuda->self, pinned_src);
    cuda->host_buffer_free(cuda->self, pinned_dst);
    free(pageable);
}

typedef struct matmul_case {
    int64_t m, n, k;
    int64_t ldx, ldw, ldy; /* 0 = packed */
    int bias, accumulate;
    pagoda_dtype_t w_dtype;   /* F32, BF16 or F16 */
    pagoda_dtype_t act_dtype; /* x and y: F32, or w_dtype for an all-half product; bias F32 */
} matmul_case_t;

static size_t dtype_bytes(pagoda_dtype_t d) { return d == PAGODA_DTYPE_F32 ? 4 : 2; }

/* Back to f32 for comparisons: what the device wrote in `dtype`. */
static void to_f32(pagoda_dtype_t dtype, const void *in, size_t n, float *out) {
    for (size_t i = 0; i < n; ++i) {
        if (dtype == PAGODA_DTYPE_BF16)
            out[i] = test_bf16_to_f32(((const uint16_t *)in)[i]);
        else if (dtype == PAGODA_DTYPE_F16)
            out[i] = test_f16_to_f32(((const uint16_t *)in)[i]);
        else
            out[i] = ((const float *)in)[i];
    }
}

/* A device copy of `bytes` host bytes. */
static void *device_copy(const pagoda_backend_iface_t *cuda, pagoda_backend_stream_t *stream,
                         const void *src, size_t bytes) {
    void *p = device_alloc(cuda, bytes);
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, p, src, bytes, PAGODA_COPY_HOST_TO_DEVICE));
    return p;
}

/* Runs one case on the device and compares it with a double-precision reference computed on
 * exactly the values the device sees (after rounding to bf16/f16), and, for f32 activations,
 * with the CPU backend. */
static void run_matmul_case(const pagoda_backend_iface_t *cuda, const matmul_case_t *c,
                            test_rng_t *rng, int32_t variant) {
    const int64_t ldx = c->ldx ? c->ldx : c->k, ldw = c->ldw ? c->ldw : c->k,
                  ldy = c->ldy ? c->ldy : c->n;
    const size_t nx = (size_t)(c->m * ldx), nw = (size_t)(c->n * ldw), ny = (size_t)(c->m * ldy);
    const size_t nb = (size_t)c->n;
    const size_t act = dtype_bytes(c->act_dtype), wsz = dtype_bytes(c->w_dtype);
    float *x = test_xmalloc(nx * sizeof *x), *w = test_xmalloc(nw * sizeof *w);
    float *bias = test_xmalloc(nb * sizeof *bias), *y0 = test_xmalloc(ny * sizeof *y0);
    test_fill_uniform(rng, x, nx, -1.0f, 1.0f);
    test_fill_uniform(rng, w, nw, -1.0f, 1.0f);
    test_fill_uniform(rng, bias, nb, -1.0f, 1.0f);
    test_fill_uniform(rng, y0, ny, -1.0f, 1.0f);

    /* The bytes the device gets, and the values they hold. */
    void *hx = test_xmalloc(nx * act), *hw = test_xmalloc(nw * wsz);
    void *hb = test_xmalloc(nb * sizeof(float)), *hy0 = test_xmalloc(ny * act), *hy = test_xmalloc(ny * act);
    double *kx = test_xmalloc(nx * sizeof *kx), *kw = test_xmalloc(nw * sizeof *kw);
    double *kb = test_xmalloc(nb * sizeof *kb), *ky0 = test_xmalloc(ny * sizeof *ky0);
    test_convert_weights(c->act_dtype, x, nx, hx, kx);
    test_convert_weights(c->w_dtype, w, nw, hw, kw);
    test_convert_weights(PAGODA_DTYPE_F32, bias, nb, hb, kb); /* ops.h: the bias is f32 */
    test_convert_weights(c->act_dtype, y0, ny, hy0, ky0);

    /* Padding between rows (ldy > n) keeps its values. */
    double *ref = test_xmalloc(ny * sizeof *ref);
    for (size_t i = 0; i < ny; ++i) ref[i] = ky0[i];
    for (int64_t i = 0; i < c->m; ++i)
        for (int64_t j = 0; j < c->n; ++j) {
            double acc = c->accumulate ? ky0[i * ldy + j] : 0.0;
            if (c->bias) acc += kb[j];
            for (int64_t p = 0; p < c->k; ++p) acc += kx[i * ldx + p] * kw[j * ldw + p];
            ref[i * ldy + j] = acc;
        }

    pagoda_op_matmul_t op;
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    op.flags = c->accumulate ? PAGODA_MATMUL_ACCUMULATE : 0;
    op.x_dtype = op.y_dtype = c->act_dtype;
    op.w_dtype = c->w_dtype;
    op.m = c->m;
    op.n = c->n;
    op.k = c->k;
    op.ldx = c->ldx;
    op.ldw = c->ldw;
    op.ldy = c->ldy;
    op.variant = variant;

    pagoda_backend_stream_t *stream = test_stream_create(cuda);
    void *dx = device_copy(cuda, stream, hx, nx * act), *dw = device_copy(cuda, stream, hw, nw * wsz);
    void *db = device_copy(cuda, stream, hb, nb * sizeof(float)), *dy = device_copy(cuda, stream, hy0, ny * act);
    op.x = dx;
    op.w = dw;
    op.bias = c->bias ? db : NULL;
    op.y = dy;
    TEST_ASSERT_OK(cuda->kernels->supports(cuda->self, 0, PAGODA_OP_MATMUL, &op));
    TEST_ASSERT_OK(cuda->kernels->launch(cuda->self, stream, PAGODA_OP_MATMUL, &op));
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, hy, dy, ny * act, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(cuda->stream_synchronize(cuda->self, stream));
    float *y_gpu = test_xmalloc(ny * sizeof *y_gpu);
    to_f32(c->act_dtype, hy, ny, y_gpu);

    /* Row padding is untouched, bit for bit. */
    for (int64_t i = 0; i < c->m; ++i)
        assert_memory_equal((const char *)hy + (size_t)(i * ldy + c->n) * act,
                            (const char *)hy0 + (size_t)(i * ldy + c->n) * act,
                            (size_t)(ldy - c->n) * act);

    /* f32 outputs: f32 products with f32 accumulation stay near 1e-7 here (TF32 would be near
     * 1e-3). Half outputs: one rounding of the result, 2^-8 (bf16) or 2^-11 (f16) relative. */
    const double tolerance = c->act_dtype == PAGODA_DTYPE_BF16  ? 8e-3
                             : c->act_dtype == PAGODA_DTYPE_F16 ? 1e-3
                                                                : 1e-5;
    const double err_ref = test_rel_error(y_gpu, ref, ny);
    double err_cpu = 0.0;
    if (c->act_dtype == PAGODA_DTYPE_F32) {
        /* The CPU backend on the same bytes in host memory. */
        memcpy(hy, hy0, ny * act);
        op.x = hx;
        op.w = hw;
        op.bias = c->bias ? hb : NULL;
        op.y = hy;
        op.variant = 0; /* the CPU backend's variants are its own */
        TEST_ASSERT_OK(test_cpu_launch(PAGODA_OP_MATMUL, &op));
        double *cpu = test_xmalloc(ny * sizeof *cpu);
        for (size_t i = 0; i < ny; ++i) cpu[i] = ((const float *)hy)[i];
        err_cpu = test_rel_error(y_gpu, cpu, ny);
        free(cpu);
    }
    if (err_ref > tolerance || err_cpu > 10 * tolerance)
        fail_msg("matmul %s x, %s W, m=%lld n=%lld k=%lld ld=%lld/%lld/%lld bias=%d acc=%d "
                 "variant=%d: relative error %.3g vs double, %.3g vs CPU",
                 pagoda_dtype_name(c->act_dtype), pagoda_dtype_name(c->w_dtype), (long long)c->m,
                 (long long)c->n, (long long)c->k, (long long)ldx, (long long)ldw, (long long)ldy,
                 c->bias, c->accumulate, (int)variant, err_ref, err_cpu);

    test_stream_destroy(cuda, stream);
    cuda->buffer_free(cuda->self, 0, dx);
    cuda->buffer_free(cuda->self, 0, dw);
    cuda->buffer_free(cuda->self, 0, db);
    cuda->buffer_free(cuda->self, 0, dy);
    free(x);
    free(w);
    free(bias);
    free(y0);
    free(hx);
    free(hw);
    free(hb);
    free(hy0);
    free(hy);
    free(kx);
    free(kw);
    free(kb);
    free(ky0);
    free(ref);
    free(y_gpu);
}

static void run_pinned_cases(const matmul_case_t *cases, size_t n, uint64_t seed, int32_t variant) {
    const pagoda_backend_iface_t *cuda = cuda_iface();
    test_rng_t rng;
    test_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; ++i) run_matmul_case(cuda, &cases[i], &rng, variant);
}

static void run_matmul_cases(const matmul_case_t *cases, size_t n, uint64_t seed) {
    run_pinned_cases(cases, n, seed, 0);
}

#define F32 PAGODA_DTYPE_F32
#define BF16 PAGODA_DTYPE_BF16
#define F16 PAGODA_DTYPE_F16

/* f32 x and W: cuBLASLt with the bias epilogue. */
static void test_matmul_f32(void **state) {
    (void)state;
    static const matmul_case_t cases[] = {
        {1, 256, 512, 0, 0, 0, 0, 0, F32, F32},     /* decode */
        {4, 300, 257, 0, 0, 0, 1, 0, F32, F32},     /* odd sizes, bias */
        {7, 33, 65, 80, 70, 40, 1, 1, F32, F32},    /* strides, bias, accumulate */
        {128, 384, 1024, 0, 0, 0, 0, 1, F32, F32},  /* prefill, accumulate */
        {3, 5, 1, 0, 0, 0, 1, 0, F32, F32},         /* k = 1 */
    };
    run_matmul_cases(cases, sizeof cases / sizeof cases[0], 42);
}

/* f32 x with bf16/f16 W: the GEMV up to m = 8 (16-byte loads when W's rows are aligned, element
 * loads when not, several shared-memory tiles of x when k > 1024), the widened f32 GEMM above
 * (several panels when n·k passes 2^24). */
static void test_matmul_half_weights(void **state) {
    (void)state;
    static const matmul_case_t cases[] = {
        {1, 256, 512, 0, 0, 0, 0, 0, BF16, F32},         /* GEMV, m = 1 */
        {2, 100, 3000, 0, 0, 0, 1, 0, BF16, F32},        /* GEMV, three x tiles, bias */
        {5, 67, 1027, 0, 1031, 0, 1, 1, BF16, F32},      /* GEMV, unaligned rows, tail */
        {8, 129, 520, 530, 528, 140, 1, 1, F16, F32},    /* GEMV, m = 8, strides */
        {3, 64, 4096, 0, 0, 0, 0, 0, F16, F32},          /* GEMV, m = 3 in the m = 4 kernel */
        {9, 200, 264, 0, 0, 0, 1, 0, BF16, F32},         /* widened GEMM, just past the GEMV */
        {64, 384, 1024, 1030, 1032, 390, 1, 1, F16, F32},/* widened GEMM, strides */
        {33, 77, 333, 0, 0, 0, 0, 1, BF16, F32},         /* widened, unaligned rows */
        {16, 4200, 4096, 0, 0, 0, 1, 0, BF16, F32},      /* two weight panels */
    };
    run_matmul_cases(cases, sizeof cases / sizeof cases[0], 43);
}

/* x, W and y all bf16 (or all f16): the GEMV, or cuBLASLt on tensor cores with f32 compute
 * (with a bias, in f32 into the staging area, then rounded once). */
static void test_matmul_all_half(void **state) {
    (void)state;
    static const matmul_case_t cases[] = {
        {1, 256, 512, 0, 0, 0, 1, 0, BF16, BF16},
        {37, 300, 264, 272, 264, 304, 1, 1, BF16, BF16},
        {128, 256, 1024, 0, 0, 0, 0, 1, BF16, BF16},
        {5, 33, 65, 0, 0, 0, 1, 0, BF16, BF16}, /* odd sizes: no 16-byte alignment */
        {64, 128, 512, 0, 0, 0, 1, 1, F16, F16},
    };
    run_matmul_cases(cases, sizeof cases / sizeof cases[0], 44);
}

/* ABI 1.6's pinned routes: "gemv" (1) past the rules' m = 8, in several passes over W, and
 * "gemm" (2) at decode m; the names, and the pins that cannot run refused. */
static void test_matmul_pinned_variants(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    assert_non_null(cuda->kernels->variant_name);
    assert_string_equal(cuda->kernels->variant_name(cuda->self, 0, PAGODA_OP_MATMUL, 1), "gemv");
    assert_string_equal(cuda->kernels->variant_name(cuda->self, 0, PAGODA_OP_MATMUL, 2), "gemm");
    assert_null(cuda->kernels->variant_name(cuda->self, 0, PAGODA_OP_MATMUL, 3));
    static const matmul_case_t narrow[] = {
        {1, 256, 512, 0, 0, 0, 1, 0, BF16, F32},
        {20, 200, 264, 0, 0, 0, 1, 1, BF16, F32},
        {64, 384, 1024, 1030, 1032, 390, 1, 1, F16, F32},
        {17, 96, 256, 0, 0, 0, 0, 0, BF16, BF16},
    };
    run_pinned_cases(narrow, sizeof narrow / sizeof narrow[0], 45, 1);
    run_pinned_cases(narrow, sizeof narrow / sizeof narrow[0], 46, 2);

    pagoda_op_matmul_t mm;
    memset(&mm, 0, sizeof mm);
    mm.struct_size = sizeof mm;
    mm.x_dtype = mm.w_dtype = mm.y_dtype = F32;
    mm.m = 2;
    mm.n = 3;
    mm.k = 4;
    mm.variant = 1;
    pagoda_clear_error();
    test_expect_failure(cuda->kernels->supports(cuda->self, 0, PAGODA_OP_MATMUL, &mm),
                        PAGODA_ERR_UNSUPPORTED, "variant gemv reads bf16/f16 or block weights");
    mm.variant = 3;
    test_expect_failure(cuda->kernels->supports(cuda->self, 0, PAGODA_OP_MATMUL, &mm),
                        PAGODA_ERR_UNSUPPORTED, "2 matmul variants");
}

static void test_matmul_rejects(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    pagoda_op_matmul_t mm;
    memset(&mm, 0, sizeof mm);
    mm.struct_size = sizeof mm;
    mm.x_dtype = mm.y_dtype = PAGODA_DTYPE_F32;
    mm.w_dtype = PAGODA_DTYPE_BF16;
    mm.m = 1;
    mm.n = mm.k = 64;
    TEST_ASSERT_OK(cuda->kernels->supports(cuda->self, 0, PAGODA_OP_MATMUL, &mm));
    /* Mixed half types run too (ops.h), staged through f32 past the GEMV's m. */
    mm.x_dtype = mm.y_dtype = PAGODA_DTYPE_BF16;
    mm.w_dtype = PAGODA_DTYPE_F16;
    mm.m = 100;
    TEST_ASSERT_OK(cuda->kernels->supports(cuda->self, 0, PAGODA_OP_MATMUL, &mm));
    mm.m = 1;
    /* cuBLAS takes 32-bit sizes. */
    mm.x_dtype = mm.y_dtype = mm.w_dtype = PAGODA_DTYPE_F32;
    mm.n = (int64_t)1 << 31;
    test_expect_failure(cuda->kernels->supports(cuda->self, 0, PAGODA_OP_MATMUL, &mm),
                        PAGODA_ERR_UNSUPPORTED, "32-bit");
    /* y must not overlap x. */
    mm.n = 64;
    pagoda_backend_stream_t *stream = test_stream_create(cuda);
    float *buf = device_alloc(cuda, 64 * 64 * sizeof(float) * 2);
    mm.x = buf;
    mm.w = buf + 64 * 64;
    mm.y = buf + 32;
    test_expect_failure(cuda->kernels->launch(cuda->self, stream, PAGODA_OP_MATMUL, &mm),
                        PAGODA_ERR_INVALID_ARGUMENT, "overlaps");
    test_stream_destroy(cuda, stream);
    cuda->buffer_free(cuda->self, 0, buf);
}

/* One rank: an all-reduce leaves the data as it was, an all-gather copies it; an aborted
 * communicator refuses further work. */
static void test_nccl_one_rank(void **state) {
    (void)state;
    const pagoda_backend_iface_t *cuda = cuda_iface();
    const pagoda_backend_collectives_t *coll = cuda->collectives;
    assert_non_null(coll);
    const size_t n = 4096, bytes = n * sizeof(float);
    float *src = test_xmalloc(bytes), *got = test_xmalloc(bytes);
    test_rng_t rng;
    test_rng_seed(&rng, 5);
    test_fill_uniform(&rng, src, n, -1.0f, 1.0f);

    pagoda_comm_unique_id_t id;
    TEST_ASSERT_OK(coll->get_unique_id(cuda->self, &id));
    pagoda_backend_comm_t *comm = NULL;
    TEST_ASSERT_OK(coll->comm_create(cuda->self, 0, &id, 1, 0, &comm));
    pagoda_backend_stream_t *stream = test_stream_create(cuda);
    void *a = device_alloc(cuda, bytes), *b = device_alloc(cuda, bytes);
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, a, src, bytes, PAGODA_COPY_HOST_TO_DEVICE));
    TEST_ASSERT_OK(coll->all_reduce(cuda->self, comm, stream, a, a, n, PAGODA_DTYPE_F32,
                                    PAGODA_REDUCE_SUM));
    TEST_ASSERT_OK(coll->all_gather(cuda->self, comm, stream, a, b, n, PAGODA_DTYPE_F32));
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, got, b, bytes, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(cuda->stream_synchronize(cuda->self, stream));
    assert_memory_equal(got, src, bytes);

    assert_int_equal(coll->all_reduce(cuda->self, comm, stream, a, a, n, PAGODA_DTYPE_INVALID,
                                      PAGODA_REDUCE_SUM),
                     PAGODA_ERR_UNSUPPORTED);
    pagoda_status_t async = PAGODA_ERR_INTERNAL;
    TEST_ASSERT_OK(coll->comm_get_async_error(cuda->self, comm, &async));
    assert_int_equal(async, PAGODA_OK);
    TEST_ASSERT_OK(coll->comm_abort(cuda->self, comm));
    TEST_ASSERT_OK(coll->comm_get_async_error(cuda->self, comm, &async));
    assert_int_equal(async, PAGODA_ERR_BACKEND);
    assert_int_equal(coll->all_reduce(cuda->self, comm, stream, a, a, n, PAGODA_DTYPE_F32,
                                      PAGODA_REDUCE_SUM),
                     PAGODA_ERR_BACKEND);
    coll->comm_destroy(cuda->self, comm);

    test_stream_destroy(cuda, stream);
    cuda->buffer_free(cuda->self, 0, a);
    cuda->buffer_free(cuda->self, 0, b);
    free(src);
    free(got);
}

/* A second instance of the plugin with its own configuration, through the entry symbol (the
 * registry keeps one instance per file). Messages land in g_entry_error. */
static char g_entry_error[2048];

static void entry_log(void *ctx, pagoda_log_level_t level, const char *message) {
    (void)ctx;
    if (level >= PAGODA_LOG_WARN) fprintf(stderr, "cuda backend (test instance): %s\n", message);
}
static void entry_set_error(void *ctx, const char *message) {
    (void)ctx;
    snprintf(g_entry_error, sizeof g_entry_error, "%s", message);
}
static void *entry_alloc(void *ctx, size_t size, size_t alignment) {
    (void)ctx;
    return aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
static void entry_free(void *ctx, void *ptr) {
    (void)ctx;
    free(ptr);
}

static pagoda_status_t open_instance(const char *config, const pagoda_backend_iface_t **out) {
    static const pagoda_backend_host_t host = {sizeof(pagoda_backend_host_t),
                                               PAGODA_BACKEND_ABI_VERSION, NULL, entry_log,
                                               entry_set_error, entry_alloc, entry_free};
    void *handle = dlopen(CUDA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) fail_msg("dlopen %s: %s", CUDA_PLUGIN, dlerror());
    void *symbol = dlsym(handle, PAGODA_BACKEND_ENTRY_SYMBOL);
    assert_non_null(symbol);
    pagoda_backend_entry_fn entry;
    memcpy(&entry, &symbol, sizeof entry); /* ISO C has no object-to-function pointer cast */
    g_entry_error[0] = '\0';
    pagoda_status_t s = entry(&host, config, out);
    /* The plugin stays mapped (-z nodelete); this only drops our reference. */
    dlclose(handle);
    return s;
}

/* Bad configuration is refused before any device is looked at, so this runs everywhere. */
static void test_config_rejected(void **state) {
    (void)state;
    static const struct {
        const char *config, *needle;
    } bad[] = {
        {"nccl_timeout_ms=0", "nccl_timeout_ms"},
        {"nccl_timeout_ms=10s", "nccl_timeout_ms"},
        {"nccl_timeout_ms=", "nccl_timeout_ms"},
        {"tf32=yes", "tf32"},
        {"threads=4", "unknown config key 'threads'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        const pagoda_backend_iface_t *iface = NULL;
        assert_int_equal(open_instance(bad[i].config, &iface), PAGODA_ERR_INVALID_ARGUMENT);
        assert_null(iface);
        if (strstr(g_entry_error, bad[i].needle) == NULL)
            fail_msg("config '%s': message '%s' does not name '%s'", bad[i].config, g_entry_error,
                     bad[i].needle);
    }
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Rank 0 of 2 waits for a rank 1 that never comes: comm_create gives up after nccl_timeout_ms,
 * aborts, and says so, instead of hanging; so does group_end for a join inside a group. With
 * tf32=1 the f32 GEMM still runs (within TF32's precision). */
static void test_nccl_init_timeout(void **state) {
    (void)state;
    (void)cuda_iface(); /* skips without a device */
    const pagoda_backend_iface_t *cuda = NULL;
    pagoda_status_t s = open_instance("nccl_timeout_ms=1500,tf32=1", &cuda);
    if (s != PAGODA_OK) fail_msg("second instance: %s: %s", pagoda_status_string(s), g_entry_error);
    const pagoda_backend_collectives_t *coll = cuda->collectives;

    pagoda_comm_unique_id_t id;
    TEST_ASSERT_OK(coll->get_unique_id(cuda->self, &id));
    pagoda_backend_comm_t *comm = NULL;
    const double start = seconds_now();
    s = coll->comm_create(cuda->self, 0, &id, 2, 0, &comm);
    const double waited = seconds_now() - start;
    assert_int_equal(s, PAGODA_ERR_BACKEND);
    assert_null(comm);
    if (strstr(g_entry_error, "rank 0 of 2") == NULL || strstr(g_entry_error, "1500 ms") == NULL ||
        strstr(g_entry_error, "aborted") == NULL)
        fail_msg("timeout message does not name the rank, the timeout and the abort: %s",
                 g_entry_error);
    if (waited < 1.4 || waited > 60.0) fail_msg("comm_create gave up after %.2f s, not ~1.5 s", waited);

    /* Inside a group the join happens at group_end, which times out the same way. */
    TEST_ASSERT_OK(coll->get_unique_id(cuda->self, &id));
    TEST_ASSERT_OK(coll->group_start(cuda->self));
    TEST_ASSERT_OK(coll->comm_create(cuda->self, 0, &id, 2, 0, &comm));
    assert_non_null(comm);
    assert_int_equal(coll->group_end(cuda->self), PAGODA_ERR_BACKEND);
    assert_non_null(strstr(g_entry_error, "1500 ms"));
    pagoda_status_t async = PAGODA_OK;
    TEST_ASSERT_OK(coll->comm_get_async_error(cuda->self, comm, &async));
    assert_int_equal(async, PAGODA_ERR_BACKEND);
    coll->comm_destroy(cuda->self, comm);
    /* A group_end with no group open is a usage error, not a hang. */
    assert_int_equal(coll->group_end(cuda->self), PAGODA_ERR_INVALID_ARGUMENT);

    /* A one-rank group completes. */
    TEST_ASSERT_OK(coll->get_unique_id(cuda->self, &id));
    TEST_ASSERT_OK(coll->group_start(cuda->self));
    TEST_ASSERT_OK(coll->comm_create(cuda->self, 0, &id, 1, 0, &comm));
    TEST_ASSERT_OK(coll->group_end(cuda->self));
    async = PAGODA_ERR_INTERNAL;
    TEST_ASSERT_OK(coll->comm_get_async_error(cuda->self, comm, &async));
    assert_int_equal(async, PAGODA_OK);
    coll->comm_destroy(cuda->self, comm);

    /* tf32=1 reaches the GEMM: a prefill-sized f32 product is within TF32's ~1e-3. */
    const int64_t m = 64, n = 128, k = 256;
    float *x = test_xmalloc((size_t)(m * k) * sizeof *x), *w = test_xmalloc((size_t)(n * k) * sizeof *w);
    float *y = test_xmalloc((size_t)(m * n) * sizeof *y);
    double *ref = test_xmalloc((size_t)(m * n) * sizeof *ref);
    test_rng_t rng;
    test_rng_seed(&rng, 9);
    test_fill_uniform(&rng, x, (size_t)(m * k), -1.0f, 1.0f);
    test_fill_uniform(&rng, w, (size_t)(n * k), -1.0f, 1.0f);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; ++p) acc += (double)x[i * k + p] * w[j * k + p];
            ref[i * n + j] = acc;
        }
    pagoda_backend_stream_t *stream = test_stream_create(cuda);
    void *dx = device_copy(cuda, stream, x, (size_t)(m * k) * sizeof *x);
    void *dw = device_copy(cuda, stream, w, (size_t)(n * k) * sizeof *w);
    void *dy = device_alloc(cuda, (size_t)(m * n) * sizeof *y);
    pagoda_op_matmul_t op;
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    op.x_dtype = op.w_dtype = op.y_dtype = PAGODA_DTYPE_F32;
    op.m = m;
    op.n = n;
    op.k = k;
    op.x = dx;
    op.w = dw;
    op.y = dy;
    TEST_ASSERT_OK(cuda->kernels->launch(cuda->self, stream, PAGODA_OP_MATMUL, &op));
    TEST_ASSERT_OK(cuda->copy(cuda->self, stream, y, dy, (size_t)(m * n) * sizeof *y,
                              PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(cuda->stream_synchronize(cuda->self, stream));
    const double err = test_rel_error(y, ref, (size_t)(m * n));
    if (err > 5e-3) fail_msg("tf32=1 matmul: relative error %.3g", err);
    test_stream_destroy(cuda, stream);
    cuda->buffer_free(cuda->self, 0, dx);
    cuda->buffer_free(cuda->self, 0, dw);
    cuda->buffer_free(cuda->self, 0, dy);
    free(x);
    free(w);
    free(y);
    free(ref);
    cuda->destroy(cuda->self);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_info),
        cmocka_unit_test(test_copies_streams_events),
        cmocka_unit_test(test_matmul_f32),
        cmocka_unit_test(test_matmul_half_weights),
        cmocka_unit_test(test_matmul_all_half),
        cmocka_unit_test(test_matmul_rejects),
        cmocka_unit_test(test_matmul_pinned_variants),
        cmocka_unit_test(test_nccl_one_rank),
        cmocka_unit_test(test_config_rejected),
        cmocka_unit_test(test_nccl_init_timeout),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    /* CTest's SKIP_RETURN_CODE: report "skipped" rather than "passed" without a device. */
    return failed == 0 && g_no_device ? 77 : failed;
}
