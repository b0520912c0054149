// Parsing of a plugin's "key=value,key=value" configuration string.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda::plugin {

// Splits `text` (NULL or empty: no pairs) into pairs. Returns nothing and sets `error` to a
// sentence naming the bad piece when a piece lacks '=' or a key repeats.
inline std::optional<std::map<std::string, std::string>> parse_config(const char *text,
                                                                      std::string &error) {
    std::map<std::string, std::string> pairs;
    if (text == nullptr) return pairs;
    std::string_view rest(text);
    while (!rest.empty()) {
        size_t comma = rest.find(',');
        std::string_view piece = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (piece.empty()) continue;
        size_t eq = piece.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            error = "config entry '" + std::string(piece) + "' is not of the form key=value";
            return std::nullopt;
        }
        std::string key(piece.substr(0, eq));
        if (!pairs.emplace(key, std::string(piece.substr(eq + 1))).second) {
            error = "config key '" + key + "' is given twice";
            return std::nullopt;
        }
    }
    return pairs;
}

}  // namespace pagoda::plugin
