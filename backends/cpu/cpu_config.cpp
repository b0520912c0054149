#include "cpu_config.hpp"

#include <algorithm>
#include <net/if.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include "plugin_config.hpp"
#include "proc_info.hpp"

namespace pagoda::cpu {

namespace {

// A decimal integer in [lo, hi], nothing else (no sign, no spaces).
bool parse_int(const std::string &text, long lo, long hi, long &out) {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
    char *end = nullptr;
    errno = 0;
    long v = std::strtol(text.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || v < lo || v > hi) return false;
    out = v;
    return true;
}

bool parse_count(const std::string &text, int hi, int &out) {
    long v = 0;
    if (!parse_int(text, 1, hi, v)) return false;
    out = int(v);
    return true;
}

// "2/1/1": one thread count per device.
bool parse_thread_list(const std::string &text, std::vector<int> &out) {
    out.clear();
    size_t start = 0;
    for (;;) {
        size_t slash = text.find('/', start);
        int n = 0;
        if (!parse_count(text.substr(start, slash - start), kMaxThreads, n)) return false;
        out.push_back(n);
        if (slash == std::string::npos) break;
        start = slash + 1;
    }
    return out.size() <= size_t(kMaxDevices);
}

// "D:K" with D a device index and K ≥ 1.
bool parse_fault(const std::string &text, CollectiveFault &out) {
    size_t colon = text.find(':');
    if (colon == std::string::npos) return false;
    long device = 0, call = 0;
    if (!parse_int(text.substr(0, colon), 0, kMaxDevices - 1, device) ||
        !parse_int(text.substr(colon + 1), 1, 1L << 40, call))
        return false;
    out.device = int32_t(device);
    out.call = uint64_t(call);
    return true;
}

// `total` threads over `devices` devices: T/N each, one more for the first T%N, at least 1.
std::vector<int> split_threads(int total, int devices) {
    std::vector<int> out(static_cast<size_t>(devices));
    for (int d = 0; d < devices; ++d)
        out[size_t(d)] = std::max(1, total / devices + (d < total % devices ? 1 : 0));
    return out;
}

}  // namespace

bool parse_bytes(const std::string &text, uint64_t &out) {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (errno != 0) return false;
    int shift = 0;
    if (*end != '\0') {
        switch (std::toupper(static_cast<unsigned char>(*end))) {
            case 'K': shift = 10; break;
            case 'M': shift = 20; break;
            case 'G': shift = 30; break;
            case 'T': shift = 40; break;
            default: return false;
        }
        if (end[1] != '\0') return false;
    }
    if (v > (UINT64_MAX >> shift)) return false;
    out = uint64_t(v) << shift;
    return true;
}

bool parse_cpu_config(const char *text, CpuConfig &out, std::string &error) {
    auto pairs = plugin::parse_config(text, error);
    if (!pairs) return false;
    const auto bad = [&](const std::string &key, const std::string &value, const std::string &why) {
        error = "config " + key + "='" + value + "' " + why;
        return false;
    };

    int threads = std::max(1, int(std::thread::hardware_concurrency()));
    if (const char *env = std::getenv("PAGODA_NUM_THREADS"); env != nullptr && *env) {
        if (!parse_count(env, kMaxThreads, threads)) {
            error = std::string("PAGODA_NUM_THREADS='") + env + "' is not a count in 1..1024";
            return false;
        }
    }
    int devices = 0;  // 0 until given by `devices` or `device_threads`
    std::vector<int> device_threads;
    uint64_t memory = 0;
    CpuConfig cfg;
    for (const auto &[key, value] : *pairs) {
        if (key == "devices") {
            if (!parse_count(value, kMaxDevices, devices))
                return bad(key, value, "is not a device count in 1..64");
        } else if (key == "threads") {
            if (!parse_count(value, kMaxThreads, threads))
                return bad(key, value, "is not a count in 1..1024");
        } else if (key == "device_threads") {
            if (!parse_thread_list(value, device_threads))
                return bad(key, value,
                           "is not a '/'-separated list of 1..64 thread counts in 1..1024");
        } else if (key == "memory") {
            if (!parse_bytes(value, memory) || memory == 0)
                return bad(key, value,
                           "is not a positive byte count (an integer, optionally with K, M, G or T)");
        } else if (key == "isa") {
            if (value != "native" && value != "avx2" && value != "portable")
                return bad(key, value, "is not one of native, avx2, portable");
            cfg.portable_only = value == "portable";
            cfg.avx2_only = value == "avx2";
        } else if (key == "weights") {
            if (value != "copy" && value != "mapped")
                return bad(key, value, "is not one of copy, mapped");
            cfg.mapped_weights = value == "mapped";
        } else if (key == "fail_collective") {
            CollectiveFault fault;
            if (!parse_fault(value, fault))
                return bad(key, value, "is not DEVICE:CALL (a device index and a call number from 1)");
            cfg.fail_collective = fault;
        } else if (key == "network_interface") {
            if (value.empty() || value.size() >= IF_NAMESIZE || if_nametoindex(value.c_str()) == 0)
                return bad(key, value, "names no network interface of this machine (see `ip link`)");
            cfg.network_interface = value;
        } else {
            error = "unknown config key '" + key +
                    "' (known: devices, threads, device_threads, memory, isa, weights, fail_collective, "
                    "network_interface)";
            return false;
        }
    }

    if (!device_threads.empty()) {
        if (devices != 0 && size_t(devices) != device_threads.size())
            return bad("device_threads", pairs->at("device_threads"),
                       "lists " + std::to_string(device_threads.size()) + " devices but devices=" +
                           std::to_string(devices));
        cfg.device_threads = device_threads;
    } else {
        cfg.device_threads = split_threads(threads, devices == 0 ? 1 : devices);
    }
    devices = int(cfg.device_threads.size());
    if (cfg.fail_collective && cfg.fail_collective->device >= devices)
        return bad("fail_collective", pairs->at("fail_collective"),
                   "names device " + std::to_string(cfg.fail_collective->device) + " of " +
                       std::to_string(devices));
    if (memory == 0) {
        // Without /proc (MemTotal unknown) the devices get no budget to speak of.
        const uint64_t total = meminfo_bytes("MemTotal");
        memory = (total != 0 ? total : UINT64_MAX) / uint64_t(devices);
    }
    cfg.memory_per_device = memory;
    out = std::move(cfg);
    return true;
}

}  // namespace pagoda::cpu
