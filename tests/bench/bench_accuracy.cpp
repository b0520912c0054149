// pagoda-bench-accuracy: what rounding activations to 8 bits costs in accuracy. One token stream
// runs teacher-forced through two engines on the same model on the CPU backend: a reference with
// quantized_matmul EXACT (f32 products on exactly decoded weights) and a tested engine with AUTO
// (the default, under which the backend may round each run of activations to int8). Every
// prompt position's whole next-token distribution comes back from both (prompt log-probabilities
// with the vocabulary as the top-n), and the two are compared position by position. One JSON
// object on stdout, a short summary on stderr.
//
//   pagoda-bench-accuracy --model PATH [--threads N] [--positions N] [--context L] [--text FILE]
//                         [--seed S] [--step-tokens N] [--plugin-dir DIR] [--tested exact|auto]
//
// Both engines take at most --step-tokens (default 1) tokens a step, so every prompt position
// runs as a one-row step, through the kernels a single-stream decode step uses: the int8 route
// is taken on products of a few rows only, and a prefill chunk would take other kernels.
//
// The stream is --text FILE in the model's own tokens, or ids drawn uniformly from the
// vocabulary past its first three (where <unk>, <s>, </s> sit) and never its BOS or EOS. It is
// cut into requests of --context L tokens: the model's BOS (when it has one, else the token
// before) and the next L - 1 tokens of the stream, each of which is scored, until --positions are.
// Requests run one at a time, each finished and its outputs dropped before the next, so memory
// stays at one request's distributions (L x vocabulary x 8 bytes in the engine's output).
//
// Per scored position: KL(P_ref || P_test) over the whole vocabulary, entries matched by token
// id; |delta log-probability| of the stream's actual token there; whether the most likely ids
// agree (ties to the lower id). `--tested exact` makes both engines exact: a self-check that
// must give KL 0, delta 0 and agreement 1.
//
// Exit status: 0; 2 for a bad command line or inputs that cannot be used (model, text, plugin);
// 1 when the measurement itself fails.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "pagoda/pagoda.h"

namespace {

using pagoda::bench::JsonLine;

constexpr const char *kProgram = "pagoda-bench-accuracy";

struct Options {
    std::string model_path;  // --model
    std::string text_path;   // --text: the stream; empty = random ids
    std::string plugin_dir = PAGODA_BENCH_PLUGIN_DIR;
    int threads = 0;          // 0 = every core
    int64_t positions = 1024;
    int64_t context = 256;
    int step_tokens = 1;
    uint64_t seed = 1;
    bool tested_exact = false;  // --tested exact: the self-check
};

// Inputs the run cannot use (exit status 2), as opposed to a failure while measuring (1).
struct BadInput : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void usage(FILE *to) {
    std::fprintf(to,
                 "usage: %s --model PATH [options]\n"
                 "  --model PATH       GGUF file or Hugging Face folder (required)\n"
                 "  --threads N        CPU backend threads (config threads=N); default every core\n"
                 "  --positions N      positions scored in all (default 1024)\n"
                 "  --context L        tokens per request, each scoring L - 1 positions (default 256)\n"
                 "  --text FILE        score this text in the model's tokens (default: random ids)\n"
                 "  --seed S           seed of the random ids (default 1)\n"
                 "  --step-tokens N    tokens per engine step (default 1: each position a one-row\n"
                 "                     step, through the kernels single-stream decode uses)\n"
                 "  --plugin-dir DIR   folder of libpagoda-backend-cpu.so (default: %s)\n"
                 "  --tested M         check: the tested engine's quantized_matmul, auto (default)\n"
                 "                     or exact (then KL must be 0 and agreement 1)\n",
                 kProgram, PAGODA_BENCH_PLUGIN_DIR);
}

bool parse_int(const char *text, long long lo, long long hi, long long &out) {
    char *end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
    out = v;
    return true;
}

// Fills `o` from argv; false (after printing why) on a bad command line.
bool parse_options(int argc, char **argv, Options &o) {
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            usage(stdout);
            std::exit(0);
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "%s: unknown option or missing value: '%s'\n", kProgram, arg.c_str());
            usage(stderr);
            return false;
        }
        const char *v = argv[++i];
        long long n = 0;
        auto integer = [&](long long lo, long long hi) {
            if (parse_int(v, lo, hi, n)) return true;
            std::fprintf(stderr, "%s: %s wants an integer in %lld..%lld, not '%s'\n", kProgram, arg.c_str(),
                         lo, hi, v);
            return false;
        };
        bool ok = true;
        if (arg == "--model") {
            o.model_path = v;
        } else if (arg == "--text") {
            o.text_path = v;
        } else if (arg == "--plugin-dir") {
            o.plugin_dir = v;
        } else if (arg == "--threads") {
            if ((ok = integer(1, 1024))) o.threads = int(n);
        } else if (arg == "--positions") {
            if ((ok = integer(1, int64_t(1) << 30))) o.positions = n;
        } else if (arg == "--context") {
            if ((ok = integer(2, int64_t(1) << 20))) o.context = n;
        } else if (arg == "--step-tokens") {
            if ((ok = integer(1, int64_t(1) << 20))) o.step_tokens = int(n);
        } else if (arg == "--seed") {
            if ((ok = integer(0, INT64_MAX))) o.seed = uint64_t(n);
        } else if (arg == "--tested") {
            const std::string m = v;
            ok = m == "auto" || m == "exact";
            o.tested_exact = m == "exact";
            if (!ok) std::fprintf(stderr, "%s: --tested wants auto or exact, not '%s'\n", kProgram, v);
        } else {
            std::fprintf(stderr, "%s: unknown option '%s'\n", kProgram, arg.c_str());
            usage(stderr);
            ok = false;
        }
        if (!ok) return false;
    }
    if (o.model_path.empty()) {
        std::fprintf(stderr, "%s: --model is required\n", kProgram);
        usage(stderr);
        return false;
    }
    if (o.threads == 0) o.threads = int(std::max(1u, std::thread::hardware_concurrency()));
    return true;
}

