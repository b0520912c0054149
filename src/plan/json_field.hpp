// Reading one typed field of a JSON object, for the plan room's files (cost files), with errors
// that name where the field was looked for.
#pragma once

#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace pagoda::plan {

// Field `key` of `obj` as T, or throws Error(FORMAT) naming `where` and the key.
template <typename T>
T field(const nlohmann::json &obj, const char *key, const std::string &where) {
    if (!obj.is_object() || !obj.contains(key))
        throw Error(PAGODA_ERR_FORMAT, where + ": missing \"" + key + "\"");
    const nlohmann::json &v = obj.at(key);
    const bool ok = std::is_same_v<T, std::string> ? v.is_string()
                    : std::is_same_v<T, bool>      ? v.is_boolean()
                    : std::is_integral_v<T>        ? v.is_number_integer()
                                                   : v.is_number();
    if (!ok) throw Error(PAGODA_ERR_FORMAT, where + ": \"" + key + "\" has the wrong type (" + v.type_name() + ")");
    return v.get<T>();
}

}  // namespace pagoda::plan
