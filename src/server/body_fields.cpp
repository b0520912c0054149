#include "server/body_fields.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "server/api_error.hpp"

namespace pagoda::server {

using nlohmann::json;

const json *field(const json &body, const char *name) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
}

std::string describe(const json &v) {
    switch (v.type()) {
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number with a fraction";
    default: return "a number";
    }
}

int64_t get_int(const json &body, const char *name, int64_t lo, int64_t hi, int64_t dflt) {
    const json *v = field(body, name);
    if (v == nullptr) return dflt;
    int64_t x;
    if (v->is_number_unsigned()) {
        uint64_t u = v->get<uint64_t>();
        x = u > uint64_t(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                              : int64_t(u);
    } else if (v->is_number_integer()) {
        x = v->get<int64_t>();
    } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
               std::floor(v->get<double>()) == v->get<double>() && std::fabs(v->get<double>()) < 9e15) {
        x = int64_t(v->get<double>());
    } else {
        invalid_field(name, std::string(name) + " must be an integer, not " + describe(*v));
    }
    if (x < lo || x > hi)
        invalid_field(name, std::string(name) + " must be from " + std::to_string(lo) + " to " +
                                std::to_string(hi) + " (got " + std::to_string(x) + ")");
    return x;
}

double get_number(const json &body, const char *name, double lo, double hi, double dflt,
                  bool lo_open) {
    const json *v = field(body, name);
    if (v == nullptr) return dflt;
    if (!v->is_number()) invalid_field(name, std::string(name) + " must be a number, not " + describe(*v));
    double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo)) {
        char range[96];
        std::snprintf(range, sizeof range, "%s%g, %g]", lo_open ? "(" : "[", lo, hi);
        invalid_field(name, std::string(name) + " must be in " + range + " (got " + v->dump() + ")");
    }
    return x;
}

bool get_bool(const json &body, const char *name, bool dflt) {
    const json *v = field(body, name);
    if (v == nullptr) return dflt;
    if (!v->is_boolean()) invalid_field(name, std::string(name) + " must be a boolean, not " + describe(*v));
    return v->get<bool>();
}

std::string get_string(const json &body, const char *name) {
    const json *v = field(body, name);
    if (v == nullptr) return {};
    if (!v->is_string()) invalid_field(name, std::string(name) + " must be a string, not " + describe(*v));
    return v->get<std::string>();
}

}  // namespace pagoda::server