// Throws `E` with the library's message when `s` is not PAGODA_OK.
template <typename E = std::runtime_error>
void check(pagoda_status_t s, const std::string &what) {
    if (s != PAGODA_OK) throw E(what + ": " + pagoda_status_string(s) + ": " + pagoda_last_error_message());
}

template <typename T, void (*Destroy)(T *)>
struct Destroyer {
    void operator()(T *p) const { Destroy(p); }
};
using Model = std::unique_ptr<pagoda_model_t, Destroyer<pagoda_model_t, pagoda_model_destroy>>;
using Mesh = std::unique_ptr<pagoda_mesh_t, Destroyer<pagoda_mesh_t, pagoda_mesh_destroy>>;
using Tokenizer = std::unique_ptr<pagoda_tokenizer_t, Destroyer<pagoda_tokenizer_t, pagoda_tokenizer_destroy>>;

// A request's prompt distributions as the engine hands them out: `[n_prompt][vocab]` entries,
// each position's most likely first; row p is the distribution of token p given tokens 0..p-1.
// Valid only until the engine is polled again.
struct PromptDistributions {
    const pagoda_logprob_t *entries = nullptr;
    size_t positions = 0;
    int64_t vocab = 0;

    // Row p (p >= 1) scattered by token id into `dense` (`vocab` floats); throws when the row
    // does not hold each id of the vocabulary exactly once.
    void scatter(size_t p, std::span<float> dense) const {
        std::fill(dense.begin(), dense.end(), std::numeric_limits<float>::quiet_NaN());
        const pagoda_logprob_t *row = entries + p * size_t(vocab);
        for (int64_t k = 0; k < vocab; ++k) {
            const int32_t id = row[k].token_id;
            if (id < 0 || id >= vocab || !std::isnan(dense[size_t(id)]))
                throw std::runtime_error("position " + std::to_string(p) + ": prompt log-probability entry " +
                                         std::to_string(k) + " has token id " + std::to_string(id) +
                                         ", outside the vocabulary or seen twice");
            dense[size_t(id)] = row[k].logprob;
        }
    }
};

