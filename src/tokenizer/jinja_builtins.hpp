// What a chat template can call and apply, with Python's and jinja2's behavior: operators,
// attribute and item access (jinja2's sandboxed getattr/getitem), filters, tests, the methods of
// str and dict, and the globals transformers provides (raise_exception, strftime_now) besides
// jinja2's own (namespace, range, dict).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.hpp"

namespace pagoda::tok::jinja {

// The arguments of a call, a filter or a test (after the subject).
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keywords;

    // The argument at `index` or named `name`; nullptr when absent.
    const Value *get(size_t index, const char *name) const;
    // Fails naming `what` when more than `max_positional` positional arguments or a keyword
    // outside `names` was given (Python's TypeError).
    void check(const std::string &what, size_t max_positional, std::initializer_list<const char *> names) const;
};

// What rendering needs from outside, and the budget that keeps hostile templates bounded.
struct Runtime {
    std::function<std::chrono::system_clock::time_point()> now;  // strftime_now's clock
    size_t max_string_bytes = size_t(64) << 20;  // any string or the output, at most
    uint64_t max_steps = 20'000'000;             // statements, loop iterations, and the items
                                                 // or text calls, filters and operators return
    uint64_t steps = 0;
    // Every namespace() made by the render: a namespace may come to hold itself (a reference
    // cycle), so the render empties them all when it ends.
    std::vector<std::shared_ptr<Namespace>> namespaces;

    void step(uint64_t n = 1);                   // counts work; throws Limit past max_steps
    void check_size(size_t bytes) const;         // throws Limit past max_string_bytes
};

// ---- operators (jinja_operators.cpp)
// + - * / // % ** and ~ with Python's rules (bool is an int; int overflow fails rather than
// growing into a big integer).
Value binary_operator(const std::string &op, const Value &a, const Value &b, const Runtime &rt);
Value negate(const Value &v);
// == != < > <= >= in, not in.
bool compare(const std::string &op, const Value &a, const Value &b);
// Python's `<` for sorting; throws RenderError for unorderable types.
bool less_than(const Value &a, const Value &b);
bool contains(const Value &container, const Value &item);
// obj[start:stop:step] on a str, list or tuple (null parts absent).
Value slice(const Value &obj, const Value *start, const Value *stop, const Value *step);

// ---- attribute and item access, methods and globals (jinja_methods.cpp)
// obj.name: a method of str/dict/list bound to obj, else the item, else Undefined.
Value get_attribute(const Value &obj, const std::string &name);
// obj[key]: the item, else (for a string key) the attribute, else Undefined.
Value get_item(const Value &obj, const Value &key);
// Calls a bound method or a global function (not macros: the evaluator runs those).
Value call_builtin(const Callable &callable, const CallArgs &args, Runtime &rt);
// The globals every render starts with.
std::vector<std::pair<std::string, Value>> global_functions();

// ---- filters and tests (jinja_filters.cpp)
bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);
Value apply_filter(const std::string &name, const Value &subject, const CallArgs &args, Runtime &rt);
bool apply_test(const std::string &name, const Value &subject, const CallArgs &args);

}  // namespace pagoda::tok::jinja
