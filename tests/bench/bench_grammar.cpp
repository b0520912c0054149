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
#include "grammar/compiled_constraint.hpp"
#include "grammar/constraint_matcher.hpp"
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

}  // namespace

int main(int argc, char **argv) {
    std::vector<Named> tokenizers, grammars;
    std::vector<int> batches;
    int steps = 200, runs = 3;
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
            else throw std::runtime_error(std::string("unknown option ") + argv[i]);
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
