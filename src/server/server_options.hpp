// pagoda_server_options_t checked and copied into the server's own form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pagoda/server.h"

namespace pagoda::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 0;
    std::string api_key;                    // "" = none
    std::vector<std::string> cors_origins;  // empty = no CORS headers
    bool cors_any = false;                  // "*"
    int64_t max_header_bytes = 16384;
    int64_t max_body_bytes = 8 << 20;
    int64_t idle_timeout_ms = 60000;
    int64_t request_timeout_ms = 30000;
    int64_t drain_timeout_ms = 10000;
    int64_t max_unsent_bytes = int64_t(16) << 20;

    // Throws Error(INVALID_ARGUMENT) naming the field.
    static ServerOptions from_public(const pagoda_server_options_t &o);
    // Whether a browser page from `origin` may call the server.
    bool origin_allowed(const std::string &origin) const;
};

pagoda_server_options_t default_public_server_options();

}  // namespace pagoda::server
