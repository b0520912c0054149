/* Status names, the thread-local error message, versions, and type and op names. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

static void test_status_strings(void **state) {
    (void)state;
    assert_string_equal(pagoda_status_string(PAGODA_OK), "PAGODA_OK");
    assert_string_equal(pagoda_status_string(PAGODA_ERR_ABI_MISMATCH), "PAGODA_ERR_ABI_MISMATCH");
    for (int s = PAGODA_OK; s <= PAGODA_ERR_INTERNAL; ++s)
        assert_string_not_equal(pagoda_status_string((pagoda_status_t)s), "PAGODA_ERR_UNKNOWN");
    assert_string_equal(pagoda_status_string((pagoda_status_t)12345), "PAGODA_ERR_UNKNOWN");
}

static void *fail_on_other_thread(void *arg) {
    (void)arg;
    pagoda_backend_t *b = NULL;
    pagoda_backend_find("no-such-backend-on-this-thread", &b);
    return NULL;
}

static void test_error_message_is_thread_local(void **state) {
    (void)state;
    pagoda_clear_error();
    assert_string_equal(pagoda_last_error_message(), "");
    pagoda_backend_t *b = NULL;
    assert_int_equal(pagoda_backend_find("no-such-backend-here", &b), PAGODA_ERR_NOT_FOUND);
    assert_non_null(strstr(pagoda_last_error_message(), "no-such-backend-here"));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fail_on_other_thread, NULL), 0);
    pthread_join(t, NULL);
    /* The other thread's failure did not touch this thread's message. */
    assert_non_null(strstr(pagoda_last_error_message(), "no-such-backend-here"));
    pagoda_clear_error();
    assert_string_equal(pagoda_last_error_message(), "");
}

static void test_version(void **state) {
    (void)state;
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", PAGODA_VERSION_MAJOR, PAGODA_VERSION_MINOR,
             PAGODA_VERSION_PATCH);
    assert_string_equal(pagoda_version(), expected);
    assert_int_equal(pagoda_version_number(), PAGODA_VERSION_NUMBER);
}

static void test_dtype_and_op_names(void **state) {
    (void)state;
    assert_int_equal(pagoda_dtype_size(PAGODA_DTYPE_BF16), 2);
    assert_int_equal(pagoda_dtype_size(PAGODA_DTYPE_I64), 8);
    assert_int_equal(pagoda_dtype_size(PAGODA_DTYPE_INVALID), 0);
    assert_string_equal(pagoda_dtype_name(PAGODA_DTYPE_F16), "f16");
    assert_string_equal(pagoda_dtype_name((pagoda_dtype_t)99), "invalid");
    assert_string_equal(pagoda_op_name(PAGODA_OP_PAGED_ATTENTION), "paged_attention");
    assert_string_equal(pagoda_op_name((pagoda_op_t)999), "invalid");
    /* Any int a C caller (or a binding) passes is answered, not undefined (UBSan checks). */
    assert_int_equal(pagoda_dtype_size((pagoda_dtype_t)-5), 0);
    assert_string_equal(pagoda_op_name((pagoda_op_t)-1), "invalid");
    assert_string_equal(pagoda_status_string((pagoda_status_t)12345), "PAGODA_ERR_UNKNOWN");
    pagoda_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_error_message_is_thread_local),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_dtype_and_op_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
