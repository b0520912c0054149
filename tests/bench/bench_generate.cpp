// pagoda-bench-generate: the engine's end-to-end throughput through the public API, as one JSON
// object per line on stdout and a short summary on stderr.
//
//   pagoda-bench-generate (--model PATH | --random-model 110m|tiny|1b|...) [--dtype f32|f16|bf16]
//                         [--device cpu:0|cuda:N] [--threads N] [--batch B] [--prompt-tokens P]
//                         [--gen-tokens G] [--repeats N] [--quick] [--plugin-dir DIR] [--seed S]
//
// Measured in one run, each the median of --repeats:
//   prefill: B requests (batch 1 and batch B) of P random token ids and max_tokens 1, timed
//            from submit until all have finished: prompt tokens/s.
//   decode:  requests of 8 prompt tokens generating G tokens greedily past EOS, timed per step
//            once every prompt is prefilled: generated tokens/s and ms/step. Decode reads every
//            weight once per step, so weight bytes / step time is an effective bandwidth, set
//            against a streaming-read probe of this machine run just before each repeat
//            (decode_fraction_of_bandwidth is the median of these paired ratios).
//            decode_fraction_of_roofline adds the KV cache's bytes to the weights': the keys and
//            values each step's attention reads over the batch's contexts.
// On a device the host cannot read (--device cuda:0), the probe is the device's own copy
// bandwidth instead, measured through the backend's interface as pagoda-bench-kernels does it
// (device-to-device copies timed by the backend's timing events, bytes read + written / time),
// and the decode lines carry the roofline fraction as the figure tests/gpu/run.sh tabulates.
#include <algorithm>
#include <atomic>
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

// OpenBLAS's header declares C99 _Complex types, which -Wpedantic flags in C++ under clang.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cblas.h>
#pragma GCC diagnostic pop

#include "bench_common.hpp"
#include "pagoda/pagoda.h"
#include "random_gguf.hpp"

