// jinja2's filters and tests as chat templates use them, with transformers' tojson.
#include <algorithm>
#include <cmath>
#include <charconv>

#include "tokenizer/jinja_builtins.hpp"
#include "tokenizer/py_text.hpp"

namespace pagoda::tok::jinja {

namespace {

constexpr std::string_view kFilters[] = {
    "abs", "attr", "capitalize", "count", "d", "default", "dictsort", "e", "escape", "first", "float", "indent",
    "int", "items", "join", "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr",
    "replace", "reverse", "round", "safe", "select", "selectattr", "sort", "string", "sum", "title", "tojson",
    "trim", "unique", "upper"};

constexpr std::string_view kTests[] = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "even", "false", "float", "ge", "greaterthan",
    "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt", "mapping", "ne", "none", "number", "odd",
    "sameas", "sequence", "string", "true", "undefined", "upper", "==", "!=", "<", "<=", ">", ">="};

// jinja2's make_attrgetter: "a.b.0" looks up item by item (digits as integer indices).
Value lookup_path(const Value &item, const std::string &path) {
    Value v = item;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        int64_t index = 0;
        if (digits && std::from_chars(part.data(), part.data() + part.size(), index).ec == std::errc())
            v = get_item(v, Value(index));
        else
            v = get_item(v, Value(part));
        if (dot == std::string::npos) return v;
        start = dot + 1;
    }
}

// The filters' attribute= argument (sort, sum, join, ...): the item at that path, or the item
// itself when no string attribute was given.
Value attribute_of(const Value &item, const Value *attribute) {
    return attribute && attribute->is_string() ? lookup_path(item, attribute->as_string()) : item;
}

std::string str_arg(const CallArgs &args, size_t index, const char *name, const std::string &what) {
    const Value *v = args.get(index, name);
    const std::string label = name != nullptr ? name : "argument " + std::to_string(index + 1);
    if (v == nullptr) render_error(what + ": missing " + label);
    if (!v->is_string()) render_error(what + ": " + label + " must be a string, not " + v->type_name());
    return v->as_string();
}

bool flag_arg(const CallArgs &args, size_t index, const char *name) {
    const Value *v = args.get(index, name);
    return v != nullptr && truthy(*v);
}

Value generator(std::vector<Value> items) { return Value::sequence(std::move(items), SeqKind::Generator); }

// select/reject/selectattr/rejectattr: `test_at` is where the test's name sits in the arguments.
Value select_items(const Value &subject, const CallArgs &args, bool by_attribute, bool keep_when) {
    const std::string what = by_attribute ? (keep_when ? "selectattr" : "rejectattr") : (keep_when ? "select" : "reject");
    // jinja2's attribute: a dotted path when a string, else one item key (an index).
    Value attribute;
    size_t next = 0;
    if (by_attribute) {
        if (args.positional.empty()) render_error(what + ": missing the attribute name");
        attribute = args.positional[next++];
    }
    std::string test;
    CallArgs test_args;
    if (args.positional.size() > next) {
        if (!args.positional[next].is_string()) render_error(what + ": the test name must be a string");
        test = args.positional[next].as_string();
        if (!is_known_test(test)) unsupported("test '" + test + "' (in " + what + ")");
        test_args.positional.assign(args.positional.begin() + long(next) + 1, args.positional.end());
        test_args.keywords = args.keywords;
    }
    std::vector<Value> out;
    for (const Value &item : iterate(subject)) {
        const Value probe = !by_attribute ? item
                            : attribute.is_string() ? lookup_path(item, attribute.as_string())
                                                    : get_item(item, attribute);
        const bool passes = test.empty() ? truthy(probe) : apply_test(test, probe, test_args);
        if (passes == keep_when) out.push_back(item);
    }
    return generator(std::move(out));
}

