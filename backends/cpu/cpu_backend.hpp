// The CPU backend's state: the host's services, its devices (each a thread pool and a memory
// budget) and the error path.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cpu_config.hpp"
#include "memory_budget.hpp"
#include "net_endpoint.hpp"
#include "pagoda/backend.h"
#include "reporter.hpp"
#include "thread_pool.hpp"

namespace pagoda::cpu {

// What the CPU processor can run; decided once at load from cpuid.
struct CpuFeatures {
    bool avx2_fma_f16c = false;  // the vector kernels need all three
    // AVX-512 F, BW, VL and VNNI with the OS saving the ZMM state: the 512-bit kernels
    // (*_avx512.cpp). Only together with avx2_fma_f16c.
    bool avx512_vnni = false;
};

// One logical device "cpu:N": its own threads and its own share of host memory, so that a
// laptop or a CI runner can hold a mesh of several devices, each driven by its own host thread.
struct CpuDevice {
    ThreadPool pool;
    MemoryBudget memory;
    std::atomic<uint64_t> collective_calls{0};  // for config "fail_collective"
    CpuDevice(int threads, uint64_t budget, std::function<void()> on_worker_start)
        : pool(threads, std::move(on_worker_start)), memory(budget) {}
};

// A Reporter, so the descriptor checks every backend shares (op_checks.hpp) and the helpers
// they are built from (check_helpers.hpp) report through it.
class CpuBackend final : public plugin::Reporter {
public:
    // `config.portable_only` keeps the vector kernels off even where the processor has them, so
    // the portable paths can be tested and compared on any machine (config "isa=portable");
    // `config.avx2_only` keeps the AVX-512 ones off likewise ("isa=avx2").
    CpuBackend(const pagoda_backend_host_t &host, const CpuConfig &config);

    int32_t device_count() const noexcept { return int32_t(devices_.size()); }
    CpuDevice &device(int32_t index) noexcept { return *devices_[size_t(index)]; }
    // The devices as messages name them: "cpu:0" or "cpu:0-3".
    std::string mesh_name() const;
    // PAGODA_OK, or PAGODA_ERR_NOT_FOUND "device 5 does not exist (cpu:0-3)" through fail().
    pagoda_status_t check_device(int32_t index) const;

    // The calling thread's current device's pool and thread count (DeviceScope below; device 0
    // outside any scope). Kernels call these, so they run on the device of their stream without
    // knowing about devices.
    ThreadPool &pool() noexcept { return device(current_device()).pool; }
    int threads() const noexcept { return devices_[size_t(current_device())]->pool.threads(); }
    int32_t current_device() const noexcept;

    const CpuFeatures &features() const noexcept { return features_; }
    // Config "weights=mapped": the devices say they read weights in the host's file mapping.
    bool mapped_weights() const noexcept { return mapped_weights_; }

    // This process's end of the network, for communicators across machines.
    NetEndpoint &network() noexcept { return network_; }

    // Counts a collective call on `device`; true when it is the one "fail_collective" names.
    bool collective_fault_due(int32_t device);
    const std::optional<CollectiveFault> &collective_fault() const noexcept { return fault_; }

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
    bool mapped_weights_;
    std::optional<CollectiveFault> fault_;
    NetEndpoint network_;
    std::vector<std::unique_ptr<CpuDevice>> devices_;  // a pool can move neither threads nor itself
};

// Makes `device` the calling thread's current device of `cpu` until the scope ends. Launches,
// graph replays, copies and memsets open one for their stream's device, and each device's pool
// workers are marked as its own, so two host threads driving two devices never share a pool.
// Scopes nest: the outer device is current again when an inner scope ends.
class DeviceScope {
public:
    DeviceScope(const CpuBackend &cpu, int32_t device) noexcept;
    ~DeviceScope();
    DeviceScope(const DeviceScope &) = delete;
    DeviceScope &operator=(const DeviceScope &) = delete;

private:
    const CpuBackend *outer_backend_;
    int32_t outer_device_;
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
