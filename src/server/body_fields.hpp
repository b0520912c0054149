// Reading a request body's fields as OpenAI's API treats them: a null field is an absent one,
// and a field of the wrong kind or range is a 400 naming it (ApiError through invalid_field).
// Shared by the request parsers (request_parse, embedding_request, structured_output).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace pagoda::server {

// The field's value, or NULL when it is absent or null.
const nlohmann::json *field(const nlohmann::json &body, const char *name);

// "a string", "an array", "a number with a fraction", ...: what a value is, for messages.
std::string describe(const nlohmann::json &value);

// An integer in [lo, hi]; a float with no fraction counts (JavaScript clients send 16 as 16.0
// rarely, but they may). `dflt` when absent.
int64_t get_int(const nlohmann::json &body, const char *name, int64_t lo, int64_t hi, int64_t dflt);
// A finite number in [lo, hi] ((lo, hi] when lo_open).
double get_number(const nlohmann::json &body, const char *name, double lo, double hi, double dflt,
                  bool lo_open = false);
bool get_bool(const nlohmann::json &body, const char *name, bool dflt);
// "" when absent.
std::string get_string(const nlohmann::json &body, const char *name);

}  // namespace pagoda::server
