// pagoda-bench-generate: the engine's end-to-end throughput through the public API, as one JSON
// object per line on stdout and a short summary on stderr.
//
//   pagoda-bench-generate (--model PATH | --random-model SPEC[,SPEC...]) [--dtype f32|f16|bf16]
//                         [--device cpu:0|cuda:N] [--threads N] [--batch B] [--prompt-tokens P]
//                         [--gen-tokens G] [--repeats N] [--quick] [--plugin-dir DIR] [--seed S]
//
// Measured in one run, each the median of --repeats:
//   prefill: B requests (batch 1 and batch B) of P random token ids and max_tokens 1, timed
//            from submit until all have finished: prompt tokens/s.
//   decode:  requests of 8 prompt tokens generating G tokens greedily past EOS, timed per step
//            once every prompt is prefilled: generated tokens/s and ms/step. Decode reads every
//            weight once per step (of a mixture of experts, the experts the step's tokens picked:
//            decode_weights.hpp), so weight bytes / step time is an effective bandwidth, set
//            against a streaming-read probe of this machine run just before each repeat
//            (decode_fraction_of_bandwidth is the median of these paired ratios).
//            decode_fraction_of_roofline adds the KV cache's bytes to the weights': the keys and
//            values each step's attention reads over the batch's contexts.
// Several random models (--random-model moe32,moe32-dense-active) are measured side by side:
// each repeat runs them in turn, and decode_step_ratio lines give the first one's step time over
// each other's, paired repeat by repeat, beside the ratio of the weight bytes they read.
// On a device the host cannot read (--device cuda:0), the probe is the device's own copy
// bandwidth instead, measured through the backend's interface as pagoda-bench-kernels does it
// (device-to-device copies timed by the backend's timing events, bytes read + written / time),
// and the decode lines carry the roofline fraction as the figure tests/gpu/run.sh tabulates.
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench_common.hpp"
#include "decode_weights.hpp"
#include "generate_ceilings.hpp"
#include "pagoda/pagoda.h"
#include "random_gguf.hpp"

