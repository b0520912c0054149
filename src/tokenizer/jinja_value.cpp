#include "tokenizer/jinja_value.hpp"

#include <algorithm>
#include <cmath>

#include "tokenizer/py_text.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok::jinja {

Value Value::sequence(std::vector<Value> items, SeqKind kind) {
    auto s = std::make_shared<Sequence>();
    s->kind = kind;
    s->items = std::move(items);
    return Value(Storage(std::shared_ptr<const Sequence>(std::move(s))));
}

Value Value::dict(Dict d) {
    return Value(Storage(std::shared_ptr<const Dict>(std::make_shared<Dict>(std::move(d)))));
}

Value Value::callable(Callable c) {
    return Value(Storage(std::shared_ptr<const Callable>(std::make_shared<Callable>(std::move(c)))));
}

bool Value::is_indexable_sequence() const {
    if (!is_sequence()) return false;
    const SeqKind k = as_sequence().kind;
    return k == SeqKind::List || k == SeqKind::Tuple;
}

std::string Value::type_name() const {
    if (is_undefined()) return "Undefined";
    if (is_none()) return "NoneType";
    if (is_bool()) return "bool";
    if (is_int()) return "int";
    if (is_float()) return "float";
    if (is_string()) return "str";
    if (is_dict()) return "dict";
    if (is_namespace()) return "Namespace";
    if (is_callable()) return as_callable().kind == Callable::Kind::Macro ? "Macro" : "function";
    switch (as_sequence().kind) {
    case SeqKind::List: return "list";
    case SeqKind::Tuple: return "tuple";
    case SeqKind::Generator: return "generator";
    case SeqKind::ItemsView: return "dict_items";
    case SeqKind::KeysView: return "dict_keys";
    case SeqKind::ValuesView: return "dict_values";
    }
    return "object";
}

const Value *Dict::find(const Value &key) const {
    for (const auto &[k, v] : entries)
        if (equal(k, key)) return &v;
    return nullptr;
}

const Value *Dict::find(const std::string &key) const {
    for (const auto &[k, v] : entries)
        if (k.is_string() && k.as_string() == key) return &v;
    return nullptr;
}

void Dict::set(Value key, Value value) {
    for (auto &[k, v] : entries)
        if (equal(k, key)) {
            v = std::move(value);
            return;
        }
    entries.emplace_back(std::move(key), std::move(value));
}

bool truthy(const Value &v) {
    if (v.is_undefined() || v.is_none()) return false;
    if (v.is_bool()) return v.as_bool();
    if (v.is_int()) return v.as_int() != 0;
    if (v.is_float()) return v.as_float() != 0.0;
    if (v.is_string()) return !v.as_string().empty();
    if (v.is_dict()) return !v.as_dict().entries.empty();
    if (v.is_sequence()) {
        const Sequence &s = v.as_sequence();
        return s.kind == SeqKind::Generator || !s.items.empty();
    }
    return true;  // namespaces, callables
}

bool equal(const Value &a, const Value &b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.number() == b.number();
        return a.integer() == b.integer();
    }
    if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
    if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
    if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
    if (a.is_sequence() && b.is_sequence()) {
        const Sequence &x = a.as_sequence(), &y = b.as_sequence();
        // list == tuple is False in Python; generators compare by identity.
        if (x.kind != y.kind) return false;
        if (x.kind == SeqKind::Generator) return &x == &y;
        if (x.items.size() != y.items.size()) return false;
        for (size_t i = 0; i < x.items.size(); ++i)
            if (!equal(x.items[i], y.items[i])) return false;
        return true;
    }
    if (a.is_dict() && b.is_dict()) {
        const Dict &x = a.as_dict(), &y = b.as_dict();
        if (x.entries.size() != y.entries.size()) return false;
        for (const auto &[k, v] : x.entries) {
            const Value *other = y.find(k);
            if (other == nullptr || !equal(v, *other)) return false;
        }
        return true;
    }
    if (a.is_namespace() && b.is_namespace()) return &a.as_namespace() == &b.as_namespace();
    if (a.is_callable() && b.is_callable()) return &a.as_callable() == &b.as_callable();
    return false;
}

namespace {

// Printing recurses through containers; a namespace can hold itself, which Python prints with
// "..." but here fails rather than overflow the stack.
struct PrintDepth {
    static inline thread_local int depth = 0;
    PrintDepth() {
        if (++depth > 200) {
            --depth;
            render_error("the value nests too deeply to print (does a namespace contain itself?)");
        }
    }
    ~PrintDepth() { --depth; }
};

std::string join_repr(const std::vector<Value> &items, const char *open, const char *close) {
    std::string out = open;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += repr(items[i]);
    }
    return out + close;
}

std::string dict_repr(const Dict &d) {
    std::string out = "{";
    for (size_t i = 0; i < d.entries.size(); ++i) {
        if (i) out += ", ";
        out += repr(d.entries[i].first) + ": " + repr(d.entries[i].second);
    }
    return out + "}";
}

}  // namespace

std::string repr(const Value &v) {
    PrintDepth guard;
    if (v.is_string()) return py::string_repr(v.as_string());
    if (v.is_undefined()) return "Undefined";
    if (v.is_sequence()) {
        const Sequence &s = v.as_sequence();
        switch (s.kind) {
        case SeqKind::List: return join_repr(s.items, "[", "]");
        case SeqKind::Tuple:
            return s.items.size() == 1 ? "(" + repr(s.items[0]) + ",)" : join_repr(s.items, "(", ")");
        case SeqKind::Generator: return "<generator object>";
        case SeqKind::ItemsView: return join_repr(s.items, "dict_items([", "])");
        case SeqKind::KeysView: return join_repr(s.items, "dict_keys([", "])");
        case SeqKind::ValuesView: return join_repr(s.items, "dict_values([", "])");
        }
    }
    return to_str(v);
}