// An engine of its own, with its KV cache, on the shared model: room for one request of
// `context` tokens and the one it generates.
class Scorer {
public:
    Scorer(pagoda_model_t *model, pagoda_mesh_t *mesh, int64_t vocab, int64_t context, int step_tokens,
           pagoda_quantized_matmul_t matmul)
        : vocab_(vocab) {
        constexpr int32_t kBlockSize = 16;
        pagoda_kv_cache_options_t ko;
        pagoda_kv_cache_options_default(&ko);
        ko.block_size = kBlockSize;
        ko.num_blocks = (context + 1 + kBlockSize - 1) / kBlockSize + 2;
        ko.prefix_caching = 0;  // every request is computed, none served from an earlier one
        check(pagoda_kv_cache_create(model, mesh, nullptr, &ko, &cache_), "allocating the KV cache");
        pagoda_engine_options_t eo;
        pagoda_engine_options_default(&eo);
        eo.max_num_seqs = 1;
        eo.max_num_batched_tokens = step_tokens;
        eo.quantized_matmul = matmul;
        check(pagoda_engine_create(model, mesh, nullptr, cache_, &eo, &engine_), "pagoda_engine_create");
    }
    ~Scorer() {
        pagoda_engine_destroy(engine_);
        pagoda_kv_cache_destroy(cache_);
    }
    Scorer(const Scorer &) = delete;
    Scorer &operator=(const Scorer &) = delete;

    // Runs `ids` as a prompt to the end of its request, handing its distributions to `take`
    // during the call (greedy, one generated token, which is not scored).
    template <typename Take>
    void score(std::span<const int32_t> ids, Take take) {
        pagoda_request_options_t ro;
        pagoda_request_options_default(&ro);
        ro.max_tokens = 1;
        ro.temperature = 0.0f;
        ro.prompt_logprobs = int32_t(vocab_);
        uint64_t rid = 0;
        check(pagoda_engine_submit_tokens(engine_, ids.data(), ids.size(), &ro, &rid),
              "submitting a prompt of " + std::to_string(ids.size()) + " tokens");
        bool taken = false;
        for (bool finished = false; !finished;) {
            check(pagoda_engine_step(engine_), "pagoda_engine_step");
            pagoda_output_t out{};
            out.struct_size = sizeof out;
            pagoda_status_t s;
            while ((s = pagoda_engine_poll(engine_, &out)) == PAGODA_OK) {
                if (out.request_id != rid)
                    throw std::runtime_error("output for unknown request " + std::to_string(out.request_id));
                if (out.finish_reason == PAGODA_FINISH_ERROR)
                    throw std::runtime_error(std::string("the request failed: ") +
                                             pagoda_status_string(pagoda_status_t(out.status)) + ": " + out.error);
                if (out.prompt_top_logprobs != nullptr) {
                    take(checked(out, ids));
                    taken = true;
                }
                finished = finished || out.request_finished != 0;
            }
            if (s != PAGODA_ERR_EMPTY) check(s, "pagoda_engine_poll");
        }
        if (!taken) throw std::runtime_error("the request ended without its prompt log-probabilities");
    }

private:
    // The output's distributions, after checking their layout is the one request.h gives.
    PromptDistributions checked(const pagoda_output_t &out, std::span<const int32_t> ids) const {
        if (out.n_prompt_top_logprobs != vocab_ || out.n_prompt_tokens != ids.size())
            throw std::runtime_error("prompt log-probabilities of " + std::to_string(out.n_prompt_tokens) +
                                     " positions x " + std::to_string(out.n_prompt_top_logprobs) +
                                     " entries; expected " + std::to_string(ids.size()) + " x " +
                                     std::to_string(vocab_));
        for (int64_t k = 0; k < vocab_; ++k)  // position 0 has no tokens before it
            if (out.prompt_top_logprobs[k].token_id != -1)
                throw std::runtime_error("position 0 carries a prompt log-probability");
        return PromptDistributions{out.prompt_top_logprobs, ids.size(), vocab_};
    }

    int64_t vocab_;
    pagoda_kv_cache_t *cache_ = nullptr;
    pagoda_engine_t *engine_ = nullptr;
};

// What one scored position says, reference against tested.
struct Comparison {
    double kl = 0.0;          // KL(P_ref || P_test), nats
    double abs_dlogprob = 0;  // |lp_ref - lp_test| of the actual token
    bool top1_agrees = false;
};

// The lowest id of the largest value.
int64_t argmax(std::span<const float> lp) {
    int64_t best = 0;
    for (size_t v = 1; v < lp.size(); ++v)
        if (lp[v] > lp[size_t(best)]) best = int64_t(v);
    return best;
}

