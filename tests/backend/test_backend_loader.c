/* The loader against mock plugins: each broken plugin gives the right status and a message that
 * names the file and the reason, nothing crashes, and discovery skips what it cannot load. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define MOCK(part) MOCK_DIR "/libpagoda-backend-" part ".so"

static int teardown(void **state) {
    (void)state;
    pagoda_backends_unload_all();
    return 0;
}

static void assert_message_has(const char *needle) {
    const char *m = pagoda_last_error_message();
    if (strstr(m, needle) == NULL) fail_msg("message \"%s\" lacks \"%s\"", m, needle);
}

static void expect_load_failure(const char *path, pagoda_status_t expected, const char *reason) {
    pagoda_backend_t *b = (pagoda_backend_t *)0x1;
    pagoda_status_t s = pagoda_backend_load(path, NULL, &b);
    if (s != expected)
        fail_msg("loading %s gave %s (%s), expected %s", path, pagoda_status_string(s),
                 pagoda_last_error_message(), pagoda_status_string(expected));
    assert_ptr_equal(b, (pagoda_backend_t *)0x1); /* out untouched on failure */
    assert_message_has(path);
    assert_message_has(reason);
}

static void test_good_plugin(void **state) {
    (void)state;
    pagoda_backend_t *b = NULL, *again = NULL, *found = NULL, *first = NULL;
    TEST_ASSERT_OK(pagoda_backend_load(MOCK("mock"), NULL, &b));
    assert_string_equal(pagoda_backend_name(b), "mock");
    assert_string_equal(pagoda_backend_description(b), "mock backend for the loader tests");
    assert_non_null(strstr(pagoda_backend_path(b), "libpagoda-backend-mock.so"));
    int32_t n = 0;
    TEST_ASSERT_OK(pagoda_backend_device_count(b, &n));
    assert_int_equal(n, 2);
    pagoda_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(pagoda_backend_device_info(b, 1, &info));
    assert_string_equal(info.name, "mock device one");
    assert_int_equal(info.kind, PAGODA_DEVICE_GPU);
    test_expect_failure(pagoda_backend_device_info(b, 2, &info), PAGODA_ERR_NOT_FOUND,
                        "no device 2");
    info.struct_size = 4;
    test_expect_failure(pagoda_backend_device_info(b, 0, &info), PAGODA_ERR_INVALID_ARGUMENT,
                        "struct_size");

    TEST_ASSERT_OK(pagoda_backend_load(MOCK("mock"), NULL, &again));
    assert_ptr_equal(b, again); /* same file: same handle */
    assert_int_equal(pagoda_backend_count(), 1);
    TEST_ASSERT_OK(pagoda_backend_find("mock", &found));
    assert_ptr_equal(b, found);
    TEST_ASSERT_OK(pagoda_backend_get(0, &first));
    assert_ptr_equal(b, first);
    assert_int_equal(pagoda_backend_get(1, &first), PAGODA_ERR_NOT_FOUND);
    test_expect_failure(pagoda_backend_find("cuda", &found), PAGODA_ERR_NOT_FOUND, "loaded: mock");
    assert_non_null(pagoda_backend_interface(b));
    assert_int_equal(pagoda_backend_skipped_count(), 0);
}

static void test_wrong_abi(void **state) {
    (void)state;
    expect_load_failure(MOCK("wrongabi"), PAGODA_ERR_ABI_MISMATCH, "plugin ABI 2.0");
}

static void test_no_entry_symbol(void **state) {
    (void)state;
    expect_load_failure(MOCK("noentry"), PAGODA_ERR_NOT_A_PLUGIN, "no symbol pagoda_backend_entry");
}

static void test_not_a_shared_object(void **state) {
    (void)state;
    expect_load_failure(MOCK("junk"), PAGODA_ERR_NOT_A_PLUGIN, "not a shared object");
}

static void test_entry_fails(void **state) {
    (void)state;
    expect_load_failure(MOCK("fails"), PAGODA_ERR_BACKEND, "simulated device failure");
}

static void test_missing_slot(void **state) {
    (void)state;
    expect_load_failure(MOCK("missingslot"), PAGODA_ERR_NOT_A_PLUGIN, "device_info");
}

/* A plugin of ABI 1.0 (no graph slots) still loads; the slots it does not know read as NULL,
 * not as whatever lies past its table. */