std::string to_str(const Value &v) {
    PrintDepth guard;
    if (v.is_undefined()) return "";
    if (v.is_none()) return "None";
    if (v.is_bool()) return v.as_bool() ? "True" : "False";
    if (v.is_int()) return std::to_string(v.as_int());
    if (v.is_float()) return py::float_repr(v.as_float());
    if (v.is_string()) return v.as_string();
    if (v.is_dict()) return dict_repr(v.as_dict());
    if (v.is_namespace()) return "<Namespace " + dict_repr(v.as_namespace().attributes) + ">";
    if (v.is_callable()) return "<function " + v.as_callable().name + ">";
    return repr(v);
}

size_t length(const Value &v) {
    if (v.is_undefined()) return 0;
    if (v.is_string()) return py::length(v.as_string());
    if (v.is_dict()) return v.as_dict().entries.size();
    if (v.is_sequence() && v.as_sequence().kind != SeqKind::Generator) return v.as_sequence().items.size();
    render_error("object of type '" + v.type_name() + "' has no len()");
}

std::vector<Value> iterate(const Value &v) {
    if (v.is_undefined()) return {};
    if (v.is_sequence()) return v.as_sequence().items;
    if (v.is_dict()) {
        std::vector<Value> keys;
        for (const auto &e : v.as_dict().entries) keys.push_back(e.first);
        return keys;
    }
    if (v.is_string()) {
        std::vector<Value> chars;
        const std::string &s = v.as_string();
        for (size_t i = 0; i < s.size();) {
            const size_t n = utf8_step(s, i);
            chars.emplace_back(s.substr(i, n));
            i += n;
        }
        return chars;
    }
    render_error("'" + v.type_name() + "' object is not iterable");
}

Value from_json(const nlohmann::ordered_json &j) {
    using T = nlohmann::ordered_json::value_t;
    switch (j.type()) {
    case T::null: return Value::none();
    case T::boolean: return Value(j.get<bool>());
    case T::number_integer: return Value(j.get<int64_t>());
    case T::number_unsigned: {
        const uint64_t u = j.get<uint64_t>();
        // Python keeps any integer exactly; past int64 we keep the nearest double.
        return u <= uint64_t(INT64_MAX) ? Value(int64_t(u)) : Value(double(u));
    }
    case T::number_float: return Value(j.get<double>());
    case T::string: return Value(j.get<std::string>());
    case T::array: {
        std::vector<Value> items;
        items.reserve(j.size());
        for (const auto &e : j) items.push_back(from_json(e));
        return Value::sequence(std::move(items));
    }
    case T::object: {
        Dict d;
        d.entries.reserve(j.size());
        for (const auto &[k, e] : j.items()) d.entries.emplace_back(Value(k), from_json(e));
        return Value::dict(std::move(d));
    }
    default: return Value::none();  // binary and discarded values do not come from JSON text
    }
}

namespace {

std::string json_key(const Value &k) {
    if (k.is_string()) return k.as_string();
    if (k.is_bool()) return k.as_bool() ? "true" : "false";
    if (k.is_int()) return std::to_string(k.as_int());
    if (k.is_float()) return py::float_repr(k.as_float());
    if (k.is_none()) return "null";
    render_error("keys must be str, int, float, bool or None, not " + k.type_name());
}

std::string json_float(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return py::float_repr(d);
}

// With an indent, json.dumps starts each item, and the closing bracket, on a line of its own.
void break_line(const JsonStyle &style, int level, std::string &out) {
    if (!style.indent_set) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += style.indent;
}

// "[...]" or "{...}" around `count` items, each written by write_item(i).
template <class WriteItem>
void write_container(size_t count, char open, char close, const JsonStyle &style, int depth, std::string &out,
                     WriteItem write_item) {
    out += open;
    if (count != 0) {
        for (size_t i = 0; i < count; ++i) {
            if (i) out += style.item_separator;
            break_line(style, depth + 1, out);
            write_item(i);
        }
        break_line(style, depth, out);
    }
    out += close;
}

void write_json(const Value &v, const JsonStyle &style, int depth, std::string &out) {
    if (depth > 512) render_error("tojson: the value nests too deeply");
    if (v.is_none()) out += "null";
    else if (v.is_bool()) out += v.as_bool() ? "true" : "false";
    else if (v.is_int()) out += std::to_string(v.as_int());
    else if (v.is_float()) out += json_float(v.as_float());
    else if (v.is_string()) out += py::json_quote(v.as_string(), style.ensure_ascii);
    else if (v.is_indexable_sequence()) {
        const auto &items = v.as_sequence().items;
        write_container(items.size(), '[', ']', style, depth, out,
                        [&](size_t i) { write_json(items[i], style, depth + 1, out); });
    } else if (v.is_dict()) {
        std::vector<std::pair<std::string, const Value *>> entries;
        for (const auto &[k, e] : v.as_dict().entries) entries.emplace_back(json_key(k), &e);
        // Python sorts str by code point; for UTF-8 (all text here is valid UTF-8) byte order is
        // the same order, as less_than relies on too.
        if (style.sort_keys)
            std::stable_sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
        write_container(entries.size(), '{', '}', style, depth, out, [&](size_t i) {
            out += py::json_quote(entries[i].first, style.ensure_ascii) + style.key_separator;
            write_json(*entries[i].second, style, depth + 1, out);
        });
    } else {
        render_error("Object of type " + v.type_name() + " is not JSON serializable");
    }
}

}  // namespace

std::string to_json(const Value &v, const JsonStyle &style) {
    std::string out;
    write_json(v, style, 0, out);
    return out;
}

}  // namespace pagoda::tok::jinja
