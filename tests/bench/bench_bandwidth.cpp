// The memory-bandwidth ceiling that the kernels are judged against, measured in the same run
// with the same thread count: a read-only sum over a buffer much larger than the last-level
// cache (what a GEMV or attention decode does to its weights or cache) and a STREAM-style triad.
// For a device whose memory the host cannot read, a device-to-device copy through the backend.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"

namespace pagoda::bench {

namespace {

// Plain loops the compiler vectorises; target_clones picks the AVX2 build where the processor
// has it, so the probe is not held back by the baseline x86-64 instruction set.
__attribute__((target_clones("avx2", "default"))) uint64_t sum_words(const uint64_t *p,
                                                                      size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; ++i) s += p[i];
    return s;
}

__attribute__((target_clones("avx2", "default"))) void triad(float *a, const float *b,
                                                             const float *c, float scalar,
                                                             size_t n) {
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
}

std::atomic<uint64_t> g_sink{0};  // keeps the sums alive

// More repeats than the kernels get: the probe is cheap, and its best repeat is the ceiling.
int probe_repeats(const Options &o) { return o.quick ? o.repeats : std::max(o.repeats, 10); }

// The read-only sum over 1 GiB (64 MiB with --quick), far past a 32 MiB LLC; prints `name`
// and returns the best rate in bytes/s. With `earlier` (bytes/s) > 0 the line also says how
// the two compare.
double read_probe(Bench &bench, const char *name, double earlier) {
    const Options &o = bench.options();
    const int threads = std::max(1, o.threads);
    const size_t bytes = o.quick ? size_t(64) << 20 : size_t(1) << 30;
    auto *words = static_cast<uint64_t *>(bench.alloc(bytes));
    const size_t n_words = bytes / sizeof(uint64_t);
    // Touch every page with the same threads that read it, so first-touch placement matches.
    parallel(threads, n_words, [&](size_t b, size_t e) {
        std::memset(words + b, 1, (e - b) * sizeof(uint64_t));
    });
    Timing t = measure(
        bench,
        [&](int64_t) {
            parallel(threads, n_words, [&](size_t b, size_t e) {
                g_sink.fetch_add(sum_words(words + b, e - b), std::memory_order_relaxed);
            });
        },
        probe_repeats(o));
    bench.release(words);
    const double best = double(bytes) / t.best_seconds;
    if (earlier == 0.0) {
        bench.bandwidth = best;
        bench.bandwidth_median = double(bytes) / t.seconds;
    }
    JsonLine line = JsonLine::start(bench, name);
    line.add("bytes", int64_t(bytes));
    add_rates(line, bench, t, double(bytes), 0);
    line.add("best_gb_per_s", best / 1e9);
    if (earlier > 0) line.add("best_vs_start", best / earlier);
    line.print();
    return best;
}

void triad_probe(Bench &bench) {
    // Triad over three arrays; counted as two reads and one write (the write-allocate read
    // that the cache adds is not counted, as in STREAM).
    const Options &o = bench.options();
    const int threads = std::max(1, o.threads);
    const size_t array_bytes = o.quick ? size_t(32) << 20 : size_t(256) << 20;
    const size_t n = array_bytes / sizeof(float);
    auto *a = static_cast<float *>(bench.alloc(array_bytes));
    auto *b = static_cast<float *>(bench.alloc(array_bytes));
    auto *c = static_cast<float *>(bench.alloc(array_bytes));
    parallel(threads, n, [&](size_t lo, size_t hi) {
        std::fill(a + lo, a + hi, 0.0f);
        std::fill(b + lo, b + hi, 1.0f);
        std::fill(c + lo, c + hi, 2.0f);
    });
    Timing t = measure(
        bench,
        [&](int64_t) {
            parallel(threads, n, [&](size_t lo, size_t hi) {
                triad(a + lo, b + lo, c + lo, 3.0f, hi - lo);
            });
        },
        probe_repeats(o));
    JsonLine line = JsonLine::start(bench, "bandwidth_triad");
    line.add("bytes", int64_t(3 * array_bytes));
    add_rates(line, bench, t, double(3 * array_bytes), double(2 * n));
    line.add("best_gb_per_s", double(3 * array_bytes) / t.best_seconds / 1e9).print();
    bench.release(a);
    bench.release(b);
    bench.release(c);
}

void device_copy_probe(Bench &bench, const char *name) {
    const Options &o = bench.options();
    const size_t bytes = o.quick ? size_t(64) << 20 : size_t(1) << 30;
    void *src = bench.alloc(bytes), *dst = bench.alloc(bytes);
    const pagoda_backend_iface_t &f = bench.iface();
    f.memset(f.self, bench.stream(), src, 1, bytes);
    Timing t = measure(
        bench,
        [&](int64_t) {
            if (f.copy(f.self, bench.stream(), dst, src, bytes, PAGODA_COPY_DEVICE_TO_DEVICE) !=
                PAGODA_OK)
                throw std::runtime_error(std::string("device copy: ") + pagoda_last_error_message());
        },
        probe_repeats(o));
    // Each byte is read once and written once.
    const double best = 2.0 * double(bytes) / t.best_seconds;
    if (bench.bandwidth == 0.0) {
        bench.bandwidth = best;
        bench.bandwidth_median = 2.0 * double(bytes) / t.seconds;
    }
    JsonLine line = JsonLine::start(bench, name);
    line.add("bytes", int64_t(2 * bytes));
    add_rates(line, bench, t, 2.0 * double(bytes), 0);
    line.add("best_gb_per_s", best / 1e9).print();
    bench.release(src);
    bench.release(dst);
}

}  // namespace

double probe_read_rate(Bench &bench, double seconds) {
    // A 256 MiB buffer (8× a 32 MiB LLC), kept for the whole run: pairing calls this often.
    static std::vector<uint64_t> words;
    if (words.empty()) {
        words.resize((size_t(256) << 20) / sizeof(uint64_t));
        parallel(std::max(1, bench.options().threads), words.size(), [&](size_t b, size_t e) {
            std::fill(words.begin() + ptrdiff_t(b), words.begin() + ptrdiff_t(e), 1u);
        });
    }
    const int threads = std::max(1, bench.options().threads);
    const double start = now();
    double elapsed = 0.0;
    int passes = 0;
    do {
        parallel(threads, words.size(), [&](size_t b, size_t e) {
            g_sink.fetch_add(sum_words(words.data() + b, e - b), std::memory_order_relaxed);
        });
        ++passes;
        elapsed = now() - start;
    } while (elapsed < seconds);
    return double(passes) * double(words.size() * sizeof(uint64_t)) / elapsed;
}

void bench_bandwidth(Bench &bench) {
    if (bench.host_memory()) {
        read_probe(bench, "bandwidth_read", 0.0);
        triad_probe(bench);
    } else {
        device_copy_probe(bench, "bandwidth_device_copy");
    }
}

// The same probe after the kernels: if its best differs much from the first (best_vs_start),
// the machine was busy and the fractions deserve less trust.
void bench_bandwidth_again(Bench &bench) {
    if (bench.host_memory())
        read_probe(bench, "bandwidth_read_end", bench.bandwidth);
    else
        device_copy_probe(bench, "bandwidth_device_copy_end");
}

}  // namespace pagoda::bench
