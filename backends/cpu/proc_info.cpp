#include "proc_info.hpp"

#include <cstdlib>
#include <fstream>

namespace pagoda::cpu {

std::string proc_field(const char *file, const std::string &key) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) == 0) {
            size_t colon = line.find(':');
            if (colon == std::string::npos) continue;
            size_t start = line.find_first_not_of(" \t", colon + 1);
            return start == std::string::npos ? std::string() : line.substr(start);
        }
    }
    return {};
}

uint64_t meminfo_bytes(const char *key) {
    std::string v = proc_field("/proc/meminfo", key);
    return v.empty() ? 0 : std::strtoull(v.c_str(), nullptr, 10) * 1024ull;  // "N kB"
}

}  // namespace pagoda::cpu
