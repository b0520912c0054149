#include "common/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace pagoda {

namespace {

constexpr int kLevelOff = 4;

int threshold_from_env() {
    const char *v = std::getenv("PAGODA_LOG_LEVEL");
    if (v == nullptr || *v == '\0') return PAGODA_LOG_WARN;
    if (std::strcmp(v, "debug") == 0) return PAGODA_LOG_DEBUG;
    if (std::strcmp(v, "info") == 0) return PAGODA_LOG_INFO;
    if (std::strcmp(v, "warn") == 0) return PAGODA_LOG_WARN;
    if (std::strcmp(v, "error") == 0) return PAGODA_LOG_ERROR;
    if (std::strcmp(v, "off") == 0) return kLevelOff;
    return PAGODA_LOG_WARN;
}

const char *level_name(pagoda_log_level_t level) {
    switch (level) {
        case PAGODA_LOG_DEBUG: return "debug";
        case PAGODA_LOG_INFO: return "info";
        case PAGODA_LOG_WARN: return "warn";
        case PAGODA_LOG_ERROR: return "error";
    }
    return "log";
}

}  // namespace

void log(pagoda_log_level_t level, const std::string &message) noexcept {
    static const int threshold = threshold_from_env();
    if (int(level) < threshold) return;
    static std::mutex mutex;  // keeps lines from two threads whole
    std::lock_guard<std::mutex> lock(mutex);
    std::fprintf(stderr, "pagoda %s: %s\n", level_name(level), message.c_str());
}

}  // namespace pagoda
