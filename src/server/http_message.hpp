// An HTTP/1.1 request as the connection parsed it, and a response to serialize.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagoda::server {

using Header = std::pair<std::string, std::string>;

struct HttpRequest {
    std::string method;  // "GET", "POST", ...
    std::string url;     // as sent: path and query
    std::vector<Header> headers;
    std::string body;    // decoded (chunked bodies joined)

    // The path without the query string.
    std::string_view path() const;
    // The first header named `name` (case-insensitive), or NULL.
    const std::string *header(std::string_view name) const;
};

struct HttpResponse {
    int status = 200;
    std::vector<Header> headers;  // Content-Length and Connection are added when serialized
    std::string body;
    std::string content_type = "application/json";

    static HttpResponse json(int status, std::string body) {
        HttpResponse r;
        r.status = status;
        r.body = std::move(body);
        return r;
    }
};

const char *status_reason(int status);
bool equals_ignore_case(std::string_view a, std::string_view b);

// The status line and headers, ending with the blank line. `content_length` < 0 means a chunked
// body follows.
std::string serialize_head(int status, const std::string &content_type,
                           const std::vector<Header> &headers, long long content_length,
                           bool keep_alive);

// One chunk of a chunked body; an empty `data` gives the last chunk.
std::string chunk(std::string_view data);

}  // namespace pagoda::server
