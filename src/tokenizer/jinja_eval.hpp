// Runs a parsed template: statements write the output, expressions compute values. Scoping is
// jinja2's: each loop iteration and each macro call gets its own scope (assignments inside do
// not leak out), `if` does not; macros see the scope they were defined in as it is when called.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja_ast.hpp"
#include "tokenizer/jinja_builtins.hpp"

namespace pagoda::tok::jinja {

struct Scope {
    std::shared_ptr<Scope> parent;
    std::vector<std::pair<std::string, Value>> vars;

    explicit Scope(std::shared_ptr<Scope> parent_scope = nullptr) : parent(std::move(parent_scope)) {}
    // The nearest binding of `name`, or nullptr.
    const Value *find(const std::string &name) const;
    void set(const std::string &name, Value value);  // in this scope
};

// Renders `body` with `context` as the outermost scope (its parent chain is read, never
// written). Throws ChatTemplateError.
std::string render(const Body &body, const std::shared_ptr<Scope> &context, Runtime &rt);

}  // namespace pagoda::tok::jinja