namespace {

using pagoda::bench::RandomModelShape;
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
    std::string random_model;  // --random-model
    pagoda_dtype_t dtype = PAGODA_DTYPE_F32;
    bool dtype_set = false;
    std::string plugin_dir = PAGODA_BENCH_PLUGIN_DIR;
    std::string device = "cpu:0";   // --device, as a mesh names it
    std::string device_backend = "cpu";  // its backend's name
    int32_t device_index = 0;       // and its index on that backend
    int threads = 0;  // 0 = every core
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
                 "usage: pagoda-bench-generate (--model PATH | --random-model SPEC) [options]\n"
                 "  --model PATH         GGUF file or Hugging Face folder\n"
                 "  --random-model SPEC  random weights of a known shape: 110m (stories110M), tiny,\n"
                 "                       1b (Llama-3.2-1B), serve or serve-large\n"
                 "  --dtype T            random model weights: f32 (default), f16 or bf16\n"
                 "  --device D           the device to serve on, as a mesh names it (default cpu:0;\n"
                 "                       e.g. cuda:0, whose plugin is loaded from --plugin-dir)\n"
                 "  --threads N          CPU backend threads (config threads=N); default every core\n"
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
    if (!o.write_model.empty() && o.random_model.empty()) {
        std::fprintf(stderr, "pagoda-bench-generate: --write-model writes a --random-model\n");
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

// ---- the bandwidth probes --------------------------------------------------------------------

// A rate over a few passes of a probe (bytes/s of the bandwidth probes, FLOP/s of the sgemm
// probe): their median and their best.
struct RateSample {
    double median = 0.0;
    double best = 0.0;
};

// The bandwidth a decode step's reads are set against, measured again before each decode
// repeat so that both sides of a ratio see the same moment.
class BandwidthProbe {
public:
    virtual ~BandwidthProbe() = default;
    // Bytes one pass counts as moved.
    virtual size_t bytes() const = 0;
    virtual RateSample sample(int passes) const = 0;
};

// Sums n words as four interleaved streams (the four quarters, read in lockstep). A GEMV reads
// several weight rows at once, and several streams per core draw more bandwidth than one (15-20%
// on the 2-core EPYC VM this was written on, where a one-stream probe had batch-1 decode of the
// 110m shape at 105-109% of its "ceiling").
// target_clones picks the AVX2 build where the processor has one.
__attribute__((target_clones("avx2", "default"))) uint64_t sum_words(const uint64_t *p, size_t n) {
    const size_t q = n / 4;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < q; ++i) {
        s0 += p[i];
        s1 += p[q + i];
        s2 += p[2 * q + i];
        s3 += p[3 * q + i];
    }
    for (size_t i = 4 * q; i < n; ++i) s0 += p[i];
    return s0 + s1 + s2 + s3;
}

std::atomic<uint64_t> g_sink{0};  // keeps the sums alive

// Runs `body(begin, end)` on `threads` threads over [0, n) in contiguous ranges.
template <typename Body>
void parallel(int threads, size_t n, Body body) {
    std::vector<std::thread> pool;
    const size_t per = (n + size_t(threads) - 1) / size_t(threads);
    for (int t = 1; t < threads; ++t) {
        const size_t b = std::min(n, per * size_t(t)), e = std::min(n, b + per);
        pool.emplace_back([=] { body(b, e); });
    }
    body(0, std::min(n, per));
    for (auto &th : pool) th.join();
}

// Sums a buffer far larger than the last-level cache with the benchmark's thread count: the
// access pattern of a decode step's weight reads, at the speed plain loads reach. The buffer is
// kept so that the probe can run again right before each decode repeat: on a shared machine the
// bandwidth on offer moves with the neighbours' load, and a ratio is only fair between
// measurements taken in the same moment.
class ReadProbe final : public BandwidthProbe {
public:
    ReadProbe(size_t bytes, int threads)
        : n_(bytes / sizeof(uint64_t)), threads_(threads), words_(new uint64_t[n_]) {
        uint64_t *p = words_.get();
        // First touch by the threads that read, so pages sit where they are read.
        parallel(threads_, n_, [p](size_t b, size_t e) { std::memset(p + b, 1, (e - b) * sizeof(uint64_t)); });
    }
    size_t bytes() const override { return n_ * sizeof(uint64_t); }

    // Bytes/s of `passes` passes over the buffer, each one's rate in `rates`. Threads claim
    // 1 MiB chunks as they go, as the CPU backend's pool hands out work, so a thread the
    // scheduler stalls does not hold the whole pass back.
    void measure(int passes, std::vector<double> &rates) const {
        constexpr size_t kChunkWords = (size_t(1) << 20) / sizeof(uint64_t);
        const uint64_t *p = words_.get();
        const size_t n = n_;
        for (int r = 0; r < passes; ++r) {
            std::atomic<size_t> next{0};
            const double t0 = now();
            parallel(threads_, size_t(threads_), [&](size_t, size_t) {
                uint64_t sum = 0;
                for (size_t b; (b = next.fetch_add(kChunkWords, std::memory_order_relaxed)) < n;)
                    sum += sum_words(p + b, std::min(kChunkWords, n - b));
                g_sink.fetch_add(sum, std::memory_order_relaxed);
            });
            rates.push_back(double(bytes()) / (now() - t0));
        }
    }
    RateSample sample(int passes) const override {
        std::vector<double> rates;
        measure(passes, rates);
        return {median(rates), *std::max_element(rates.begin(), rates.end())};
    }

private:
    size_t n_;
    int threads_;
    std::unique_ptr<uint64_t[]> words_;
};

// A device's copy bandwidth, as pagoda-bench-kernels measures it (bench_bandwidth.cpp, through
// bench_common's Bench and measure()): device-to-device copies of a buffer far larger than a
// GPU's L2 cache, timed by the backend's timing events, each byte counted once read and once
// written. A decode step's weight and KV reads are set against it as the CPU path sets them
// against the read probe.
class DeviceCopyProbe final : public BandwidthProbe {
public:
    // `buffer_bytes` for each of the source and the destination, on `device` of `backend`.
    DeviceCopyProbe(pagoda_backend_t *backend, const std::string &backend_name, int32_t device,
                    size_t buffer_bytes, bool quick)
        : bench_(bench_options(backend_name, device, quick), backend), buffer_bytes_(buffer_bytes) {
        src_ = bench_.alloc(buffer_bytes_);
        dst_ = bench_.alloc(buffer_bytes_);
        const pagoda_backend_iface_t &f = bench_.iface();
        check(f.memset(f.self, bench_.stream(), src_, 1, buffer_bytes_), "filling the copy probe's buffer");
        bench_.synchronize();
    }
    size_t bytes() const override { return 2 * buffer_bytes_; }
    const pagoda_device_info_t &device_info() const { return bench_.device(); }

