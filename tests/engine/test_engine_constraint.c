/* Constrained decoding through the public API on a random-weight model that speaks Llama 2's
 * 32k vocabulary, so nothing but the constraint makes its output valid:
 *   - 20 regular expressions x 4 seeds: every output a full match under POSIX regexec;
 *   - 50 JSON Schemas x 4 seeds (tests/fixtures/structured): every output ends by the
 *     constraint (not max_tokens) and is written as a JSON line for the node test's ajv, an
 *     independent validator, to check (PAGODA_STRUCTURED_OUT names the file);
 *   - n = 3 sequences, each on its own way through the constraint;
 *   - preemption (recompute and swap) and prefix caching, which leave the outputs unchanged;
 *   - a tp = 2 mesh of CPU devices, which gives the same outputs as one device;
 *   - beam search and constraints that do not compile, refused at submit by name.
 * Every test ends with no KV block lent. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define MAX_REQUESTS 256
#define MAX_TEXT 8192
#define SEEDS 4

static const char *const kPrompt = "Answer with the value only.";

typedef struct stack {
    pagoda_model_t *model;
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
} stack_t_;

typedef struct result {
    uint64_t id;
    char text[MAX_TEXT];
    size_t len;
    pagoda_finish_reason_t finish;
    pagoda_status_t status;
} result_t;

/* The requests of one batch: each submitted with its own options, stepped together. */
typedef struct batch {
    size_t n;
    pagoda_request_options_t options[MAX_REQUESTS];
    result_t results[MAX_REQUESTS];
} batch_t;

static void stack_open(stack_t_ *s, const char *devices, const char *axes, int64_t num_blocks,
                       uint64_t swap_bytes, int prefix_caching) {
    memset(s, 0, sizeof *s);
    TEST_ASSERT_OK(pagoda_model_open(PAGODA_STRUCTURED_MODEL_DIR "/hf", NULL, &s->model));
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = devices;
    mo.axes = axes;
    TEST_ASSERT_OK(pagoda_mesh_create(&mo, &s->mesh));
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.block_size = 16;
    ko.num_blocks = num_blocks;
    ko.swap_bytes = swap_bytes;
    ko.prefix_caching = prefix_caching;
    TEST_ASSERT_OK(pagoda_kv_cache_create(s->model, s->mesh, NULL, &ko, &s->cache));
    TEST_ASSERT_OK(pagoda_engine_create(s->model, s->mesh, NULL, s->cache, NULL, &s->engine));
}

static void stack_close(stack_t_ *s) {
    assert_int_equal(pagoda_engine_has_work(s->engine), 0);
    pagoda_kv_cache_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    TEST_ASSERT_OK(pagoda_kv_cache_get_stats(s->cache, &st));
    assert_int_equal(st.blocks_used, 0);
    assert_int_equal(st.swap_blocks_used, 0);
    pagoda_engine_destroy(s->engine);
    pagoda_kv_cache_destroy(s->cache);
    pagoda_mesh_destroy(s->mesh);
    pagoda_model_destroy(s->model);
}

static pagoda_request_options_t constrained(int32_t kind, const char *text, uint64_t seed) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.max_tokens = 1024;
    o.temperature = 1.0f;
    o.seed = seed;
    o.constraint_kind = kind;
    o.constraint = text;
    return o;
}

/* Submits every request of the batch, then steps until all have ended. */
static void run_batch(pagoda_engine_t *engine, batch_t *b) {
    for (size_t i = 0; i < b->n; i++) {
        memset(&b->results[i], 0, sizeof b->results[i]);
        TEST_ASSERT_OK(pagoda_engine_submit_text(engine, kPrompt, strlen(kPrompt), &b->options[i],
                                                 &b->results[i].id));
    }
    size_t done = 0;
    for (int steps = 0; done < b->n; steps++) {
        if (steps > 20000) fail_msg("the batch did not finish in 20000 steps");
        TEST_ASSERT_OK(pagoda_engine_step(engine));
        pagoda_output_t out;
        out.struct_size = sizeof out;
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {
            result_t *r = NULL;
            for (size_t i = 0; i < b->n && r == NULL; i++)
                if (b->results[i].id == out.request_id) r = &b->results[i];
            assert_non_null(r);
            assert_true(r->len + out.text_len < MAX_TEXT);
            memcpy(r->text + r->len, out.text, out.text_len);
            r->len += out.text_len;
            r->text[r->len] = '\0';
            if (out.request_finished) {
                r->finish = (pagoda_finish_reason_t)out.finish_reason;
                r->status = (pagoda_status_t)out.status;
                if (r->status != PAGODA_OK) fail_msg("request failed: %s", out.error);
                done++;
            }
        }
    }
}