Comparison compare(std::span<const float> ref, std::span<const float> test, int32_t actual) {
    Comparison c;
    for (size_t v = 0; v < ref.size(); ++v) {
        const double p = std::exp(double(ref[v]));
        if (p > 0.0) c.kl += p * (double(ref[v]) - double(test[v]));  // 0 · log 0 = 0
    }
    c.abs_dlogprob = std::fabs(double(ref[size_t(actual)]) - double(test[size_t(actual)]));
    c.top1_agrees = argmax(ref) == argmax(test);
    return c;
}

// The stream whose tokens 1..positions are scored; token 0 is BOS when the model has one (then
// every request starts with it), else the first token of the stream.
std::vector<int32_t> make_stream(const Options &o, pagoda_model_t *model, const pagoda_model_info_t &info,
                                 int64_t &positions) {
    std::vector<int32_t> t;
    if (info.bos_token_id >= 0) t.push_back(info.bos_token_id);
    const size_t want = size_t(o.positions) + 1;
    if (!o.text_path.empty()) {
        std::ifstream in(o.text_path, std::ios::binary);
        if (!in) throw BadInput("cannot read --text " + o.text_path);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        pagoda_tokenizer_t *tok_handle = nullptr;
        check<BadInput>(pagoda_tokenizer_from_model(model, &tok_handle), "--text needs the model's tokenizer");
        const Tokenizer tok(tok_handle);
        int32_t *ids = nullptr;
        size_t n_ids = 0;
        // No special tokens: BOS is added per request, and text that spells one is plain text.
        check(pagoda_tokenizer_encode(tok.get(), text.data(), text.size(), 0, &ids, &n_ids), "tokenizing --text");
        const std::unique_ptr<int32_t, void (*)(void *)> owned(ids, pagoda_free);
        for (size_t i = 0; i < n_ids && t.size() < want; ++i) {
            if (ids[i] < 0 || ids[i] >= info.vocab_size)
                throw std::runtime_error("the tokenizer gave id " + std::to_string(ids[i]) +
                                         ", outside the model's vocabulary of " + std::to_string(info.vocab_size));
            t.push_back(ids[i]);
        }
        if (t.size() < 2) throw BadInput("--text " + o.text_path + " has too few tokens to score any");
    } else {
        if (info.vocab_size < 5) throw BadInput("the vocabulary is too small for random ids");
        std::mt19937_64 rng(o.seed);
        std::uniform_int_distribution<int32_t> id(3, int32_t(info.vocab_size - 1));
        while (t.size() < want) {
            const int32_t x = id(rng);
            if (x != info.bos_token_id && x != info.eos_token_id) t.push_back(x);
        }
    }
    positions = int64_t(t.size()) - 1;
    return t;
}

// The nearest-rank quantile q of `v`.
double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    const size_t rank = size_t(std::ceil(q * double(v.size())));
    return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

