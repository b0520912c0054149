/* Decoding with several sequences per request through the public API on stories260K: parallel
 * sampling (n, best_of) sharing the prompt's KV blocks, beam search (width, length penalty,
 * early stopping) on fork and copy-on-write, the memory the sharing saves, abort, and
 * preemption by swap. Every test ends with no KV block lent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_stack.h"
#include "test_util.h"

#define MAX_SEQS 8
#define MAX_REQS 16
#define MAX_TOK 96

static const char *const kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, red ball.";

typedef struct sequence_result {
    int32_t tokens[MAX_TOK];
    size_t n_tokens;
    float logprob_sum; /* of the per-token logprobs, when asked */
    float cumulative;  /* the last output's cumulative_logprob */
    char text[4096];
    size_t text_len;
    size_t n_outputs;
    pagoda_finish_reason_t finish;
    pagoda_status_t status;
    char error[512];
} sequence_result_t;

typedef struct request_result {
    uint64_t id;
    sequence_result_t seqs[MAX_SEQS];
    int n_seqs;   /* highest sequence_index seen + 1 */
    int finished; /* request_finished seen (exactly once, on the last output) */
    size_t n_outputs;
} request_result_t;

typedef struct decoding {
    engine_stack_t stack;
    request_result_t results[MAX_REQS];
    size_t n_results;
    int64_t peak_blocks; /* most blocks_used seen after a step */
} decoding_t;

static decoding_t *open_decoding_swap(int64_t num_blocks, int32_t block_size, int prefix_caching,
                                      int32_t max_num_seqs, uint64_t swap_bytes) {
    decoding_t *d = test_xcalloc(1, sizeof *d);
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.num_blocks = num_blocks;
    ko.block_size = block_size;
    ko.prefix_caching = prefix_caching;
    ko.swap_bytes = swap_bytes;
    pagoda_engine_options_t eo;
    pagoda_engine_options_default(&eo);
    if (max_num_seqs > 0) eo.max_num_seqs = max_num_seqs;
    engine_stack_open(&d->stack, &ko, &eo);
    return d;
}

static decoding_t *open_decoding(int64_t num_blocks, int32_t block_size, int prefix_caching,
                                 int32_t max_num_seqs) {
    return open_decoding_swap(num_blocks, block_size, prefix_caching, max_num_seqs, 0);
}

static pagoda_kv_cache_stats_t kv_stats(const decoding_t *d) {
    return engine_stack_kv_stats(&d->stack);
}

static pagoda_engine_stats_t engine_stats(const decoding_t *d) {
    return engine_stack_engine_stats(&d->stack);
}

static void close_decoding(decoding_t *d) {
    engine_stack_close(&d->stack);
    free(d);
}

static request_result_t *result_of(decoding_t *d, uint64_t id) {
    for (size_t i = 0; i < d->n_results; i++)
        if (d->results[i].id == id) return &d->results[i];
    assert_true(d->n_results < MAX_REQS);
    request_result_t *r = &d->results[d->n_results++];
    r->id = id;
    return r;
}

static void drain(decoding_t *d) {
    pagoda_output_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    while (pagoda_engine_poll(d->stack.engine, &o) == PAGODA_OK) {
        request_result_t *r = result_of(d, o.request_id);
        assert_int_equal(r->finished, 0); /* nothing after request_finished */
        assert_true(o.sequence_index >= 0 && o.sequence_index < MAX_SEQS);
        if (o.sequence_index + 1 > r->n_seqs) r->n_seqs = o.sequence_index + 1;
        sequence_result_t *s = &r->seqs[o.sequence_index];
        assert_int_equal(s->finish, PAGODA_FINISH_NONE); /* nothing after a sequence's end */
        for (size_t i = 0; i < o.n_tokens; i++) {
            assert_true(s->n_tokens < MAX_TOK);
            s->tokens[s->n_tokens++] = o.token_ids[i];
            if (o.logprobs) s->logprob_sum += o.logprobs[i];
        }
        assert_true(s->text_len + o.text_len < sizeof s->text);
        memcpy(s->text + s->text_len, o.text, o.text_len);
        s->text_len += o.text_len;
        s->cumulative = o.cumulative_logprob;
        s->finish = o.finish_reason;
        s->status = o.status;
        snprintf(s->error, sizeof s->error, "%s", o.error ? o.error : "");
        s->n_outputs++;
        r->n_outputs++;
        if (o.request_finished) {
            assert_int_not_equal(o.finish_reason, PAGODA_FINISH_NONE);
            r->finished = 1;
        }
    }
}

