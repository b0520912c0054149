// The CPU backend's configuration string ("devices=4,threads=8,memory=2G"), read once at load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pagoda::cpu {

constexpr int kMaxDevices = 64;
constexpr int kMaxThreads = 1024;

// "fail_collective=D:K": the K-th collective call (1-based) issued on device D fails, once.
struct CollectiveFault {
    int32_t device = 0;
    uint64_t call = 1;
};

struct CpuConfig {
    std::vector<int> device_threads;  // one entry per device: that device's pool size
    uint64_t memory_per_device = 0;   // each device's budget in bytes
    bool portable_only = false;       // isa=portable
    bool avx2_only = false;           // isa=avx2: no AVX-512 kernels even where present
    bool mapped_weights = false;      // weights=mapped: read in place from the host's file mapping
    std::optional<CollectiveFault> fail_collective;
    std::string network_interface;    // for communicators across machines; "" = the first one up
};

// Reads `text` (NULL: every default). Keys: devices, threads, device_threads, memory, isa,
// weights, fail_collective, network_interface; PAGODA_NUM_THREADS stands in for an absent `threads`. False with `error`
// naming the key and value at fault.
bool parse_cpu_config(const char *text, CpuConfig &out, std::string &error);

// "12", "512K", "3G": bytes, with K/M/G/T meaning 2^10, 2^20, 2^30, 2^40. False when the text is
// not such a number or overflows.
bool parse_bytes(const std::string &text, uint64_t &out);

}  // namespace pagoda::cpu
