// Reading tokenizer.json: a JSON value with the path that leads to it, so every message names the
// file and the field at fault ("tokenizer.json: model.merges[3] must be a string").
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/json_text.hpp"

namespace pagoda::tok {

struct Field {
    const nlohmann::json &value;
    std::string where;

    [[noreturn]] void fail(pagoda_status_t status, const std::string &what) const {
        throw Error(status, where + " " + what);
    }
    [[noreturn]] void wrong_type(const char *expected) const {
        fail(PAGODA_ERR_FORMAT, std::string("must be ") + expected + ", found " + json_type_phrase(value));
    }
    bool has(const char *key) const { return value.is_object() && value.contains(key) && !value[key].is_null(); }
    Field at(const char *key) const {
        if (!value.is_object()) wrong_type("an object");
        const auto it = value.find(key);
        if (it == value.end()) throw Error(PAGODA_ERR_FORMAT, where + "." + key + " is missing");
        return {*it, where + "." + key};
    }
    Field at(size_t index) const { return {value[index], where + "[" + std::to_string(index) + "]"}; }
    std::string string() const {
        if (!value.is_string()) wrong_type("a string");
        return value.get<std::string>();
    }
    bool boolean() const {
        if (!value.is_boolean()) wrong_type("a boolean");
        return value.get<bool>();
    }
    int64_t integer() const {
        if (!value.is_number_integer()) wrong_type("an integer");
        return value.get<int64_t>();
    }
    double number() const {
        if (!value.is_number()) wrong_type("a number");
        return value.get<double>();
    }
    const nlohmann::json &array() const {
        if (!value.is_array()) wrong_type("an array");
        return value;
    }
    // Optional members with their defaults (absent or null gives the default).
    std::string string_or(const char *key, const std::string &fallback) const {
        return has(key) ? at(key).string() : fallback;
    }
    bool boolean_or(const char *key, bool fallback) const { return has(key) ? at(key).boolean() : fallback; }
    std::string type() const { return at("type").string(); }
};

inline int32_t token_id_value(const Field &f, int64_t limit = INT32_MAX) {
    const int64_t id = f.integer();
    if (id < 0 || id >= limit) f.fail(PAGODA_ERR_FORMAT, "= " + std::to_string(id) + " is not a valid token id");
    return int32_t(id);
}

[[noreturn]] inline void unsupported(const Field &f, const char *kind, const std::string &type) {
    throw Error(PAGODA_ERR_UNSUPPORTED, f.where + ": " + kind + " '" + type + "' is not supported");
}

}  // namespace pagoda::tok
