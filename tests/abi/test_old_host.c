/* A host built against older, shorter headers: every struct it passes or receives ends earlier
 * than today's (its struct_size says where). It must still generate the same text, and the
 * library must never write past the end of its structs. The "old" structs are today's cut at a
 * field appended since, with canary bytes after them. */
#include <stddef.h>
#include <string.h>

#include "pagoda/pagoda.h"
#include "test_util.h"

#define MODEL PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf"
#define CANARY 0x5A
#define MAX_TOKENS 24

/* A struct of `type` cut to `size` bytes, followed by canaries. */
typedef struct {
    size_t size;
    unsigned char bytes[4096];
} old_struct_t;

static void *old_struct(old_struct_t *s, size_t size, size_t full_size) {
    assert_true(full_size + 64 <= sizeof s->bytes);
    memset(s->bytes, CANARY, sizeof s->bytes);
    memset(s->bytes, 0, size);
    s->size = size;
    return s->bytes;
}

static void assert_untouched_past_end(const old_struct_t *s, const char *what) {
    for (size_t i = s->size; i < sizeof s->bytes; i++)
        if (s->bytes[i] != CANARY) fail_msg("%s: byte %zu of a %zu-byte struct written", what, i, s->size);
}

/* Greedy generation; `old` picks the cut structs, else today's full ones. Returns the tokens. */
static size_t generate(int old, int32_t *tokens) {
    old_struct_t model_o, kv_o, engine_o, request_o, output_o;
    pagoda_model_options_t *mo = NULL;
    pagoda_kv_cache_options_t *ko = NULL;
    pagoda_engine_options_t *eo = NULL;
    pagoda_request_options_t *ro;
    pagoda_output_t *out;
    if (old) {
        /* Cut before the fields each struct gained after the first 0.1 headers. */
        mo = old_struct(&model_o, offsetof(pagoda_model_options_t, progress), sizeof *mo);
        pagoda_model_options_init(mo, model_o.size);
        ko = old_struct(&kv_o, offsetof(pagoda_kv_cache_options_t, swap_bytes), sizeof *ko);
        pagoda_kv_cache_options_init(ko, kv_o.size);
        eo = old_struct(&engine_o, offsetof(pagoda_engine_options_t, preemption), sizeof *eo);
        pagoda_engine_options_init(eo, engine_o.size);
        ro = old_struct(&request_o, offsetof(pagoda_request_options_t, n), sizeof *ro);
        pagoda_request_options_init(ro, request_o.size);
        out = old_struct(&output_o, offsetof(pagoda_output_t, prompt_logprobs), sizeof *out);
        out->struct_size = (uint32_t)output_o.size;
    } else {
        static pagoda_request_options_t full_request;
        static pagoda_output_t full_output;
        ro = &full_request;
        pagoda_request_options_default(ro);
        out = &full_output;
        memset(out, 0, sizeof *out);
        out->struct_size = sizeof *out;
    }
    ro->temperature = 0;
    ro->max_tokens = MAX_TOKENS;
    ro->flags |= PAGODA_REQUEST_IGNORE_EOS;

    pagoda_model_t *model;
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
    TEST_ASSERT_OK(pagoda_model_open(MODEL, mo, &model));
    TEST_ASSERT_OK(pagoda_mesh_create(NULL, &mesh));
    TEST_ASSERT_OK(pagoda_kv_cache_create(model, mesh, NULL, ko, &cache));
    TEST_ASSERT_OK(pagoda_engine_create(model, mesh, NULL, cache, eo, &engine));
    uint64_t id;
    const char prompt[] = "Once upon a time";
    TEST_ASSERT_OK(pagoda_engine_submit_text(engine, prompt, sizeof prompt - 1, ro, &id));

    size_t n = 0;
    int finished = 0;
    while (!finished) {
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_status_t st;
        while ((st = pagoda_engine_poll(engine, out)) == PAGODA_OK) {
            assert_int_equal(out->request_id, id);
            for (size_t i = 0; i < out->n_tokens && n < MAX_TOKENS; i++) tokens[n++] = out->token_ids[i];
            if (out->finish_reason != PAGODA_FINISH_NONE) finished = 1;
        }
        assert_int_equal(st, PAGODA_ERR_EMPTY);
    }
    if (old) {
        assert_untouched_past_end(&output_o, "pagoda_output_t");
        assert_untouched_past_end(&request_o, "pagoda_request_options_t");
        assert_untouched_past_end(&engine_o, "pagoda_engine_options_t");
        assert_untouched_past_end(&kv_o, "pagoda_kv_cache_options_t");
        assert_untouched_past_end(&model_o, "pagoda_model_options_t");
    }
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
    return n;
}

static void test_old_host_generates_the_same_text(void **state) {
    (void)state;
    int32_t today[MAX_TOKENS], old[MAX_TOKENS];
    size_t n_today = generate(0, today);
    size_t n_old = generate(1, old);
    assert_int_equal(n_today, MAX_TOKENS);
    assert_int_equal(n_old, n_today);
    assert_memory_equal(old, today, n_today * sizeof today[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_host_generates_the_same_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
