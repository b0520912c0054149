// A connection's bytes in, whole HTTP/1.1 requests out: http-parser driven under the header and
// body limits, one request at a time (the parser pauses after each one until resume(), so that
// pipelined requests are answered in order). Knows nothing of sockets, so it can be fuzzed.
#pragma once

#include <http_parser.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "server/http_message.hpp"

namespace pagoda::server {

class RequestReader {
public:
    struct Limits {
        int64_t max_header_bytes;  // request line plus headers (431 beyond)
        int64_t max_body_bytes;    // decoded body (413 beyond)
    };
    // Called as a request's first byte is read, and when it asks for `100 Continue`.
    struct Hooks {
        std::function<void()> on_begin;
        std::function<void()> on_expect_continue;
    };
    enum class Outcome {
        NeedMore,  // every byte was used; the request (if one began) is incomplete
        Request,   // a whole request is in request(); resume() before feeding more
        Refused,   // malformed or over a limit: answer refused_status() and close
    };

    RequestReader(Limits limits, Hooks hooks);
    RequestReader(const RequestReader &) = delete;
    RequestReader &operator=(const RequestReader &) = delete;

    // Parses from `data`; `used` tells how many bytes were taken (the rest belong to the next
    // request when the outcome is Request).
    Outcome feed(std::string_view data, size_t &used);
    // Lets the next request be parsed once the current one is answered.
    void resume();

    HttpRequest &request() noexcept { return request_; }
    bool keep_alive() const noexcept { return keep_alive_; }
    int refused_status() const noexcept { return refused_status_; }
    const std::string &refused_message() const noexcept { return refused_message_; }

private:
    friend struct ReaderCallbacks;
    bool over_header_limit(size_t more);
    Outcome refuse(int status, std::string message);

    Limits limits_;
    Hooks hooks_;
    http_parser parser_{};
    HttpRequest request_;
    size_t header_bytes_ = 0;
    bool in_header_value_ = false;
    bool keep_alive_ = true;
    int limit_status_ = 0;  // set by a callback that refuses the request (413, 431)
    int refused_status_ = 0;
    std::string refused_message_;
};

}  // namespace pagoda::server