    RateSample sample(int passes) const override {
        const pagoda_backend_iface_t &f = bench_.iface();
        auto copy = [&](int64_t) {
            check(f.copy(f.self, bench_.stream(), dst_, src_, buffer_bytes_, PAGODA_COPY_DEVICE_TO_DEVICE),
                  "the copy probe's device-to-device copy");
        };
        const pagoda::bench::Timing t = pagoda::bench::measure(bench_, copy, passes);
        return {double(bytes()) / t.seconds, double(bytes()) / t.best_seconds};
    }

private:
    // Each pass runs enough copies to last a tenth of a second (a hundredth with --quick): long
    // enough that launch gaps do not count, short enough to run before every decode repeat.
    static pagoda::bench::Options bench_options(const std::string &backend_name, int32_t device,
                                                bool quick) {
        pagoda::bench::Options b;
        b.backend = backend_name;
        b.device = device;
        b.quick = quick;
        b.target_seconds = quick ? 0.01 : 0.1;
        b.min_iterations = quick ? 1 : 3;
        return b;
    }

    // measure() takes a non-const Bench (it synchronises its stream); a sample changes nothing
    // the probe's callers can see.
    mutable pagoda::bench::Bench bench_;
    size_t buffer_bytes_;
    void *src_ = nullptr;
    void *dst_ = nullptr;
};

// The CPU's arithmetic ceiling: OpenBLAS's sgemm on its own threads (as many as the engine
// has), m = n = k = 1536, in FLOP/s. Prefill and batched decode are set against it as decode is
// set against the read probe. It is OpenBLAS's product as a program calling it would see it,
// not the backend's MATMUL (which runs OpenBLAS single-threaded on its own pool), so the
// engine is measured against the library, not against itself.
class SgemmProbe {
public:
    SgemmProbe(int threads, bool quick) : threads_(threads), quick_(quick) {
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        for (std::vector<float> &b : buffers_) {
            b.resize(size_t(kSize * kSize));
            for (float &v : b) v = dist(rng);
        }
    }

    // FLOP/s over `passes` passes: median and best. Afterwards the process's OpenBLAS is set
    // back to one thread (the backend sets it so before each product anyway), and the probe
    // waits until OpenBLAS's threads have stopped spinning (its THREAD_TIMEOUT, about 2^28
    // cycles), so they take no core from the engine's next repeat.
    RateSample sample(int passes) {
        openblas_set_num_threads(threads_);
        const float *x = buffers_[0].data(), *w = buffers_[1].data();
        float *y = buffers_[2].data();
        auto product = [&] {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(kSize), int(kSize), int(kSize), 1.0f, x,
                        int(kSize), w, int(kSize), 0.0f, y, int(kSize));
        };
        product();  // warm-up: OpenBLAS's threads start, its buffers are allocated
        const double target = quick_ ? 0.02 : 0.2;
        std::vector<double> seconds;
        for (int pass = 0; pass < passes; ++pass) {
            const double start = pagoda::bench::now();
            int64_t calls = 0;
            do {
                product();
                ++calls;
            } while (pagoda::bench::now() - start < target || calls < (quick_ ? 1 : 3));
            seconds.push_back((pagoda::bench::now() - start) / double(calls));
        }
        openblas_set_num_threads(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(quick_ ? 10 : 300));
        const double flops = 2.0 * double(kSize) * double(kSize) * double(kSize);
        std::sort(seconds.begin(), seconds.end());
        return {flops / seconds[seconds.size() / 2], flops / seconds.front()};
    }

private:
    static constexpr int64_t kSize = 1536;
    int threads_;
    bool quick_;
    std::vector<float> buffers_[3];
};

