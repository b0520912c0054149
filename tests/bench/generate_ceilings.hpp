// The ceilings pagoda-bench-generate sets its figures against: the memory's streaming-read
// bandwidth or a device's copy bandwidth (decode), OpenBLAS's sgemm rate (prefill, batched
// decode), and what says when a figure means little (the last-level cache's size, the load).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "pagoda/pagoda.h"

namespace pagoda::bench {

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

// Sums a buffer far larger than the last-level cache with the benchmark's thread count: the
// access pattern of a decode step's weight reads, at the speed plain loads reach. The buffer is
// kept so that the probe can run again right before each decode repeat: on a shared machine the
// bandwidth on offer moves with the neighbours' load, and a ratio is only fair between
// measurements taken in the same moment.
class ReadProbe final : public BandwidthProbe {
public:
    ReadProbe(size_t bytes, int threads);
    size_t bytes() const override { return n_ * sizeof(uint64_t); }

    // Bytes/s of `passes` passes over the buffer, each one's rate in `rates`. Threads claim
    // 1 MiB chunks as they go, as the CPU backend's pool hands out work, so a thread the
    // scheduler stalls does not hold the whole pass back.
    void measure(int passes, std::vector<double> &rates) const;
    RateSample sample(int passes) const override;

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
                    size_t buffer_bytes, bool quick);
    size_t bytes() const override { return 2 * buffer_bytes_; }
    const pagoda_device_info_t &device_info() const { return bench_.device(); }
    RateSample sample(int passes) const override;

private:
    // measure() takes a non-const Bench (it synchronises its stream); a sample changes nothing
    // the probe's callers can see.
    mutable Bench bench_;
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
    SgemmProbe(int threads, bool quick);

    // FLOP/s over `passes` passes: median and best. Afterwards the process's OpenBLAS is set
    // back to one thread (the backend sets it so before each product anyway), and the probe
    // waits until OpenBLAS's threads have stopped spinning (its THREAD_TIMEOUT, about 2^28
    // cycles), so they take no core from the engine's next repeat.
    RateSample sample(int passes);

private:
    static constexpr int64_t kSize = 1536;
    int threads_;
    bool quick_;
    std::vector<float> buffers_[3];
};

// Bytes of the largest CPU cache Linux reports for cpu0, or 0 when it cannot be read. Weights
// that fit in it are read from the cache, not memory, and the bandwidth ratio means nothing.
uint64_t last_level_cache_bytes();

// The 1-minute load average, or -1 where /proc/loadavg cannot be read: on a shared machine,
// how much the neighbours were running while these figures were taken.
double load_average();

}  // namespace pagoda::bench
