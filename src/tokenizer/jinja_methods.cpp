// Attribute and item access as jinja2's ImmutableSandboxedEnvironment does them, the methods of
// str, dict and list a template may call, and the global functions.
#include <ctime>

#include "tokenizer/jinja_builtins.hpp"
#include "tokenizer/py_text.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok::jinja {

const Value *CallArgs::get(size_t index, const char *name) const {
    if (index < positional.size()) return &positional[index];
    if (name != nullptr)
        for (const auto &[k, v] : keywords)
            if (k == name) return &v;
    return nullptr;
}

void CallArgs::check(const std::string &what, size_t max_positional, std::initializer_list<const char *> names) const {
    if (positional.size() > max_positional)
        render_error(what + " takes at most " + std::to_string(max_positional) + " positional argument(s) (" +
                     std::to_string(positional.size()) + " given)");
    for (const auto &[k, v] : keywords) {
        bool known = false;
        for (const char *n : names) known = known || k == n;
        if (!known) render_error(what + " got an unexpected keyword argument '" + k + "'");
    }
}

void Runtime::step(uint64_t n) {
    steps += n;
    if (steps > max_steps)
        throw ChatTemplateError(ChatTemplateErrorKind::Limit,
                                "rendering took more than " + std::to_string(max_steps) + " steps");
}

void Runtime::check_size(size_t bytes) const {
    if (bytes > max_string_bytes)
        throw ChatTemplateError(ChatTemplateErrorKind::Limit,
                                "a string or the output would exceed " + std::to_string(max_string_bytes) + " bytes");
}

namespace {

bool one_of(const std::string &name, std::initializer_list<const char *> names) {
    for (const char *n : names)
        if (name == n) return true;
    return false;
}

// Methods this renderer implements; other Python methods of these types fail when called.
const std::initializer_list<const char *> kStringMethods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower", "title",
    "capitalize", "replace", "find", "rfind", "count", "join", "splitlines", "isdigit", "isalpha", "isalnum",
    "isspace", "islower", "isupper", "removeprefix", "removesuffix", "index", "rindex"};
const std::initializer_list<const char *> kStringUnsupported = {
    "format", "format_map", "encode", "expandtabs", "partition", "rpartition", "center", "ljust", "rjust",
    "zfill", "swapcase", "casefold", "translate", "maketrans", "isdecimal", "isnumeric", "isidentifier",
    "isprintable", "isascii", "istitle"};
const std::initializer_list<const char *> kDictMethods = {"items", "keys", "values", "get"};
const std::initializer_list<const char *> kDictMutators = {"pop", "popitem", "update", "setdefault", "clear", "copy", "fromkeys"};
const std::initializer_list<const char *> kListMethods = {"index", "count"};
const std::initializer_list<const char *> kListMutators = {"append", "extend", "insert", "pop", "remove", "clear",
                                                           "sort", "reverse", "copy"};

Value bind(const Value &self, const std::string &name) {
    return Value::callable({.kind = Callable::Kind::Method, .name = name, .self = self});
}

Value no_attribute(const Value &obj, const std::string &name) {
    const std::string type = obj.type_name();
    if (obj.is_dict() || obj.is_string() || obj.is_sequence())
        return Value::undefined("'" + type + " object' has no attribute '" + name + "'");
    return Value::undefined("'" + type + "' object has no attribute '" + name + "'");
}

// The method `name` of obj, bound; Undefined (with a hint) when obj has none.
Value method_of(const Value &obj, const std::string &name) {
    if (obj.is_string() && (one_of(name, kStringMethods) || one_of(name, kStringUnsupported))) return bind(obj, name);
    if (obj.is_dict() && (one_of(name, kDictMethods) || one_of(name, kDictMutators))) return bind(obj, name);
    if (obj.is_indexable_sequence() && (one_of(name, kListMethods) || one_of(name, kListMutators))) return bind(obj, name);
    return Value();
}

}  // namespace

