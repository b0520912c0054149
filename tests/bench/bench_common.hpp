// What every kernel benchmark shares: the loaded backend and its stream, device buffers filled
// with random data, the timing method, and the JSON line writer.
#pragma once

#include <cstdint>
#include <algorithm>
#include <functional>
#include <thread>
#include <string>
#include <vector>

#include "pagoda/pagoda.h"

namespace pagoda::bench {

// Run-wide settings, from the command line.
struct Options {
    std::string backend = "cpu";
    int32_t device = 0;               // the backend's device under test
    std::string plugin_dir;           // where libpagoda-backend-<name>.so is
    int threads = 0;                  // CPU threads; 0 = every core
    std::string isa;                  // CPU config isa= (native, avx2, portable); empty = native
    bool quick = false;               // tiny sizes and times: a smoke run
    std::string shapes = "llama7b";   // CPU matmul shapes: llama7b or llama1b
    std::vector<std::string> benches; // empty = all
    double target_seconds = 0.3;      // each repeat runs at least this long...
    int64_t min_iterations = 3;       // ...and at least this many launches
    int repeats = 5;                  // the median (and best) of these is reported
    size_t rotate_bytes = size_t(256) << 20;  // weights rotate among copies that add up to this
};

// The backend under test, its device (options.device, 0 by default) and one stream on it.
class Bench {
public:
    Bench(const Options &options, pagoda_backend_t *backend);
    ~Bench();
    Bench(const Bench &) = delete;
    Bench &operator=(const Bench &) = delete;

    const Options &options() const { return options_; }
    const pagoda_backend_iface_t &iface() const { return *iface_; }
    pagoda_backend_stream_t *stream() const { return stream_; }
    const pagoda_device_info_t &device() const { return info_; }
    bool host_memory() const { return (info_.flags & PAGODA_DEVICE_HOST_ACCESSIBLE) != 0; }

    // Device memory freed when the Bench goes, or earlier through release().
    void *alloc(size_t bytes);
    void release(void *ptr);
    // Fills `bytes` of device memory with values of `dtype` uniform in about [-1, 1].
    void fill_random(void *dst, size_t bytes, pagoda_dtype_t dtype);
    // Copies host data to device memory and waits.
    void upload(void *dst, const void *src, size_t bytes);

    // Launches an op; throws with the backend's message on failure.
    void launch(pagoda_op_t op, const void *args);
    // PAGODA_OK, or the reason the backend gives for not running `args` (then `why` is set).
    pagoda_status_t supports(pagoda_op_t op, const void *args, std::string &why);
    void synchronize();

    // The measured ceiling (bytes/s): the best repeat of the bandwidth probe, and its median
    // repeat. A kernel's best is compared with the first, its median with the second, so both
    // sides of a fraction saw the same kind of luck. 0 until measured.
    double bandwidth = 0.0;
    double bandwidth_median = 0.0;
    // The arithmetic ceiling of a GPU (FLOP/s): cuBLAS's best bf16 GEMM (bench_cublas.cpp).
    // 0 until measured, and on backends without one.
    double gemm_peak = 0.0;

private:
    Options options_;
    const pagoda_backend_iface_t *iface_;
    pagoda_backend_stream_t *stream_ = nullptr;
    pagoda_device_info_t info_{};
    std::vector<void *> buffers_;
    uint64_t rng_ = 0x9E3779B97F4A7C15ull;
};

// Median and best seconds per launch over the repeats.
struct Timing {
    double seconds = 0.0;       // median
    double best_seconds = 0.0;  // fastest repeat
    int64_t iterations = 0;     // launches per repeat
    int repeats = 0;
    // Median over repeats of (this repeat's bytes/s) / (the read probe's bytes/s in the moment
    // just before it); 0 when not paired. See measure().
    double paired_fraction = 0.0;
};

// Times `step(i)`: two warm-up calls, then `repeats` (0: the options' count) runs of enough
// calls to last target_seconds (at least min_iterations), each closed by a stream
// synchronisation. `i` counts calls so the step can rotate among buffer copies. On a device the
// host cannot read (a GPU), each repeat is timed by the backend's own timing events around the
// launches (PAGODA_EVENT_TIMING, event_elapsed), so launch overhead on the host is not counted
// unless it starves the device.
// With `paired_bytes` > 0 (bytes one call moves) on host memory, each repeat is preceded by a
// stretch of the read probe, and the ratio of the two rates is taken per pair: on a shared,
// noisy machine both sides of each ratio then see the same moment.
Timing measure(Bench &bench, const std::function<void(int64_t i)> &step, int repeats = 0,
               double paired_bytes = 0.0);

// Seconds on a monotonic clock.
double now();

// Runs the read probe (bench_bandwidth.cpp) for about `seconds` on the bench's threads and
// returns its rate in bytes/s.
double probe_read_rate(Bench &bench, double seconds);

// Copies of a `bytes`-sized buffer needed to add up to rotate_bytes (at least 1), so that a
// kernel cycling through them finds none in the last-level cache.
int rotation_copies(const Options &options, size_t bytes);

// `copies` device buffers of `bytes` random `dtype` values (the first filled, the others copied
// from it on the device), for a kernel to cycle through.
std::vector<void *> rotated_buffers(Bench &bench, size_t bytes, pagoda_dtype_t dtype, int copies);

// One JSON object on one line, fields in insertion order.
class JsonLine {
public:
    JsonLine &add(const char *key, const std::string &value);
    JsonLine &add(const char *key, const char *value) { return add(key, std::string(value)); }
    JsonLine &add(const char *key, int64_t value);
    JsonLine &add(const char *key, int value) { return add(key, int64_t(value)); }
    JsonLine &add(const char *key, double value);
    // The bench/backend/threads fields every line starts with.
    static JsonLine start(const Bench &bench, const char *name);
    void print() const;

private:
    void begin_field(const char *key);  // the separator and "key":
    std::string text_;
};

// Adds seconds, GB/s, GFLOP/s and the fraction of the measured bandwidth to `line`.
void add_rates(JsonLine &line, const Bench &bench, const Timing &t, double bytes, double flops);

// Adds the line's headline figure, what it is, and the goal the issue sets for it, which
// tests/gpu/run.sh tabulates ("figure", "figure_name", "goal").
void add_goal(JsonLine &line, const char *figure_name, double figure, double goal);

// Prints a line saying why a measurement was skipped (an op the backend does not support).
void print_skipped(JsonLine line, const std::string &why);

const char *dtype_name(pagoda_dtype_t dtype);
size_t dtype_bytes(pagoda_dtype_t dtype);
// Bytes of `values` values of `dtype` (a whole number of blocks for the quantized types).
size_t row_bytes(pagoda_dtype_t dtype, int64_t values);
bool wanted(const Options &options, const char *bench);

// The benchmarks, one file each.
void bench_bandwidth(Bench &bench);   // bench_bandwidth.cpp: sets bench.bandwidth
void bench_bandwidth_again(Bench &bench);  // bench_bandwidth.cpp: the read probe at the end
void bench_matmul(Bench &bench);      // bench_matmul.cpp: SGEMM ceiling, GEMV, prefill
void bench_attention(Bench &bench);   // bench_attention.cpp
// bench_cublas.cpp (CUDA builds only): cuBLAS's bf16 GEMM peak, which sets bench.gemm_peak.
void bench_gemm_peak(Bench &bench);

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

}  // namespace pagoda::bench
