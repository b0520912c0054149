// What Linux says about the host through /proc: the processor's name and the memory figures
// the CPU backend derives its device budgets from.
#pragma once

#include <cstdint>
#include <string>

namespace pagoda::cpu {

// One "Key: value" entry of a /proc file such as /proc/cpuinfo; empty if absent.
std::string proc_field(const char *file, const std::string &key);

// A /proc/meminfo entry ("MemTotal", "MemAvailable") in bytes; 0 if absent.
uint64_t meminfo_bytes(const char *key);

}  // namespace pagoda::cpu