Value get_attribute(const Value &obj, const std::string &name) {
    if (obj.is_undefined()) render_error(obj.undefined_hint().empty() ? "undefined value" : obj.undefined_hint());
    if (!name.empty() && name[0] == '_') return Value::undefined("access to attribute '" + name + "' is unsafe");
    if (obj.is_namespace()) {
        const Value *v = obj.as_namespace().attributes.find(name);
        return v ? *v : no_attribute(obj, name);
    }
    Value method = method_of(obj, name);
    if (!method.is_undefined()) return method;
    if (obj.is_dict()) {
        const Value *v = obj.as_dict().find(name);
        if (v) return *v;
    }
    return no_attribute(obj, name);
}

Value get_item(const Value &obj, const Value &key) {
    if (obj.is_undefined()) render_error(obj.undefined_hint().empty() ? "undefined value" : obj.undefined_hint());
    if (obj.is_dict()) {
        const Value *v = obj.as_dict().find(key);
        if (v) return *v;
    } else if ((obj.is_indexable_sequence() || obj.is_string()) && (key.is_int() || key.is_bool())) {
        int64_t i = key.integer();
        if (obj.is_string()) {
            const std::u32string chars = py::code_points(obj.as_string());
            const int64_t n = int64_t(chars.size());
            if (i < 0) i += n;
            if (i >= 0 && i < n) return Value(py::to_utf8(std::u32string(1, chars[size_t(i)])));
            return Value::undefined("string index out of range");
        }
        const auto &items = obj.as_sequence().items;
        const int64_t n = int64_t(items.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return items[size_t(i)];
        return Value::undefined("list index out of range");
    }
    if (key.is_string()) return get_attribute(obj, key.as_string());
    if (obj.is_dict()) return Value::undefined("'dict object' has no attribute " + repr(key));
    return Value::undefined("'" + obj.type_name() + "' object is not subscriptable by " + key.type_name());
}

namespace {

std::string string_arg(const Value *v, const std::string &what) {
    if (v == nullptr || !v->is_string()) render_error(what + " must be a str, not " + (v ? v->type_name() : "nothing"));
    return v->as_string();
}

std::optional<std::string> optional_string(const Value *v, const std::string &what) {
    if (v == nullptr || v->is_none()) return std::nullopt;
    return string_arg(v, what);
}

int64_t int_arg(const Value *v, int64_t fallback, const std::string &what) {
    if (v == nullptr || v->is_none()) return fallback;
    if (!v->is_int() && !v->is_bool()) render_error(what + " must be an integer, not " + v->type_name());
    return v->integer();
}

bool char_class(const std::string &s, bool (*pred)(char32_t)) {
    const std::u32string cps = py::code_points(s);
    if (cps.empty()) return false;
    for (char32_t c : cps)
        if (!pred(c)) return false;
    return true;
}

Value string_method(const std::string &s, const std::string &name, const CallArgs &args, Runtime &rt) {
    const std::string what = "str." + name + "()";
    if (one_of(name, kStringUnsupported)) unsupported("method " + what);
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        args.check(what, 1, {});
        const auto side = name == "strip" ? py::StripSide::Both : name == "lstrip" ? py::StripSide::Left : py::StripSide::Right;
        return Value(py::strip(s, optional_string(args.get(0, nullptr), what), side));
    }
    if (name == "split" || name == "rsplit") {
        args.check(what, 2, {"sep", "maxsplit"});
        const auto sep = optional_string(args.get(0, "sep"), what);
        if (sep && sep->empty()) render_error("empty separator");
        std::vector<Value> parts;
        for (auto &p : py::split(s, sep, int_arg(args.get(1, "maxsplit"), -1, what), name == "rsplit"))
            parts.emplace_back(std::move(p));
        return Value::sequence(std::move(parts));
    }
    if (name == "startswith" || name == "endswith") {
        args.check(what, 1, {});
        const Value *arg = args.get(0, nullptr);
        std::vector<std::string> options;
        if (arg != nullptr && arg->is_sequence() && arg->as_sequence().kind == SeqKind::Tuple) {
            for (const Value &v : arg->as_sequence().items) options.push_back(string_arg(&v, what));
        } else {
            options.push_back(string_arg(arg, what));
        }
        for (const std::string &o : options) {
            if (o.size() > s.size()) continue;
            if (name == "startswith" ? s.compare(0, o.size(), o) == 0 : s.compare(s.size() - o.size(), o.size(), o) == 0)
                return Value(true);
        }
        return Value(false);
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
        args.check(what, 0, {});
        if (name == "upper") return Value(py::upper(s));
        if (name == "lower") return Value(py::lower(s));
        if (name == "title") return Value(py::title(s));
        return Value(py::capitalize(s));
    }
    if (name == "replace") {
        args.check(what, 3, {"count"});
        std::string out = py::replace(s, string_arg(args.get(0, nullptr), what), string_arg(args.get(1, nullptr), what),
                                      int_arg(args.get(2, "count"), -1, what));
        rt.check_size(out.size());
        return Value(std::move(out));
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
        args.check(what, 1, {});
        const std::string sub = string_arg(args.get(0, nullptr), what);
        if (name == "count") {
            if (sub.empty()) return Value(int64_t(py::length(s) + 1));
            int64_t n = 0;
            for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
            return Value(n);
        }
        const size_t at = (name == "find" || name == "index") ? s.find(sub) : s.rfind(sub);
        if (at == std::string::npos) {
            if (name == "index" || name == "rindex") render_error("substring not found");
            return Value(int64_t(-1));
        }
        return Value(int64_t(py::length(std::string_view(s).substr(0, at))));
    }
    if (name == "join") {
        args.check(what, 1, {});
        const Value *iterable = args.get(0, nullptr);
        if (iterable == nullptr) render_error(what + " takes exactly one argument");
        std::string out;
        bool first = true;
        for (const Value &v : iterate(*iterable)) {
            if (!v.is_string()) render_error("sequence item: expected str instance, " + v.type_name() + " found");
            if (!first) out += s;
            out += v.as_string();
            first = false;
            rt.check_size(out.size());
        }
        return Value(std::move(out));
    }
    if (name == "splitlines") {
        args.check(what, 0, {});
        std::vector<Value> lines;
        std::string current;
        const std::u32string cps = py::code_points(s);
        for (size_t i = 0; i < cps.size(); ++i) {
            const char32_t c = cps[i];
            const bool breaks = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
                                c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
            if (!breaks) {
                append_utf8(current, c);
                continue;
            }
            if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
            lines.emplace_back(std::move(current));
            current.clear();
        }
        if (!current.empty()) lines.emplace_back(std::move(current));
        return Value::sequence(std::move(lines));
    }
    if (name == "removeprefix" || name == "removesuffix") {
        args.check(what, 1, {});
        const std::string fix = string_arg(args.get(0, nullptr), what);
        if (name == "removeprefix" && s.compare(0, fix.size(), fix) == 0) return Value(s.substr(fix.size()));
        if (name == "removesuffix" && !fix.empty() && s.size() >= fix.size() &&
            s.compare(s.size() - fix.size(), fix.size(), fix) == 0)
            return Value(s.substr(0, s.size() - fix.size()));
        return Value(s);
    }
    args.check(what, 0, {});
    if (name == "isspace") return Value(char_class(s, py::is_space));
    if (name == "isdigit") return Value(char_class(s, [](char32_t c) { return c >= '0' && c <= '9'; }));
    if (name == "isalpha")
        return Value(char_class(s, [](char32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }));
    if (name == "isalnum")
        return Value(char_class(s, [](char32_t c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }));
    if (name == "islower") return Value(py::is_lower(s));
    if (name == "isupper") return Value(py::is_upper(s));
    unsupported("method " + what);
}

Value dict_method(const Value &self, const std::string &name, const CallArgs &args) {
    const std::string what = "dict." + name + "()";
    if (one_of(name, kDictMutators))
        render_error("access to attribute '" + name + "' of 'dict' object is unsafe (templates cannot change values)");
    const Dict &d = self.as_dict();
    if (name == "get") {
        args.check(what, 2, {});
        const Value *key = args.get(0, nullptr);
        if (key == nullptr) render_error("get expected at least 1 argument, got 0");
        const Value *v = d.find(*key);
        if (v) return *v;
        const Value *fallback = args.get(1, nullptr);
        return fallback ? *fallback : Value::none();
    }
    args.check(what, 0, {});
    std::vector<Value> out;
    for (const auto &[k, v] : d.entries) {
        if (name == "items") out.push_back(Value::sequence({k, v}, SeqKind::Tuple));
        else out.push_back(name == "keys" ? k : v);
    }
    const SeqKind kind = name == "items" ? SeqKind::ItemsView : name == "keys" ? SeqKind::KeysView : SeqKind::ValuesView;
    return Value::sequence(std::move(out), kind);
}

Value list_method(const Value &self, const std::string &name, const CallArgs &args) {
    if (one_of(name, kListMutators))
        render_error("access to attribute '" + name + "' of '" + self.type_name() +
                     "' object is unsafe (templates cannot change values)");
    args.check(self.type_name() + "." + name + "()", 1, {});
    const Value *item = args.get(0, nullptr);
    if (item == nullptr) render_error(name + "() takes exactly one argument");
    const auto &items = self.as_sequence().items;
    int64_t count = 0;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!equal(items[i], *item)) continue;
        if (name == "index") return Value(int64_t(i));
        ++count;
    }
    if (name == "index") render_error(repr(*item) + " is not in list");
    return Value(count);
}