namespace {

using pagoda::bench::BandwidthProbe;
using pagoda::bench::DeviceCopyProbe;
using pagoda::bench::RandomModelShape;
using pagoda::bench::RateSample;
using pagoda::bench::ReadProbe;
using pagoda::bench::SgemmProbe;
using pagoda::bench::StepWeights;
using pagoda::bench::TempGgufFile;

// Tokens in each decode request's prompt: short, so decode steps dominate its time.
constexpr int kDecodePromptTokens = 8;

// The GPU goals, as fractions of the decode roofline ((weights + KV bytes) per step at the
// measured copy bandwidth). At batch 1 a step of the 1b model moves ~2.5 GB, under a
// millisecond at an H100's ~3 TB/s, while the host launches ~200 kernels and waits for the
// sampled token: 0.7 leaves 30% for that overhead and for kernels slower than a plain copy. A
// larger batch reads the same weights (its 64-row matmuls stay far below the H100's ~300
// FLOP/byte ridge, so still bandwidth-bound) but adds attention over every sequence and
// per-token work: 0.6.
constexpr double kRooflineGoalBatch1 = 0.7;
constexpr double kRooflineGoalBatched = 0.6;

struct Options {
    std::string model_path;    // --model
    std::string random_model;  // --random-model: one shape, or several measured side by side
    pagoda_dtype_t dtype = PAGODA_DTYPE_F32;
    bool dtype_set = false;
    std::string plugin_dir = PAGODA_BENCH_PLUGIN_DIR;
    std::string device = "cpu:0";   // --device, as a mesh names it
    std::string device_backend = "cpu";  // its backend's name
    int32_t device_index = 0;       // and its index on that backend
    int threads = 0;  // 0 = every core
    std::string isa;  // CPU config isa=; empty = native
    std::string weights;  // CPU config weights=; empty = copy
    int batch = 8;
    int prompt_tokens = 128;
    int gen_tokens = 64;
    int repeats = 3;
    bool quick = false;
    // --decode-graphs: decode steps as recorded graphs (on), op by op (off), or both side by
    // side with a second engine on the same model, so their ratio comes from one run.
    std::string decode_graphs = "on";
    bool exact_matmul = false;  // --quantized-matmul exact
    std::string kernel_choices;  // --kernel-choices: a file from `pagoda tune`
    uint64_t seed = 1;
    size_t probe_bytes = size_t(512) << 20;
    std::string write_model;  // --write-model: write the random model there and stop
};

void usage(FILE *to) {
    std::fprintf(to,
                 "usage: pagoda-bench-generate (--model PATH | --random-model SPEC[,SPEC...]) [options]\n"
                 "  --model PATH         GGUF file or Hugging Face folder\n"
                 "  --random-model SPEC  random weights of a known shape: 110m (stories110M), tiny,\n"
                 "                       1b (Llama-3.2-1B), serve, serve-large, moe32 (Qwen3-MoE-\n"
                 "                       shaped, 32 experts, top-4), moe32-dense-active, moe32-dense-\n"
                 "                       total, moe-tiny, moe-tiny-dense-active; a comma-separated\n"
                 "                       list measures them side by side (decode_step_ratio lines)\n"
                 "  --dtype T            random model weights: f32 (default), f16 or bf16\n"
                 "  --device D           the device to serve on, as a mesh names it (default cpu:0;\n"
                 "                       e.g. cuda:0, whose plugin is loaded from --plugin-dir)\n"
                 "  --threads N          CPU backend threads (config threads=N); default every core\n"
                 "  --isa NAME           CPU kernels: native (default), avx2 or portable (config isa=)\n"
                 "  --weights W          CPU weights: copy (default; in the backend's huge-page buffers)\n"
                 "                       or mapped (read in place from the file's mapping; config weights=)\n"
                 "  --batch B            the larger batch measured besides batch 1 (default 8)\n"
                 "  --prompt-tokens P    prefill prompt length (default 128)\n"
                 "  --gen-tokens G       tokens each decode request generates (default 64)\n"
                 "  --repeats N          repeats per measurement; the median is reported (default 3)\n"
                 "  --quick              smoke run of a few seconds (tiny random model, few tokens)\n"
                 "  --decode-graphs M    on (default): decode steps launched as recorded graphs where\n"
                 "                       the backend records them; off: op by op; compare: both, each\n"
                 "                       decode repeat run once per mode, and their ratio reported\n"
                 "  --quantized-matmul M auto (default): block-quantized weights may meet 8-bit\n"
                 "                       activations where the backend takes them; exact: f32\n"
                 "  --kernel-choices F   run the kernels `pagoda tune` chose into file F (default:\n"
                 "                       the backend's own rules)\n"
                 "  --plugin-dir DIR     folder of libpagoda-backend-<name>.so (default: %s)\n"
                 "  --seed S             seed of the random weights and prompts (default 1)\n"
                 "  --write-model PATH   write the --random-model to PATH as GGUF and stop (e.g. to\n"
                 "                       quantize it with `pagoda quantize`)\n",
                 PAGODA_BENCH_PLUGIN_DIR);
}

bool parse_int(const char *text, long long lo, long long hi, long long &out) {
    char *end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
    out = v;
    return true;
}

// Splits a device name "<backend>:<index>" (`cuda:0`); false for anything else, including the
// lists and ranges a mesh accepts: this benchmark serves on one device.
bool parse_device(const std::string &spec, std::string &backend, int32_t &index) {
    const size_t colon = spec.find(':');
    if (colon == std::string::npos || colon == 0) return false;
    const std::string name = spec.substr(0, colon);
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    long long n = 0;
    if (!parse_int(spec.c_str() + colon + 1, 0, INT32_MAX, n)) return false;
    backend = name;
    index = int32_t(n);
    return true;
}

// Fills `o` from argv; false (after printing why) on a bad command line.
bool parse_options(int argc, char **argv, Options &o) {
    bool batch_set = false, prompt_set = false, gen_set = false, repeats_set = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            usage(stdout);
            std::exit(0);
        }
        if (arg == "--quick") {
            o.quick = true;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "pagoda-bench-generate: unknown option or missing value: '%s'\n",
                         arg.c_str());
            usage(stderr);
            return false;
        }
        const char *v = argv[++i];
        long long n = 0;
        auto integer = [&](long long lo, long long hi, int &field, bool *set) {
            if (!parse_int(v, lo, hi, n)) {
                std::fprintf(stderr, "pagoda-bench-generate: %s wants an integer in %lld..%lld, not '%s'\n",
                             arg.c_str(), lo, hi, v);
                return false;
            }
            field = int(n);
            if (set) *set = true;
            return true;
        };
        bool ok = true;
        if (arg == "--model") {
            o.model_path = v;
        } else if (arg == "--random-model") {
            o.random_model = v;
        } else if (arg == "--dtype") {
            const std::string d = v;
            o.dtype_set = true;
            if (d == "f32") o.dtype = PAGODA_DTYPE_F32;
            else if (d == "f16") o.dtype = PAGODA_DTYPE_F16;
            else if (d == "bf16") o.dtype = PAGODA_DTYPE_BF16;
            else {
                std::fprintf(stderr, "pagoda-bench-generate: --dtype wants f32, f16 or bf16, not '%s'\n", v);
                ok = false;
            }
        } else if (arg == "--decode-graphs") {
            o.decode_graphs = v;
            ok = o.decode_graphs == "on" || o.decode_graphs == "off" || o.decode_graphs == "compare";
            if (!ok)
                std::fprintf(stderr, "pagoda-bench-generate: --decode-graphs wants on, off or compare, not '%s'\n", v);
        } else if (arg == "--quantized-matmul") {
            const std::string m = v;
            ok = m == "auto" || m == "exact";
            o.exact_matmul = m == "exact";
            if (!ok)
                std::fprintf(stderr, "pagoda-bench-generate: --quantized-matmul wants auto or exact, not '%s'\n", v);
        } else if (arg == "--kernel-choices") {
            o.kernel_choices = v;
        } else if (arg == "--plugin-dir") {
            o.plugin_dir = v;
        } else if (arg == "--isa") {
            o.isa = v;
        } else if (arg == "--weights") {
            o.weights = v;
        } else if (arg == "--write-model") {
            o.write_model = v;
        } else if (arg == "--device") {
            o.device = v;
            ok = parse_device(o.device, o.device_backend, o.device_index);
            if (!ok)
                std::fprintf(stderr, "pagoda-bench-generate: --device wants one device as <backend>:<index> "
                                     "(cpu:0, cuda:0), not '%s'\n", v);
        } else if (arg == "--threads") {
            ok = integer(1, 1024, o.threads, nullptr);
        } else if (arg == "--batch") {
            ok = integer(1, 256, o.batch, &batch_set);
        } else if (arg == "--prompt-tokens") {
            ok = integer(1, 1 << 20, o.prompt_tokens, &prompt_set);
        } else if (arg == "--gen-tokens") {
            ok = integer(2, 1 << 20, o.gen_tokens, &gen_set);
        } else if (arg == "--repeats") {
            ok = integer(1, 1000, o.repeats, &repeats_set);
        } else if (arg == "--seed") {
            ok = parse_int(v, 0, INT64_MAX, n);
            if (!ok) std::fprintf(stderr, "pagoda-bench-generate: --seed wants a non-negative integer, not '%s'\n", v);
            o.seed = uint64_t(n);
        } else {
            std::fprintf(stderr, "pagoda-bench-generate: unknown option '%s'\n", arg.c_str());
            usage(stderr);
            ok = false;
        }
        if (!ok) return false;
    }
    if (o.quick) {
        if (o.model_path.empty() && o.random_model.empty()) o.random_model = "tiny";
        if (!batch_set) o.batch = 4;
        if (!prompt_set) o.prompt_tokens = 16;
        if (!gen_set) o.gen_tokens = 8;
        if (!repeats_set) o.repeats = 1;
        o.probe_bytes = size_t(64) << 20;
    }
    if (o.model_path.empty() == o.random_model.empty()) {
        std::fprintf(stderr, "pagoda-bench-generate: give one of --model or --random-model\n");
        usage(stderr);
        return false;
    }
    if (!o.write_model.empty() && (o.random_model.empty() || o.random_model.find(',') != std::string::npos)) {
        std::fprintf(stderr, "pagoda-bench-generate: --write-model writes one --random-model\n");
        return false;
    }
    if (!o.model_path.empty() && o.dtype_set) {
        std::fprintf(stderr, "pagoda-bench-generate: --dtype applies to --random-model only\n");
        return false;
    }
    if (o.threads == 0) o.threads = int(std::max(1u, std::thread::hardware_concurrency()));
    return true;
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Throws with the library's message when `s` is not PAGODA_OK.
void check(pagoda_status_t s, const std::string &what) {
    if (s != PAGODA_OK)
        throw std::runtime_error(what + ": " + pagoda_status_string(s) + ": " +
                                 pagoda_last_error_message());
}

