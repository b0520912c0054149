#include "server/request_reader.hpp"

#include <climits>

namespace pagoda::server {

namespace {

RequestReader *of(http_parser *p) { return static_cast<RequestReader *>(p->data); }

// More headers than any real client sends; each costs a vector entry, so they are bounded too.
constexpr size_t kMaxHeaders = 128;

}  // namespace

// http-parser's callbacks; they reach the reader's private state.
struct ReaderCallbacks {
    static int message_begin(http_parser *p) {
        RequestReader *r = of(p);
        r->request_ = HttpRequest{};
        r->header_bytes_ = 0;
        r->in_header_value_ = false;
        if (r->hooks_.on_begin) r->hooks_.on_begin();
        return 0;
    }
    static int url(http_parser *p, const char *at, size_t n) {
        RequestReader *r = of(p);
        if (r->over_header_limit(n)) return 1;
        r->request_.url.append(at, n);
        return 0;
    }
    static int header_field(http_parser *p, const char *at, size_t n) {
        RequestReader *r = of(p);
        if (r->over_header_limit(n + 4)) return 1;  // ": " and CRLF count too
        if (r->request_.headers.empty() || r->in_header_value_) {
            if (r->request_.headers.size() >= kMaxHeaders) {
                r->limit_status_ = 431;
                return 1;
            }
            r->request_.headers.emplace_back();
        }
        r->in_header_value_ = false;
        r->request_.headers.back().first.append(at, n);
        return 0;
    }
    static int header_value(http_parser *p, const char *at, size_t n) {
        RequestReader *r = of(p);
        if (r->over_header_limit(n)) return 1;
        r->in_header_value_ = true;
        r->request_.headers.back().second.append(at, n);
        return 0;
    }
    static int headers_complete(http_parser *p) {
        RequestReader *r = of(p);
        r->request_.method = http_method_str(static_cast<http_method>(p->method));
        // A declared length over the limit is refused before its body is read.
        if (!(p->flags & F_CHUNKED) && p->content_length != ULLONG_MAX &&
            p->content_length > uint64_t(r->limits_.max_body_bytes)) {
            r->limit_status_ = 413;
            return -1;
        }
        if (const std::string *e = r->request_.header("Expect");
            e != nullptr && equals_ignore_case(*e, "100-continue") && r->hooks_.on_expect_continue)
            r->hooks_.on_expect_continue();
        return 0;
    }
    static int body(http_parser *p, const char *at, size_t n) {
        RequestReader *r = of(p);
        if (int64_t(r->request_.body.size() + n) > r->limits_.max_body_bytes) {
            r->limit_status_ = 413;
            return 1;
        }
        r->request_.body.append(at, n);
        return 0;
    }
    static int message_complete(http_parser *p) {
        RequestReader *r = of(p);
        r->keep_alive_ = http_should_keep_alive(p) != 0;
        http_parser_pause(p, 1);
        return 0;
    }
    static const http_parser_settings &settings() {
        static const http_parser_settings s = [] {
            http_parser_settings x;
            http_parser_settings_init(&x);
            x.on_message_begin = message_begin;
            x.on_url = url;
            x.on_header_field = header_field;
            x.on_header_value = header_value;
            x.on_headers_complete = headers_complete;
            x.on_body = body;
            x.on_message_complete = message_complete;
            return x;
        }();
        return s;
    }
};

RequestReader::RequestReader(Limits limits, Hooks hooks) : limits_(limits), hooks_(std::move(hooks)) {
    http_parser_init(&parser_, HTTP_REQUEST);
    parser_.data = this;
}

bool RequestReader::over_header_limit(size_t more) {
    header_bytes_ += more;
    if (int64_t(header_bytes_) <= limits_.max_header_bytes) return false;
    limit_status_ = 431;
    return true;
}

RequestReader::Outcome RequestReader::refuse(int status, std::string message) {
    refused_status_ = status;
    refused_message_ = std::move(message);
    return Outcome::Refused;
}

RequestReader::Outcome RequestReader::feed(std::string_view data, size_t &used) {
    used = 0;
    if (refused_status_ != 0) return Outcome::Refused;  // the parser cannot resynchronise
    used = http_parser_execute(&parser_, &ReaderCallbacks::settings(), data.data(), data.size());
    const http_errno err = HTTP_PARSER_ERRNO(&parser_);
    if (err == HPE_PAUSED) {
        if (parser_.upgrade) return refuse(400, "protocol upgrades are not supported");
        return Outcome::Request;
    }
    if (err != HPE_OK) {
        const int status = limit_status_ != 0 ? limit_status_ : err == HPE_HEADER_OVERFLOW ? 431 : 400;
        if (status == 413)
            return refuse(status, "the request body is larger than the server accepts (" +
                                      std::to_string(limits_.max_body_bytes) + " bytes)");
        if (status == 431)
            return refuse(status, "the request's headers are larger than the server accepts (" +
                                      std::to_string(limits_.max_header_bytes) + " bytes)");
        return refuse(status, std::string("malformed HTTP request: ") + http_errno_description(err));
    }
    // Stopped early without an error: an upgrade or CONNECT.
    if (used != data.size()) return refuse(400, "protocol upgrades are not supported");
    return Outcome::NeedMore;
}

void RequestReader::resume() {
    request_ = HttpRequest{};
    http_parser_pause(&parser_, 0);
}

}  // namespace pagoda::server
