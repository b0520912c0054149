/* The CPU backend's memory, copies, streams and events through the plugin ABI: what the core
 * relies on for every backend, checked here on the one that runs everywhere. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

static void test_buffers_and_copies(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = test_cpu_iface();
    pagoda_backend_stream_t *stream = test_stream_create(t);
    /* A small buffer and one past the huge-page threshold (2 MiB): both aligned to 256. */
    const size_t sizes[] = {1000, (size_t)5 << 20};
    for (size_t s = 0; s < 2; ++s) {
        void *a = NULL, *b = NULL;
        TEST_ASSERT_OK(t->buffer_alloc(t->self, 0, sizes[s], &a));
        TEST_ASSERT_OK(t->buffer_alloc(t->self, 0, sizes[s], &b));
        assert_int_equal((uintptr_t)a % 256, 0);
        TEST_ASSERT_OK(t->memset(t->self, stream, a, 0x5A, sizes[s]));
        TEST_ASSERT_OK(t->copy(t->self, stream, b, a, sizes[s], PAGODA_COPY_DEVICE_TO_DEVICE));
        TEST_ASSERT_OK(t->stream_synchronize(t->self, stream));
        const unsigned char *p = (const unsigned char *)b;
        assert_int_equal(p[0], 0x5A);
        assert_int_equal(p[sizes[s] - 1], 0x5A);
        t->buffer_free(t->self, 0, a);
        t->buffer_free(t->self, 0, b);
    }
    /* Host to device and back through pinned host memory. */
    void *host = NULL, *dev = NULL;
    TEST_ASSERT_OK(t->host_buffer_alloc(t->self, 64, &host));
    TEST_ASSERT_OK(t->buffer_alloc(t->self, 0, 64, &dev));
    for (int i = 0; i < 64; ++i) ((unsigned char *)host)[i] = (unsigned char)i;
    TEST_ASSERT_OK(t->copy(t->self, stream, dev, host, 64, PAGODA_COPY_HOST_TO_DEVICE));
    memset(host, 0, 64);
    TEST_ASSERT_OK(t->copy(t->self, stream, host, dev, 64, PAGODA_COPY_DEVICE_TO_HOST));
    TEST_ASSERT_OK(t->stream_synchronize(t->self, stream));
    for (int i = 0; i < 64; ++i) assert_int_equal(((unsigned char *)host)[i], i);
    /* Bad arguments name the problem. */
    assert_int_equal(t->copy(t->self, stream, dev, host, 64, (pagoda_copy_kind_t)9),
                     PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(pagoda_last_error_message(), "copy kind"));
    void *nothing = NULL;
    assert_int_equal(t->buffer_alloc(t->self, 1, 64, &nothing), PAGODA_ERR_NOT_FOUND);
    assert_non_null(strstr(pagoda_last_error_message(), "device 1"));
    t->host_buffer_free(t->self, host);
    t->buffer_free(t->self, 0, dev);
    test_stream_destroy(t, stream);
}

static void test_events_and_queries(void **state) {
    (void)state;
    const pagoda_backend_iface_t *t = test_cpu_iface();
    pagoda_backend_stream_t *stream = test_stream_create(t);
    pagoda_backend_event_t *start = NULL, *end = NULL, *plain = NULL;
    TEST_ASSERT_OK(t->event_create(t->self, 0, PAGODA_EVENT_TIMING, &start));
    TEST_ASSERT_OK(t->event_create(t->self, 0, PAGODA_EVENT_TIMING, &end));
    TEST_ASSERT_OK(t->event_create(t->self, 0, 0, &plain));
    pagoda_backend_event_t *bad = NULL;
    assert_int_equal(t->event_create(t->self, 0, 0x80, &bad), PAGODA_ERR_INVALID_ARGUMENT);

    float ms = -1.0f;
    /* Not recorded yet. */
    assert_int_equal(t->event_elapsed(t->self, start, end, &ms), PAGODA_ERR_INVALID_ARGUMENT);
    TEST_ASSERT_OK(t->event_record(t->self, start, stream));
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    TEST_ASSERT_OK(t->event_record(t->self, end, stream));
    TEST_ASSERT_OK(t->event_record(t->self, plain, stream));
    TEST_ASSERT_OK(t->stream_wait_event(t->self, stream, end));
    TEST_ASSERT_OK(t->event_synchronize(t->self, end));
    TEST_ASSERT_OK(t->event_elapsed(t->self, start, end, &ms));
    assert_true(ms >= 19.0f && ms < 10000.0f);
    /* Elapsed time needs timing events on both ends. */
    assert_int_equal(t->event_elapsed(t->self, start, plain, &ms), PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(pagoda_last_error_message(), "PAGODA_EVENT_TIMING"));

    uint32_t complete = 7;
    TEST_ASSERT_OK(t->stream_query(t->self, stream, &complete));
    assert_int_equal(complete, 1);
    complete = 7;
    TEST_ASSERT_OK(t->event_query(t->self, plain, &complete));
    assert_int_equal(complete, 1);
    t->event_destroy(t->self, start);
    t->event_destroy(t->self, end);
    t->event_destroy(t->self, plain);
    t->event_destroy(t->self, NULL);
    test_stream_destroy(t, stream);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffers_and_copies),
        cmocka_unit_test(test_events_and_queries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