int run(const Options &o) {
    const double t0 = pagoda::bench::now();
    const std::string plugin = o.plugin_dir + "/libpagoda-backend-cpu.so";
    const std::string config = "threads=" + std::to_string(o.threads);
    pagoda_backend_t *backend = nullptr;
    check<BadInput>(pagoda_backend_load(plugin.c_str(), config.c_str(), &backend), "loading " + plugin);
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = "cpu:0";
    pagoda_mesh_t *mesh_handle = nullptr;
    check(pagoda_mesh_create(&mo, &mesh_handle), "pagoda_mesh_create (cpu:0)");
    const Mesh mesh(mesh_handle);

    pagoda_model_t *model_handle = nullptr;
    check<BadInput>(pagoda_model_open(o.model_path.c_str(), nullptr, &model_handle), "opening " + o.model_path);
    const Model model(model_handle);
    pagoda_model_info_t info{};
    info.struct_size = sizeof info;
    check(pagoda_model_get_info(model.get(), &info), "pagoda_model_get_info");
    if (info.vocab_size > INT32_MAX) throw BadInput("a vocabulary of " + std::to_string(info.vocab_size) + " ids");
    if (info.max_position > 0 && o.context + 1 > info.max_position)
        throw BadInput("--context " + std::to_string(o.context) + " and the generated token do not fit the model's " +
                       std::to_string(info.max_position) + "-token context");

    int64_t positions = 0;
    const std::vector<int32_t> stream = make_stream(o, model.get(), info, positions);
    if (positions < o.positions)
        std::fprintf(stderr, "%s: --text gives %lld positions to score, not %lld\n", kProgram,
                     (long long)positions, (long long)o.positions);

    const auto vocab = size_t(info.vocab_size);
    Scorer reference(model.get(), mesh.get(), info.vocab_size, o.context, o.step_tokens,
                     PAGODA_QUANTIZED_MATMUL_EXACT);
    Scorer tested(model.get(), mesh.get(), info.vocab_size, o.context, o.step_tokens,
                  o.tested_exact ? PAGODA_QUANTIZED_MATMUL_EXACT : PAGODA_QUANTIZED_MATMUL_AUTO);
    const int64_t scored_per_request = o.context - 1;
    const int64_t requests = (positions + scored_per_request - 1) / scored_per_request;
    std::fprintf(stderr,
                 "%s: %s (%s, vocabulary %lld), %lld positions in %lld requests of up to %lld tokens, "
                 "steps of at most %d token(s), %d threads, tested engine %s\n",
                 kProgram, o.model_path.c_str(), info.architecture, (long long)info.vocab_size,
                 (long long)positions, (long long)requests, (long long)o.context, o.step_tokens, o.threads,
                 o.tested_exact ? "exact (self-check)" : "auto");

    std::vector<double> kl;
    kl.reserve(size_t(positions));
    double sum_abs_d = 0.0, max_abs_d = 0.0;
    int64_t agree = 0;
    std::vector<float> ref_rows, test_row(vocab);
    std::vector<int32_t> ids;
    for (size_t first = 1; first <= size_t(positions); first += size_t(scored_per_request)) {
        const size_t end = std::min(first + size_t(scored_per_request), size_t(positions) + 1);
        ids.assign(1, info.bos_token_id >= 0 ? info.bos_token_id : stream[first - 1]);
        ids.insert(ids.end(), stream.begin() + std::ptrdiff_t(first), stream.begin() + std::ptrdiff_t(end));
        const size_t rows = ids.size() - 1;  // positions 1.. of the request
        ref_rows.resize(rows * vocab);
        reference.score(ids, [&](const PromptDistributions &d) {
            for (size_t p = 1; p <= rows; ++p) d.scatter(p, std::span(ref_rows).subspan((p - 1) * vocab, vocab));
        });
        tested.score(ids, [&](const PromptDistributions &d) {
            for (size_t p = 1; p <= rows; ++p) {
                d.scatter(p, test_row);
                const Comparison c = compare(std::span(ref_rows).subspan((p - 1) * vocab, vocab), test_row, ids[p]);
                kl.push_back(c.kl);
                sum_abs_d += c.abs_dlogprob;
                max_abs_d = std::max(max_abs_d, c.abs_dlogprob);
                agree += c.top1_agrees ? 1 : 0;
            }
        });
    }

    const auto n = double(kl.size());
    double sum_kl = 0.0;
    for (double k : kl) sum_kl += k;
    const double mean_kl = sum_kl / n, p99_kl = quantile(kl, 0.99);
    const double max_kl = *std::max_element(kl.begin(), kl.end());
    JsonLine line;
    line.add("bench", "accuracy")
        .add("model", o.model_path)
        .add("positions", int64_t(kl.size()))
        .add("mean_abs_dlogprob", sum_abs_d / n)
        .add("max_abs_dlogprob", max_abs_d)
        .add("mean_kl", mean_kl)
        .add("p99_kl", p99_kl)
        .add("max_kl", max_kl)
        .add("top1_agreement", double(agree) / n)
        .add("step_tokens", o.step_tokens)
        .add("threads", o.threads)
        // What was compared, and over what.
        .add("tested", o.tested_exact ? "exact" : "auto")
        .add("context", o.context)
        .add("requests", requests)
        .add("vocab", info.vocab_size)
        .add("stream", o.text_path.empty() ? "random" : "text");
    line.print();
    std::fprintf(stderr,
                 "  KL mean %.3g, p99 %.3g, max %.3g nats; |delta logprob| mean %.3g, max %.3g; top-1 agreement "
                 "%.2f%% (%lld of %lld); %.1f s\n",
                 mean_kl, p99_kl, max_kl, sum_abs_d / n, max_abs_d, 100.0 * double(agree) / n, (long long)agree,
                 (long long)kl.size(), pagoda::bench::now() - t0);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    if (!parse_options(argc, argv, o)) return 2;
    try {
        return run(o);
    } catch (const BadInput &e) {
        std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
        return 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
        return 1;
    }
}