/* The lines of a fixture file, each without its newline; returns how many. */
static size_t read_lines(const char *path, char **lines, size_t max) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) fail_msg("cannot open %s", path);
    size_t n = 0;
    char buf[8192];
    while (n < max && fgets(buf, sizeof buf, f) != NULL) {
        size_t len = strlen(buf);
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = '\0';
        if (len == 0) continue;
        lines[n] = malloc(len + 1);
        memcpy(lines[n], buf, len + 1);
        n++;
    }
    fclose(f);
    return n;
}

static int full_match(const char *pattern, const char *text) {
    char anchored[1024];
    snprintf(anchored, sizeof anchored, "^(%s)$", pattern);
    regex_t re;
    assert_int_equal(regcomp(&re, anchored, REG_EXTENDED | REG_NOSUB), 0);
    const int ok = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

static void test_regexes_match_fully(void **state) {
    (void)state;
    char *regexes[32];
    const size_t n = read_lines(PAGODA_STRUCTURED_DIR "/regexes.txt", regexes, 32);
    assert_int_equal(n, 20);
    static batch_t b;
    b.n = 0;
    for (size_t i = 0; i < n; i++)
        for (uint64_t seed = 0; seed < SEEDS; seed++)
            b.options[b.n++] = constrained(PAGODA_CONSTRAINT_REGEX, regexes[i], 100 * i + seed);
    stack_t_ s;
    stack_open(&s, NULL, NULL, 0, 0, 0);
    run_batch(s.engine, &b);
    size_t bad = 0;
    for (size_t k = 0; k < b.n; k++) {
        const char *pattern = regexes[k / SEEDS];
        if (b.results[k].finish == PAGODA_FINISH_STOP_TOKEN && full_match(pattern, b.results[k].text))
            continue;
        print_error("regex %s, seed %zu: finish %d, text '%.200s'\n", pattern, k % SEEDS,
                    (int)b.results[k].finish, b.results[k].text);
        bad++;
    }
    if (bad > 0) fail_msg("%zu of %zu outputs are not full matches", bad, b.n);
    stack_close(&s);
    for (size_t i = 0; i < n; i++) free(regexes[i]);
}

static void write_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static void test_json_schemas_end_by_the_constraint(void **state) {
    (void)state;
    char *schemas[64];
    const size_t n = read_lines(PAGODA_STRUCTURED_DIR "/schemas.jsonl", schemas, 64);
    assert_int_equal(n, 50);
    static batch_t b;
    b.n = 0;
    for (size_t i = 0; i < n; i++)
        for (uint64_t seed = 0; seed < SEEDS; seed++)
            b.options[b.n++] = constrained(PAGODA_CONSTRAINT_JSON_SCHEMA, schemas[i], 1000 * i + seed);
    stack_t_ s;
    stack_open(&s, NULL, NULL, 0, 0, 0);
    run_batch(s.engine, &b);
    const char *out_path = getenv("PAGODA_STRUCTURED_OUT");
    FILE *out = out_path != NULL && *out_path ? fopen(out_path, "wb") : NULL;
    size_t bad = 0;
    for (size_t k = 0; k < b.n; k++) {
        if (b.results[k].finish != PAGODA_FINISH_STOP_TOKEN || b.results[k].len == 0) {
            print_error("schema %zu, seed %zu: finish %d, text '%.200s'\n", k / SEEDS, k % SEEDS,
                        (int)b.results[k].finish, b.results[k].text);
            bad++;
        }
        if (out == NULL) continue;
        fprintf(out, "{\"schema\": %zu, \"seed\": %zu, \"text\": ", k / SEEDS, k % SEEDS);
        write_json_string(out, b.results[k].text);
        fputs("}\n", out);
    }
    if (out != NULL) fclose(out);
    if (bad > 0) fail_msg("%zu of %zu outputs did not end by the constraint", bad, b.n);
    stack_close(&s);
    for (size_t i = 0; i < n; i++) free(schemas[i]);
}

/* n = 3: each sequence follows the constraint on its own. */
static void test_parallel_sequences(void **state) {
    (void)state;
    stack_t_ s;
    stack_open(&s, NULL, NULL, 0, 0, 0);
    const char *pattern = "[a-z]{2,6}(-[0-9]{1,3})?";
    pagoda_request_options_t o = constrained(PAGODA_CONSTRAINT_REGEX, pattern, 7);
    o.n = 3;
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(s.engine, kPrompt, strlen(kPrompt), &o, &id));
    char texts[3][256] = {{0}};
    int finished[3] = {0, 0, 0};
    int last = 0;
    for (int steps = 0; !last && steps < 2000; steps++) {
        TEST_ASSERT_OK(pagoda_engine_step(s.engine));
        pagoda_output_t out;
        out.struct_size = sizeof out;
        while (pagoda_engine_poll(s.engine, &out) == PAGODA_OK) {
            assert_true(out.sequence_index >= 0 && out.sequence_index < 3);
            strncat(texts[out.sequence_index], out.text, 255 - strlen(texts[out.sequence_index]));
            if (out.finish_reason != PAGODA_FINISH_NONE) {
                assert_int_equal(out.finish_reason, PAGODA_FINISH_STOP_TOKEN);
                finished[out.sequence_index] = 1;
            }
            last = last || out.request_finished;
        }
    }
    for (int i = 0; i < 3; i++) {
        assert_true(finished[i]);
        if (!full_match(pattern, texts[i])) fail_msg("sequence %d: '%s'", i, texts[i]);
    }
    assert_true(strcmp(texts[0], texts[1]) != 0 || strcmp(texts[1], texts[2]) != 0);
    stack_close(&s);
}