// ---- JSON lines ------------------------------------------------------------------------------

class JsonLine {
public:
    JsonLine &add(const char *key, const std::string &value) {
        begin(key);
        text_ += '"';
        for (char c : value) {
            if (c == '"' || c == '\\') text_ += '\\';
            if (static_cast<unsigned char>(c) < 0x20) {
                char esc[8];
                std::snprintf(esc, sizeof esc, "\\u%04x", c);
                text_ += esc;
            } else {
                text_ += c;
            }
        }
        text_ += '"';
        return *this;
    }
    // Without this, a string literal would pick the bool overload (a standard conversion).
    JsonLine &add(const char *key, const char *value) { return add(key, std::string(value)); }
    JsonLine &add(const char *key, int64_t value) {
        begin(key);
        text_ += std::to_string(value);
        return *this;
    }
    JsonLine &add(const char *key, int value) { return add(key, int64_t(value)); }
    JsonLine &add(const char *key, bool value) {
        begin(key);
        text_ += value ? "true" : "false";
        return *this;
    }
    JsonLine &add(const char *key, double value) {
        begin(key);
        char buf[32];
        std::snprintf(buf, sizeof buf, std::isfinite(value) ? "%.6g" : "null", value);
        text_ += buf;
        return *this;
    }
    void print() const {
        std::printf("{%s}\n", text_.c_str());
        std::fflush(stdout);
    }

private:
    void begin(const char *key) {
        if (!text_.empty()) text_ += ", ";
        text_ += '"';
        text_ += key;
        text_ += "\": ";
    }
    std::string text_;
};

// ---- the model and its weights ---------------------------------------------------------------

struct ModelDescription {
    std::string label;  // the path, or "random:110m"
    std::string dtype;  // of the weights as the forward pass reads them
    double bytes_per_weight = 0.0;
    pagoda_model_info_t info{};
};

// Weight bytes one decode step of `batch` tokens reads (active) and could read (total).
StepWeights step_weight_bytes(const ModelDescription &m, int batch) {
    StepWeights w = pagoda::bench::weights_read_per_step(m.info, batch);
    w.active *= m.bytes_per_weight;
    w.total *= m.bytes_per_weight;
    return w;
}

// The weights' multiply-adds per token, through a mixture's k experts (attention's, a few
// percent at these lengths, are left out, so the fractions of sgemm slightly understate the
// arithmetic done).
double weight_flops_per_token(const ModelDescription &m) {
    return 2.0 * step_weight_bytes(m, 1).active / m.bytes_per_weight;
}

// Bytes of the files a model was opened from: the GGUF, or a folder's safetensors.
uint64_t checkpoint_bytes(const std::string &path) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(path)) return fs::file_size(path);
    uint64_t total = 0;
    for (const auto &e : fs::directory_iterator(path))
        if (e.is_regular_file() && e.path().extension() == ".safetensors") total += e.file_size();
    return total;
}

// The public API does not say a model's weight type, but the checkpoint's size per parameter
// does (within the few percent that vocabulary strings and headers add).
void describe_weights_from_files(ModelDescription &d) {
    const double ratio = double(checkpoint_bytes(d.label)) / double(d.info.n_parameters);
    auto near = [ratio](double x) { return std::fabs(ratio - x) / x < 0.1; };
    if (near(4.0)) {
        d.dtype = "f32";
        d.bytes_per_weight = 4.0;
    } else if (near(2.0)) {
        d.dtype = "f16/bf16";
        d.bytes_per_weight = 2.0;
    } else {
        // Block-quantized (kept so on the CPU backend): the file's bytes per weight, which a
        // mix of types (Q4_K_M's Q6_K tensors) averages over.
        char label[64];
        std::snprintf(label, sizeof label, "quantized, %.3f bytes/weight", ratio);
        d.dtype = label;
        d.bytes_per_weight = ratio;
    }
}

// ---- the engine session ----------------------------------------------------------------------

// An engine and the KV cache it serves from.
struct Server {
    pagoda_kv_cache_t *cache = nullptr;
    pagoda_engine_t *engine = nullptr;
};

// What one request produced.
struct RequestState {
    size_t generated = 0;
    size_t prompt = 0;
    pagoda_finish_reason_t finish = PAGODA_FINISH_NONE;
};

class Session {
public:
    // Prompts are ids drawn uniformly from [0, vocab_size), with their own seed.
    Session(const Server &h, int64_t vocab_size, uint64_t seed)
        : h_(h), vocab_size_(vocab_size), rng_(seed ^ 0x5EEDull) {}