static void step_until_done(decoding_t *d) {
    for (int steps = 0; pagoda_engine_has_work(d->stack.engine); steps++) {
        assert_true(steps < 2000);
        TEST_ASSERT_OK(pagoda_engine_step(d->stack.engine));
        int64_t used = kv_stats(d).blocks_used;
        if (used > d->peak_blocks) d->peak_blocks = used;
        drain(d);
    }
    drain(d);
}

static uint64_t submit(decoding_t *d, const char *text, const pagoda_request_options_t *o) {
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_text(d->stack.engine, text, strlen(text), o, &id));
    return id;
}

static pagoda_request_options_t sampled(int32_t max_tokens, uint64_t seed) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.max_tokens = max_tokens;
    o.seed = seed;
    o.logprobs = 0;
    return o;
}

static pagoda_request_options_t beams(int32_t width, int32_t n, int32_t max_tokens) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.max_tokens = max_tokens;
    o.beam_width = width;
    o.n = n;
    o.logprobs = 0;
    return o;
}

static int same_tokens(const sequence_result_t *a, const sequence_result_t *b) {
    return a->n_tokens == b->n_tokens && memcmp(a->tokens, b->tokens, a->n_tokens * sizeof a->tokens[0]) == 0;
}

/* One request alone on a fresh engine; its result copied out. */
static request_result_t run_alone(const char *prompt, const pagoda_request_options_t *o,
                                  int64_t num_blocks, int32_t block_size, int64_t *peak_blocks) {
    decoding_t *d = open_decoding(num_blocks, block_size, 0, 0);
    uint64_t id = submit(d, prompt, o);
    step_until_done(d);
    request_result_t r = *result_of(d, id);
    assert_true(r.finished);
    if (peak_blocks) *peak_blocks = d->peak_blocks;
    close_decoding(d);
    return r;
}

static void test_parallel_sampling_reproducible(void **state) {
    (void)state;
    pagoda_request_options_t o = sampled(24, 1234);
    o.n = 4;
    request_result_t a = run_alone("Once upon a time", &o, 256, 16, NULL);
    request_result_t b = run_alone("Once upon a time", &o, 256, 16, NULL);
    assert_int_equal(a.n_seqs, 4);
    for (int i = 0; i < 4; i++) {
        const sequence_result_t *s = &a.seqs[i];
        assert_true(s->n_tokens >= 1);
        assert_int_not_equal(s->finish, PAGODA_FINISH_NONE);
        assert_true(fabsf(s->cumulative - s->logprob_sum) < 1e-3f);
        assert_true(same_tokens(s, &b.seqs[i]));
        assert_int_equal(s->text_len, b.seqs[i].text_len);
        assert_memory_equal(s->text, b.seqs[i].text, s->text_len);
        for (int j = 0; j < i; j++) assert_false(same_tokens(s, &a.seqs[j]));
    }
    /* Sequence 0 draws as a single-sequence request with the same seed. */
    o.n = 1;
    request_result_t single = run_alone("Once upon a time", &o, 256, 16, NULL);
    assert_true(same_tokens(&single.seqs[0], &a.seqs[0]));
    /* A different seed draws different sequences. */
    o.n = 4;
    o.seed = 99;
    request_result_t c = run_alone("Once upon a time", &o, 256, 16, NULL);
    assert_false(same_tokens(&c.seqs[0], &a.seqs[0]) && same_tokens(&c.seqs[1], &a.seqs[1]));
}