/* The same requests under a cache too small for all of them (preemption by recompute, then by
 * swap) and with prefix caching give the same texts as with room to spare. */
static void test_preemption_and_prefix_caching_keep_the_outputs(void **state) {
    (void)state;
    const char *schema =
        "{\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"integer\"}, \"tags\": "
        "{\"type\": \"array\", \"items\": {\"type\": \"string\", \"maxLength\": 6}, "
        "\"maxItems\": 4}}, \"required\": [\"id\", \"tags\"]}";
    static batch_t roomy, tight, swapped, cached;
    roomy.n = 8;
    for (size_t i = 0; i < roomy.n; i++)
        roomy.options[i] = constrained(PAGODA_CONSTRAINT_JSON_SCHEMA, schema, 50 + i);
    tight = roomy;
    swapped = roomy;
    cached = roomy;
    for (size_t i = 0; i < swapped.n; i++) swapped.options[i].n = i % 2 ? 2 : 1;  /* groups swap */
    for (size_t i = 0; i < roomy.n; i++) roomy.options[i].n = swapped.options[i].n;

    stack_t_ s;
    stack_open(&s, NULL, NULL, 0, 0, 0);
    run_batch(s.engine, &roomy);
    stack_close(&s);

    /* 12 blocks of 16 tokens cannot hold 12 growing sequences at once. */
    for (size_t i = 0; i < tight.n; i++) tight.options[i].n = 1;
    stack_open(&s, NULL, NULL, 12, 0, 0);
    run_batch(s.engine, &tight);
    pagoda_engine_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    TEST_ASSERT_OK(pagoda_engine_get_stats(s.engine, &st));
    assert_true(st.preemptions_recompute > 0);
    stack_close(&s);
    for (size_t i = 0; i < tight.n; i += 2)  /* single-sequence requests: same texts as roomy's */
        assert_string_equal(tight.results[i].text, roomy.results[i].text);

    stack_open(&s, NULL, NULL, 12, 64u << 20, 0);
    run_batch(s.engine, &swapped);
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    TEST_ASSERT_OK(pagoda_engine_get_stats(s.engine, &st));
    assert_true(st.preemptions_swap > 0);
    stack_close(&s);
    for (size_t i = 0; i < swapped.n; i++)
        assert_string_equal(swapped.results[i].text, roomy.results[i].text);

    /* Prefix caching: the second run of the same batch starts from cached prompt blocks. */
    stack_open(&s, NULL, NULL, 0, 0, 1);
    run_batch(s.engine, &cached);
    run_batch(s.engine, &cached);
    stack_close(&s);
    for (size_t i = 0; i < cached.n; i += 2)
        assert_string_equal(cached.results[i].text, roomy.results[i].text);
}

