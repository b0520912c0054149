// The parsed form of a chat template: expressions and statements as the parser builds them and
// the evaluator walks them. Each node keeps its source line for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.hpp"

namespace pagoda::tok::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
    Literal,    // value
    Name,       // name
    List,       // args: the items
    Tuple,      // args: the items
    DictLit,    // args: key, value, key, value, ...
    GetAttr,    // args[0].name
    GetItem,    // args[0][args[1]]
    Slice,      // args[0][args[1]:args[2]:args[3]] (null parts absent)
    Call,       // args[0](args[1..], kwargs)
    Filter,     // args[0] | name(args[1..], kwargs)
    Test,       // args[0] is [not] name(args[1..], kwargs); negated
    Not,        // not args[0]
    Negate,     // -args[0]
    Plus,       // +args[0]
    Binary,     // args[0] op args[1]: + - * / // % ** ~
    And,        // args[0] and args[1]
    Or,         // args[0] or args[1]
    Compare,    // args[0] ops[0] args[1] ops[1] args[2] ...: == != < > <= >= in, not in
    Conditional,  // args[0] if args[1] else args[2] (args[2] null: no else)
};

struct Expr {
    ExprKind kind;
    int line = 0;
    Value value;                    // Literal
    std::string name;               // Name, GetAttr, Filter, Test; Binary: the operator
    std::vector<ExprPtr> args;      // see ExprKind (a null entry is an absent part)
    std::vector<std::pair<std::string, ExprPtr>> kwargs;  // Call, Filter, Test
    std::vector<std::string> ops;   // Compare
    bool negated = false;           // Test
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // branches: (condition, body)...; else_body
    For,       // for targets in expr [if filter] body [else else_body]
    Set,       // set targets = expr, or set ns.attr = expr; or {% set x %}body{% endset %}
    Macro,     // macro definition
    Break,
    Continue,
    Block,     // a body rendered in place ({% generation %}: transformers' assistant mask marker)
};

struct MacroDef {
    std::string name;
    std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
    Body body;
};

struct Stmt {
    StmtKind kind;
    int line = 0;
    std::string text;                                  // Text
    ExprPtr expr;                                      // Output, For (iterable), Set (value)
    std::vector<std::string> targets;                  // For / Set: names (several: unpacking)
    std::string attribute;                             // Set: ns.attribute (targets[0] is ns)
    ExprPtr filter;                                    // For: the `if` condition; may be null
    std::vector<std::pair<ExprPtr, Body>> branches;    // If
    Body body;                                         // For, Set (block form), Block
    Body else_body;                                    // If, For
    std::unique_ptr<MacroDef> macro;                   // Macro
};

}  // namespace pagoda::tok::jinja
