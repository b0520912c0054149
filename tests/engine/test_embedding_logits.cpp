// An embedding request's vector (last-token pooling, unnormalized) against a plain reference:
// it is the hidden state the LM head reads, so its logits, computed here from the model file's
// LM head weights by a dot product per vocabulary row, give the log-probabilities the engine
// reports for the token it generates after the same prompt, and that token is their argmax.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "pagoda/pagoda.h"

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
}

namespace {

const char *const kModel = PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf";
const char *const kPrompts[] = {"Once upon a time", "The little dog was very happy because",
                                "Lily and Tom went to the park. They saw a big"};
constexpr int32_t kTop = 5;

void check(pagoda_status_t s, const char *what) {
    if (s != PAGODA_OK)
        fail_msg("%s: %s (%s)", what, pagoda_status_string(s), pagoda_last_error_message());
}

struct Answers {
    std::vector<float> hidden;       // the embedding request's vector
    int32_t token = -1;              // the generation request's greedy token
    std::vector<pagoda_logprob_t> top;  // and its top log-probabilities
};

Answers run(pagoda_engine_t *engine, const char *prompt) {
    pagoda_request_options_t e;
    pagoda_request_options_default(&e);
    e.flags = PAGODA_REQUEST_EMBED;
    e.pooling = PAGODA_POOLING_LAST;
    e.embedding_normalize = PAGODA_EMBEDDING_NORMALIZE_NONE;
    pagoda_request_options_t g;
    pagoda_request_options_default(&g);
    g.temperature = 0.0f;
    g.max_tokens = 1;
    g.logprobs = kTop;
    uint64_t embed_id = 0, gen_id = 0;
    check(pagoda_engine_submit_text(engine, prompt, std::strlen(prompt), &e, &embed_id), "embed");
    check(pagoda_engine_submit_text(engine, prompt, std::strlen(prompt), &g, &gen_id), "generate");
    Answers a;
    pagoda_output_t o;
    std::memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    for (int steps = 0; pagoda_engine_has_work(engine); ++steps) {
        assert_true(steps < 100);
        check(pagoda_engine_step(engine), "step");
        while (pagoda_engine_poll(engine, &o) == PAGODA_OK) {
            if (o.request_id == embed_id && o.embedding != nullptr)
                a.hidden.assign(o.embedding, o.embedding + o.n_embedding);
            if (o.request_id == gen_id && o.n_tokens == 1) {
                a.token = o.token_ids[0];
                a.top.assign(o.top_logprobs, o.top_logprobs + kTop);
            }
        }
    }
    return a;
}

void test_hidden_state_gives_the_logits(void **) {
    std::shared_ptr<const pagoda::model::Model> weights =
        pagoda::model::open_model(kModel, {}, nullptr);
    const pagoda::model::ModelConfig &c = weights->config();
    const pagoda::model::TensorRef *head = weights->tensors().find("lm_head.weight");
    if (head == nullptr || c.tie_word_embeddings)
        head = &weights->tensors().require("model.embed_tokens.weight", kModel);
    if (head->type != pagoda::model::TensorType::F32)
        fail_msg("stories260K's LM head is %s, not f32: this reference reads f32 only",
                 pagoda::model::tensor_type_name(head->type));
    const size_t vocab = size_t(c.vocab_size), dim = size_t(c.hidden_size);
    assert_int_equal(head->shape[0], c.vocab_size);
    const auto *w = static_cast<const float *>(head->data);

    pagoda_backend_t *backend = nullptr;
    check(pagoda_backend_load(PAGODA_TEST_BACKEND_DIR "/libpagoda-backend-cpu.so", "threads=1",
                              &backend),
          "loading the CPU backend");
    pagoda_model_t *model = nullptr;
    pagoda_mesh_t *mesh = nullptr;
    pagoda_kv_cache_t *cache = nullptr;
    pagoda_engine_t *engine = nullptr;
    check(pagoda_model_open(kModel, nullptr, &model), "model");
    check(pagoda_mesh_create(nullptr, &mesh), "mesh");
    check(pagoda_kv_cache_create(model, mesh, nullptr, nullptr, &cache), "cache");
    check(pagoda_engine_create(model, mesh, nullptr, cache, nullptr, &engine), "engine");

    for (const char *prompt : kPrompts) {
        const Answers a = run(engine, prompt);
        assert_int_equal(a.hidden.size(), dim);
        assert_int_equal(a.top.size(), size_t(kTop));
        std::vector<double> logits(vocab);
        for (size_t v = 0; v < vocab; ++v) {
            double dot = 0.0;
            for (size_t i = 0; i < dim; ++i) dot += double(w[v * dim + i]) * a.hidden[i];
            logits[v] = dot;
        }
        const double top = *std::max_element(logits.begin(), logits.end());
        double sum = 0.0;
        for (double l : logits) sum += std::exp(l - top);
        const double lse = top + std::log(sum);
        const size_t best = size_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        assert_int_equal(a.token, int32_t(best));
        for (const pagoda_logprob_t &t : a.top) {
            const double want = logits[size_t(t.token_id)] - lse;
            if (std::fabs(want - double(t.logprob)) > 1e-3)
                fail_msg("'%s': token %d has logprob %f, the hidden state gives %f", prompt,
                         t.token_id, double(t.logprob), want);
        }
    }
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
}

}  // namespace

int main() {
    const CMUnitTest tests[] = {cmocka_unit_test(test_hidden_state_gives_the_logits)};
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
