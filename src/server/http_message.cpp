#include "server/http_message.hpp"

#include <cctype>
#include <cstdio>

namespace pagoda::server {

std::string_view HttpRequest::path() const {
    std::string_view u = url;
    size_t q = u.find_first_of("?#");
    return q == std::string_view::npos ? u : u.substr(0, q);
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

const std::string *HttpRequest::header(std::string_view name) const {
    for (const Header &h : headers)
        if (equals_ignore_case(h.first, name)) return &h.second;
    return nullptr;
}

const char *status_reason(int status) {
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
    }
}

std::string serialize_head(int status, const std::string &content_type,
                           const std::vector<Header> &headers, long long content_length,
                           bool keep_alive) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " + status_reason(status) + "\r\n";
    if (!content_type.empty()) out += "Content-Type: " + content_type + "\r\n";
    if (content_length >= 0)
        out += "Content-Length: " + std::to_string(content_length) + "\r\n";
    else
        out += "Transfer-Encoding: chunked\r\n";
    out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    for (const Header &h : headers) out += h.first + ": " + h.second + "\r\n";
    out += "\r\n";
    return out;
}

std::string chunk(std::string_view data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string out = size;
    out.append(data);
    out += "\r\n";
    return out;
}

}  // namespace pagoda::server
