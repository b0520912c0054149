// The values a chat template computes with, behaving as the Python objects jinja2 hands a
// template: None, bool, int, float, str, list/tuple (and generators and dict views, which some
// filters and methods return), dict (insertion-ordered), jinja2's Undefined, namespace() objects,
// the `loop` object, and callables (globals, bound methods, macros).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/jinja_error.hpp"

namespace pagoda::tok::jinja {

class Value;
struct Dict;
struct Namespace;
struct Callable;

// What a list-like value is in Python: it decides truthiness, len(), indexing and printing.
enum class SeqKind {
    List,       // list: everything
    Tuple,      // tuple: prints as (a, b)
    Generator,  // what select/map/... return: always truthy, no len(), no indexing
    ItemsView,  // dict.items(): len() but no indexing; prints as dict_items([...])
    KeysView,
    ValuesView,
};

struct Sequence {
    SeqKind kind = SeqKind::List;
    std::vector<Value> items;
};

// jinja2's default Undefined: prints as "", iterates as empty, is falsy; most other uses fail
// with `hint` ("'x' is undefined", "'dict object' has no attribute 'y'").
struct Undefined {
    std::string hint;
};

struct NoneValue {};

class Value {
public:
    using Storage = std::variant<Undefined, NoneValue, bool, int64_t, double, std::string,
                                 std::shared_ptr<const Sequence>, std::shared_ptr<const Dict>,
                                 std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>;

    Value() : v_(Undefined{}) {}
    static Value undefined(std::string hint) { return Value(Undefined{std::move(hint)}); }
    static Value none() { return Value(NoneValue{}); }
    Value(bool b) : v_(b) {}
    Value(int64_t i) : v_(i) {}
    Value(int i) : v_(int64_t(i)) {}
    Value(double d) : v_(d) {}
    Value(std::string s) : v_(std::move(s)) {}
    Value(const char *s) : v_(std::string(s)) {}
    static Value sequence(std::vector<Value> items, SeqKind kind = SeqKind::List);
    static Value dict(Dict d);
    static Value callable(Callable c);
    Value(std::shared_ptr<Namespace> ns) : v_(std::move(ns)) {}
    Value(std::shared_ptr<const Callable> c) : v_(std::move(c)) {}

    bool is_undefined() const { return std::holds_alternative<Undefined>(v_); }
    bool is_none() const { return std::holds_alternative<NoneValue>(v_); }
    bool is_bool() const { return std::holds_alternative<bool>(v_); }
    bool is_int() const { return std::holds_alternative<int64_t>(v_); }
    bool is_float() const { return std::holds_alternative<double>(v_); }
    bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
    bool is_string() const { return std::holds_alternative<std::string>(v_); }
    bool is_sequence() const { return std::holds_alternative<std::shared_ptr<const Sequence>>(v_); }
    bool is_dict() const { return std::holds_alternative<std::shared_ptr<const Dict>>(v_); }
    bool is_namespace() const { return std::holds_alternative<std::shared_ptr<Namespace>>(v_); }
    bool is_callable() const { return std::holds_alternative<std::shared_ptr<const Callable>>(v_); }
    // list or tuple: what can be indexed and has a length (not generators or views).
    bool is_indexable_sequence() const;

    bool as_bool() const { return std::get<bool>(v_); }
    int64_t as_int() const { return std::get<int64_t>(v_); }
    double as_float() const { return std::get<double>(v_); }
    const std::string &as_string() const { return std::get<std::string>(v_); }
    const Sequence &as_sequence() const { return *std::get<std::shared_ptr<const Sequence>>(v_); }
    const Dict &as_dict() const { return *std::get<std::shared_ptr<const Dict>>(v_); }
    Namespace &as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(v_); }
    const Callable &as_callable() const { return *std::get<std::shared_ptr<const Callable>>(v_); }
    const std::string &undefined_hint() const { return std::get<Undefined>(v_).hint; }
    // int or bool as an integer (Python treats True as 1).
    int64_t integer() const { return is_bool() ? int64_t(as_bool()) : as_int(); }
    // Any number as a double.
    double number() const { return is_float() ? as_float() : double(integer()); }

    const Storage &storage() const { return v_; }

    // Python's type name as error messages give it ("str", "list", "NoneType", ...).
    std::string type_name() const;

private:
    explicit Value(Storage v) : v_(std::move(v)) {}
    Storage v_;
};

// A dict: insertion-ordered, keys compared with Python's == (1 == 1.0 == True).
struct Dict {
    std::vector<std::pair<Value, Value>> entries;

    const Value *find(const Value &key) const;
    const Value *find(const std::string &key) const;
    void set(Value key, Value value);  // replaces in place, or appends
};

// namespace(): the one mutable object a template can have (`{% set ns.x = ... %}`).
struct Namespace {
    Dict attributes;
};

// Something callable: a global function (raise_exception, range, ...), a method bound to its
// receiver ("strip" of a string), a macro, or a loop's cycle().
struct MacroDef;
struct Scope;
struct Callable {
    enum class Kind { Global, Method, Macro } kind;
    std::string name;
    Value self{};                             // Method: the receiver
    const MacroDef *macro = nullptr;          // Macro: its definition (owned by the template)
    // Macro: the scope it was defined in. Weak, since that scope holds the macro: a macro outliving
    // its scope (stored in a namespace past its loop iteration) fails when called.
    std::weak_ptr<Scope> closure{};
};

// Python truthiness.
bool truthy(const Value &v);
// Python ==, deep for lists and dicts; Undefined equals only Undefined.
bool equal(const Value &a, const Value &b);
// str(v): what {{ v }} prints (None -> "None", True -> "True", 1.0 -> "1.0", lists as repr).
std::string to_str(const Value &v);
// repr(v): how a value prints inside a list or dict.
std::string repr(const Value &v);
// len(v); throws RenderError for values without one.
size_t length(const Value &v);
// The items a `for` loop or a filter iterates over: a list's items, a dict's keys, a string's
// characters, nothing for Undefined; throws RenderError for None, numbers, ...
std::vector<Value> iterate(const Value &v);

// JSON (objects keep their order) to values, and back (json.dumps as transformers' tojson calls
// it; throws RenderError for what JSON cannot hold).
Value from_json(const nlohmann::ordered_json &j);
struct JsonStyle {
    bool ensure_ascii = false;
    bool sort_keys = false;
    bool indent_set = false;  // indent=None when false
    std::string indent;       // the indent unit (Python's int n gives n spaces)
    std::string item_separator = ", ";
    std::string key_separator = ": ";
};
std::string to_json(const Value &v, const JsonStyle &style);

}  // namespace pagoda::tok::jinja