Value map_items(const Value &subject, const CallArgs &args, Runtime &rt) {
    std::vector<Value> out;
    const Value *attribute = args.get(size_t(-1), "attribute");
    if (attribute != nullptr) {
        if (!attribute->is_string()) render_error("map: 'attribute' must be a string");
        const Value *fallback = args.get(size_t(-1), "default");
        for (const Value &item : iterate(subject)) {
            Value v = lookup_path(item, attribute->as_string());
            out.push_back(v.is_undefined() && fallback ? *fallback : v);
        }
        return generator(std::move(out));
    }
    if (args.positional.empty()) render_error("map: give a filter name or attribute=");
    if (!args.positional[0].is_string()) render_error("map: the filter name must be a string");
    const std::string filter = args.positional[0].as_string();
    if (!is_known_filter(filter)) unsupported("filter '" + filter + "' (in map)");
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keywords = args.keywords;
    for (const Value &item : iterate(subject)) out.push_back(apply_filter(filter, item, rest, rt));
    return generator(std::move(out));
}

// Sorting keys: strings compare case-insensitively unless asked (jinja2's ignore_case).
Value sort_key(const Value &v, bool case_sensitive) {
    return (!case_sensitive && v.is_string()) ? Value(py::lower(v.as_string())) : v;
}

Value do_int(const Value &v, const CallArgs &args) {
    const Value *fallback = args.get(0, "default");
    const Value def = fallback ? *fallback : Value(int64_t(0));
    const Value *base_arg = args.get(1, "base");
    const int base = base_arg && (base_arg->is_int() || base_arg->is_bool()) ? int(base_arg->integer()) : 10;
    if (v.is_int() || v.is_bool()) return Value(v.integer());
    if (v.is_float()) {
        const double d = v.as_float();
        if (!std::isfinite(d)) return def;
        if (std::fabs(d) >= 9.2e18) unsupported("int of a float past 64 bits");
        return Value(int64_t(d));
    }
    if (v.is_string()) {
        if (auto i = py::parse_int(v.as_string(), base)) return Value(*i);
        if (auto d = py::parse_float(v.as_string())) {
            if (!std::isfinite(*d)) return def;
            if (std::fabs(*d) >= 9.2e18) unsupported("int of a number past 64 bits");
            return Value(int64_t(*d));
        }
    }
    return def;
}

