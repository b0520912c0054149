#include "server/server_options.hpp"

#include "common/error.hpp"

namespace pagoda::server {

pagoda_server_options_t default_public_server_options() {
    pagoda_server_options_t o{};
    o.struct_size = sizeof(o);
    ServerOptions d;
    o.port = d.port;
    o.max_header_bytes = d.max_header_bytes;
    o.max_body_bytes = d.max_body_bytes;
    o.idle_timeout_ms = d.idle_timeout_ms;
    o.request_timeout_ms = d.request_timeout_ms;
    o.drain_timeout_ms = d.drain_timeout_ms;
    o.max_unsent_bytes = d.max_unsent_bytes;
    return o;
}

namespace {

int64_t checked(int64_t v, int64_t lo, int64_t hi, const char *name) {
    if (v < lo || v > hi)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, std::string("options->") + name + " must be from " +
                                                     std::to_string(lo) + " to " + std::to_string(hi) +
                                                     " (got " + std::to_string(v) + ")");
    return v;
}

}  // namespace

ServerOptions ServerOptions::from_public(const pagoda_server_options_t &o) {
    ServerOptions s;
    if (o.host != nullptr) s.host = o.host;
    if (s.host.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "options->host is empty");
    s.port = int(checked(o.port, 0, 65535, "port"));
    if (o.api_key != nullptr) {
        s.api_key = o.api_key;
        if (s.api_key.empty())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "options->api_key is empty: pass NULL for no key");
    }
    if (o.cors_allowed_origins != nullptr) {
        std::string list = o.cors_allowed_origins;
        size_t start = 0;
        while (start <= list.size()) {
            size_t comma = list.find(',', start);
            if (comma == std::string::npos) comma = list.size();
            std::string item = list.substr(start, comma - start);
            while (!item.empty() && item.front() == ' ') item.erase(item.begin());
            while (!item.empty() && item.back() == ' ') item.pop_back();
            if (item == "*") s.cors_any = true;
            else if (!item.empty()) s.cors_origins.push_back(item);
            start = comma + 1;
        }
    }
    s.max_header_bytes = checked(o.max_header_bytes, 256, 1 << 20, "max_header_bytes");
    s.max_body_bytes = checked(o.max_body_bytes, 1, int64_t(1) << 32, "max_body_bytes");
    s.idle_timeout_ms = checked(o.idle_timeout_ms, 0, int64_t(1) << 40, "idle_timeout_ms");
    s.request_timeout_ms = checked(o.request_timeout_ms, 0, int64_t(1) << 40, "request_timeout_ms");
    s.drain_timeout_ms = checked(o.drain_timeout_ms, 0, int64_t(1) << 40, "drain_timeout_ms");
    s.max_unsent_bytes = checked(o.max_unsent_bytes, 4096, int64_t(1) << 40, "max_unsent_bytes");
    return s;
}

bool ServerOptions::origin_allowed(const std::string &origin) const {
    if (cors_any) return true;
    for (const std::string &o : cors_origins)
        if (o == origin) return true;
    return false;
}

}  // namespace pagoda::server