    // Submits `batch` requests of `prompt_len` random ids generating `max_tokens` greedily.
    void submit(int batch, int prompt_len, int max_tokens) {
        requests_.clear();
        std::uniform_int_distribution<int32_t> id(0, int32_t(vocab_size_ - 1));
        std::vector<std::vector<int32_t>> prompts(size_t(batch), std::vector<int32_t>(size_t(prompt_len), 0));
        for (auto &p : prompts)
            for (auto &t : p) t = id(rng_);
        pagoda_request_options_t ro;
        pagoda_request_options_default(&ro);
        ro.max_tokens = max_tokens;
        ro.temperature = 0.0f;
        ro.flags = PAGODA_REQUEST_IGNORE_EOS;
        submit_time_ = now();
        for (const auto &p : prompts) {
            uint64_t rid = 0;
            check(pagoda_engine_submit_tokens(h_.engine, p.data(), p.size(), &ro, &rid),
                  "submitting a prompt of " + std::to_string(p.size()) + " tokens");
            requests_[rid] = RequestState{};
        }
    }
    double submit_time() const { return submit_time_; }

    // One engine step and every output it queued; returns the tokens generated in it.
    size_t step() {
        check(pagoda_engine_step(h_.engine), "pagoda_engine_step");
        size_t tokens = 0;
        pagoda_output_t out;
        std::memset(&out, 0, sizeof out);
        out.struct_size = sizeof out;
        while (pagoda_engine_poll(h_.engine, &out) == PAGODA_OK) {
            auto it = requests_.find(out.request_id);
            if (it == requests_.end())
                throw std::runtime_error("output for unknown request " + std::to_string(out.request_id));
            if (out.finish_reason == PAGODA_FINISH_ERROR)
                throw std::runtime_error("request " + std::to_string(out.request_id) +
                                         " failed: " + pagoda_status_string(static_cast<pagoda_status_t>(out.status)) + ": " +
                                         out.error);
            it->second.generated += out.n_tokens;
            it->second.prompt = out.n_prompt_tokens;
            it->second.finish = static_cast<pagoda_finish_reason_t>(out.finish_reason);
            tokens += out.n_tokens;
        }
        return tokens;
    }
    bool has_work() const { return pagoda_engine_has_work(h_.engine) != 0; }
    bool all_started() const {
        for (const auto &[id, r] : requests_)
            if (r.generated == 0) return false;
        return true;
    }

    // Keys (and values) the remaining decode forwards will read, summed over the requests, when
    // each has a prompt of `prompt` and ends after `generated` tokens: the forward that feeds a
    // request's k-th generated token sits at position prompt + k - 1 and attends to prompt + k
    // positions, for k from the tokens it has so far up to generated - 1.
    int64_t keys_still_to_attend(int64_t prompt, int64_t generated) const {
        int64_t keys = 0;
        for (const auto &[id, r] : requests_)
            for (int64_t k = int64_t(r.generated); k < generated; ++k) keys += prompt + k;
        return keys;
    }

    // Every request ended by length with `generated` tokens after a prompt of `prompt`, and the
    // cache has all its blocks back; throws naming `what` otherwise.
    void verify(const std::string &what, size_t prompt, size_t generated) const {
        for (const auto &[id, r] : requests_)
            if (r.finish != PAGODA_FINISH_LENGTH || r.generated != generated || r.prompt != prompt)
                throw std::runtime_error(what + ": request " + std::to_string(id) + " ended with reason " +
                                         std::to_string(int(r.finish)) + " after " +
                                         std::to_string(r.generated) + " tokens (prompt " +
                                         std::to_string(r.prompt) + "); expected LENGTH after " +
                                         std::to_string(generated) + " (prompt " +
                                         std::to_string(prompt) + ")");
        pagoda_kv_cache_stats_t st;
        std::memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        check(pagoda_kv_cache_get_stats(h_.cache, &st), "pagoda_kv_cache_get_stats");
        if (st.blocks_used != 0)
            throw std::runtime_error(what + ": every request has finished but the KV cache still lends " +
                                     std::to_string(st.blocks_used) + " of " +
                                     std::to_string(st.blocks_total) + " blocks to " +
                                     std::to_string(st.sequences) + " sequences");
    }

private:
    const Server &h_;
    int64_t vocab_size_;
    std::mt19937_64 rng_;
    std::unordered_map<uint64_t, RequestState> requests_;
    double submit_time_ = 0.0;
};

// Seconds from submitting `batch` prompts of `prompt_len` (max_tokens 1) until all finished.
double run_prefill(Session &s, int batch, int prompt_len) {
    s.submit(batch, prompt_len, 1);
    while (s.has_work()) s.step();
    const double seconds = now() - s.submit_time();
    s.verify("prefill of batch " + std::to_string(batch), size_t(prompt_len), 1);
    return seconds;
}

struct DecodeRun {
    double seconds = 0.0;  // the decode steps only
    int64_t steps = 0;
    int64_t tokens = 0;
    int64_t keys_attended = 0;  // KV positions the timed steps' attention read, over the batch
};

// `batch` requests of kDecodePromptTokens generating `gen` each; only the steps after every
// prompt has been prefilled (each request has its first token) are timed.
DecodeRun run_decode(Session &s, int batch, int gen) {
    s.submit(batch, kDecodePromptTokens, gen);
    while (s.has_work() && !s.all_started()) s.step();
    DecodeRun r;
    r.keys_attended = s.keys_still_to_attend(kDecodePromptTokens, gen);
    const double t0 = now();
    while (s.has_work()) {
        r.tokens += int64_t(s.step());
        ++r.steps;
    }
    r.seconds = now() - t0;
    s.verify("decode of batch " + std::to_string(batch), kDecodePromptTokens, size_t(gen));
    if (r.steps == 0) throw std::runtime_error("decode of batch " + std::to_string(batch) + ": no decode steps ran");
    return r;
}

// The fields every line starts with.
JsonLine line_start(const ModelDescription &m, const Options &o, const char *measurement) {
    JsonLine l;
    l.add("bench", "generate")
        .add("model", m.label)
        .add("params", int64_t(m.info.n_parameters))
        .add("dtype", m.dtype)
        .add("threads", o.threads)
        .add("device", o.device)
        .add("measurement", measurement);
    return l;
}

