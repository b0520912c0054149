/* Options structs across versions: pagoda_X_init(options, size) never writes past `size` (a host
 * built against older, shorter headers), and the _default macro passes the caller's own size. */
#include <stddef.h>
#include <string.h>

#include "test_util.h"

#define CANARY 0xA5

/* `init` on a buffer that pretends to be a struct of `size` bytes, followed by canaries. */
#define CHECK_SHORT_INIT(type, init, size)                                              \
    do {                                                                                \
        unsigned char buf[sizeof(type) + 32];                                           \
        memset(buf, CANARY, sizeof buf);                                                \
        init((type *)(void *)buf, (size));                                              \
        uint32_t got;                                                                   \
        memcpy(&got, buf, sizeof got);                                                  \
        assert_int_equal(got, (size));                                                  \
        for (size_t i = (size); i < sizeof buf; i++)                                    \
            if (buf[i] != CANARY) fail_msg(#init " wrote byte %zu of a %zu-byte struct", \
                                           i, (size_t)(size));                          \
    } while (0)

static void test_short_structs_are_not_overrun(void **state) {
    (void)state;
    CHECK_SHORT_INIT(pagoda_model_options_t, pagoda_model_options_init, 8);
    CHECK_SHORT_INIT(pagoda_mesh_options_t, pagoda_mesh_options_init, 16);
    CHECK_SHORT_INIT(pagoda_plan_options_t, pagoda_plan_options_init, 12);
    CHECK_SHORT_INIT(pagoda_simulate_options_t, pagoda_simulate_options_init, 24);
    CHECK_SHORT_INIT(pagoda_kv_cache_options_t, pagoda_kv_cache_options_init, 24);
    CHECK_SHORT_INIT(pagoda_engine_options_t, pagoda_engine_options_init, 12);
    CHECK_SHORT_INIT(pagoda_server_options_t, pagoda_server_options_init, 16);
    CHECK_SHORT_INIT(pagoda_chat_template_options_t, pagoda_chat_template_options_init, 8);
    /* The request options as 0.1's first headers had them, before n/best_of/beams. */
    CHECK_SHORT_INIT(pagoda_request_options_t, pagoda_request_options_init,
                     offsetof(pagoda_request_options_t, n));
}

static void test_default_macro_fills_the_whole_struct(void **state) {
    (void)state;
    pagoda_model_options_t mo;
    memset(&mo, 0xff, sizeof mo);
    pagoda_model_options_default(&mo);
    assert_int_equal(mo.struct_size, sizeof mo);
    assert_null(mo.progress);
    /* A larger buffer than the library knows: it fills its own size and says so. */
    unsigned char big[sizeof(pagoda_mesh_options_t) + 64];
    memset(big, CANARY, sizeof big);
    pagoda_mesh_options_init((pagoda_mesh_options_t *)(void *)big, sizeof big);
    uint32_t got;
    memcpy(&got, big, sizeof got);
    assert_int_equal(got, sizeof(pagoda_mesh_options_t));
    assert_int_equal(big[sizeof big - 1], CANARY);
    /* Too small to hold struct_size: nothing is written. */
    unsigned char tiny[4];
    memset(tiny, CANARY, sizeof tiny);
    pagoda_model_options_init((pagoda_model_options_t *)(void *)tiny, 2);
    assert_int_equal(tiny[0], CANARY);
    pagoda_model_options_init(NULL, sizeof mo);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_structs_are_not_overrun),
        cmocka_unit_test(test_default_macro_fills_the_whole_struct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