// Bytes of the largest CPU cache Linux reports for cpu0, or 0 when it cannot be read. Weights
// that fit in it are read from the cache, not memory, and the bandwidth ratio means nothing.
uint64_t last_level_cache_bytes() {
    uint64_t best = 0;
    for (int i = 0; i < 8; ++i) {
        const std::string f = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size";
        FILE *in = std::fopen(f.c_str(), "r");
        if (!in) continue;
        unsigned long long size = 0;
        char unit = 0;
        if (std::fscanf(in, "%llu%c", &size, &unit) >= 1) {
            const uint64_t bytes = size << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0);
            best = std::max<uint64_t>(best, bytes);
        }
        std::fclose(in);
    }
    return best;
}

// The 1-minute load average, or -1 where /proc/loadavg cannot be read: on a shared machine,
// how much the neighbours were running while these figures were taken.
double load_average() {
    double load = -1.0;
    if (FILE *in = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(in, "%lf", &load) != 1) load = -1.0;
        std::fclose(in);
    }
    return load;
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

// Weights one decode step reads: every layer's matrices and norms, the final norm and the LM
// head (the embedding table is only gathered, a row per token, so it does not count unless tied
// to the LM head, which is then counted once as the head).
double weights_read_per_step(const pagoda_model_info_t &m) {
    const double h = double(m.hidden_size), f = double(m.intermediate_size);
    const double q = double(m.n_heads * m.head_dim), kv = double(m.n_kv_heads * m.head_dim);
    double layer = h * q + 2 * h * kv + q * h + 3 * h * f + 2 * h;
    if (std::strcmp(m.architecture, "qwen2") == 0) layer += q + 2 * kv;  // Q/K/V biases
    return double(m.n_layers) * layer + h + double(m.vocab_size) * h;
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

struct Handles {
    pagoda_model_t *model = nullptr;
    pagoda_mesh_t *mesh = nullptr;
    Server main;
    Server op_by_op;  // --decode-graphs compare: the same model with decode graphs off
    ~Handles() {
        for (Server *s : {&op_by_op, &main}) {
            pagoda_engine_destroy(s->engine);
            pagoda_kv_cache_destroy(s->cache);
        }
        pagoda_mesh_destroy(mesh);
        pagoda_model_destroy(model);
    }
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
    const std::string config = "threads=" + std::to_string(o.threads);
    pagoda_backend_t *backend = nullptr;
    check(pagoda_backend_load(plugin.c_str(), config.c_str(), &backend), "loading " + plugin);
    const bool on_cpu = o.device_backend == "cpu";
    pagoda_backend_t *device_backend = backend;
    if (!on_cpu) {
        const std::string device_plugin = o.plugin_dir + "/libpagoda-backend-" + o.device_backend + ".so";
        check(pagoda_backend_load(device_plugin.c_str(), nullptr, &device_backend),
              "loading " + device_plugin + " for --device " + o.device);
    }

    // The mesh before the model, so that a device that is not there fails the run before
    // gigabytes of random weights are written.
    Handles h;
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = o.device.c_str();
    check(pagoda_mesh_create(&mo, &h.mesh), "pagoda_mesh_create (" + o.device + ")");

    ModelDescription desc;
    std::optional<TempGgufFile> temp;
    std::string path = o.model_path;
    if (!o.random_model.empty()) {
        const RandomModelShape shape = pagoda::bench::random_model_shape(o.random_model);
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
        desc.label = o.model_path;
    }

    check(pagoda_model_open(path.c_str(), nullptr, &h.model), "opening " + path);
    if (temp) temp->remove();  // the mapping keeps the data; nothing is left behind on any exit
    desc.info.struct_size = sizeof desc.info;
    check(pagoda_model_get_info(h.model, &desc.info), "pagoda_model_get_info");
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
    const bool compare_graphs = o.decode_graphs == "compare";
    auto make_server = [&](Server &server, bool graphs) {
        check(pagoda_kv_cache_create(h.model, h.mesh, nullptr, &ko, &server.cache),
              "allocating a KV cache of " + std::to_string(ko.num_blocks) + " blocks");
        pagoda_engine_options_t eo;
        pagoda_engine_options_default(&eo);
        eo.max_num_seqs = std::max(eo.max_num_seqs, o.batch);
        eo.decode_graphs = graphs ? PAGODA_DECODE_GRAPHS_ON : PAGODA_DECODE_GRAPHS_OFF;
        if (o.exact_matmul) eo.quantized_matmul = PAGODA_QUANTIZED_MATMUL_EXACT;
        if (!o.kernel_choices.empty()) eo.kernel_choices_file = o.kernel_choices.c_str();
        check(pagoda_engine_create(h.model, h.mesh, nullptr, server.cache, &eo, &server.engine),
              "pagoda_engine_create");
    };
    make_server(h.main, o.decode_graphs != "off");
    if (compare_graphs) make_server(h.op_by_op, false);
    // What one cached token costs across all layers, K and V: the cache's own block size says
    // it in whatever dtype the cache chose (F32 on a CPU, F16 on a GPU by default).
    pagoda_kv_cache_stats_t cache_stats;
    std::memset(&cache_stats, 0, sizeof cache_stats);
    cache_stats.struct_size = sizeof cache_stats;
    check(pagoda_kv_cache_get_stats(h.main.cache, &cache_stats), "pagoda_kv_cache_get_stats");
    const double kv_bytes_per_token = double(cache_stats.bytes_per_block) / double(cache_stats.block_size);

    std::fprintf(stderr,
                 "pagoda-bench-generate: %s, %.1fM parameters, %s, %s, %d threads, median of %d, "
                 "kernels by %s\n",
                 desc.label.c_str(), double(info.n_parameters) / 1e6, desc.dtype.c_str(),
                 o.device.c_str(), o.threads, o.repeats,
                 o.kernel_choices.empty() ? "the backend's rules" : o.kernel_choices.c_str());

    // The bandwidth ceiling, measured before the engine starts working; decode repeats are
    // paired with their own probe below. On the CPU, the machine's read bandwidth; on another
    // device, its copy bandwidth (1 GiB buffers, as pagoda-bench-kernels uses).
    std::unique_ptr<BandwidthProbe> probe;
    uint64_t llc = 0;
    // On the CPU also the arithmetic ceiling, for prefill and batched decode.
    std::optional<SgemmProbe> sgemm;
    double sgemm_flops = 0;
    if (on_cpu) {
        probe = std::make_unique<ReadProbe>(o.probe_bytes, o.threads);
        llc = last_level_cache_bytes();
        const RateSample first = probe->sample(std::max(o.repeats, 5));
        line_start(desc, o, "read_bandwidth")
            .add("bytes", int64_t(probe->bytes()))
            .add("gb_per_s", first.median / 1e9)
            .add("best_gb_per_s", first.best / 1e9)
            .add("llc_bytes", int64_t(llc))
            .add("loadavg_1m", load_average())
            .print();
        std::fprintf(stderr, "  read bandwidth (%d threads): %.2f GB/s median\n", o.threads, first.median / 1e9);
        sgemm.emplace(o.threads, o.quick);
        const RateSample rate = sgemm->sample(std::max(o.repeats, 3));
        sgemm_flops = rate.median;
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
        probe = std::move(copy_probe);
        const RateSample first = probe->sample(std::max(o.repeats, 5));
        line_start(desc, o, "device_copy_bandwidth")
            .add("device_name", device_name)
            .add("bytes", int64_t(probe->bytes()))
            .add("gb_per_s", first.median / 1e9)
            .add("best_gb_per_s", first.best / 1e9)
            .add("loadavg_1m", load_average())
            .print();
        std::fprintf(stderr, "  copy bandwidth of %s (%s, read + written): %.1f GB/s median\n",
                     o.device.c_str(), device_name.c_str(), first.median / 1e9);
    }

    Session session(h.main, info.vocab_size, o.seed);
    std::optional<Session> op_by_op_session;
    if (compare_graphs) op_by_op_session.emplace(h.op_by_op, info.vocab_size, o.seed);
    // Warm-up at the largest shapes: pages, caches, the backend's thread pool and the engine's
    // step buffers, which grow to the largest batch seen, all outside every timing. Decode at
    // batch 1 too, so that each measured batch's graph is recorded before it is timed.
    run_prefill(session, o.batch, o.prompt_tokens);
    run_decode(session, o.batch, std::min(o.gen_tokens, 4));
    run_decode(session, 1, 4);
    if (op_by_op_session) run_decode(*op_by_op_session, o.batch, std::min(o.gen_tokens, 4));

    std::vector<int> batches{1};
    if (o.batch > 1) batches.push_back(o.batch);

    // The weights' multiply-adds per token (attention's, a few percent at these lengths, are
    // left out, so the fractions below slightly understate the arithmetic done).
    const double flops_per_token = 2.0 * weights_read_per_step(info);
    for (int b : batches) {
        std::vector<double> rates, fractions;
        for (int r = 0; r < o.repeats; ++r) {
            rates.push_back(double(b) * o.prompt_tokens / run_prefill(session, b, o.prompt_tokens));
            // Each repeat against its own sgemm sample, taken just after it.
            if (sgemm) fractions.push_back(rates.back() * flops_per_token / sgemm->sample(1).median);
        }
        const double tps = median(rates);
        JsonLine line = line_start(desc, o, "prefill");
        line.add("batch", b)
            .add("prompt_tokens", o.prompt_tokens)
            .add("generated_tokens", 1)
            .add("repeats", o.repeats)
            .add("seconds", double(b) * o.prompt_tokens / tps)
            .add("tokens_per_s", tps)
            .add("best_tokens_per_s", *std::max_element(rates.begin(), rates.end()));
        if (sgemm) line.add("weight_flops_per_token", flops_per_token).add("fraction_of_sgemm", median(fractions));
        line.print();
        std::fprintf(stderr, "  prefill batch %3d x %d tokens: %9.1f prompt tokens/s", b, o.prompt_tokens, tps);
        if (sgemm)
            std::fprintf(stderr, ", %.1f GFLOP/s of weights = %.0f%% of sgemm's", tps * flops_per_token / 1e9,
                         100.0 * median(fractions));
        std::fprintf(stderr, "\n");
    }

    const double weight_bytes = weights_read_per_step(info) * desc.bytes_per_weight;
    for (int b : batches) {
        std::vector<double> rates, step_ms, paired_bandwidth, fractions, kv_bytes, roofline_fractions;
        std::vector<double> op_by_op_rates, graph_speedups;
        for (int r = 0; r < o.repeats; ++r) {
            if (op_by_op_session) {
                // Each repeat pairs the two modes back to back, so both see the same moment.
                const DecodeRun eager = run_decode(*op_by_op_session, b, o.gen_tokens);
                op_by_op_rates.push_back(double(eager.tokens) / eager.seconds);
            }
            const double bw = probe->sample(3).median;
            const DecodeRun d = run_decode(session, b, o.gen_tokens);
            if (op_by_op_session)
                graph_speedups.push_back(double(d.tokens) / d.seconds / op_by_op_rates.back());
            const double step_seconds = d.seconds / double(d.steps);
            const double kv_step_bytes = kv_bytes_per_token * double(d.keys_attended) / double(d.steps);
            rates.push_back(double(d.tokens) / d.seconds);
            step_ms.push_back(1e3 * step_seconds);
            paired_bandwidth.push_back(bw);
            fractions.push_back(weight_bytes / step_seconds / bw);
            kv_bytes.push_back(kv_step_bytes);
            roofline_fractions.push_back((weight_bytes + kv_step_bytes) / step_seconds / bw);
        }
        const double ms = median(step_ms);
        const double effective = weight_bytes / (ms / 1e3);
        const double fraction = median(fractions);
        const double roofline_fraction = median(roofline_fractions);
        const bool weights_cached = llc > 0 && weight_bytes <= double(llc);
        JsonLine line = line_start(desc, o, "decode");
        line.add("batch", b)
            .add("decode_graphs", o.decode_graphs == "off" ? "off" : "on")
            .add("prompt_tokens", kDecodePromptTokens)
            .add("generated_tokens", o.gen_tokens)
            .add("repeats", o.repeats)
            .add("tokens_per_s", median(rates))
            .add("best_tokens_per_s", *std::max_element(rates.begin(), rates.end()))
            .add("ms_per_step", ms)
            .add("weight_bytes_per_step", int64_t(weight_bytes))
            .add("effective_gb_per_s", effective / 1e9)
            .add("bandwidth_gb_per_s", median(paired_bandwidth) / 1e9)
            .add("decode_fraction_of_bandwidth", fraction);
        if (llc > 0) line.add("weights_fit_in_llc", weights_cached);
        line.add("bandwidth_source", on_cpu ? "read_probe" : "device_copy")
            .add("kv_bytes_per_token", int64_t(kv_bytes_per_token))
            .add("kv_bytes_per_step", int64_t(median(kv_bytes)))
            .add("decode_fraction_of_roofline", roofline_fraction);
        // Batched decode also does b tokens' arithmetic per step: against the sgemm rate.
        const double compute_fraction = sgemm ? median(rates) * flops_per_token / sgemm_flops : 0.0;
        if (sgemm) line.add("decode_fraction_of_sgemm", compute_fraction);
        if (!on_cpu) {
            // The figure tests/gpu/run.sh tabulates against its goal, as the kernel benchmark's
            // lines carry theirs.
            line.add("figure_name", "decode fraction of roofline")
                .add("figure", roofline_fraction)
                .add("goal", b == 1 ? kRooflineGoalBatch1 : kRooflineGoalBatched);
        }
        line.print();
        std::fprintf(stderr,
                     "  decode  batch %3d: %9.1f tokens/s, %7.2f ms/step, %.2f GB/s of weights = "
                     "%.0f%% of the %s bandwidth%s; with %.1f MB of KV: %.0f%% of the roofline\n",
                     b, median(rates), ms, effective / 1e9, 100.0 * fraction,
                     on_cpu ? "read" : "copy",
                     weights_cached ? " (weights fit in the last-level cache)" : "",
                     median(kv_bytes) / 1e6, 100.0 * roofline_fraction);
        if (sgemm)
            std::fprintf(stderr, "                     %.1f GFLOP/s of weights = %.0f%% of sgemm's\n",
                         median(rates) * flops_per_token / 1e9, 100.0 * compute_fraction);
        if (op_by_op_session) {
            line_start(desc, o, "decode_graph_speedup")
                .add("batch", b)
                .add("repeats", o.repeats)
                .add("graphs_tokens_per_s", median(rates))
                .add("op_by_op_tokens_per_s", median(op_by_op_rates))
                .add("speedup", median(graph_speedups))
                .print();
            std::fprintf(stderr, "  decode  batch %3d op by op: %9.1f tokens/s; graphs are %.2fx as fast\n",
                         b, median(op_by_op_rates), median(graph_speedups));
        }
    }
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
