#include "server/api_error.hpp"

#include "server/json_out.hpp"

namespace pagoda::server {

namespace {

// OpenAI's error types: clients branch on them (the openai package maps statuses to classes).
const char *error_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 501: return "not_implemented_error";
    case 503: return "service_unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

const char *default_code(int status) {
    switch (status) {
    case 400: return "invalid_request";
    case 401: return "invalid_api_key";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 408: return "request_timeout";
    case 413: return "request_too_large";
    case 431: return "headers_too_large";
    case 501: return "not_implemented";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "internal_error" : "invalid_request";
    }
}

}  // namespace

std::string error_body(int status, const std::string &message, const std::string &param,
                       const std::string &code) {
    nlohmann::json e = {{"message", message},
                        {"type", error_type(status)},
                        {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
                        {"code", code.empty() ? default_code(status) : code}};
    return dump_json(nlohmann::json{{"error", std::move(e)}});
}

}  // namespace pagoda::server
