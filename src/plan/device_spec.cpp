#include "plan/device_spec.hpp"

#include <unistd.h>

#include <string>

#include "common/error.hpp"

namespace pagoda::plan {

namespace {

DeviceSpec h100() {
    DeviceSpec d;
    d.name = "h100";
    d.peak_flops = 989e12;
    d.memory_bandwidth = 3.35e12;
    d.memory_bytes = 80e9;
    d.intra_node_bandwidth = 450e9;
    d.inter_node_bandwidth = 50e9;
    d.intra_node_latency = 5e-6;   // NCCL small-message latency over NVLink
    d.inter_node_latency = 10e-6;  // and over InfiniBand
    d.devices_per_node = 8;
    d.weight_bytes = 2;
    d.kv_bytes = 2;
    d.activation_bytes = 2;
    d.layer_overhead = 20e-6;  // ~10 kernel launches per decoder layer
    return d;
}

double host_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? double(pages) * double(page) : 8e9;
}

DeviceSpec cpu() {
    DeviceSpec d;
    d.name = "cpu";
    d.peak_flops = 67e9;        // SGEMM 256³, 2 threads (pagoda-bench-kernels sgemm_ceiling)
    d.memory_bandwidth = 19e9;  // bandwidth_read
    d.memory_bytes = host_memory_bytes();
    // In-process collectives copy through memory; "nodes" of CPUs would talk over Ethernet.
    d.intra_node_bandwidth = 19e9;
    d.inter_node_bandwidth = 1.25e9;  // 10 GbE
    d.intra_node_latency = 2e-6;
    d.inter_node_latency = 50e-6;
    d.devices_per_node = 1;
    d.weight_bytes = 4;  // the CPU backend computes in f32
    d.kv_bytes = 4;
    d.activation_bytes = 4;
    d.layer_overhead = 20e-6;
    return d;
}

}  // namespace

std::vector<std::string> device_preset_names() { return {"h100", "cpu"}; }

DeviceSpec device_preset(std::string_view name) {
    if (name == "h100") return h100();
    if (name == "cpu") return cpu();
    std::string known;
    for (const std::string &n : device_preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error(PAGODA_ERR_NOT_FOUND,
                "no device preset named \"" + std::string(name) + "\" (known: " + known + ")");
}

void validate(const DeviceSpec &d) {
    const std::pair<const char *, double> positive[] = {
        {"peak_flops", d.peak_flops},
        {"memory_bandwidth", d.memory_bandwidth},
        {"memory_bytes", d.memory_bytes},
        {"intra_node_bandwidth", d.intra_node_bandwidth},
        {"inter_node_bandwidth", d.inter_node_bandwidth},
        {"weight_bytes", d.weight_bytes},
        {"kv_bytes", d.kv_bytes},
        {"activation_bytes", d.activation_bytes},
        {"devices_per_node", double(d.devices_per_node)},
    };
    for (const auto &[field, value] : positive)
        if (!(value > 0) || value == 1.0 / 0.0)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "device \"" + d.name + "\": " + field + " is " +
                                                         std::to_string(value) + ", want > 0");
    const std::pair<const char *, double> non_negative[] = {
        {"intra_node_latency", d.intra_node_latency},
        {"inter_node_latency", d.inter_node_latency},
        {"layer_overhead", d.layer_overhead},
    };
    for (const auto &[field, value] : non_negative)
        if (!(value >= 0) || value == 1.0 / 0.0)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "device \"" + d.name + "\": " + field + " is " +
                                                         std::to_string(value) + ", want >= 0");
}

}  // namespace pagoda::plan
