#include "runtime/kernel_choices.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "formats/dtypes.hpp"
#include "formats/names.hpp"
#include "pagoda/dtype.h"

namespace pagoda::runtime {

namespace {

using nlohmann::json;

constexpr const char *kFormat = "pagoda-kernel-choices";
constexpr int64_t kVersion = 1;
// Buckets past this many rows are not a product anyone runs.
constexpr int64_t kMaxBucket = int64_t(1) << 40;

// A type by its dtype.h name ("q8_0"), or INVALID.
pagoda_dtype_t dtype_named(const std::string &name) {
    for (int64_t v = PAGODA_DTYPE_INVALID + 1; v <= formats::kLastDtype; ++v) {
        const char *n = formats::dtype_name(static_cast<pagoda_dtype_t>(v));
        if (std::strcmp(n, "invalid") == 0) continue;
        if (name == n) return static_cast<pagoda_dtype_t>(v);
    }
    return PAGODA_DTYPE_INVALID;
}

std::string dtype_text(pagoda_dtype_t d) {
    return formats::dtype_name(d);
}

[[noreturn]] void bad(const std::string &where, const std::string &what) {
    throw Error(PAGODA_ERR_FORMAT, where + ": " + what);
}

const json &member(const json &object, const char *key, const std::string &where) {
    if (!object.contains(key)) bad(where, std::string("has no \"") + key + "\"");
    return object.at(key);
}

std::string string_member(const json &object, const char *key, const std::string &where) {
    const json &v = member(object, key, where);
    if (!v.is_string())
        bad(where, std::string("\"") + key + "\" must be a string, not " + json_type_phrase(v));
    return v.get<std::string>();
}

int64_t int_member(const json &object, const char *key, int64_t min, int64_t max,
                   const std::string &where) {
    const json &v = member(object, key, where);
    if (!v.is_number_integer())
        bad(where, std::string("\"") + key + "\" must be an integer, not " + json_type_phrase(v));
    const int64_t i = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)
                          ? INT64_MAX
                          : v.get<int64_t>();
    if (i < min || i > max)
        bad(where, std::string("\"") + key + "\" = " + std::to_string(i) + " is outside [" +
                       std::to_string(min) + ", " + std::to_string(max) + "]");
    return i;
}

double seconds_value(const json &v, const std::string &where) {
    if (!v.is_number()) bad(where, "must be a number of seconds, not " + json_type_phrase(v));
    const double s = v.get<double>();
    if (!(s >= 0.0) || std::isinf(s)) bad(where, "is not a time in seconds");
    return s;
}

pagoda_dtype_t dtype_member(const json &object, const char *key, const std::string &where) {
    const std::string name = string_member(object, key, where);
    const pagoda_dtype_t d = dtype_named(name);
    if (d == PAGODA_DTYPE_INVALID)
        bad(where, std::string("\"") + key + "\" = \"" + name + "\" is not a type name");
    return d;
}

std::pair<MatmulShape, KernelChoice> parse_entry(const json &e, const std::string &where) {
    if (!e.is_object()) bad(where, "must be an object, not " + json_type_phrase(e));
    const std::string op = string_member(e, "op", where);
    if (op != "matmul") bad(where, "\"op\" = \"" + op + "\": only \"matmul\" has choices");
    MatmulShape s;
    s.device = string_member(e, "device", where);
    s.w_dtype = dtype_member(e, "w", where);
    s.x_dtype = dtype_member(e, "x", where);
    s.y_dtype = dtype_member(e, "y", where);
    s.flags = uint32_t(int_member(e, "flags", 0, UINT32_MAX, where));
    s.n = int_member(e, "n", 1, INT64_MAX, where);
    s.k = int_member(e, "k", 1, INT64_MAX, where);
    s.m_bucket = int_member(e, "m", 1, kMaxBucket, where);
    if (KernelChoices::bucket(s.m_bucket) != s.m_bucket)
        bad(where, "\"m\" = " + std::to_string(s.m_bucket) + " is not a power of two");
    KernelChoice c;
    c.variant = string_member(e, "variant", where);
    if (c.variant.empty()) bad(where, "\"variant\" is empty");
    if (e.contains("seconds")) {
        const json &t = e.at("seconds");
        if (!t.is_object()) bad(where, "\"seconds\" must be an object, not " + json_type_phrase(t));
        for (const auto &[name, value] : t.items()) {
            const double sec = seconds_value(value, where + ": seconds." + name);
            if (name == KernelChoices::kRules)
                c.rules_seconds = sec;
            else
                c.measured.emplace_back(name, sec);
            if (name == c.variant) c.seconds = sec;
        }
    }
    return {std::move(s), std::move(c)};
}

}  // namespace