// A model under measurement, with its engine (and, with --decode-graphs compare, an op-by-op
// twin on the same weights). Several are measured side by side, their repeats interleaved, so
// that ratios between them come from one run.
struct Contender {
    ModelDescription desc;
    pagoda_model_t *model = nullptr;
    Server main;
    Server op_by_op;
    std::optional<Session> session;
    std::optional<Session> op_by_op_session;
    double kv_bytes_per_token = 0.0;  // one cached token across all layers, K and V

    Contender() = default;
    Contender(const Contender &) = delete;
    Contender &operator=(const Contender &) = delete;
    ~Contender() {
        for (Server *s : {&op_by_op, &main}) {
            pagoda_engine_destroy(s->engine);
            pagoda_kv_cache_destroy(s->cache);
        }
        pagoda_model_destroy(model);
    }
};

// Opens `spec` (a --model path, or a --random-model shape written to a temporary file) on
// `mesh` with its engines.
std::unique_ptr<Contender> open_contender(const Options &o, pagoda_mesh_t *mesh, const std::string &spec) {
    auto c = std::make_unique<Contender>();
    ModelDescription &desc = c->desc;
    std::optional<TempGgufFile> temp;
    std::string path = spec;
    if (!o.random_model.empty()) {
        const RandomModelShape shape = pagoda::bench::random_model_shape(spec);
        temp.emplace();
        const double t0 = now();
        pagoda::bench::write_random_gguf(temp->path(), shape, o.dtype, o.seed);
        std::fprintf(stderr, "pagoda-bench-generate: wrote random %s model (%s) to %s in %.1f s\n",
                     shape.name.c_str(), pagoda_dtype_name(o.dtype), temp->path().c_str(), now() - t0);
        path = temp->path();
        desc.label = "random:" + shape.name;
        desc.dtype = pagoda_dtype_name(o.dtype);
        desc.bytes_per_weight = double(pagoda_dtype_size(o.dtype));
    } else {
        desc.label = spec;
    }

    check(pagoda_model_open(path.c_str(), nullptr, &c->model), "opening " + path);
    desc.info.struct_size = sizeof desc.info;
    check(pagoda_model_get_info(c->model, &desc.info), "pagoda_model_get_info");
    if (temp) temp->remove();  // the mapping keeps the data; nothing is left behind on any exit
    if (o.random_model.empty()) describe_weights_from_files(desc);
    const pagoda_model_info_t &info = desc.info;

    const int64_t longest = std::max<int64_t>(o.prompt_tokens + 1, kDecodePromptTokens + o.gen_tokens);
    if (longest > info.max_position)
        throw std::runtime_error(desc.label + ": a context of " + std::to_string(info.max_position) +
                                 " tokens cannot hold " + std::to_string(longest) +
                                 " (lower --prompt-tokens or --gen-tokens)");

    // Room for the largest batch at the longest length, a spare block per sequence for the token
    // being sampled, and a few over: no measurement may wait for blocks or be preempted.
    constexpr int32_t kBlockSize = 16;
    const int64_t blocks_per_seq = (longest + kBlockSize - 1) / kBlockSize + 1;
    pagoda_kv_cache_options_t ko;
    pagoda_kv_cache_options_default(&ko);
    ko.block_size = kBlockSize;
    ko.num_blocks = int64_t(std::max(o.batch, 1)) * blocks_per_seq + 4;
    auto make_server = [&](Server &server, bool graphs) {
        check(pagoda_kv_cache_create(c->model, mesh, nullptr, &ko, &server.cache),
              "allocating a KV cache of " + std::to_string(ko.num_blocks) + " blocks");
        pagoda_engine_options_t eo;
        pagoda_engine_options_default(&eo);
        eo.max_num_seqs = std::max(eo.max_num_seqs, o.batch);
        eo.decode_graphs = graphs ? PAGODA_DECODE_GRAPHS_ON : PAGODA_DECODE_GRAPHS_OFF;
        if (o.exact_matmul) eo.quantized_matmul = PAGODA_QUANTIZED_MATMUL_EXACT;
        if (!o.kernel_choices.empty()) eo.kernel_choices_file = o.kernel_choices.c_str();
        check(pagoda_engine_create(c->model, mesh, nullptr, server.cache, &eo, &server.engine),
              "pagoda_engine_create");
    };
    make_server(c->main, o.decode_graphs != "off");
    c->session.emplace(c->main, info.vocab_size, o.seed);
    if (o.decode_graphs == "compare") {
        make_server(c->op_by_op, false);
        c->op_by_op_session.emplace(c->op_by_op, info.vocab_size, o.seed);
    }
    // The cache's own block size says what a token costs in whatever dtype the cache chose (F32
    // on a CPU, F16 on a GPU by default).
    pagoda_kv_cache_stats_t cache_stats;
    std::memset(&cache_stats, 0, sizeof cache_stats);
    cache_stats.struct_size = sizeof cache_stats;
    check(pagoda_kv_cache_get_stats(c->main.cache, &cache_stats), "pagoda_kv_cache_get_stats");
    c->kv_bytes_per_token = double(cache_stats.bytes_per_block) / double(cache_stats.block_size);
    return c;
}

// The ceilings a measurement is set against, measured before the engines start working.
struct Ceilings {
    std::unique_ptr<BandwidthProbe> probe;  // sampled again before each decode repeat
    bool on_cpu = true;
    uint64_t llc = 0;
    std::optional<SgemmProbe> sgemm;  // the CPU's arithmetic ceiling, for prefill and batched decode
    double sgemm_flops = 0.0;
};