static void test_abi_1_0_plugin(void **state) {
    (void)state;
    pagoda_backend_t *b = NULL;
    TEST_ASSERT_OK(pagoda_backend_load(MOCK("abiten"), NULL, &b));
    const pagoda_backend_iface_t *t = pagoda_backend_interface(b);
    assert_non_null(t);
    assert_true(t->struct_size <= offsetof(pagoda_backend_iface_t, graph_capture_begin));
    assert_null(t->graph_capture_begin);
    assert_null(t->graph_capture_end);
    assert_null(t->graph_launch);
    assert_null(t->graph_destroy);
    int32_t n = 0;
    TEST_ASSERT_OK(pagoda_backend_device_count(b, &n));
    assert_int_equal(n, 2);
}

/* A plugin of ABI 1.1 still loads under a 1.2 host: minor versions only append (plugin.h). */
static void test_abi_1_1_plugin(void **state) {
    (void)state;
    pagoda_backend_t *b = NULL;
    TEST_ASSERT_OK(pagoda_backend_load(MOCK_1_1_DIR "/libpagoda-backend-abieleven.so", NULL, &b));
    const pagoda_backend_iface_t *t = pagoda_backend_interface(b);
    assert_non_null(t);
    assert_int_equal(t->abi_version & 0xFFFFu, 1);
    assert_int_equal(t->struct_size, sizeof *t);
    int32_t n = 0;
    TEST_ASSERT_OK(pagoda_backend_device_count(b, &n));
    assert_int_equal(n, 2);
}

/* A plugin of ABI 1.6 with collectives still loads: its collectives table ends before 1.7's
 * _ex slots, which the host then never reads. */
static void test_abi_1_6_collectives(void **state) {
    (void)state;
    pagoda_backend_t *b = NULL;
    TEST_ASSERT_OK(pagoda_backend_load(MOCK_1_1_DIR "/libpagoda-backend-abisixcoll.so", NULL, &b));
    const pagoda_backend_iface_t *t = pagoda_backend_interface(b);
    assert_non_null(t);
    assert_non_null(t->collectives);
    assert_int_equal(t->collectives->struct_size, offsetof(pagoda_backend_collectives_t, get_unique_id_ex));
}

/* The graph slots come all four or none. */
static void test_half_filled_graph_slots(void **state) {
    (void)state;
    expect_load_failure(MOCK("halfgraphs"), PAGODA_ERR_NOT_A_PLUGIN, "graph_launch");
    assert_message_has("'halfgraphs'");
}

static void test_bad_name(void **state) {
    (void)state;
    expect_load_failure(MOCK("badname"), PAGODA_ERR_NOT_A_PLUGIN, "name");
}

static void test_missing_file(void **state) {
    (void)state;
    expect_load_failure(MOCK("absent"), PAGODA_ERR_NOT_FOUND, "No such file");
}

static void test_config_failure(void **state) {
    (void)state;
    pagoda_backend_t *b = NULL;
    test_expect_failure(pagoda_backend_load(MOCK("mock"), "fail=1", &b),
                        PAGODA_ERR_INVALID_ARGUMENT, "asked to fail by its config");
    assert_int_equal(pagoda_backend_count(), 0);
}

static void test_name_clash(void **state) {
    (void)state;
    pagoda_backend_t *b = NULL;
    TEST_ASSERT_OK(pagoda_backend_load(MOCK("mock"), NULL, &b));
    expect_load_failure(MOCK("mockdup"), PAGODA_ERR_ALREADY_EXISTS, "already loaded from");
    assert_int_equal(pagoda_backend_count(), 1);
}

static void test_bad_arguments(void **state) {
    (void)state;
    pagoda_backend_t *b = NULL;
    int32_t n = 0;
    assert_int_equal(pagoda_backend_load(NULL, NULL, &b), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_backend_load("", NULL, &b), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_backend_load(MOCK("mock"), NULL, NULL), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_backend_device_count(NULL, &n), PAGODA_ERR_INVALID_HANDLE);
    assert_null(pagoda_backend_name(NULL));
    assert_null(pagoda_backend_interface(NULL));
    /* A pointer that is not a backend is rejected by its magic word, not dereferenced blindly. */
    static const char not_a_backend[64] = "definitely not a backend";
    assert_int_equal(pagoda_backend_device_count((const pagoda_backend_t *)not_a_backend, &n),
                     PAGODA_ERR_INVALID_HANDLE);
    assert_int_equal(pagoda_backends_discover("", NULL), PAGODA_ERR_INVALID_ARGUMENT);
}

