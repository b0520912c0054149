#include "generate_ceilings.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>

// OpenBLAS's header declares C99 _Complex types, which -Wpedantic flags in C++ under clang.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cblas.h>
#pragma GCC diagnostic pop

namespace pagoda::bench {

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Throws with the library's message when `s` is not PAGODA_OK.
void check(pagoda_status_t s, const std::string &what) {
    if (s != PAGODA_OK)
        throw std::runtime_error(what + ": " + pagoda_status_string(s) + ": " + pagoda_last_error_message());
}

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

// Each pass runs enough copies to last a tenth of a second (a hundredth with --quick): long
// enough that launch gaps do not count, short enough to run before every decode repeat.
Options copy_probe_options(const std::string &backend_name, int32_t device, bool quick) {
    Options b;
    b.backend = backend_name;
    b.device = device;
    b.quick = quick;
    b.target_seconds = quick ? 0.01 : 0.1;
    b.min_iterations = quick ? 1 : 3;
    return b;
}

}  // namespace

ReadProbe::ReadProbe(size_t bytes, int threads)
    : n_(bytes / sizeof(uint64_t)), threads_(threads), words_(new uint64_t[n_]) {
    uint64_t *p = words_.get();
    // First touch by the threads that read, so pages sit where they are read.
    parallel(threads_, n_, [p](size_t b, size_t e) { std::memset(p + b, 1, (e - b) * sizeof(uint64_t)); });
}

void ReadProbe::measure(int passes, std::vector<double> &rates) const {
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

RateSample ReadProbe::sample(int passes) const {
    std::vector<double> rates;
    measure(passes, rates);
    return {median(rates), *std::max_element(rates.begin(), rates.end())};
}

DeviceCopyProbe::DeviceCopyProbe(pagoda_backend_t *backend, const std::string &backend_name, int32_t device,
                                 size_t buffer_bytes, bool quick)
    : bench_(copy_probe_options(backend_name, device, quick), backend), buffer_bytes_(buffer_bytes) {
    src_ = bench_.alloc(buffer_bytes_);
    dst_ = bench_.alloc(buffer_bytes_);
    const pagoda_backend_iface_t &f = bench_.iface();
    check(f.memset(f.self, bench_.stream(), src_, 1, buffer_bytes_), "filling the copy probe's buffer");
    bench_.synchronize();
}

RateSample DeviceCopyProbe::sample(int passes) const {
    const pagoda_backend_iface_t &f = bench_.iface();
    auto copy = [&](int64_t) {
        check(f.copy(f.self, bench_.stream(), dst_, src_, buffer_bytes_, PAGODA_COPY_DEVICE_TO_DEVICE),
              "the copy probe's device-to-device copy");
    };
    const Timing t = measure(bench_, copy, passes);
    return {double(bytes()) / t.seconds, double(bytes()) / t.best_seconds};
}

SgemmProbe::SgemmProbe(int threads, bool quick) : threads_(threads), quick_(quick) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (std::vector<float> &b : buffers_) {
        b.resize(size_t(kSize * kSize));
        for (float &v : b) v = dist(rng);
    }
}

RateSample SgemmProbe::sample(int passes) {
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
        const double start = now();
        int64_t calls = 0;
        do {
            product();
            ++calls;
        } while (now() - start < target || calls < (quick_ ? 1 : 3));
        seconds.push_back((now() - start) / double(calls));
    }
    openblas_set_num_threads(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(quick_ ? 10 : 300));
    const double flops = 2.0 * double(kSize) * double(kSize) * double(kSize);
    std::sort(seconds.begin(), seconds.end());
    return {flops / seconds[seconds.size() / 2], flops / seconds.front()};
}

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

double load_average() {
    double load = -1.0;
    if (FILE *in = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(in, "%lf", &load) != 1) load = -1.0;
        std::fclose(in);
    }
    return load;
}

}  // namespace pagoda::bench