Value global_range(const CallArgs &args) {
    args.check("range()", 3, {});
    if (args.positional.empty()) render_error("range expected at least 1 argument, got 0");
    int64_t start = 0, stop = 0, step = 1;
    if (args.positional.size() == 1) {
        stop = int_arg(&args.positional[0], 0, "range()");
    } else {
        start = int_arg(&args.positional[0], 0, "range()");
        stop = int_arg(&args.positional[1], 0, "range()");
        if (args.positional.size() == 3) step = int_arg(&args.positional[2], 1, "range()");
    }
    if (step == 0) render_error("range() arg 3 must not be zero");
    std::vector<Value> out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (out.size() >= 100000)  // jinja2's sandbox MAX_RANGE
            render_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        out.emplace_back(i);
        if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
    }
    return Value::sequence(std::move(out));
}

Value global_strftime_now(const CallArgs &args, Runtime &rt) {
    args.check("strftime_now()", 1, {});
    const std::string format = string_arg(args.get(0, nullptr), "strftime_now() format");
    const auto now = rt.now ? rt.now() : std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm local{};
    localtime_r(&t, &local);
    if (format.empty()) return Value(std::string());
    std::string out(256 + format.size() * 8, '\0');
    const size_t n = std::strftime(out.data(), out.size(), format.c_str(), &local);
    if (n == 0) render_error("strftime_now(): the format gives no text or too much");
    out.resize(n);
    return Value(std::move(out));
}

}  // namespace