/* One folder holding a good plugin and every kind of broken one. */
static void test_discovery_skips_broken_plugins(void **state) {
    (void)state;
    size_t loaded = 99;
    TEST_ASSERT_OK(pagoda_backends_discover(MOCK_DIR ":/no/such/folder", &loaded));
    assert_int_equal(loaded, 2); /* mock and abiten */
    assert_int_equal(pagoda_backend_count(), 2);
    pagoda_backend_t *b = NULL;
    TEST_ASSERT_OK(pagoda_backend_find("mock", &b));

    /* badname, fails, halfgraphs, junk, missingslot, mockdup (clash), noentry, wrongabi */
    struct { const char *part; pagoda_status_t status; } expected[] = {
        {"badname", PAGODA_ERR_NOT_A_PLUGIN},  {"fails", PAGODA_ERR_BACKEND},
        {"halfgraphs", PAGODA_ERR_NOT_A_PLUGIN},
        {"junk", PAGODA_ERR_NOT_A_PLUGIN},     {"missingslot", PAGODA_ERR_NOT_A_PLUGIN},
        {"mockdup", PAGODA_ERR_ALREADY_EXISTS}, {"noentry", PAGODA_ERR_NOT_A_PLUGIN},
        {"wrongabi", PAGODA_ERR_ABI_MISMATCH},
    };
    size_t n_expected = sizeof expected / sizeof expected[0];
    assert_int_equal(pagoda_backend_skipped_count(), n_expected);
    for (size_t i = 0; i < n_expected; ++i) {
        int seen = 0;
        char file[128];
        snprintf(file, sizeof file, "libpagoda-backend-%s.so", expected[i].part);
        for (size_t j = 0; j < pagoda_backend_skipped_count(); ++j) {
            const char *path = NULL, *message = NULL;
            pagoda_status_t status = PAGODA_OK;
            TEST_ASSERT_OK(pagoda_backend_skipped(j, &path, &status, &message));
            if (strstr(path, file) != NULL) {
                seen = 1;
                if (status != expected[i].status)
                    fail_msg("%s: skipped with %s, expected %s (%s)", file,
                             pagoda_status_string(status), pagoda_status_string(expected[i].status),
                             message);
                assert_non_null(strstr(message, file));
            }
        }
        if (!seen) fail_msg("%s was not reported as skipped", file);
    }
    assert_int_equal(pagoda_backend_skipped(n_expected, NULL, NULL, NULL), PAGODA_ERR_NOT_FOUND);

    /* A second discovery finds nothing new. */
    TEST_ASSERT_OK(pagoda_backends_discover(MOCK_DIR, &loaded));
    assert_int_equal(loaded, 0);
}

/* The default search path: PAGODA_BACKEND_PATH first, then libpagoda's own folder (where the
 * build puts the CPU backend). */
static void test_default_search_path(void **state) {
    (void)state;
    setenv("PAGODA_BACKEND_PATH", MOCK_DIR, 1);
    size_t loaded = 0;
    TEST_ASSERT_OK(pagoda_backends_discover(NULL, &loaded));
    unsetenv("PAGODA_BACKEND_PATH");
    assert_int_equal(loaded, 3); /* mock, abiten and cpu */
    /* The mock folder's plugins (abiten, mock) come before libpagoda's own folder's cpu. */
    pagoda_backend_t *first = NULL, *cpu = NULL;
    TEST_ASSERT_OK(pagoda_backend_get(0, &first));
    assert_string_equal(pagoda_backend_name(first), "abiten");
    TEST_ASSERT_OK(pagoda_backend_get(1, &first));
    assert_string_equal(pagoda_backend_name(first), "mock");
    TEST_ASSERT_OK(pagoda_backend_find("cpu", &cpu));
}

/* A mesh loads the plugins of the backends it names and no other (another backend's plugin
 * costs memory even unused), and a later mesh finds the plugin of a backend not loaded yet. */
static void test_mesh_loads_what_it_names(void **state) {
    (void)state;
    setenv("PAGODA_BACKEND_PATH", MOCK_DIR, 1);
    pagoda_mesh_t *cpu = test_mesh("cpu:0", NULL);
    assert_int_equal(pagoda_backend_count(), 1);
    assert_int_equal(pagoda_backend_skipped_count(), 0);
    pagoda_backend_t *b = NULL;
    assert_int_equal(pagoda_backend_find("mock", &b), PAGODA_ERR_NOT_FOUND);
    pagoda_mesh_t *mock = test_mesh("mock:0", NULL);
    unsetenv("PAGODA_BACKEND_PATH");
    assert_int_equal(pagoda_backend_count(), 2);
    TEST_ASSERT_OK(pagoda_backend_find("mock", &b));
    pagoda_mesh_destroy(mock);
    pagoda_mesh_destroy(cpu);
}