int64_t KernelChoices::bucket(int64_t m) {
    int64_t b = 1;
    while (b < m && b < kMaxBucket) b *= 2;
    return b;
}

std::string KernelChoices::device_kind(const Device &device) {
    const pagoda_device_info_t &i = device.info();
    return device.backend()->name + " / " + i.arch + " / " + i.name + " / " +
           std::to_string(i.compute_units) + " units";
}

MatmulShape KernelChoices::shape_of(const std::string &device_kind, const pagoda_op_matmul_t &a) {
    MatmulShape s;
    s.device = device_kind;
    s.w_dtype = a.w_dtype;
    s.x_dtype = a.x_dtype;
    s.y_dtype = a.y_dtype;
    s.flags = a.flags;
    s.n = a.n;
    s.k = a.k;
    s.m_bucket = bucket(a.m);
    return s;
}

const KernelChoice *KernelChoices::find(const MatmulShape &shape) const {
    const auto it = entries_.find(shape);
    return it == entries_.end() ? nullptr : &it->second;
}

KernelChoices KernelChoices::parse(const std::string &text, const std::string &source) {
    const json doc = parse_json_text(text, source);
    if (!doc.is_object()) bad(source, "must hold a JSON object, not " + json_type_phrase(doc));
    if (string_member(doc, "format", source) != kFormat)
        bad(source, std::string("\"format\" is not \"") + kFormat + "\"");
    const int64_t version = int_member(doc, "version", 0, INT64_MAX, source);
    if (version != kVersion)
        bad(source, "version " + std::to_string(version) + " (this library reads " +
                        std::to_string(kVersion) + ")");
    const json &list = member(doc, "choices", source);
    if (!list.is_array()) bad(source, "\"choices\" must be an array, not " + json_type_phrase(list));
    KernelChoices table;
    for (size_t i = 0; i < list.size(); ++i) {
        auto [shape, choice] = parse_entry(list[i], source + ": choices[" + std::to_string(i) + "]");
        if (table.find(shape) != nullptr)
            bad(source + ": choices[" + std::to_string(i) + "]", "repeats an earlier entry's shape");
        table.set(shape, std::move(choice));
    }
    return table;
}

KernelChoices KernelChoices::load(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int err = errno;
        throw Error(err == ENOENT ? PAGODA_ERR_NOT_FOUND : PAGODA_ERR_IO,
                    "cannot read the kernel choice file " + path + ": " + std::strerror(err));
    }
    std::stringstream text;
    text << in.rdbuf();
    if (in.bad()) throw Error(PAGODA_ERR_IO, "cannot read the kernel choice file " + path);
    return parse(text.str(), path);
}

std::string KernelChoices::to_json() const {
    json list = json::array();
    for (const auto &[s, c] : entries_) {
        json seconds = json::object();
        if (c.rules_seconds > 0) seconds[kRules] = c.rules_seconds;
        for (const auto &[name, sec] : c.measured) seconds[name] = sec;
        list.push_back({{"device", s.device},
                        {"op", "matmul"},
                        {"w", dtype_text(s.w_dtype)},
                        {"x", dtype_text(s.x_dtype)},
                        {"y", dtype_text(s.y_dtype)},
                        {"flags", s.flags},
                        {"n", s.n},
                        {"k", s.k},
                        {"m", s.m_bucket},
                        {"variant", c.variant},
                        {"seconds", seconds}});
    }
    const json doc = {{"format", kFormat}, {"version", kVersion}, {"choices", list}};
    return doc.dump(1) + "\n";
}

void KernelChoices::save(const std::string &path) const {
    const std::string partial = path + ".partial";
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        out << to_json();
        out.flush();
        if (!out) {
            std::remove(partial.c_str());
            throw Error(PAGODA_ERR_IO, "cannot write the kernel choice file " + partial);
        }
    }
    if (std::rename(partial.c_str(), path.c_str()) != 0) {
        const int err = errno;
        std::remove(partial.c_str());
        throw Error(PAGODA_ERR_IO, "cannot rename " + partial + " to " + path + ": " +
                                       std::strerror(err));
    }
}

}  // namespace pagoda::runtime