Value call_builtin(const Callable &callable, const CallArgs &args, Runtime &rt) {
    const std::string &name = callable.name;
    if (callable.kind == Callable::Kind::Method) {
        const Value &self = callable.self;
        if (self.is_string()) return string_method(self.as_string(), name, args, rt);
        if (self.is_dict()) return dict_method(self, name, args);
        if (self.is_sequence()) return list_method(self, name, args);
        unsupported("method '" + name + "' of " + self.type_name());
    }
    if (name == "raise_exception") {
        const Value *msg = args.get(0, nullptr);
        throw ChatTemplateError(ChatTemplateErrorKind::Raised, msg ? to_str(*msg) : std::string());
    }
    if (name == "strftime_now") return global_strftime_now(args, rt);
    if (name == "range") return global_range(args);
    if (name == "namespace" || name == "dict") {
        Dict d;
        if (!args.positional.empty()) {
            if (args.positional.size() > 1 || !args.positional[0].is_dict())
                unsupported(name + "() with positional arguments other than one dict");
            d = args.positional[0].as_dict();
        }
        for (const auto &[k, v] : args.keywords) d.set(Value(k), v);
        if (name == "dict") return Value::dict(std::move(d));
        auto ns = std::make_shared<Namespace>();
        ns->attributes = std::move(d);
        rt.namespaces.push_back(ns);
        return Value(std::move(ns));
    }
    unsupported("global function '" + name + "'");
}

std::vector<std::pair<std::string, Value>> global_functions() {
    std::vector<std::pair<std::string, Value>> out;
    for (const char *name : {"raise_exception", "strftime_now", "range", "namespace", "dict", "cycler", "joiner", "lipsum"}) {
        out.emplace_back(name, Value::callable({.kind = Callable::Kind::Global, .name = name}));
    }
    return out;
}

}  // namespace pagoda::tok::jinja