/* Peak KV blocks of `count` separate single-sequence requests for kStory (seeds seed_base,
 * seed_base + 1, ...) against `shared`, the peak of one request holding them all; prints the
 * share saved under `label`. */
static void report_sharing(const char *label, int count, pagoda_request_options_t one,
                           uint64_t seed_base, int64_t shared) {
    decoding_t *d = open_decoding(512, 16, 0, 0);
    one.n = 1;
    for (int i = 0; i < count; i++) {
        one.seed = seed_base + (uint64_t)i;
        submit(d, kStory, &one);
    }
    step_until_done(d);
    int64_t separate = d->peak_blocks;
    close_decoding(d);
    double saved = 100.0 * (double)(separate - shared) / (double)separate;
    printf("%s: peak blocks %lld shared vs %lld separate: %.1f %% saved\n", label,
           (long long)shared, (long long)separate, saved);
    assert_true(shared < separate);
}

/* Peak blocks of one request with n sequences vs n separate requests (prefix caching off, so
 * nothing is shared between them). vLLM §6.3 reports 6.1–30.5 % saved for parallel sampling. */
static void test_parallel_sampling_saves_blocks(void **state) {
    (void)state;
    const int ns[3] = {2, 4, 6};
    for (int k = 0; k < 3; k++) {
        const int n = ns[k];
        pagoda_request_options_t o = sampled(48, 7);
        o.flags = PAGODA_REQUEST_IGNORE_EOS;
        o.n = n;
        int64_t shared = 0;
        request_result_t g = run_alone(kStory, &o, 512, 16, &shared);
        assert_int_equal(g.n_seqs, n);

        char label[64];
        snprintf(label, sizeof label, "parallel sampling n=%d", n);
        report_sharing(label, n, o, 100, shared);
    }
}

/* best_of = 4, n = 2: the two of the four sequences n = 4 would stream with the highest
 * cumulative logprob, each as a single output. */
static void test_best_of_returns_the_best(void **state) {
    (void)state;
    pagoda_request_options_t o = sampled(20, 4321);
    o.n = 4;
    request_result_t all = run_alone("The little dog", &o, 256, 16, NULL);
    o.n = 2;
    o.best_of = 4;
    request_result_t best = run_alone("The little dog", &o, 256, 16, NULL);
    assert_int_equal(best.n_seqs, 2);
    assert_int_equal(best.n_outputs, 2);
    int order[4] = {0, 1, 2, 3};
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (all.seqs[order[j]].cumulative > all.seqs[order[i]].cumulative) {
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
    for (int rank = 0; rank < 2; rank++) {
        const sequence_result_t *want = &all.seqs[order[rank]], *got = &best.seqs[rank];
        assert_int_equal(got->n_outputs, 1);
        assert_true(same_tokens(got, want));
        assert_true(fabsf(got->cumulative - want->cumulative) < 1e-4f);
        assert_int_equal(got->text_len, want->text_len);
        assert_memory_equal(got->text, want->text, got->text_len);
        assert_int_equal(got->finish, want->finish);
    }
    assert_true(best.seqs[0].cumulative >= best.seqs[1].cumulative);
}

static void test_beam_width_one_is_greedy(void **state) {
    (void)state;
    pagoda_request_options_t g = sampled(16, 0);
    g.temperature = 0.0f;
    request_result_t greedy = run_alone("Once upon a time", &g, 256, 16, NULL);
    pagoda_request_options_t o = beams(1, 1, 16);
    request_result_t beam = run_alone("Once upon a time", &o, 256, 16, NULL);
    assert_int_equal(beam.n_seqs, 1);
    assert_true(same_tokens(&beam.seqs[0], &greedy.seqs[0]));
    assert_true(fabsf(beam.seqs[0].cumulative - greedy.seqs[0].cumulative) < 1e-3f);
    assert_int_equal(beam.seqs[0].text_len, greedy.seqs[0].text_len);
    assert_memory_equal(beam.seqs[0].text, greedy.seqs[0].text, beam.seqs[0].text_len);
}

/* Whether `text` (not NUL-terminated) contains `needle`. */
static int contains(const char *text, size_t len, const char *needle) {
    const size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(text + i, needle, n) == 0) return 1;
    return 0;
}