static void test_cpu_backend_config(void **state) {
    (void)state;
    const char *path = PAGODA_TEST_BACKEND_DIR "/libpagoda-backend-cpu.so";
    pagoda_backend_t *b = NULL;
    test_expect_failure(pagoda_backend_load(path, "bogus=1", &b), PAGODA_ERR_INVALID_ARGUMENT,
                        "unknown config key 'bogus'");
    test_expect_failure(pagoda_backend_load(path, "threads=0", &b), PAGODA_ERR_INVALID_ARGUMENT,
                        "threads");
    test_expect_failure(pagoda_backend_load(path, "threads", &b), PAGODA_ERR_INVALID_ARGUMENT,
                        "key=value");
    TEST_ASSERT_OK(pagoda_backend_load(path, "threads=3", &b));
    pagoda_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(pagoda_backend_device_info(b, 0, &info));
    assert_int_equal(info.compute_units, 3);
    assert_int_equal(info.kind, PAGODA_DEVICE_CPU);
    assert_true(info.total_memory > 0);
    assert_true(info.flags & PAGODA_DEVICE_HOST_ACCESSIBLE);
}

/* PAGODA_BACKEND_<NAME>_CONFIG configures a plugin loaded without a config, as discovery
 * loads them; an explicit config wins. */
static void test_config_from_environment(void **state) {
    (void)state;
    const char *path = PAGODA_TEST_BACKEND_DIR "/libpagoda-backend-cpu.so";
    setenv("PAGODA_BACKEND_CPU_CONFIG", "devices=abc", 1);
    TEST_ASSERT_OK(pagoda_backends_discover(PAGODA_TEST_BACKEND_DIR, NULL));
    pagoda_backend_t *cpu = NULL;
    assert_int_equal(pagoda_backend_find("cpu", &cpu), PAGODA_ERR_NOT_FOUND);
    int seen = 0;
    for (size_t j = 0; j < pagoda_backend_skipped_count(); ++j) {
        const char *skipped = NULL, *message = NULL;
        TEST_ASSERT_OK(pagoda_backend_skipped(j, &skipped, NULL, &message));
        if (strstr(skipped, "libpagoda-backend-cpu.so") == NULL) continue;
        seen = 1;
        if (strstr(message, "devices='abc'") == NULL ||
            strstr(message, "from PAGODA_BACKEND_CPU_CONFIG") == NULL)
            fail_msg("the skip does not name the config and its variable: %s", message);
    }
    assert_true(seen);
    pagoda_backends_unload_all();

    setenv("PAGODA_BACKEND_CPU_CONFIG", "devices=2,threads=2", 1);
    TEST_ASSERT_OK(pagoda_backends_discover(PAGODA_TEST_BACKEND_DIR, NULL));
    TEST_ASSERT_OK(pagoda_backend_find("cpu", &cpu));
    int32_t n = 0;
    TEST_ASSERT_OK(pagoda_backend_device_count(cpu, &n));
    assert_int_equal(n, 2);
    pagoda_device_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(pagoda_backend_device_info(cpu, 1, &info));
    assert_int_equal(info.compute_units, 1);
    pagoda_backends_unload_all();

    TEST_ASSERT_OK(pagoda_backend_load(path, "threads=3", &cpu));
    TEST_ASSERT_OK(pagoda_backend_device_count(cpu, &n));
    assert_int_equal(n, 1);
    unsetenv("PAGODA_BACKEND_CPU_CONFIG");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_good_plugin, teardown),
        cmocka_unit_test_teardown(test_wrong_abi, teardown),
        cmocka_unit_test_teardown(test_no_entry_symbol, teardown),
        cmocka_unit_test_teardown(test_not_a_shared_object, teardown),
        cmocka_unit_test_teardown(test_entry_fails, teardown),
        cmocka_unit_test_teardown(test_missing_slot, teardown),
        cmocka_unit_test_teardown(test_abi_1_0_plugin, teardown),
        cmocka_unit_test_teardown(test_abi_1_1_plugin, teardown),
        cmocka_unit_test_teardown(test_abi_1_6_collectives, teardown),
        cmocka_unit_test_teardown(test_half_filled_graph_slots, teardown),
        cmocka_unit_test_teardown(test_bad_name, teardown),
        cmocka_unit_test_teardown(test_missing_file, teardown),
        cmocka_unit_test_teardown(test_config_failure, teardown),
        cmocka_unit_test_teardown(test_name_clash, teardown),
        cmocka_unit_test_teardown(test_bad_arguments, teardown),
        cmocka_unit_test_teardown(test_discovery_skips_broken_plugins, teardown),
        cmocka_unit_test_teardown(test_default_search_path, teardown),
        cmocka_unit_test_teardown(test_mesh_loads_what_it_names, teardown),
        cmocka_unit_test_teardown(test_cpu_backend_config, teardown),
        cmocka_unit_test_teardown(test_config_from_environment, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
