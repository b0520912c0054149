// The one guard every exported function body runs inside: no exception crosses the C ABI.
#pragma once

#include <new>
#include <utility>

#include "common/error.hpp"

namespace pagoda {

// Runs `body` (returning pagoda_status_t) and maps whatever it throws to a status plus the
// thread-local message. `where` names the public function, so messages read
// "pagoda_backend_load: ...".
template <typename Body>
pagoda_status_t guarded(const char *where, Body &&body) noexcept {
    try {
        return std::forward<Body>(body)();
    } catch (const Error &e) {
        set_last_error(std::string(where) + ": " + e.what());
        return e.status();
    } catch (const std::bad_alloc &) {
        set_last_error(std::string(where) + ": out of memory");
        return PAGODA_ERR_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        set_last_error(std::string(where) + ": internal error: " + e.what());
        return PAGODA_ERR_INTERNAL;
    } catch (...) {
        set_last_error(std::string(where) + ": internal error: unknown exception");
        return PAGODA_ERR_INTERNAL;
    }
}

// Fails with `status` and `message` from inside a guarded body.
[[noreturn]] inline void fail(pagoda_status_t status, const std::string &message) {
    throw Error(status, message);
}

}  // namespace pagoda
