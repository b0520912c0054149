// JSON text for clients. Token pieces and engine text may hold invalid UTF-8 (a byte token);
// nlohmann's dump throws on it by default, so every dump here replaces it with U+FFFD.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pagoda::server {

inline std::string dump_json(const nlohmann::json &j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pagoda::server