// Prefill at batch 1 and --batch, each contender's repeats interleaved with the others'.
void measure_prefill(const Options &o, std::vector<std::unique_ptr<Contender>> &contenders, Ceilings &ceil,
                     const std::vector<int> &batches) {
    for (int b : batches) {
        std::vector<std::vector<double>> rates(contenders.size()), fractions(contenders.size());
        for (int r = 0; r < o.repeats; ++r) {
            for (size_t i = 0; i < contenders.size(); ++i) {
                Contender &c = *contenders[i];
                rates[i].push_back(double(b) * o.prompt_tokens / run_prefill(*c.session, b, o.prompt_tokens));
                // Each repeat against its own sgemm sample, taken just after it.
                if (ceil.sgemm)
                    fractions[i].push_back(rates[i].back() * weight_flops_per_token(c.desc) /
                                           ceil.sgemm->sample(1).median);
            }
        }
        for (size_t i = 0; i < contenders.size(); ++i) {
            const ModelDescription &desc = contenders[i]->desc;
            const double flops_per_token = weight_flops_per_token(desc);
            const double tps = median(rates[i]);
            JsonLine line = line_start(desc, o, "prefill");
            line.add("batch", b)
                .add("prompt_tokens", o.prompt_tokens)
                .add("generated_tokens", 1)
                .add("repeats", o.repeats)
                .add("seconds", double(b) * o.prompt_tokens / tps)
                .add("tokens_per_s", tps)
                .add("best_tokens_per_s", *std::max_element(rates[i].begin(), rates[i].end()));
            if (ceil.sgemm)
                line.add("weight_flops_per_token", flops_per_token).add("fraction_of_sgemm", median(fractions[i]));
            line.print();
            std::fprintf(stderr, "  prefill batch %3d x %d tokens: %9.1f prompt tokens/s", b, o.prompt_tokens, tps);
            if (ceil.sgemm)
                std::fprintf(stderr, ", %.1f GFLOP/s of weights = %.0f%% of sgemm's", tps * flops_per_token / 1e9,
                             100.0 * median(fractions[i]));
            std::fprintf(stderr, "%s%s\n", contenders.size() > 1 ? " -- " : "",
                         contenders.size() > 1 ? desc.label.c_str() : "");
        }
    }
}

// One contender's decode repeats at one batch size.
struct DecodeSamples {
    std::vector<double> rates, step_ms, paired_bandwidth, fractions, kv_bytes, roofline_fractions;
    std::vector<double> op_by_op_rates, graph_speedups;
};

void report_decode(const Options &o, const Contender &c, int b, const DecodeSamples &s, const Ceilings &ceil,
                   bool several) {
    const ModelDescription &desc = c.desc;
    const StepWeights weights = step_weight_bytes(desc, b);
    const double flops_per_token = weight_flops_per_token(desc);
    const double ms = median(s.step_ms);
    const double effective = weights.active / (ms / 1e3);
    const double fraction = median(s.fractions);
    const double roofline_fraction = median(s.roofline_fractions);
    // Every weight a step may read takes its turn through the cache: all of a mixture's experts.
    const bool weights_cached = ceil.llc > 0 && weights.total <= double(ceil.llc);
    JsonLine line = line_start(desc, o, "decode");
    line.add("batch", b)
        .add("decode_graphs", o.decode_graphs == "off" ? "off" : "on")
        .add("prompt_tokens", kDecodePromptTokens)
        .add("generated_tokens", o.gen_tokens)
        .add("repeats", o.repeats)
        .add("tokens_per_s", median(s.rates))
        .add("best_tokens_per_s", *std::max_element(s.rates.begin(), s.rates.end()))
        .add("ms_per_step", ms)
        .add("min_ms_per_step", *std::min_element(s.step_ms.begin(), s.step_ms.end()))
        .add("max_ms_per_step", *std::max_element(s.step_ms.begin(), s.step_ms.end()))
        .add("weight_bytes_per_step", int64_t(weights.active))
        .add("total_weight_bytes", int64_t(weights.total))
        .add("active_weight_fraction", weights.active / weights.total);
    if (desc.info.n_experts > 0)
        line.add("experts", desc.info.n_experts)
            .add("experts_per_token", desc.info.experts_per_token)
            .add("expected_distinct_experts", weights.distinct_experts)
            .add("expert_bytes_model", "uniform-routing expectation");
    line.add("effective_gb_per_s", effective / 1e9)
        .add("bandwidth_gb_per_s", median(s.paired_bandwidth) / 1e9)
        .add("decode_fraction_of_bandwidth", fraction)
        .add("min_decode_fraction_of_bandwidth", *std::min_element(s.fractions.begin(), s.fractions.end()))
        .add("max_decode_fraction_of_bandwidth", *std::max_element(s.fractions.begin(), s.fractions.end()));
    if (ceil.llc > 0) line.add("weights_fit_in_llc", weights_cached);
    line.add("bandwidth_source", ceil.on_cpu ? "read_probe" : "device_copy")
        .add("kv_bytes_per_token", int64_t(c.kv_bytes_per_token))
        .add("kv_bytes_per_step", int64_t(median(s.kv_bytes)))
        .add("decode_fraction_of_roofline", roofline_fraction);
    // Batched decode also does b tokens' arithmetic per step: against the sgemm rate.
    const double compute_fraction = ceil.sgemm ? median(s.rates) * flops_per_token / ceil.sgemm_flops : 0.0;
    if (ceil.sgemm) line.add("decode_fraction_of_sgemm", compute_fraction);
    if (!ceil.on_cpu) {
        // The figure tests/gpu/run.sh tabulates against its goal, as the kernel benchmark's
        // lines carry theirs.
        line.add("figure_name", "decode fraction of roofline")
            .add("figure", roofline_fraction)
            .add("goal", b == 1 ? kRooflineGoalBatch1 : kRooflineGoalBatched);
    }
    line.print();
    if (several) std::fprintf(stderr, "  %s:\n", desc.label.c_str());
    std::fprintf(stderr,
                 "  decode  batch %3d: %9.1f tokens/s, %7.2f ms/step, %.2f GB/s of weights = "
                 "%.0f%% of the %s bandwidth%s; with %.1f MB of KV: %.0f%% of the roofline\n",
                 b, median(s.rates), ms, effective / 1e9, 100.0 * fraction, ceil.on_cpu ? "read" : "copy",
                 weights_cached ? " (weights fit in the last-level cache)" : "", median(s.kv_bytes) / 1e6,
                 100.0 * roofline_fraction);
    if (desc.info.n_experts > 0)
        std::fprintf(stderr, "                     %.1f of %lld experts per layer read (expected): "
                             "%.1f of %.1f MB\n",
                     weights.distinct_experts, (long long)desc.info.n_experts, weights.active / 1e6,
                     weights.total / 1e6);
    if (ceil.sgemm)
        std::fprintf(stderr, "                     %.1f GFLOP/s of weights = %.0f%% of sgemm's\n",
                     median(s.rates) * flops_per_token / 1e9, 100.0 * compute_fraction);
    if (c.op_by_op_session) {
        line_start(desc, o, "decode_graph_speedup")
            .add("batch", b)
            .add("repeats", o.repeats)
            .add("graphs_tokens_per_s", median(s.rates))
            .add("op_by_op_tokens_per_s", median(s.op_by_op_rates))
            .add("speedup", median(s.graph_speedups))
            .print();
        std::fprintf(stderr, "  decode  batch %3d op by op: %9.1f tokens/s; graphs are %.2fx as fast\n", b,
                     median(s.op_by_op_rates), median(s.graph_speedups));
    }
}

