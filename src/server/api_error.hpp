// The errors HTTP clients see: a status code plus OpenAI's error object
// {"error":{"message","type","param","code"}}. Handlers throw ApiError; the router answers it.
#pragma once

#include <stdexcept>
#include <string>

namespace pagoda::server {

class ApiError : public std::runtime_error {
public:
    // `param` names the request field at fault ("" = none); `code` is a short machine-readable
    // reason ("" = derived from the status).
    ApiError(int status, const std::string &message, std::string param = {}, std::string code = {})
        : std::runtime_error(message), status_(status), param_(std::move(param)), code_(std::move(code)) {}
    int status() const noexcept { return status_; }
    const std::string &param() const noexcept { return param_; }
    const std::string &code() const noexcept { return code_; }

private:
    int status_;
    std::string param_;
    std::string code_;
};

// 400 naming `param`.
[[noreturn]] inline void invalid_field(const std::string &param, const std::string &message) {
    throw ApiError(400, message, param, "invalid_value");
}

// OpenAI's error object as JSON text.
std::string error_body(int status, const std::string &message, const std::string &param = {},
                       const std::string &code = {});
inline std::string error_body(const ApiError &e) {
    return error_body(e.status(), e.what(), e.param(), e.code());
}

}  // namespace pagoda::server
