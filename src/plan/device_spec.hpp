// What the analytic cost model knows about a device kind: its compute peak, memory bandwidth and
// size, and the links between devices inside a node and across nodes. Presets cover hardware we
// plan for without having it (an 8-GPU H100 node) and the CPU backend on this machine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::plan {

struct DeviceSpec {
    std::string name;
    double peak_flops = 0;            // dense FLOP/s in the serving dtype
    double memory_bandwidth = 0;      // bytes/s
    double memory_bytes = 0;          // per device
    double intra_node_bandwidth = 0;  // bytes/s per direction per device (NVLink)
    double inter_node_bandwidth = 0;  // bytes/s per device (InfiniBand)
    double intra_node_latency = 0;    // seconds per message
    double inter_node_latency = 0;
    int32_t devices_per_node = 1;
    double weight_bytes = 2;          // bytes per parameter as served (2: bf16)
    double kv_bytes = 2;              // bytes per K or V element
    double activation_bytes = 2;      // bytes per activation element
    double layer_overhead = 0;        // fixed seconds per layer (kernel launches, synchronisation)
};

// "h100": 989 TFLOP/s bf16 dense, 3.35 TB/s HBM3, 80 GB, NVLink 450 GB/s per direction, 8 per
// node, InfiniBand 50 GB/s per GPU. "cpu": the CPU backend with 2 threads on this machine, f32
// (67 GFLOP/s SGEMM and 19 GB/s read bandwidth measured by pagoda-bench-kernels; the host's
// memory). Throws Error(NOT_FOUND) listing the known names for another name.
DeviceSpec device_preset(std::string_view name);
std::vector<std::string> device_preset_names();

// Throws Error(INVALID_ARGUMENT) naming the field that is not positive (or negative, for the
// latencies and the overhead).
void validate(const DeviceSpec &spec);

}  // namespace pagoda::plan