// The first contender's decode step time over another's, repeat by repeat (each pair taken in
// the same moment), beside the ratio of the weight bytes they read: equal when a step's time
// is its weight reads, as a mixture of experts' should be against a dense model of its active size.
void report_decode_ratio(const Options &o, const Contender &first, const DecodeSamples &first_samples,
                         const Contender &other, const DecodeSamples &other_samples, int b) {
    std::vector<double> ratios;
    for (size_t r = 0; r < first_samples.step_ms.size(); ++r)
        ratios.push_back(first_samples.step_ms[r] / other_samples.step_ms[r]);
    const double bytes_ratio =
        step_weight_bytes(first.desc, b).active / step_weight_bytes(other.desc, b).active;
    line_start(first.desc, o, "decode_step_ratio")
        .add("batch", b)
        .add("versus", other.desc.label)
        .add("repeats", o.repeats)
        .add("step_time_ratio", median(ratios))
        .add("min_step_time_ratio", *std::min_element(ratios.begin(), ratios.end()))
        .add("max_step_time_ratio", *std::max_element(ratios.begin(), ratios.end()))
        .add("weight_bytes_ratio", bytes_ratio)
        .print();
    std::fprintf(stderr,
                 "  decode  batch %3d: %s steps take %.2fx (%.2f-%.2f) %s's, reading %.2fx its weight bytes\n",
                 b, first.desc.label.c_str(), median(ratios), *std::min_element(ratios.begin(), ratios.end()),
                 *std::max_element(ratios.begin(), ratios.end()), other.desc.label.c_str(), bytes_ratio);
}

// Decode at batch 1 and --batch: per repeat, each contender in turn, each paired with its own
// bandwidth sample.
void measure_decode(const Options &o, std::vector<std::unique_ptr<Contender>> &contenders, Ceilings &ceil,
                    const std::vector<int> &batches) {
    for (int b : batches) {
        std::vector<DecodeSamples> samples(contenders.size());
        for (int r = 0; r < o.repeats; ++r) {
            for (size_t i = 0; i < contenders.size(); ++i) {
                Contender &c = *contenders[i];
                DecodeSamples &s = samples[i];
                const double weight_bytes = step_weight_bytes(c.desc, b).active;
                if (c.op_by_op_session) {
                    // Each repeat pairs the two modes back to back, so both see the same moment.
                    const DecodeRun eager = run_decode(*c.op_by_op_session, b, o.gen_tokens);
                    s.op_by_op_rates.push_back(double(eager.tokens) / eager.seconds);
                }
                const double bw = ceil.probe->sample(3).median;
                const DecodeRun d = run_decode(*c.session, b, o.gen_tokens);
                if (c.op_by_op_session)
                    s.graph_speedups.push_back(double(d.tokens) / d.seconds / s.op_by_op_rates.back());
                const double step_seconds = d.seconds / double(d.steps);
                const double kv_step_bytes = c.kv_bytes_per_token * double(d.keys_attended) / double(d.steps);
                s.rates.push_back(double(d.tokens) / d.seconds);
                s.step_ms.push_back(1e3 * step_seconds);
                s.paired_bandwidth.push_back(bw);
                s.fractions.push_back(weight_bytes / step_seconds / bw);
                s.kv_bytes.push_back(kv_step_bytes);
                s.roofline_fractions.push_back((weight_bytes + kv_step_bytes) / step_seconds / bw);
            }
        }
        for (size_t i = 0; i < contenders.size(); ++i)
            report_decode(o, *contenders[i], b, samples[i], ceil, contenders.size() > 1);
        for (size_t i = 1; i < contenders.size(); ++i)
            report_decode_ratio(o, *contenders[0], samples[0], *contenders[i], samples[i], b);
    }
}

// The names --random-model lists, or the one --model.
std::vector<std::string> model_specs(const Options &o) {
    if (o.random_model.empty()) return {o.model_path};
    std::vector<std::string> specs;
    size_t start = 0;
    for (size_t comma; (comma = o.random_model.find(',', start)) != std::string::npos; start = comma + 1)
        specs.push_back(o.random_model.substr(start, comma - start));
    specs.push_back(o.random_model.substr(start));
    return specs;
}