Value do_round(const Value &v, const CallArgs &args) {
    if (!v.is_number()) render_error("round: type " + v.type_name() + " doesn't define __round__ method");
    const Value *precision_arg = args.get(0, "precision");
    const int64_t precision = precision_arg && precision_arg->is_int() ? precision_arg->as_int() : 0;
    const Value *method_arg = args.get(1, "method");
    const std::string method = method_arg && method_arg->is_string() ? method_arg->as_string() : "common";
    const double x = v.number();
    // round(int, n) stays an int in Python; ceil and floor divide back into a float.
    if (method == "common" && !v.is_float() && precision >= 0) return Value(v.integer());
    if (method != "common" && method != "ceil" && method != "floor")
        render_error("method must be common, ceil or floor");
    if (!std::isfinite(x)) return Value(x);
    if (method == "common") {
        // Python's round(): correctly rounded decimal, ties to even, which printf's %.*f gives.
        if (precision < 0 || precision > 300) unsupported("round with precision " + std::to_string(precision));
        char buf[400];
        std::snprintf(buf, sizeof buf, "%.*f", int(precision), x);
        return Value(std::strtod(buf, nullptr));
    }
    const double scale = std::pow(10.0, double(precision));
    return Value((method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
}

// jinja2's title filter (not str.title): words start after whitespace and - ( { [ <; each gets
// its first character uppercased and the rest lowercased.
std::string jinja_title(const std::string &s) {
    const std::u32string chars = py::code_points(s);
    auto delimiter = [](char32_t c) { return py::is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<'; };
    std::string out;
    size_t i = 0;
    while (i < chars.size()) {
        size_t j = i;
        const bool delims = delimiter(chars[i]);
        while (j < chars.size() && delimiter(chars[j]) == delims) ++j;
        const std::u32string_view run(chars.data() + i, j - i);
        if (delims) out += py::to_utf8(run);
        else out += py::upper(py::to_utf8(run.substr(0, 1))) + py::lower(py::to_utf8(run.substr(1)));
        i = j;
    }
    return out;
}

std::string html_escape(const std::string &s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

Value do_tojson(const Value &v, const CallArgs &args) {
    args.check("tojson", 4, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonStyle style;
    const Value *ensure_ascii = args.get(0, "ensure_ascii");
    style.ensure_ascii = ensure_ascii != nullptr && truthy(*ensure_ascii);
    const Value *indent = args.get(1, "indent");
    if (indent != nullptr && !indent->is_none()) {
        style.indent_set = true;
        if (indent->is_string()) style.indent = indent->as_string();
        else if (indent->is_int() || indent->is_bool()) style.indent = std::string(size_t(std::clamp<int64_t>(indent->integer(), 0, 1000)), ' ');
        else render_error("tojson: indent must be an integer or a string");
        style.item_separator = ",";
    }
    const Value *separators = args.get(2, "separators");
    if (separators != nullptr && !separators->is_none()) {
        if (!separators->is_indexable_sequence() || separators->as_sequence().items.size() != 2 ||
            !separators->as_sequence().items[0].is_string() || !separators->as_sequence().items[1].is_string())
            render_error("tojson: separators must be a pair of strings");
        style.item_separator = separators->as_sequence().items[0].as_string();
        style.key_separator = separators->as_sequence().items[1].as_string();
    }
    const Value *sort_keys = args.get(3, "sort_keys");
    style.sort_keys = sort_keys != nullptr && truthy(*sort_keys);
    return Value(to_json(v, style));
}

Value do_indent(const Value &v, const CallArgs &args) {
    const Value *width_arg = args.get(0, "width");
    std::string pad = "    ";
    if (width_arg != nullptr) {
        if (width_arg->is_string()) pad = width_arg->as_string();
        else if (width_arg->is_int()) pad = std::string(size_t(std::clamp<int64_t>(width_arg->as_int(), 0, 1000)), ' ');
    }
    const bool first = flag_arg(args, 1, "first"), blank = flag_arg(args, 2, "blank");
    // jinja2 appends "\n", splits the lines, and indents all but the first (blank lines only
    // with blank=True); first=True indents the first too.
    const std::string s = to_str(v) + "\n";
    std::vector<std::string> lines;
    for (size_t start = 0; start < s.size();) {
        const size_t nl = s.find('\n', start);
        lines.push_back(s.substr(start, nl - start));
        start = nl + 1;
    }
    std::string out = lines.empty() ? std::string() : lines[0];
    for (size_t i = 1; i < lines.size(); ++i)
        out += "\n" + ((blank || !lines[i].empty()) ? pad : std::string()) + lines[i];
    if (first) out = pad + out;
    return Value(std::move(out));
}

// The filters over a whole collection: reverse, sum, unique, dictsort, min, max, sort. Strings
// compare case-insensitively unless case_sensitive=true, as in jinja2.
Value collection_filter(const std::string &name, const Value &v, const CallArgs &args, Runtime &rt) {
    if (name == "reverse") {
        if (v.is_string()) {
            const std::u32string chars = py::code_points(v.as_string());
            return Value(py::to_utf8(std::u32string(chars.rbegin(), chars.rend())));
        }
        std::vector<Value> items = iterate(v);
        std::reverse(items.begin(), items.end());
        return generator(std::move(items));
    }
    const bool case_sensitive = flag_arg(args, name == "sort" ? 1 : 0, "case_sensitive");
    const Value *attribute = args.get(size_t(-1), "attribute");
    auto key_of = [&](const Value &item) { return sort_key(attribute_of(item, attribute), case_sensitive); };
    std::vector<Value> items = iterate(v);
    if (name == "sum") {
        const Value *start = args.get(1, "start");
        Value total = start ? *start : Value(int64_t(0));
        for (const Value &item : items)
            total = binary_operator("+", total, attribute_of(item, attribute), rt);
        return total;
    }
    if (name == "unique") {
        std::vector<Value> out, seen;
        for (const Value &item : items) {
            const Value key = key_of(item);
            if (std::any_of(seen.begin(), seen.end(), [&](const Value &s) { return equal(s, key); })) continue;
            seen.push_back(key);
            out.push_back(item);
        }
        return generator(std::move(out));
    }
    if (name == "dictsort") {
        if (!v.is_dict()) render_error("dictsort: expected a dict");
        const Value *by = args.get(1, "by");
        const bool by_value = by && by->is_string() && by->as_string() == "value";
        items.clear();
        for (const auto &[k, e] : v.as_dict().entries) items.push_back(Value::sequence({k, e}, SeqKind::Tuple));
        std::stable_sort(items.begin(), items.end(), [&](const Value &a, const Value &b) {
            return less_than(sort_key(a.as_sequence().items[by_value ? 1 : 0], case_sensitive),
                             sort_key(b.as_sequence().items[by_value ? 1 : 0], case_sensitive));
        });
        if (flag_arg(args, 2, "reverse")) std::reverse(items.begin(), items.end());
        return Value::sequence(std::move(items));
    }
    if (name == "min" || name == "max") {
        if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
        size_t best = 0;
        for (size_t i = 1; i < items.size(); ++i)
            if (name == "min" ? less_than(key_of(items[i]), key_of(items[best])) : less_than(key_of(items[best]), key_of(items[i])))
                best = i;
        return items[best];
    }
    const bool reverse = flag_arg(args, 0, "reverse");
    std::stable_sort(items.begin(), items.end(), [&](const Value &a, const Value &b) {
        return reverse ? less_than(key_of(b), key_of(a)) : less_than(key_of(a), key_of(b));
    });
    return Value::sequence(std::move(items));
}

}  // namespace

bool is_known_filter(std::string_view name) {
    return std::find(std::begin(kFilters), std::end(kFilters), name) != std::end(kFilters);
}

bool is_known_test(std::string_view name) {
    return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

Value apply_filter(const std::string &name, const Value &v, const CallArgs &args, Runtime &rt) {
    if (name == "tojson") return do_tojson(v, args);
    if (name == "trim") {
        const Value *chars = args.get(0, "chars");
        return Value(py::strip(to_str(v), chars && chars->is_string() ? std::optional<std::string>(chars->as_string()) : std::nullopt,
                               py::StripSide::Both));
    }
    if (name == "length" || name == "count") return Value(int64_t(length(v)));
    if (name == "string") return Value(to_str(v));
    if (name == "safe") return Value(to_str(v));
    if (name == "e" || name == "escape") return Value(html_escape(to_str(v)));
    if (name == "list") return Value::sequence(iterate(v));
    if (name == "lower") return Value(py::lower(to_str(v)));
    if (name == "upper") return Value(py::upper(to_str(v)));
    if (name == "title") return Value(jinja_title(to_str(v)));
    if (name == "capitalize") return Value(py::capitalize(to_str(v)));
    if (name == "default" || name == "d") {
        const Value *fallback = args.get(0, "default_value");
        const bool boolean = flag_arg(args, 1, "boolean");
        if (v.is_undefined() || (boolean && !truthy(v))) return fallback ? *fallback : Value(std::string());
        return v;
    }
    if (name == "selectattr" || name == "rejectattr") return select_items(v, args, true, name == "selectattr");
    if (name == "select" || name == "reject") return select_items(v, args, false, name == "select");
    if (name == "map") return map_items(v, args, rt);
    if (name == "items") {
        if (v.is_undefined()) return generator({});
        if (!v.is_dict()) render_error("Can only get item pairs from a mapping.");
        std::vector<Value> out;
        for (const auto &[k, e] : v.as_dict().entries) out.push_back(Value::sequence({k, e}, SeqKind::Tuple));
        return generator(std::move(out));
    }
    if (name == "join") {
        const Value *sep = args.get(0, "d");
        const Value *attribute = args.get(1, "attribute");
        std::string out;
        bool first = true;
        for (const Value &item : iterate(v)) {
            if (!first) out += sep ? to_str(*sep) : "";
            out += to_str(attribute_of(item, attribute));
            first = false;
            rt.check_size(out.size());
        }
        return Value(std::move(out));
    }
    if (name == "first") {
        const std::vector<Value> items = iterate(v);
        return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
    }
    if (name == "last") {
        if (v.is_sequence() && v.as_sequence().kind == SeqKind::Generator)
            render_error("'generator' object is not reversible");
        const std::vector<Value> items = iterate(v);
        return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
    }
    if (name == "replace") {
        const std::string s = to_str(v);
        const Value *count = args.get(2, "count");
        std::string out = py::replace(s, str_arg(args, 0, "old", "replace"), str_arg(args, 1, "new", "replace"),
                                      count && (count->is_int() || count->is_bool()) ? count->integer() : -1);
        rt.check_size(out.size());
        return Value(std::move(out));
    }
    if (name == "int") return do_int(v, args);
    if (name == "float") {
        const Value *fallback = args.get(0, "default");
        if (v.is_number()) return Value(v.number());
        if (v.is_string())
            if (auto d = py::parse_float(v.as_string())) return Value(*d);
        return fallback ? *fallback : Value(0.0);
    }
    if (name == "round") return do_round(v, args);
    if (name == "abs") {
        if (v.is_float()) return Value(std::fabs(v.as_float()));
        if (v.is_int() || v.is_bool()) return v.integer() < 0 ? negate(v) : Value(v.integer());
        render_error("bad operand type for abs(): '" + v.type_name() + "'");
    }
    if (name == "attr") return get_attribute(v, str_arg(args, 0, "name", "attr"));
    if (name == "unique" || name == "sort" || name == "min" || name == "max" || name == "reverse" || name == "sum" ||
        name == "dictsort")
        return collection_filter(name, v, args, rt);
    if (name == "indent") return do_indent(v, args);
    unsupported("filter '" + name + "'");
}

bool apply_test(const std::string &name, const Value &v, const CallArgs &args) {
    const Value *arg = args.get(0, nullptr);
    auto need_arg = [&]() -> const Value & {
        if (arg == nullptr) render_error("test '" + name + "' needs an argument");
        return *arg;
    };
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.is_float();
    if (name == "number") return v.is_number();
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.is_dict();
    if (name == "iterable") return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict();
    if (name == "sequence")
        return v.is_undefined() || v.is_string() || v.is_dict() ||
               (v.is_sequence() && v.as_sequence().kind != SeqKind::Generator);
    if (name == "callable") return v.is_callable();
    if (name == "lower") return v.is_string() && py::is_lower(v.as_string());
    if (name == "upper") return v.is_string() && py::is_upper(v.as_string());
    if (name == "odd" || name == "even") {
        if (!v.is_int() && !v.is_bool()) render_error("test '" + name + "' needs an integer");
        const bool odd = (v.integer() % 2) != 0;
        return name == "odd" ? odd : !odd;
    }
    if (name == "divisibleby") {
        const Value &d = need_arg();
        if (!v.is_number() || !d.is_number()) render_error("divisibleby needs numbers");
        const Value r = binary_operator("%", v, d, Runtime{});
        return r.number() == 0;
    }
    if (name == "sameas") {
        const Value &other = need_arg();
        // Python identity: singletons and small values compare as `is` would in CPython.
        if (v.is_none() || other.is_none()) return v.is_none() && other.is_none();
        if (v.is_bool() || other.is_bool()) return v.is_bool() && other.is_bool() && v.as_bool() == other.as_bool();
        return v.storage().index() == other.storage().index() && equal(v, other);
    }
    if (name == "in") return contains(need_arg(), v);
    if (name == "eq" || name == "equalto" || name == "==") return equal(v, need_arg());
    if (name == "ne" || name == "!=") return !equal(v, need_arg());
    if (name == "lt" || name == "lessthan" || name == "<") return compare("<", v, need_arg());
    if (name == "le" || name == "<=") return compare("<=", v, need_arg());
    if (name == "gt" || name == "greaterthan" || name == ">") return compare(">", v, need_arg());
    if (name == "ge" || name == ">=") return compare(">=", v, need_arg());
    unsupported("test '" + name + "'");
}

}  // namespace pagoda::tok::jinja
