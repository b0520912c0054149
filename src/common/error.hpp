// Errors inside the core: an exception type that carries a status, and the thread-local message
// that the C ABI reports through pagoda_last_error_message().
#pragma once

#include <stdexcept>
#include <string>

#include "pagoda/status.h"

namespace pagoda {

// Thrown inside the core for a failure that the caller must hear about; the C ABI guard turns it
// into its status and message.
class Error : public std::runtime_error {
public:
    Error(pagoda_status_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    pagoda_status_t status() const noexcept { return status_; }

private:
    pagoda_status_t status_;
};

// "PAGODA_ERR_FORMAT" for PAGODA_ERR_FORMAT: pagoda_status_string's text, for the core's own
// messages (the rooms below the C API do not call it). "PAGODA_ERR_UNKNOWN" for other values.
const char *status_name(int status) noexcept;

// Sets the calling thread's error message.
void set_last_error(const std::string &message) noexcept;
const char *last_error() noexcept;
void clear_last_error() noexcept;

}  // namespace pagoda