/* Stop strings end beams: width 1 stops exactly where greedy decoding with the same stop
 * string does (same tokens, same text, with or without the stop string in it), and width 4
 * returns beams none of which runs past the stop string, at least one of them ended by it. */
static void test_beam_search_stop_strings(void **state) {
    (void)state;
    const char *stops[] = {"Lily"};
    for (int include = 0; include <= 1; include++) {
        pagoda_request_options_t g = sampled(40, 0);
        g.temperature = 0.0f;
        g.stop_strings = stops;
        g.n_stop_strings = 1;
        if (include) g.flags |= PAGODA_REQUEST_INCLUDE_STOP_STRING;
        request_result_t greedy = run_alone("Once upon a time", &g, 256, 16, NULL);
        assert_int_equal(greedy.seqs[0].finish, PAGODA_FINISH_STOP_STRING);
        pagoda_request_options_t o = beams(1, 1, 40);
        o.stop_strings = stops;
        o.n_stop_strings = 1;
        o.flags = g.flags;
        request_result_t beam = run_alone("Once upon a time", &o, 256, 16, NULL);
        assert_int_equal(beam.n_seqs, 1);
        assert_int_equal(beam.seqs[0].finish, PAGODA_FINISH_STOP_STRING);
        assert_true(same_tokens(&beam.seqs[0], &greedy.seqs[0]));
        assert_int_equal(beam.seqs[0].text_len, greedy.seqs[0].text_len);
        assert_memory_equal(beam.seqs[0].text, greedy.seqs[0].text, beam.seqs[0].text_len);
        const size_t n = beam.seqs[0].text_len;
        if (include)
            assert_true(n >= 4 && memcmp(beam.seqs[0].text + n - 4, "Lily", 4) == 0);
        else
            assert_false(contains(beam.seqs[0].text, n, "Lily"));
    }

    pagoda_request_options_t o = beams(4, 4, 40);
    o.stop_strings = stops;
    o.n_stop_strings = 1;
    request_result_t b = run_alone("Once upon a time", &o, 256, 16, NULL);
    assert_int_equal(b.n_seqs, 4);
    int stopped = 0;
    for (int i = 0; i < 4; i++) {
        assert_false(contains(b.seqs[i].text, b.seqs[i].text_len, "Lily"));
        assert_true(b.seqs[i].n_tokens >= 1);
        stopped += b.seqs[i].finish == PAGODA_FINISH_STOP_STRING;
    }
    assert_true(stopped >= 1);
}

static double score(const sequence_result_t *s, float length_penalty) {
    return s->cumulative / pow((double)s->n_tokens, length_penalty);
}

/* W = 4 beams come back ranked by score, and the best scores at least as well as greedy (two
 * tokens: greedy's pair is among the candidates beam search ranks). With W = the vocabulary,
 * two steps of beam search enumerate every pair, so its best must be the exact best pair,
 * which is found here by brute force from the engine's own log-probabilities. */
