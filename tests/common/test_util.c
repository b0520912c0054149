#include "test_util.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void test_rng_seed(test_rng_t *rng, uint64_t seed) { rng->state = seed; }

uint64_t test_rng_next(test_rng_t *rng) {
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float test_rng_uniform(test_rng_t *rng, float lo, float hi) {
    double u = (double)(test_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

int64_t test_rng_int(test_rng_t *rng, int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(test_rng_next(rng) % span);
}

void test_fill_uniform(test_rng_t *rng, float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; ++i) x[i] = test_rng_uniform(rng, lo, hi);
}

static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

uint16_t test_f32_to_bf16(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float test_bf16_to_f32(uint16_t x) { return bits_f32((uint32_t)x << 16); }

uint16_t test_f32_to_f16(float x) {
    /* Exact rounding through double arithmetic: scale into the f16 grid and round to even. */
    uint16_t sign = (uint16_t)((f32_bits(x) >> 16) & 0x8000u);
    double a = fabs((double)x);
    if (isnan(x)) return (uint16_t)(sign | 0x7E00u);
    if (a >= 65520.0) return (uint16_t)(sign | 0x7C00u); /* rounds to infinity */
    if (a < 6.103515625e-05) {                             /* subnormal: units of 2^-24 */
        double q = nearbyint(a * 16777216.0);
        return (uint16_t)(sign | (uint16_t)q);
    }
    int e;
    double m = frexp(a, &e); /* a = m·2^e, m in [0.5, 1) */
    double q = nearbyint(m * 2048.0); /* 11 significant bits */
    if (q >= 2048.0) {
        q /= 2.0;
        e += 1;
    }
    if (e + 14 >= 31) return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | (uint16_t)((e + 14) << 10) | ((uint16_t)q & 0x3FFu));
}

float test_f16_to_f32(uint16_t x) {
    int exp = (x >> 10) & 0x1F;
    int man = x & 0x3FF;
    double v;
    if (exp == 0)
        v = ldexp((double)man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp((double)(man | 0x400), exp - 25);
    return (float)((x & 0x8000u) ? -v : v);
}

void test_convert_weights(pagoda_dtype_t dtype, const float *in, size_t n, void *out,
                          double *kept) {
    for (size_t i = 0; i < n; ++i) {
        float k;
        switch (dtype) {
            case PAGODA_DTYPE_BF16: {
                uint16_t h = test_f32_to_bf16(in[i]);
                ((uint16_t *)out)[i] = h;
                k = test_bf16_to_f32(h);
                break;
            }
            case PAGODA_DTYPE_F16: {
                uint16_t h = test_f32_to_f16(in[i]);
                ((uint16_t *)out)[i] = h;
                k = test_f16_to_f32(h);
                break;
            }
            default:
                ((float *)out)[i] = in[i];
                k = in[i];
                break;
        }
        if (kept) kept[i] = (double)k;
    }
}

double test_rel_error(const float *got, const double *ref, size_t n) {
    double max_diff = 0.0, max_ref = 1e-30;
    for (size_t i = 0; i < n; ++i) {
        double d = fabs((double)got[i] - ref[i]);
        if (d > max_diff || isnan(d)) max_diff = isnan(d) ? INFINITY : d;
        if (fabs(ref[i]) > max_ref) max_ref = fabs(ref[i]);
    }
    return max_diff / max_ref;
}

pagoda_mesh_t *test_mesh(const char *devices, const char *axes) {
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = devices;
    mo.axes = axes;
    pagoda_mesh_t *mesh = NULL;
    TEST_ASSERT_OK(pagoda_mesh_create(&mo, &mesh));
    return mesh;
}

pagoda_backend_t *test_cpu_backend(void) {
    static pagoda_backend_t *backend = NULL;
    if (backend == NULL) {
        const char *threads = getenv("PAGODA_TEST_THREADS");
        const char *extra = getenv("PAGODA_TEST_CPU_CONFIG");
        char config[256];
        snprintf(config, sizeof config, "threads=%s%s%s", threads && *threads ? threads : "2",
                 extra && *extra ? "," : "", extra && *extra ? extra : "");
        pagoda_status_t s =
            pagoda_backend_load(PAGODA_TEST_BACKEND_DIR "/libpagoda-backend-cpu.so", config, &backend);
        if (s != PAGODA_OK)
            fail_msg("loading the CPU backend failed: %s: %s", pagoda_status_string(s),
                     pagoda_last_error_message());
    }
    return backend;
}

const pagoda_backend_iface_t *test_cpu_iface(void) {
    return pagoda_backend_interface(test_cpu_backend());
}

pagoda_backend_stream_t *test_stream_create(const pagoda_backend_iface_t *iface) {
    pagoda_backend_stream_t *stream = NULL;
    TEST_ASSERT_OK(iface->stream_create(iface->self, 0, &stream));
    return stream;
}

void test_stream_destroy(const pagoda_backend_iface_t *iface, pagoda_backend_stream_t *stream) {
    iface->stream_destroy(iface->self, stream);
}

pagoda_status_t test_cpu_launch(pagoda_op_t op, const void *args) {
    const pagoda_backend_iface_t *iface = test_cpu_iface();
    pagoda_backend_stream_t *stream = test_stream_create(iface);
    pagoda_status_t s = iface->kernels->launch(iface->self, stream, op, args);
    /* The CPU backend finishes a kernel inside launch, but the ABI promises that only here. */
    if (s == PAGODA_OK) TEST_ASSERT_OK(iface->stream_synchronize(iface->self, stream));
    test_stream_destroy(iface, stream);
    return s;
}

pagoda_status_t test_cpu_supports(pagoda_op_t op, const void *args) {
    const pagoda_backend_iface_t *iface = test_cpu_iface();
    return iface->kernels->supports(iface->self, 0, op, args);
}

void *test_xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    return p;
}

void *test_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    assert_non_null(p);
    return p;
}

void test_expect_failure(pagoda_status_t got, pagoda_status_t want, const char *needle) {
    const char *msg = pagoda_last_error_message();
    if (got != want)
        fail_msg("expected %s, got %s (%s)", pagoda_status_string(want), pagoda_status_string(got),
                 msg);
    if (strstr(msg, needle) == NULL) fail_msg("message '%s' does not mention '%s'", msg, needle);
}

void test_cpu_expect_rejected(pagoda_op_t op, const void *args, pagoda_status_t want,
                              const char *needle) {
    pagoda_clear_error();
    test_expect_failure(test_cpu_supports(op, args), want, needle);
}

int test_free_loopback_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        fail_msg("no free loopback port");
    close(fd);
    return ntohs(a.sin_port);
}

double test_seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int test_wait_children(const int *pids, int n, double timeout_s, int *status, double *ended) {
    int left = n, killed = 0;
    int *done = test_xcalloc((size_t)n, sizeof *done);
    const double deadline = test_seconds_now() + timeout_s;
    while (left > 0 && test_seconds_now() < deadline) {
        for (int i = 0; i < n; ++i)
            if (!done[i] && waitpid(pids[i], &status[i], WNOHANG) == pids[i]) {
                done[i] = 1;
                --left;
                if (ended != NULL) ended[i] = test_seconds_now();
            }
        struct timespec pause_for = {0, 5 * 1000 * 1000};
        nanosleep(&pause_for, NULL);
    }
    for (int i = 0; i < n; ++i)
        if (!done[i]) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &status[i], 0);
            if (ended != NULL) ended[i] = test_seconds_now();
            ++killed;
        }
    free(done);
    return killed;
}
