// pagoda-bench-grammar: what a constraint costs per token. For each tokenizer (a 32k and a 128k
// vocabulary) and each grammar, it compiles the constraint (timed: parsing, then the first mask,
// which computes the places it meets) and decodes `--steps` tokens for a batch of sequences,
// each drawing uniformly among the tokens its mask allows (what a random-weight model does
// under a constraint), timing mask_logits + accept per sequence and step. Prints one JSON
// object per (tokenizer, grammar, batch, run).
//
//   pagoda-bench-grammar [--tokenizer NAME=PATH]... [--grammar NAME=FILE.gbnf]... [--steps N]
//                        [--batch B]... [--runs R] [--quick]
//
// Defaults: the llama2 (32k) and llama3 (128k) tokenizer.json the tokenizer tests unpack into
// the build tree, a JSON grammar of nested objects, arrays and strings written here, batches
// 1 and 16, 3 runs. Fields: compile_ms (parse and build), first_mask_ms, mask_us_median,
// mask_us_p90 and mask_us_mean (per sequence per step), places (places computed by the end).
//
//   pagoda-bench-grammar --schemas FILE.jsonl [--tokenizer NAME=PATH]... [--runs R]
//
// Schema mode: per tokenizer, each JSON Schema of the file (one per line) compiled as a
// request's is (schema -> GBNF -> grammar -> constraint over the vocabulary: compile_ms) and
// its first mask computed (first_mask_ms), each timed R times (the minimum kept: compiling is
// deterministic, so the rest is the machine's noise); one line per schema, then a summary
// (median, p90, max over the schemas).
//
//   pagoda-bench-grammar --model PATH [--batch B]... [--gen-tokens G] [--runs R] [--threads T]
//
// Engine mode: what the constraint adds to a decode step of a real model. Each run decodes B
// requests of G tokens at temperature 1 without a constraint and the same under a JSON Schema
// whose shortest answer is longer than G (so no sequence ends early and both batches keep B
// sequences), timing the steps after the prompts'; "ratio" is constrained / plain step time,
// paired run by run, which of the pair goes first alternating. The first constrained run also
// pays the schema's compile and the first masks of each place (first_run_ratio); the others
// reuse them, as a server does for a schema it has seen.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/constraint_vocabulary.hpp"
#include "pagoda/pagoda.h"
#include "grammar/compiled_constraint.hpp"
#include "grammar/constraint_matcher.hpp"
#include "grammar/constraint_text.hpp"
#include "grammar/grammar.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace pagoda;

