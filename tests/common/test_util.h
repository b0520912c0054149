/* Helpers shared by the tests: seeded random data, half-precision conversion, error norms, the
 * freshly built CPU backend, allocation and expected failures. Tests include <cmocka.h> through
 * this header. */
#ifndef PAGODA_TEST_UTIL_H
#define PAGODA_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pagoda/pagoda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A small deterministic generator (splitmix64) so that every run sees the same data. */
typedef struct test_rng {
    uint64_t state;
} test_rng_t;

void test_rng_seed(test_rng_t *rng, uint64_t seed);
uint64_t test_rng_next(test_rng_t *rng);
/* Uniform in [lo, hi). */
float test_rng_uniform(test_rng_t *rng, float lo, float hi);
/* Uniform integer in [lo, hi]. */
int64_t test_rng_int(test_rng_t *rng, int64_t lo, int64_t hi);
void test_fill_uniform(test_rng_t *rng, float *x, size_t n, float lo, float hi);

/* Round-to-nearest-even conversions, written independently of any backend's. */
uint16_t test_f32_to_bf16(float x);
float test_bf16_to_f32(uint16_t x);
uint16_t test_f32_to_f16(float x);
float test_f16_to_f32(uint16_t x);

/* Converts f32 values to `dtype` (F32, BF16 or F16) into `out`, which holds n·size(dtype) bytes,
 * and writes the values the conversion actually kept (as doubles) to `kept` if not NULL, so a
 * reference can be computed on exactly the weights the kernel sees. */
void test_convert_weights(pagoda_dtype_t dtype, const float *in, size_t n, void *out,
                          double *kept);

/* Normwise relative error max_i |got_i - ref_i| / max_i |ref_i| (denominator at least 1e-30). */
double test_rel_error(const float *got, const double *ref, size_t n);

/* Checks a status; on failure prints the status name and the thread's error message. */
#define TEST_ASSERT_OK(expr)                                                            \
    do {                                                                                \
        pagoda_status_t test_status_ = (expr);                                          \
        if (test_status_ != PAGODA_OK)                                                  \
            fail_msg("%s returned %s: %s", #expr, pagoda_status_string(test_status_),  \
                     pagoda_last_error_message());                                      \
    } while (0)

/* Loads the CPU backend built beside the tests (once per process) with "threads=N"; N comes
 * from PAGODA_TEST_THREADS, default 2, and PAGODA_TEST_CPU_CONFIG adds further pairs (such as
 * "isa=portable"). */
pagoda_backend_t *test_cpu_backend(void);
const pagoda_backend_iface_t *test_cpu_iface(void);

/* A CPU stream on device 0 for launching kernels; destroy with test_stream_destroy. */
pagoda_backend_stream_t *test_stream_create(const pagoda_backend_iface_t *iface);
void test_stream_destroy(const pagoda_backend_iface_t *iface, pagoda_backend_stream_t *stream);

/* Launches `op` on a fresh CPU stream, waits for it if it started, and destroys the stream. */
pagoda_status_t test_cpu_launch(pagoda_op_t op, const void *args);
/* The CPU backend's verdict on `op` with `args` on device 0 (it reads the description only). */
pagoda_status_t test_cpu_supports(pagoda_op_t op, const void *args);

/* A mesh of `devices` with `axes` (either NULL for the default); fails the test if refused. */
pagoda_mesh_t *test_mesh(const char *devices, const char *axes);

/* malloc and calloc that fail the test instead of returning NULL; a size of 0 still allocates. */
void *test_xmalloc(size_t bytes);
void *test_xcalloc(size_t n, size_t size);

/* Fails unless `got` is `want` and this thread's error message contains `needle`. */
void test_expect_failure(pagoda_status_t got, pagoda_status_t want, const char *needle);
/* Processes for tests of meshes over processes (POSIX). */
/* A loopback TCP port nobody listens on now (the kernel's pick for port 0). */
int test_free_loopback_port(void);
/* Seconds on a monotonic clock. */
double test_seconds_now(void);
/* Waits up to `timeout_s` for the `n` children `pids`, storing each one's wait status and the
 * time it was seen ended (test_seconds_now; `ended` may be NULL); SIGKILLs and reaps those still
 * running then, so none is left. Returns how many had to be killed. */
int test_wait_children(const int *pids, int n, double timeout_s, int *status, double *ended);

/* Clears the error, then test_expect_failure on test_cpu_supports(op, args). */
void test_cpu_expect_rejected(pagoda_op_t op, const void *args, pagoda_status_t want,
                              const char *needle);

#ifdef __cplusplus
}
#endif

#endif /* PAGODA_TEST_UTIL_H */
