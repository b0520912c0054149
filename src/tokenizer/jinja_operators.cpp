// Operators with Python's semantics, as jinja2 compiles them to Python operators.
#include <cmath>

#include "tokenizer/jinja_builtins.hpp"
#include "tokenizer/py_text.hpp"

namespace pagoda::tok::jinja {

namespace {

[[noreturn]] void undefined_error(const Value &v) {
    render_error(v.undefined_hint().empty() ? "undefined value" : v.undefined_hint());
}

[[noreturn]] void operand_error(const std::string &op, const Value &a, const Value &b) {
    render_error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

[[noreturn]] void overflow(const std::string &op) {
    unsupported("integer results past 64 bits (operator " + op + ")");
}

Value repeat(const Value &seq, int64_t times, const Runtime &rt) {
    // Nothing repeated is nothing, at once: a loop over `times` would run up to 2^63 rounds
    // (`[] * 10**18`, found by fuzz_chat_template), which no size check stops.
    const bool empty = seq.is_string() ? seq.as_string().empty() : seq.as_sequence().items.empty();
    if (times <= 0 || empty) return seq.is_string() ? Value(std::string()) : Value::sequence({}, seq.as_sequence().kind);
    if (seq.is_string()) {
        const std::string &s = seq.as_string();
        rt.check_size(s.size() * uint64_t(std::min<int64_t>(times, int64_t(1) << 40)));
        std::string out;
        out.reserve(s.size() * size_t(times));
        for (int64_t i = 0; i < times; ++i) out += s;
        return Value(std::move(out));
    }
    const auto &items = seq.as_sequence().items;
    rt.check_size(items.size() * 16 * uint64_t(std::min<int64_t>(times, int64_t(1) << 40)));
    std::vector<Value> out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value::sequence(std::move(out), seq.as_sequence().kind);
}

int64_t floor_div(int64_t a, int64_t b) {
    if (a == INT64_MIN && b == -1) overflow("//");
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

int64_t py_mod(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

double py_fmod(double a, double b) {
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    else if (r == 0) r = std::copysign(0.0, b);
    return r;
}

Value int_pow(int64_t base, int64_t exp, const std::string &op) {
    if (exp < 0) return Value(std::pow(double(base), double(exp)));
    int64_t result = 1;
    while (exp > 0) {
        if (exp & 1)
            if (__builtin_mul_overflow(result, base, &result)) overflow(op);
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base)) overflow(op);
    }
    return Value(result);
}

Value arithmetic(const std::string &op, const Value &a, const Value &b) {
    if (!a.is_float() && !b.is_float()) {
        const int64_t x = a.integer(), y = b.integer();
        int64_t r = 0;
        if (op == "+") {
            if (__builtin_add_overflow(x, y, &r)) overflow(op);
            return Value(r);
        }
        if (op == "-") {
            if (__builtin_sub_overflow(x, y, &r)) overflow(op);
            return Value(r);
        }
        if (op == "*") {
            if (__builtin_mul_overflow(x, y, &r)) overflow(op);
            return Value(r);
        }
        if (op == "/") {
            if (y == 0) render_error("division by zero");
            return Value(double(x) / double(y));
        }
        if (op == "//" || op == "%") {
            if (y == 0) render_error("integer division or modulo by zero");
            return Value(op == "//" ? floor_div(x, y) : py_mod(x, y));
        }
        if (op == "**") return int_pow(x, y, op);
    }
    const double x = a.number(), y = b.number();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/" || op == "//" || op == "%") {
        if (y == 0) render_error("float division by zero");
        if (op == "/") return Value(x / y);
        if (op == "//") return Value(std::floor(x / y));
        return Value(py_fmod(x, y));
    }
    if (op == "**") {
        if (x == 0 && y < 0) render_error("0.0 cannot be raised to a negative power");
        return Value(std::pow(x, y));
    }
    operand_error(op, a, b);
}

}  // namespace

Value binary_operator(const std::string &op, const Value &a, const Value &b, const Runtime &rt) {
    if (op == "~") {
        std::string s = to_str(a) + to_str(b);
        rt.check_size(s.size());
        return Value(std::move(s));
    }
    if (a.is_undefined()) undefined_error(a);
    if (b.is_undefined()) undefined_error(b);
    if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
    if (op == "+") {
        if (a.is_string() && b.is_string()) {
            rt.check_size(a.as_string().size() + b.as_string().size());
            return Value(a.as_string() + b.as_string());
        }
        if (a.is_indexable_sequence() && b.is_indexable_sequence() && a.as_sequence().kind == b.as_sequence().kind) {
            rt.check_size((a.as_sequence().items.size() + b.as_sequence().items.size()) * 16);
            std::vector<Value> items = a.as_sequence().items;
            items.insert(items.end(), b.as_sequence().items.begin(), b.as_sequence().items.end());
            return Value::sequence(std::move(items), a.as_sequence().kind);
        }
        if (a.is_string()) render_error("can only concatenate str (not \"" + b.type_name() + "\") to str");
        if (a.is_indexable_sequence())
            render_error("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
    }
    if (op == "*") {
        if ((a.is_string() || a.is_indexable_sequence()) && (b.is_int() || b.is_bool())) return repeat(a, b.integer(), rt);
        if ((b.is_string() || b.is_indexable_sequence()) && (a.is_int() || a.is_bool())) return repeat(b, a.integer(), rt);
    }
    if (op == "%" && a.is_string()) unsupported("printf-style string formatting with '%'");
    operand_error(op, a, b);
}

Value negate(const Value &v) {
    if (v.is_undefined()) undefined_error(v);
    if (v.is_float()) return Value(-v.as_float());
    if (v.is_int() || v.is_bool()) {
        if (v.integer() == INT64_MIN) overflow("-");
        return Value(-v.integer());
    }
    render_error("bad operand type for unary -: '" + v.type_name() + "'");
}

bool less_than(const Value &a, const Value &b) {
    if (a.is_undefined()) undefined_error(a);
    if (b.is_undefined()) undefined_error(b);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.number() < b.number();
        return a.integer() < b.integer();
    }
    // UTF-8 byte order is code point order, which is how Python orders str.
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
    if (a.is_indexable_sequence() && b.is_indexable_sequence() && a.as_sequence().kind == b.as_sequence().kind) {
        const auto &x = a.as_sequence().items, &y = b.as_sequence().items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equal(x[i], y[i])) continue;
            return less_than(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    render_error("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool contains(const Value &container, const Value &item) {
    if (container.is_undefined()) return false;  // Undefined iterates as empty
    if (container.is_string()) {
        if (!item.is_string())
            render_error("'in <string>' requires string as left operand, not " + item.type_name());
        return container.as_string().find(item.as_string()) != std::string::npos;
    }
    if (container.is_sequence()) {
        for (const Value &v : container.as_sequence().items)
            if (equal(v, item)) return true;
        return false;
    }
    if (container.is_dict()) return container.as_dict().find(item) != nullptr;
    render_error("argument of type '" + container.type_name() + "' is not iterable");
}

bool compare(const std::string &op, const Value &a, const Value &b) {
    if (op == "==") return equal(a, b);
    if (op == "!=") return !equal(a, b);
    if (op == "<") return less_than(a, b);
    if (op == ">") return less_than(b, a);
    if (op == "<=") return less_than(a, b) || equal(a, b);
    if (op == ">=") return less_than(b, a) || equal(a, b);
    if (op == "in") return contains(b, a);
    if (op == "not in") return !contains(b, a);
    unsupported("comparison '" + op + "'");
}

Value slice(const Value &obj, const Value *start, const Value *stop, const Value *step) {
    if (obj.is_undefined()) undefined_error(obj);
    if (!obj.is_string() && !obj.is_indexable_sequence()) return Value::undefined("'" + obj.type_name() + "' object is not subscriptable");
    auto index_of = [](const Value *v, bool &present) -> int64_t {
        present = v != nullptr && !v->is_none();
        if (!present) return 0;
        if (!v->is_int() && !v->is_bool()) return INT64_MIN;  // marks a bad index
        return v->integer();
    };
    bool has_start, has_stop, has_step;
    const int64_t raw_start = index_of(start, has_start), raw_stop = index_of(stop, has_stop);
    const int64_t raw_step = index_of(step, has_step);
    if ((has_start && raw_start == INT64_MIN) || (has_stop && raw_stop == INT64_MIN) || (has_step && raw_step == INT64_MIN))
        return Value::undefined("slice indices must be integers or None");
    const int64_t st = has_step ? raw_step : 1;
    if (st == 0) render_error("slice step cannot be zero");

    std::u32string chars;
    if (obj.is_string()) chars = py::code_points(obj.as_string());
    const int64_t len = obj.is_string() ? int64_t(chars.size()) : int64_t(obj.as_sequence().items.size());
    auto adjust = [&](bool present, int64_t v, int64_t fallback) {
        if (!present) return fallback;
        if (v < 0) {
            v += len;
            if (v < 0) v = st < 0 ? -1 : 0;
        } else if (v >= len) {
            v = st < 0 ? len - 1 : len;
        }
        return v;
    };
    const int64_t begin = adjust(has_start, raw_start, st < 0 ? len - 1 : 0);
    const int64_t end = adjust(has_stop, raw_stop, st < 0 ? -1 : len);
    std::vector<int64_t> picked;
    if (st > 0)
        for (int64_t i = begin; i < end; i += st) picked.push_back(i);
    else
        for (int64_t i = begin; i > end; i += st) picked.push_back(i);
    if (obj.is_string()) {
        std::u32string out;
        for (int64_t i : picked) out += chars[size_t(i)];
        return Value(py::to_utf8(out));
    }
    std::vector<Value> out;
    for (int64_t i : picked) out.push_back(obj.as_sequence().items[size_t(i)]);
    return Value::sequence(std::move(out), obj.as_sequence().kind);
}

}  // namespace pagoda::tok::jinja
