#include "backend/host_services.hpp"

#include <cstdlib>

#include "common/error.hpp"
#include "common/log.hpp"

namespace pagoda {

namespace {

void host_log(void *, pagoda_log_level_t level, const char *message) {
    log(level, message ? message : "(null)");
}

// A plugin's message becomes the thread's error; the registry or the caller prefixes where.
void host_set_error(void *, const char *message) { set_last_error(message ? message : ""); }

void *host_alloc(void *, size_t size, size_t alignment) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return nullptr;
    size_t rounded = (size + alignment - 1) / alignment * alignment;
    return std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
}

void host_free(void *, void *ptr) { std::free(ptr); }

}  // namespace

const pagoda_backend_host_t &host_services() noexcept {
    static const pagoda_backend_host_t table = {
        sizeof(pagoda_backend_host_t), PAGODA_BACKEND_ABI_VERSION, nullptr,
        host_log,                      host_set_error,             host_alloc,
        host_free,
    };
    return table;
}

}  // namespace pagoda
