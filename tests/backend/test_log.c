/* The host's log: lines reach the host's callback at or above the level it set; a plugin that
 * finds no device is an info line, a broken one a warning; a second discovery says nothing new. */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

typedef struct captured {
    int lines[PAGODA_LOG_OFF];
    char last[512];
} captured_t;

static void capture(void *user_data, pagoda_log_level_t level, const char *message) {
    captured_t *c = (captured_t *)user_data;
    if (level >= PAGODA_LOG_DEBUG && level < PAGODA_LOG_OFF) c->lines[level]++;
    snprintf(c->last, sizeof c->last, "%s", message);
}

/* Logs from inside the callback: the nested line is dropped, nothing deadlocks. */
static void reenter(void *user_data, pagoda_log_level_t level, const char *message) {
    capture(user_data, level, message);
    pagoda_backends_discover(MOCK_LOG_DIR, NULL);
}

static int teardown(void **state) {
    (void)state;
    pagoda_log_set_callback(NULL, NULL);
    pagoda_log_set_level(PAGODA_LOG_WARN);
    pagoda_backends_unload_all();
    return 0;
}

static void test_levels_and_sink(void **state) {
    (void)state;
    captured_t c;
    memset(&c, 0, sizeof c);
    pagoda_log_set_callback(capture, &c);
    TEST_ASSERT_OK(pagoda_log_set_level(PAGODA_LOG_WARN));
    assert_int_equal(pagoda_log_get_level(), PAGODA_LOG_WARN);

    TEST_ASSERT_OK(pagoda_backends_discover(MOCK_LOG_DIR, NULL));
    /* broken: a warning naming it; nodevice: below the default level. */
    assert_int_equal(c.lines[PAGODA_LOG_WARN], 1);
    assert_int_equal(c.lines[PAGODA_LOG_INFO], 0);
    assert_non_null(strstr(c.last, "libpagoda-backend-broken.so"));
    assert_int_equal(pagoda_backend_skipped_count(), 2);

    /* Discovering again neither retries nor repeats itself. */
    TEST_ASSERT_OK(pagoda_backends_discover(MOCK_LOG_DIR, NULL));
    assert_int_equal(c.lines[PAGODA_LOG_WARN], 1);
    assert_int_equal(pagoda_backend_skipped_count(), 2);

    /* At info, a fresh discovery shows the missing device as information. */
    pagoda_backends_unload_all();
    memset(&c, 0, sizeof c);
    TEST_ASSERT_OK(pagoda_log_set_level(PAGODA_LOG_INFO));
    TEST_ASSERT_OK(pagoda_backends_discover(MOCK_LOG_DIR, NULL));
    assert_int_equal(c.lines[PAGODA_LOG_WARN], 1);
    assert_true(c.lines[PAGODA_LOG_INFO] >= 1);

    /* Off: nothing. */
    pagoda_backends_unload_all();
    memset(&c, 0, sizeof c);
    TEST_ASSERT_OK(pagoda_log_set_level(PAGODA_LOG_OFF));
    TEST_ASSERT_OK(pagoda_backends_discover(MOCK_LOG_DIR, NULL));
    for (int l = PAGODA_LOG_DEBUG; l < PAGODA_LOG_OFF; ++l) assert_int_equal(c.lines[l], 0);
}

static void test_bad_level(void **state) {
    (void)state;
    TEST_ASSERT_OK(pagoda_log_set_level(PAGODA_LOG_ERROR));
    assert_int_equal(pagoda_log_set_level((pagoda_log_level_t)5), PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(pagoda_last_error_message(), "log level 5"));
    assert_int_equal(pagoda_log_set_level((pagoda_log_level_t)-1), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_log_get_level(), PAGODA_LOG_ERROR); /* unchanged */
}

static void test_reentrant_callback(void **state) {
    (void)state;
    captured_t c;
    memset(&c, 0, sizeof c);
    pagoda_log_set_callback(reenter, &c);
    TEST_ASSERT_OK(pagoda_log_set_level(PAGODA_LOG_INFO));
    TEST_ASSERT_OK(pagoda_backends_discover(MOCK_LOG_DIR, NULL));
    assert_int_equal(c.lines[PAGODA_LOG_WARN], 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_levels_and_sink, teardown),
        cmocka_unit_test_teardown(test_bad_level, teardown),
        cmocka_unit_test_teardown(test_reentrant_callback, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