static void test_beam_search_ranked_and_exact(void **state) {
    (void)state;
    const char *prompt = "Once upon a time";
    pagoda_request_options_t o = beams(4, 4, 24);
    o.length_penalty = 0.7f;
    request_result_t b = run_alone(prompt, &o, 256, 16, NULL);
    assert_int_equal(b.n_seqs, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(b.seqs[i].n_outputs, 1);
        assert_true(fabsf(b.seqs[i].cumulative - b.seqs[i].logprob_sum) < 1e-3f);
        if (i > 0) assert_true(score(&b.seqs[i - 1], 0.7f) >= score(&b.seqs[i], 0.7f) - 1e-6);
    }

    /* Two tokens from a prompt of ids, ends of sequence ignored so every pair counts. */
    const int32_t ids[4] = {1, 403, 261, 289};
    decoding_t *d = open_decoding(4096, 16, 0, 0);
    pagoda_model_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    TEST_ASSERT_OK(pagoda_model_get_info(d->stack.model, &info));
    const int32_t vocab = (int32_t)info.vocab_size;
    assert_true(vocab > 0 && vocab <= 512);
    /* Brute force: per first token t1, log p(t1 | prompt) from prompt_logprobs and the best
     * second token greedily. */
    double best = -INFINITY, second = -INFINITY;
    int32_t best_pair[2] = {-1, -1};
    int32_t with_t1[5];
    memcpy(with_t1, ids, sizeof ids);
    pagoda_request_options_t g = sampled(1, 0);
    g.temperature = 0.0f;
    g.flags = PAGODA_REQUEST_IGNORE_EOS;
    g.prompt_logprobs = 0;
    uint64_t *req = test_xcalloc((size_t)vocab, sizeof *req);
    for (int32_t t1 = 0; t1 < vocab; t1++) {
        with_t1[4] = t1;
        TEST_ASSERT_OK(pagoda_engine_submit_tokens(d->stack.engine, with_t1, 5, &g, &req[t1]));
    }
    pagoda_output_t out;
    memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    int done = 0;
    while (pagoda_engine_has_work(d->stack.engine) || done < vocab) {
        TEST_ASSERT_OK(pagoda_engine_step(d->stack.engine));
        while (pagoda_engine_poll(d->stack.engine, &out) == PAGODA_OK) {
            assert_int_equal(out.n_tokens, 1);
            assert_non_null(out.prompt_logprobs);
            int32_t t1 = (int32_t)(out.request_id - req[0]);
            assert_true(t1 >= 0 && t1 < vocab && req[t1] == out.request_id);
            double total = (double)out.prompt_logprobs[4] + (double)out.logprobs[0];
            if (total > best) {
                second = best;
                best = total;
                best_pair[0] = t1;
                best_pair[1] = out.token_ids[0];
            } else if (total > second) {
                second = total;
            }
            done++;
        }
    }
    free(req);
    close_decoding(d);

    d = open_decoding(4096, 16, 0, vocab);
    pagoda_request_options_t all = beams(vocab, 4, 2);
    all.flags = PAGODA_REQUEST_IGNORE_EOS;
    uint64_t id = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(d->stack.engine, ids, 4, &all, &id));
    step_until_done(d);
    const request_result_t *exhaustive = result_of(d, id);
    assert_int_equal(exhaustive->n_seqs, 4);
    assert_int_equal(exhaustive->seqs[0].n_tokens, 2);
    printf("exhaustive beam (W=%d): best pair (%d, %d) %.5f; brute force (%d, %d) %.5f\n", vocab,
           exhaustive->seqs[0].tokens[0], exhaustive->seqs[0].tokens[1], exhaustive->seqs[0].cumulative,
           best_pair[0], best_pair[1], best);
    assert_true(fabs(exhaustive->seqs[0].cumulative - best) < 1e-3);
    if (best - second > 1e-3) {
        assert_int_equal(exhaustive->seqs[0].tokens[0], best_pair[0]);
        assert_int_equal(exhaustive->seqs[0].tokens[1], best_pair[1]);
    }
    float exhaustive_best = exhaustive->seqs[0].cumulative;
    close_decoding(d);

    /* W = 4 over the same two tokens: at least greedy's pair, at most the exact best. */
    d = open_decoding(256, 16, 0, 0);
    pagoda_request_options_t four = beams(4, 1, 2);
    four.flags = PAGODA_REQUEST_IGNORE_EOS;
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(d->stack.engine, ids, 4, &four, &id));
    g = sampled(2, 0);
    g.temperature = 0.0f;
    g.flags = PAGODA_REQUEST_IGNORE_EOS;
    uint64_t gid = 0;
    TEST_ASSERT_OK(pagoda_engine_submit_tokens(d->stack.engine, ids, 4, &g, &gid));
    step_until_done(d);
    float beam4 = result_of(d, id)->seqs[0].cumulative, greedy2 = result_of(d, gid)->seqs[0].cumulative;
    assert_true(beam4 >= greedy2 - 1e-4f);
    assert_true(beam4 <= exhaustive_best + 1e-4f);
    close_decoding(d);
}

