/* The _v2 functions that replaced queries unable to report a failure: each gives the old
 * function's answer on a good handle, and a status with a message (not a silent 0 or NULL) on a
 * NULL or destroyed handle, an index out of range or a NULL output. */
#include <string.h>

#include "pagoda/pagoda.h"
#include "test_util.h"

#define MODEL PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf"

static void test_mesh_queries(void **state) {
    (void)state;
    pagoda_mesh_t *mesh = test_mesh("cpu:0-1", "tp=2");
    size_t count = 99;
    TEST_ASSERT_OK(pagoda_mesh_device_count_v2(mesh, &count));
    assert_int_equal(count, 2);
    assert_int_equal(count, pagoda_mesh_device_count(mesh));
    const char *name = NULL;
    TEST_ASSERT_OK(pagoda_mesh_device_name_v2(mesh, 1, &name));
    assert_string_equal(name, pagoda_mesh_device_name(mesh, 1));
    assert_string_equal(name, "cpu:1");

    test_expect_failure(pagoda_mesh_device_name_v2(mesh, 2, &name), PAGODA_ERR_INVALID_ARGUMENT,
                        "out of range");
    assert_null(name);
    test_expect_failure(pagoda_mesh_device_count_v2(mesh, NULL), PAGODA_ERR_INVALID_ARGUMENT, "count");
    test_expect_failure(pagoda_mesh_device_count_v2(NULL, &count), PAGODA_ERR_INVALID_HANDLE, "mesh");
    assert_int_equal(count, 0);
    test_expect_failure(pagoda_mesh_device_name_v2(NULL, 0, &name), PAGODA_ERR_INVALID_HANDLE, "mesh");
    pagoda_mesh_destroy(mesh);
}

static void test_model_plan_and_engine_queries(void **state) {
    (void)state;
    pagoda_model_t *model = NULL;
    TEST_ASSERT_OK(pagoda_model_open(MODEL, NULL, &model));
    const char *path = NULL;
    TEST_ASSERT_OK(pagoda_model_path_v2(model, &path));
    assert_string_equal(path, pagoda_model_path(model));
    assert_non_null(strstr(path, "stories260K.gguf"));
    test_expect_failure(pagoda_model_path_v2(model, NULL), PAGODA_ERR_INVALID_ARGUMENT, "path");
    test_expect_failure(pagoda_model_path_v2(NULL, &path), PAGODA_ERR_INVALID_HANDLE, "model");
    assert_null(path);

    /* A plan with slices, one without. */
    pagoda_mesh_t *mesh = test_mesh("cpu:0-1", "pp=2");
    pagoda_plan_options_t po;
    pagoda_plan_options_default(&po);
    po.stages = 2;
    po.prompt_tokens = 64;
    pagoda_plan_t *sliced = NULL, *unsliced = NULL;
    TEST_ASSERT_OK(pagoda_plan_create(model, mesh, &po, &sliced));
    po.prompt_tokens = 0;
    TEST_ASSERT_OK(pagoda_plan_create(model, mesh, &po, &unsliced));
    pagoda_plan_summary_t summary;
    memset(&summary, 0, sizeof summary);
    summary.struct_size = sizeof summary;
    TEST_ASSERT_OK(pagoda_plan_get_summary(sliced, &summary));
    assert_true(summary.n_slices > 0);
    int64_t total = 0;
    for (size_t i = 0; i < summary.n_slices; i++) {
        int64_t length = -1;
        TEST_ASSERT_OK(pagoda_plan_slice_length_v2(sliced, i, &length));
        assert_int_equal(length, pagoda_plan_slice_length(sliced, i));
        assert_true(length > 0);
        total += length;
    }
    assert_int_equal(total, 64);
    int64_t length = -1;
    test_expect_failure(pagoda_plan_slice_length_v2(sliced, summary.n_slices, &length),
                        PAGODA_ERR_INVALID_ARGUMENT, "out of range");
    assert_int_equal(length, 0);
    test_expect_failure(pagoda_plan_slice_length_v2(unsliced, 0, &length), PAGODA_ERR_INVALID_ARGUMENT,
                        "prompt_tokens");
    test_expect_failure(pagoda_plan_slice_length_v2(NULL, 0, &length), PAGODA_ERR_INVALID_HANDLE, "plan");
    test_expect_failure(pagoda_plan_slice_length_v2(sliced, 0, NULL), PAGODA_ERR_INVALID_ARGUMENT, "length");

    /* Slicing options are checked even when no prompt length asks for slices. */
    pagoda_plan_t *bad = NULL;
    po.granularity = -8;
    test_expect_failure(pagoda_plan_create(model, mesh, &po, &bad), PAGODA_ERR_INVALID_ARGUMENT, "granularity");
    po.granularity = 8;
    po.prompt_tokens = -1;
    test_expect_failure(pagoda_plan_create(model, mesh, &po, &bad), PAGODA_ERR_INVALID_ARGUMENT, "prompt_tokens");
    assert_null(bad);

    /* The engine on that mesh and plan. */
    pagoda_kv_cache_t *cache = NULL;
    pagoda_engine_t *engine = NULL;
    TEST_ASSERT_OK(pagoda_kv_cache_create(model, mesh, sliced, NULL, &cache));
    TEST_ASSERT_OK(pagoda_engine_create(model, mesh, sliced, cache, NULL, &engine));
    size_t devices = 0;
    TEST_ASSERT_OK(pagoda_engine_device_count_v2(engine, &devices));
    assert_int_equal(devices, 2);
    assert_int_equal(devices, pagoda_engine_device_count(engine));
    int32_t has_work = -1;
    TEST_ASSERT_OK(pagoda_engine_has_work_v2(engine, &has_work));
    assert_int_equal(has_work, 0);
    pagoda_request_options_t ro;
    pagoda_request_options_default(&ro);
    ro.max_tokens = 2;
    uint64_t id;
    TEST_ASSERT_OK(pagoda_engine_submit_text(engine, "Once", 4, &ro, &id));
    TEST_ASSERT_OK(pagoda_engine_has_work_v2(engine, &has_work));
    assert_int_equal(has_work, 1);
    TEST_ASSERT_OK(pagoda_engine_abort(engine, id));
    test_expect_failure(pagoda_engine_has_work_v2(engine, NULL), PAGODA_ERR_INVALID_ARGUMENT, "has_work");
    test_expect_failure(pagoda_engine_device_count_v2(engine, NULL), PAGODA_ERR_INVALID_ARGUMENT, "count");
    test_expect_failure(pagoda_engine_has_work_v2(NULL, &has_work), PAGODA_ERR_INVALID_HANDLE, "engine");
    assert_int_equal(has_work, 0);
    test_expect_failure(pagoda_engine_device_count_v2(NULL, &devices), PAGODA_ERR_INVALID_HANDLE, "engine");

    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_plan_destroy(unsliced);
    pagoda_plan_destroy(sliced);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mesh_queries),
        cmocka_unit_test(test_model_plan_and_engine_queries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