namespace {

// Objects with typed fields, a nested array of objects, free strings and numbers: the shape of
// a structured answer.
const char *const kJsonGrammar = R"gbnf(
root ::= "{\"name\": " string ", \"age\": " integer ", \"tags\": " tags ", \"items\": " items "}"
tags ::= "[" ( string ( ", " string )* )? "]"
items ::= "[" ( item ( ", " item )* )? "]"
item ::= "{\"id\": " integer ", \"label\": " string ", \"score\": " number "}"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ["\\/bfnrt] )* "\""
integer ::= "-"? ( "0" | [1-9] [0-9]{0,8} )
number ::= integer ( "." [0-9]+ )?
)gbnf";

struct Named {
    std::string name, value;
};

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

Named split_named(const char *arg) {
    const char *eq = std::strchr(arg, '=');
    if (eq == nullptr) throw std::runtime_error(std::string("expected NAME=VALUE, got ") + arg);
    return {std::string(arg, eq), std::string(eq + 1)};
}

double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

void run_case(const Named &tok_name, const std::shared_ptr<const grammar::TokenVocabulary> &vocabulary,
              const Named &g, int batch, int steps, int run) {
    const double t0 = now_ms();
    const grammar::Grammar parsed = grammar::parse_gbnf(g.value);
    auto compiled = std::make_shared<const grammar::CompiledConstraint>(parsed, vocabulary);
    const double t1 = now_ms();
    std::vector<float> logits(size_t(vocabulary->logit_rows()));
    const grammar::ConstraintMatcher fresh(compiled);
    std::vector<grammar::ConstraintMatcher> seqs(size_t(batch), fresh);
    std::fill(logits.begin(), logits.end(), 0.0f);
    seqs[0].mask_logits(logits);
    const double first_mask = now_ms() - t1;

    std::mt19937_64 rng(uint64_t(run) * 7919 + uint64_t(batch));
    std::vector<double> per_token;
    std::vector<int32_t> allowed;
    for (int step = 0; step < steps; ++step) {
        for (grammar::ConstraintMatcher &m : seqs) {
            if (m.finished()) m = fresh;
            std::fill(logits.begin(), logits.end(), 0.0f);
            const double a = now_ms();
            m.mask_logits(logits);
            const double b = now_ms();
            allowed.clear();
            for (int32_t id = 0; id < int32_t(logits.size()); ++id)
                if (logits[size_t(id)] == 0.0f) allowed.push_back(id);
            const int32_t pick = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
            const double c = now_ms();
            if (!m.accept(pick)) throw std::runtime_error("an allowed token was refused");
            per_token.push_back((b - a) + (now_ms() - c));
        }
    }
    double sum = 0;
    for (double x : per_token) sum += x;
    std::printf("{\"bench\": \"grammar\", \"tokenizer\": \"%s\", \"vocab\": %d, \"grammar\": \"%s\", "
                "\"batch\": %d, \"run\": %d, \"compile_ms\": %.2f, \"first_mask_ms\": %.2f, "
                "\"mask_us_median\": %.1f, \"mask_us_p90\": %.1f, \"mask_us_mean\": %.1f, "
                "\"step_us_batch\": %.1f, \"places\": %zu}\n",
                tok_name.name.c_str(), vocabulary->logit_rows(), g.name.c_str(), batch, run, t1 - t0,
                first_mask, 1000 * percentile(per_token, 0.5), 1000 * percentile(per_token, 0.9),
                1000 * sum / double(per_token.size()), 1000 * sum / double(steps),
                compiled->places_known());
    std::fflush(stdout);
}

void run_schemas(const Named &tok_name, const std::shared_ptr<const grammar::TokenVocabulary> &vocabulary,
                 const std::string &file, int runs) {
    std::istringstream lines(read_file(file));
    std::string schema;
    std::vector<double> compile_ms, first_mask_ms;
    std::vector<float> logits(size_t(vocabulary->logit_rows()));
    for (int index = 0; std::getline(lines, schema); ++index) {
        if (schema.empty()) continue;
        double best_compile = 1e300, best_mask = 1e300;
        for (int r = 0; r < runs; ++r) {
            const double t0 = now_ms();
            const grammar::Grammar g = grammar::constraint_grammar(grammar::ConstraintKind::json_schema, schema);
            auto compiled = std::make_shared<const grammar::CompiledConstraint>(g, vocabulary);
            const double t1 = now_ms();
            grammar::ConstraintMatcher m(compiled);
            std::fill(logits.begin(), logits.end(), 0.0f);
            m.mask_logits(logits);
            best_compile = std::min(best_compile, t1 - t0);
            best_mask = std::min(best_mask, now_ms() - t1);
        }
        compile_ms.push_back(best_compile);
        first_mask_ms.push_back(best_mask);
        std::printf("{\"bench\": \"grammar_schema\", \"tokenizer\": \"%s\", \"schema\": %d, "
                    "\"schema_bytes\": %zu, \"compile_ms\": %.3f, \"first_mask_ms\": %.3f}\n",
                    tok_name.name.c_str(), index, schema.size(), best_compile, best_mask);
    }
    if (compile_ms.empty()) throw std::runtime_error(file + " holds no schema");
    std::printf("{\"bench\": \"grammar_schema_summary\", \"tokenizer\": \"%s\", \"vocab\": %d, "
                "\"schemas\": %zu, \"compile_ms_median\": %.3f, \"compile_ms_p90\": %.3f, "
                "\"compile_ms_max\": %.3f, \"first_mask_ms_median\": %.3f, \"first_mask_ms_p90\": %.3f, "
                "\"first_mask_ms_max\": %.3f}\n",
                tok_name.name.c_str(), vocabulary->logit_rows(), compile_ms.size(),
                percentile(compile_ms, 0.5), percentile(compile_ms, 0.9),
                *std::max_element(compile_ms.begin(), compile_ms.end()), percentile(first_mask_ms, 0.5),
                percentile(first_mask_ms, 0.9), *std::max_element(first_mask_ms.begin(), first_mask_ms.end()));
    std::fflush(stdout);
}

// A list of at least 60 items of three fields: longer than any --gen-tokens asked here.
const char *const kLongSchema =
    "{\"type\": \"object\", \"properties\": {\"items\": {\"type\": \"array\", \"minItems\": 60, "
    "\"items\": {\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"integer\", "
    "\"minimum\": 0, \"maximum\": 999}, \"name\": {\"type\": \"string\", \"maxLength\": 12}, "
    "\"ok\": {\"type\": \"boolean\"}}, \"required\": [\"id\", \"name\", \"ok\"]}}}, "
    "\"required\": [\"items\"]}";

void check(pagoda_status_t s, const char *what) {
    if (s != PAGODA_OK)
        throw std::runtime_error(std::string(what) + ": " + pagoda_last_error_message());
}

// Seconds per decode step for `batch` requests of `gen` tokens, and the tokens generated.
double decode_step_seconds(pagoda_engine_t *engine, int batch, int gen, bool constrained, int run,
                           int64_t *tokens) {
    const char *prompt = "Write the inventory as JSON.";
    for (int i = 0; i < batch; ++i) {
        pagoda_request_options_t o;
        pagoda_request_options_default(&o);
        o.max_tokens = gen;
        o.temperature = 1.0f;
        o.seed = uint64_t(run * 1000 + i);
        o.flags = PAGODA_REQUEST_IGNORE_EOS;
        if (constrained) {
            o.constraint_kind = PAGODA_CONSTRAINT_JSON_SCHEMA;
            o.constraint = kLongSchema;
        }
        uint64_t id = 0;
        check(pagoda_engine_submit_text(engine, prompt, std::strlen(prompt), &o, &id), "submit");
    }
    // The first step prefills every prompt and samples each request's first token; time the rest.
    check(pagoda_engine_step(engine), "step");
    pagoda_output_t out;
    out.struct_size = sizeof out;
    *tokens = 0;
    while (pagoda_engine_poll(engine, &out) == PAGODA_OK) *tokens += int64_t(out.n_tokens);
    int steps = 0;
    const double t0 = now_ms();
    while (pagoda_engine_has_work(engine)) {
        check(pagoda_engine_step(engine), "step");
        ++steps;
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {
            *tokens += int64_t(out.n_tokens);
            if (out.finish_reason != PAGODA_FINISH_NONE && out.finish_reason != PAGODA_FINISH_LENGTH)
                throw std::runtime_error(std::string("a request ended early: ") + out.error);
        }
    }
    return (now_ms() - t0) / 1000.0 / std::max(steps, 1);
}

void run_engine(const std::string &model_path, const std::vector<int> &batches, int gen, int runs,
                int threads) {
    pagoda_backend_t *backend = nullptr;
    const std::string plugin = std::string(PAGODA_BENCH_PLUGIN_DIR) + "/libpagoda-backend-cpu.so";
    const std::string config = "threads=" + std::to_string(threads);
    check(pagoda_backend_load(plugin.c_str(), config.c_str(), &backend), "backend");
    pagoda_model_t *model = nullptr;
    check(pagoda_model_open(model_path.c_str(), nullptr, &model), "model");
    pagoda_mesh_t *mesh = nullptr;
    check(pagoda_mesh_create(nullptr, &mesh), "mesh");
    for (int batch : batches) {
        pagoda_kv_cache_options_t ko;
        pagoda_kv_cache_options_default(&ko);
        ko.num_blocks = int64_t(batch) * ((gen + 64) / 16 + 1);
        pagoda_kv_cache_t *cache = nullptr;
        check(pagoda_kv_cache_create(model, mesh, nullptr, &ko, &cache), "cache");
        pagoda_engine_t *engine = nullptr;
        check(pagoda_engine_create(model, mesh, nullptr, cache, nullptr, &engine), "engine");
        int64_t tokens = 0;
        decode_step_seconds(engine, batch, 8, false, 0, &tokens);  // warm-up
        for (int r = 0; r < runs; ++r) {
            // Alternating which goes first, so warming up favours neither.
            int64_t plain_tokens = 0, constrained_tokens = 0;
            double plain = 0, constrained = 0;
            if (r % 2 == 1)
                constrained = decode_step_seconds(engine, batch, gen, true, r, &constrained_tokens);
            plain = decode_step_seconds(engine, batch, gen, false, r, &plain_tokens);
            if (r % 2 == 0)
                constrained = decode_step_seconds(engine, batch, gen, true, r, &constrained_tokens);
            std::printf("{\"bench\": \"grammar_engine\", \"model\": \"%s\", \"batch\": %d, "
                        "\"gen_tokens\": %d, \"run\": %d, \"plain_step_ms\": %.3f, "
                        "\"constrained_step_ms\": %.3f, \"ratio\": %.4f, \"tokens\": [%lld, %lld]%s}\n",
                        model_path.c_str(), batch, gen, r, 1000 * plain, 1000 * constrained,
                        constrained / plain, (long long)plain_tokens, (long long)constrained_tokens,
                        r == 0 ? ", \"first_run_ratio\": true" : "");
            std::fflush(stdout);
        }
        pagoda_engine_destroy(engine);
        pagoda_kv_cache_destroy(cache);
    }
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
    pagoda_backends_unload_all();
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<Named> tokenizers, grammars;
    std::vector<int> batches;
    int steps = 200, runs = 3, gen = 64, threads = 2;
    std::string model, schemas;
    try {
        for (int i = 1; i < argc; ++i) {
            auto value = [&]() -> const char * {
                if (i + 1 >= argc) throw std::runtime_error(std::string(argv[i]) + " needs a value");
                return argv[++i];
            };
            if (!std::strcmp(argv[i], "--tokenizer")) tokenizers.push_back(split_named(value()));
            else if (!std::strcmp(argv[i], "--grammar")) {
                Named g = split_named(value());
                g.value = read_file(g.value);
                grammars.push_back(g);
            } else if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(value());
            else if (!std::strcmp(argv[i], "--batch")) batches.push_back(std::atoi(value()));
            else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(value());
            else if (!std::strcmp(argv[i], "--quick")) { steps = 20; runs = 1; }
            else if (!std::strcmp(argv[i], "--model")) model = value();
            else if (!std::strcmp(argv[i], "--schemas")) schemas = value();
            else if (!std::strcmp(argv[i], "--gen-tokens")) gen = std::atoi(value());
            else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(value());
            else throw std::runtime_error(std::string("unknown option ") + argv[i]);
        }
        if (!model.empty()) {
            run_engine(model, batches.empty() ? std::vector<int>{1, 16} : batches, gen, runs + 1,
                       threads);
            return 0;
        }
        if (tokenizers.empty()) {
            tokenizers.push_back({"llama2", PAGODA_BENCH_TOKENIZERS_DIR "/llama2"});
            tokenizers.push_back({"llama3", PAGODA_BENCH_TOKENIZERS_DIR "/llama3"});
        }
        if (grammars.empty()) grammars.push_back({"json", kJsonGrammar});
        if (batches.empty()) batches = {1, 16};
        for (const Named &t : tokenizers) {
            auto tokenizer = tok::Tokenizer::from_file(t.value);
            std::vector<int32_t> ends;
            if (tokenizer->eos_token_id() >= 0) ends.push_back(tokenizer->eos_token_id());
            auto vocabulary = engine::constraint_vocabulary(*tokenizer, ends, tokenizer->vocab_size());
            if (!schemas.empty()) {
                run_schemas(t, vocabulary, schemas, runs);
                continue;
            }
            for (const Named &g : grammars)
                for (int b : batches)
                    for (int r = 0; r < runs; ++r) run_case(t, vocabulary, g, b, steps, r);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pagoda-bench-grammar: %s\n", e.what());
        return 1;
    }
    return 0;
}