/* Peak blocks of beam search of width W vs W separate sequences of the same length (prefix
 * caching off). vLLM §6.3 reports 37.6–66.3 % saved for beam widths 2–6. */
static void test_beam_search_saves_blocks(void **state) {
    (void)state;
    const int widths[2] = {4, 6};
    for (int k = 0; k < 2; k++) {
        const int w = widths[k];
        pagoda_request_options_t o = beams(w, w, 48);
        o.flags = PAGODA_REQUEST_IGNORE_EOS;
        int64_t shared = 0;
        request_result_t b = run_alone(kStory, &o, 512, 16, &shared);
        assert_int_equal(b.n_seqs, w);
        for (int i = 0; i < w; i++) assert_int_equal(b.seqs[i].n_tokens, 48);

        pagoda_request_options_t one = sampled(48, 0);
        one.flags = PAGODA_REQUEST_IGNORE_EOS;
        char label[64];
        snprintf(label, sizeof label, "beam search W=%d", w);
        report_sharing(label, w, one, 200, shared);
    }
}

/* Aborting a request with several sequences mid-run ends each and frees every block. */
static void test_abort_multi_sequence(void **state) {
    (void)state;
    decoding_t *d = open_decoding(256, 16, 0, 0);
    pagoda_request_options_t o = sampled(64, 5);
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    o.n = 4;
    uint64_t sampling = submit(d, kStory, &o);
    pagoda_request_options_t b = beams(4, 2, 64);
    b.flags = PAGODA_REQUEST_IGNORE_EOS;
    uint64_t beam = submit(d, kStory, &b);
    for (int i = 0; i < 4; i++) {
        TEST_ASSERT_OK(pagoda_engine_step(d->stack.engine));
        drain(d);
    }
    assert_true(kv_stats(d).blocks_used > 0);
    TEST_ASSERT_OK(pagoda_engine_abort(d->stack.engine, sampling));
    TEST_ASSERT_OK(pagoda_engine_abort(d->stack.engine, beam));
    assert_int_equal(kv_stats(d).blocks_used, 0);
    drain(d);
    const request_result_t *r = result_of(d, sampling);
    assert_true(r->finished);
    assert_int_equal(r->n_seqs, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r->seqs[i].finish, PAGODA_FINISH_ABORTED);
        assert_true(r->seqs[i].n_tokens >= 3);
    }
    r = result_of(d, beam);
    assert_true(r->finished);
    assert_int_equal(r->n_outputs, 1);
    assert_int_equal(r->seqs[0].finish, PAGODA_FINISH_ABORTED);
    test_expect_failure(pagoda_engine_abort(d->stack.engine, sampling), PAGODA_ERR_NOT_FOUND, "no live request");
    close_decoding(d);
}

/* Under a cache too small for both requests, the later one (several sequences) is swapped out
 * whole and comes back: the same outputs as with room to spare. */