int run(const Options &o) {
    if (!o.write_model.empty()) {
        pagoda::bench::write_random_gguf(o.write_model, pagoda::bench::random_model_shape(o.random_model),
                                         o.dtype, o.seed);
        std::printf("%s: random %s model in %s\n", o.write_model.c_str(), o.random_model.c_str(),
                    pagoda_dtype_name(o.dtype));
        return 0;
    }
    // The CPU backend first, with our thread count: the mesh uses loaded backends and looks
    // only on the default search path for the others. So another device's backend is loaded
    // here too, from the same folder (with no configuration: only the CPU backend takes a
    // thread count, and the others refuse keys they do not know).
    const std::string plugin = o.plugin_dir + "/libpagoda-backend-cpu.so";
    const std::string config = "threads=" + std::to_string(o.threads) + (o.isa.empty() ? "" : ",isa=" + o.isa) +
                               (o.weights.empty() ? "" : ",weights=" + o.weights);
    pagoda_backend_t *backend = nullptr;
    check(pagoda_backend_load(plugin.c_str(), config.c_str(), &backend), "loading " + plugin);
    Ceilings ceil;
    ceil.on_cpu = o.device_backend == "cpu";
    pagoda_backend_t *device_backend = backend;
    if (!ceil.on_cpu) {
        const std::string device_plugin = o.plugin_dir + "/libpagoda-backend-" + o.device_backend + ".so";
        check(pagoda_backend_load(device_plugin.c_str(), nullptr, &device_backend),
              "loading " + device_plugin + " for --device " + o.device);
    }

    // The mesh before the models, so that a device that is not there fails the run before
    // gigabytes of random weights are written; the contenders, declared after it, go first.
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = o.device.c_str();
    pagoda_mesh_t *mesh_handle = nullptr;
    check(pagoda_mesh_create(&mo, &mesh_handle), "pagoda_mesh_create (" + o.device + ")");
    const std::unique_ptr<pagoda_mesh_t, void (*)(pagoda_mesh_t *)> mesh(mesh_handle, pagoda_mesh_destroy);
    std::vector<std::unique_ptr<Contender>> contenders;
    for (const std::string &spec : model_specs(o)) contenders.push_back(open_contender(o, mesh.get(), spec));

    for (const auto &c : contenders)
        std::fprintf(stderr,
                     "pagoda-bench-generate: %s, %.1fM parameters, %s, %s, %d threads, median of %d, "
                     "kernels by %s\n",
                     c->desc.label.c_str(), double(c->desc.info.n_parameters) / 1e6, c->desc.dtype.c_str(),
                     o.device.c_str(), o.threads, o.repeats,
                     o.kernel_choices.empty() ? "the backend's rules" : o.kernel_choices.c_str());
    const ModelDescription &desc = contenders.front()->desc;  // the ceilings' lines name the first

    // The bandwidth ceiling, measured before the engines start working; decode repeats are
    // paired with their own probe below. On the CPU, the machine's read bandwidth; on another
    // device, its copy bandwidth (1 GiB buffers, as pagoda-bench-kernels uses).
    if (ceil.on_cpu) {
        ceil.probe = std::make_unique<ReadProbe>(o.probe_bytes, o.threads);
        ceil.llc = pagoda::bench::last_level_cache_bytes();
        const RateSample first = ceil.probe->sample(std::max(o.repeats, 5));
        line_start(desc, o, "read_bandwidth")
            .add("bytes", int64_t(ceil.probe->bytes()))
            .add("gb_per_s", first.median / 1e9)
            .add("best_gb_per_s", first.best / 1e9)
            .add("llc_bytes", int64_t(ceil.llc))
            .add("loadavg_1m", pagoda::bench::load_average())
            .print();
        std::fprintf(stderr, "  read bandwidth (%d threads): %.2f GB/s median\n", o.threads, first.median / 1e9);
        ceil.sgemm.emplace(o.threads, o.quick);
        const RateSample rate = ceil.sgemm->sample(std::max(o.repeats, 3));
        ceil.sgemm_flops = rate.median;
        line_start(desc, o, "sgemm")
            .add("size", 1536)
            .add("gflop_per_s", rate.median / 1e9)
            .add("best_gflop_per_s", rate.best / 1e9)
            .print();
        std::fprintf(stderr, "  sgemm (%d threads): %.1f GFLOP/s median\n", o.threads, rate.median / 1e9);
    } else {
        const size_t buffer_bytes = o.quick ? size_t(64) << 20 : size_t(1) << 30;
        auto copy_probe = std::make_unique<DeviceCopyProbe>(device_backend, o.device_backend,
                                                            o.device_index, buffer_bytes, o.quick);
        const std::string device_name = copy_probe->device_info().name;
        ceil.probe = std::move(copy_probe);
        const RateSample first = ceil.probe->sample(std::max(o.repeats, 5));
        line_start(desc, o, "device_copy_bandwidth")
            .add("device_name", device_name)
            .add("bytes", int64_t(ceil.probe->bytes()))
            .add("gb_per_s", first.median / 1e9)
            .add("best_gb_per_s", first.best / 1e9)
            .add("loadavg_1m", pagoda::bench::load_average())
            .print();
        std::fprintf(stderr, "  copy bandwidth of %s (%s, read + written): %.1f GB/s median\n",
                     o.device.c_str(), device_name.c_str(), first.median / 1e9);
    }

    // Warm-up at the largest shapes: pages, caches, the backend's thread pool and the engine's
    // step buffers, which grow to the largest batch seen, all outside every timing. Decode at
    // batch 1 too, so that each measured batch's graph is recorded before it is timed.
    for (const auto &c : contenders) {
        run_prefill(*c->session, o.batch, o.prompt_tokens);
        run_decode(*c->session, o.batch, std::min(o.gen_tokens, 4));
        run_decode(*c->session, 1, 4);
        if (c->op_by_op_session) run_decode(*c->op_by_op_session, o.batch, std::min(o.gen_tokens, 4));
    }

    std::vector<int> batches{1};
    if (o.batch > 1) batches.push_back(o.batch);
    measure_prefill(o, contenders, ceil, batches);
    measure_decode(o, contenders, ceil, batches);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    if (!parse_options(argc, argv, o)) return 2;
    try {
        return run(o);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pagoda-bench-generate: %s\n", e.what());
        return 1;
    }
}