/* Sampling happens once for the mesh, where the mask applies: tp = 2 gives one device's texts. */
static void test_mesh_gives_one_devices_texts(void **state) {
    (void)state;
    static batch_t one, two;
    one.n = 6;
    for (size_t i = 0; i < one.n; i++)
        one.options[i] = constrained(PAGODA_CONSTRAINT_REGEX, "(0|[1-9][0-9]*)(\\.[0-9]{1,2})?", 9 + i);
    two = one;
    for (size_t i = 0; i < one.n; i++) {  /* greedy: logits within tolerance pick the same */
        one.options[i].temperature = 0.0f;
        two.options[i].temperature = 0.0f;
    }
    stack_t_ s;
    stack_open(&s, NULL, NULL, 0, 0, 0);
    run_batch(s.engine, &one);
    stack_close(&s);
    stack_open(&s, "cpu:0,cpu:1", "tp=2", 0, 0, 0);
    run_batch(s.engine, &two);
    stack_close(&s);
    for (size_t i = 0; i < one.n; i++) assert_string_equal(one.results[i].text, two.results[i].text);
}

static void expect_refused(pagoda_engine_t *engine, const pagoda_request_options_t *o,
                           const char *needle) {
    uint64_t id = 0;
    const pagoda_status_t st = pagoda_engine_submit_text(engine, kPrompt, strlen(kPrompt), o, &id);
    assert_int_equal(st, PAGODA_ERR_INVALID_ARGUMENT);
    if (strstr(pagoda_last_error_message(), needle) == NULL)
        fail_msg("expected '%s' in '%s'", needle, pagoda_last_error_message());
}

static void test_refusals_name_the_construct(void **state) {
    (void)state;
    stack_t_ s;
    stack_open(&s, NULL, NULL, 0, 0, 0);
    pagoda_request_options_t o = constrained(PAGODA_CONSTRAINT_GRAMMAR, "root ::= \"a\" undefined", 1);
    expect_refused(s.engine, &o, "1:14: rule 'undefined' is not defined");
    o = constrained(PAGODA_CONSTRAINT_REGEX, "(a)\\1", 1);
    expect_refused(s.engine, &o, "regex");
    o = constrained(PAGODA_CONSTRAINT_JSON_SCHEMA, "{\"type\": \"object\", \"properties\": {\"a\": {\"not\": {}}}}", 1);
    expect_refused(s.engine, &o, "'not' at /properties/a");
    o = constrained(PAGODA_CONSTRAINT_JSON_SCHEMA, "{\"type\": ", 1);
    expect_refused(s.engine, &o, "not valid JSON");
    o = constrained(PAGODA_CONSTRAINT_GRAMMAR, NULL, 1);
    expect_refused(s.engine, &o, "constraint is NULL");
    o = constrained(77, "x", 1);
    expect_refused(s.engine, &o, "constraint kind 77");
    o = constrained(PAGODA_CONSTRAINT_REGEX, "[a-z]+", 1);
    o.beam_width = 2;
    expect_refused(s.engine, &o, "beam search does not take a constraint");
    /* JSON object: any object, the text unread. */
    static batch_t b;
    b.n = 1;
    b.options[0] = constrained(PAGODA_CONSTRAINT_JSON_OBJECT, NULL, 3);
    run_batch(s.engine, &b);
    assert_int_equal(b.results[0].finish, PAGODA_FINISH_STOP_TOKEN);
    assert_true(b.results[0].text[0] == '{' && b.results[0].text[b.results[0].len - 1] == '}');
    stack_close(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regexes_match_fully),
        cmocka_unit_test(test_json_schemas_end_by_the_constraint),
        cmocka_unit_test(test_parallel_sequences),
        cmocka_unit_test(test_preemption_and_prefix_caching_keep_the_outputs),
        cmocka_unit_test(test_mesh_gives_one_devices_texts),
        cmocka_unit_test(test_refusals_name_the_construct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
