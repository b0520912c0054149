#include "common/log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace pagoda {

namespace {

pagoda_log_level_t level_from_env() {
    const char *v = std::getenv("PAGODA_LOG_LEVEL");
    if (v == nullptr || *v == '\0') return PAGODA_LOG_WARN;
    if (std::strcmp(v, "debug") == 0) return PAGODA_LOG_DEBUG;
    if (std::strcmp(v, "info") == 0) return PAGODA_LOG_INFO;
    if (std::strcmp(v, "warn") == 0) return PAGODA_LOG_WARN;
    if (std::strcmp(v, "error") == 0) return PAGODA_LOG_ERROR;
    if (std::strcmp(v, "off") == 0) return PAGODA_LOG_OFF;
    return PAGODA_LOG_WARN;
}

const char *level_name(pagoda_log_level_t level) {
    switch (level) {
        case PAGODA_LOG_DEBUG: return "debug";
        case PAGODA_LOG_INFO: return "info";
        case PAGODA_LOG_WARN: return "warn";
        case PAGODA_LOG_ERROR: return "error";
        case PAGODA_LOG_OFF: break;
    }
    return "log";
}

std::atomic<int> &threshold() {
    static std::atomic<int> t{int(level_from_env())};
    return t;
}

// The sink and the lock that keeps lines whole and lets set_log_callback wait out a running
// callback. Recursive so that a callback calling into pagoda (which may log) cannot deadlock;
// such nested lines are dropped instead.
struct Sink {
    std::recursive_mutex mutex;
    pagoda_log_callback_t callback = nullptr;
    void *user_data = nullptr;
    bool delivering = false;
};

Sink &sink() {
    static Sink s;
    return s;
}

}  // namespace

bool log_enabled(pagoda_log_level_t level) noexcept {
    return int(level) >= threshold().load(std::memory_order_relaxed) && level != PAGODA_LOG_OFF;
}

void log(pagoda_log_level_t level, const std::string &message) noexcept {
    if (!log_enabled(level)) return;
    Sink &s = sink();
    std::lock_guard lock(s.mutex);
    if (s.delivering) return;
    if (s.callback == nullptr) {
        std::fprintf(stderr, "pagoda %s: %s\n", level_name(level), message.c_str());
        return;
    }
    s.delivering = true;
    s.callback(s.user_data, level, message.c_str());
    s.delivering = false;
}

void set_log_level(pagoda_log_level_t level) noexcept { threshold().store(int(level), std::memory_order_relaxed); }

pagoda_log_level_t log_level() noexcept { return pagoda_log_level_t(threshold().load(std::memory_order_relaxed)); }

void set_log_callback(pagoda_log_callback_t callback, void *user_data) noexcept {
    Sink &s = sink();
    std::lock_guard lock(s.mutex);
    s.callback = callback;
    s.user_data = user_data;
}

}  // namespace pagoda