static void run_swapped(const pagoda_request_options_t *group, int64_t num_blocks, const char *first_prompt) {
    const char *prompt = "Once upon a time";
    int64_t want_peak = 0;
    request_result_t want = run_alone(prompt, group, 512, 4, &want_peak);
    printf("alone: peak %lld blocks\n", (long long)want_peak);

    decoding_t *d = open_decoding(num_blocks, 4, 0, 0);
    pagoda_request_options_t first = sampled(24, 0);
    first.temperature = 0.0f;
    first.flags = PAGODA_REQUEST_IGNORE_EOS;
    submit(d, first_prompt, &first);
    uint64_t id = submit(d, prompt, group);
    step_until_done(d);
    const pagoda_engine_stats_t es = engine_stats(d);
    printf("swap preemptions %lld, recompute %lld\n", (long long)es.preemptions_swap,
           (long long)es.preemptions_recompute);
    assert_true(es.preemptions_swap > 0);
    const request_result_t *got = result_of(d, id);
    assert_true(got->finished);
    assert_int_equal(got->n_seqs, want.n_seqs);
    for (int i = 0; i < want.n_seqs; i++) {
        assert_true(same_tokens(&got->seqs[i], &want.seqs[i]));
        assert_true(fabsf(got->seqs[i].cumulative - want.seqs[i].cumulative) < 1e-3f);
        assert_int_equal(got->seqs[i].text_len, want.seqs[i].text_len);
        assert_memory_equal(got->seqs[i].text, want.seqs[i].text, want.seqs[i].text_len);
    }
    close_decoding(d);
}

static void test_swap_preemption_multi_sequence(void **state) {
    (void)state;
    pagoda_request_options_t o = sampled(24, 77);
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    o.n = 4;
    run_swapped(&o, 30, "The little dog");
    pagoda_request_options_t b = beams(4, 4, 24);
    b.flags = PAGODA_REQUEST_IGNORE_EOS;
    run_swapped(&b, 28, kStory);
}

/* A group that must be preempted but does not fit the swap space is not recomputed (its
 * sequences could not restart consistently): it ends with ERROR, and the other request runs on. */
static void test_group_without_swap_room_fails(void **state) {
    (void)state;
    decoding_t *probe = open_decoding(30, 4, 0, 0);
    const uint64_t bytes_per_block = kv_stats(probe).bytes_per_block;
    close_decoding(probe);
    decoding_t *d = open_decoding_swap(30, 4, 0, 0, 2 * bytes_per_block);
    assert_int_equal(kv_stats(d).swap_blocks_total, 2);
    pagoda_request_options_t first = sampled(24, 0);
    first.temperature = 0.0f;
    first.flags = PAGODA_REQUEST_IGNORE_EOS;
    uint64_t a = submit(d, "The little dog", &first);
    pagoda_request_options_t o = sampled(24, 77);
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    o.n = 4;
    uint64_t b = submit(d, "Once upon a time", &o);
    step_until_done(d);
    const request_result_t *ra = result_of(d, a), *rb = result_of(d, b);
    assert_true(ra->finished && rb->finished);
    assert_int_equal(ra->seqs[0].finish, PAGODA_FINISH_LENGTH);
    assert_int_equal(ra->seqs[0].n_tokens, 24);
    assert_int_equal(rb->n_seqs, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rb->seqs[i].finish, PAGODA_FINISH_ERROR);
        assert_int_equal(rb->seqs[i].status, PAGODA_ERR_OUT_OF_MEMORY);
        assert_non_null(strstr(rb->seqs[i].error, "swap"));
    }
    close_decoding(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parallel_sampling_reproducible),
        cmocka_unit_test(test_parallel_sampling_saves_blocks),
        cmocka_unit_test(test_best_of_returns_the_best),
        cmocka_unit_test(test_beam_width_one_is_greedy),
        cmocka_unit_test(test_beam_search_ranked_and_exact),
        cmocka_unit_test(test_beam_search_stop_strings),
        cmocka_unit_test(test_beam_search_saves_blocks),
        cmocka_unit_test(test_abort_multi_sequence),
        cmocka_unit_test(test_swap_preemption_multi_sequence),
        cmocka_unit_test(test_group_without_swap_room_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
