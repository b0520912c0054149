// The CPU backend's state: the host's services, the thread pool and the error path.
#pragma once

#include <memory>
#include <string>

#include "pagoda/backend.h"
#include "reporter.hpp"
#include "thread_pool.hpp"

namespace pagoda::cpu {

// What the CPU processor can run; decided once at load from cpuid.
struct CpuFeatures {
    bool avx2_fma_f16c = false;  // the vector kernels need all three
};

// A Reporter, so the descriptor checks every backend shares (op_checks.hpp) and the helpers
// they are built from (check_helpers.hpp) report through it.
class CpuBackend final : public plugin::Reporter {
public:
    // `portable_only` keeps the vector kernels off even where the processor has them, so the
    // portable paths can be tested and compared on any machine (config "isa=portable").
    CpuBackend(const pagoda_backend_host_t &host, int threads, bool portable_only);

    ThreadPool &pool() noexcept { return pool_; }
    const CpuFeatures &features() const noexcept { return features_; }
    int threads() const noexcept { return pool_.threads(); }

    // Records `message`, prefixed "cpu backend: ", as the calling thread's error (through the
    // host) and returns `status`, so kernels write `return cpu.fail(PAGODA_ERR_..., "...")`.
    pagoda_status_t fail(pagoda_status_t status, const std::string &message) const override;
    // The message of the calling thread's last fail(), without the prefix; a graph recording
    // keeps it as the reason the recording was spoilt (cpu_graph.cpp).
    static const std::string &last_failure() noexcept;
    void log(pagoda_log_level_t level, const std::string &message) const;

private:
    pagoda_backend_host_t host_;
    CpuFeatures features_;
    ThreadPool pool_;
};

// The backend behind the `self` that every table function receives (cpu_plugin.cpp).
CpuBackend &backend_from_self(void *self);

// Work recorded from a stream (cpu_graph.cpp); the deleter lets a stream own one while the type
// stays private to that file.
struct CpuGraph;
struct CpuGraphDeleter {
    void operator()(CpuGraph *graph) const noexcept;
};

// A CPU "stream": the CPU backend runs work synchronously on launch, so a stream only names its
// device; it exists so that the core drives every backend the same way.
struct CpuStream {
    int32_t device = 0;
    // Set between graph_capture_begin and graph_capture_end: work issued to the stream is
    // recorded here instead of run.
    std::unique_ptr<CpuGraph, CpuGraphDeleter> recording;
};

// Likewise an event is complete as soon as it is recorded; a timing event keeps the moment.
struct CpuEvent {
    int32_t device = 0;
    bool timing = false;
    bool recorded = false;
    double recorded_at = 0.0;  // seconds on a monotonic clock
};

}  // namespace pagoda::cpu

// The ABI's opaque types are these structs in this backend.
struct pagoda_backend_stream : pagoda::cpu::CpuStream {};
struct pagoda_backend_event : pagoda::cpu::CpuEvent {};
