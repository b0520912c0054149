#include "tokenizer/jinja_eval.hpp"

namespace pagoda::tok::jinja {

const Value *Scope::find(const std::string &name) const {
    for (const Scope *s = this; s != nullptr; s = s->parent.get())
        for (const auto &[k, v] : s->vars)
            if (k == name) return &v;
    return nullptr;
}

void Scope::set(const std::string &name, Value value) {
    for (auto &[k, v] : vars)
        if (k == name) {
            v = std::move(value);
            return;
        }
    vars.emplace_back(name, std::move(value));
}

namespace {

// Macro calls nest at most this deep, and evaluation (expressions, bodies, calls together) at
// most kMaxEvalDepth frames: jinja2 is bounded by Python's recursion limit, we by the C stack.
constexpr int kMaxMacroDepth = 64;
constexpr int kMaxEvalDepth = 500;

enum class Flow { Normal, Break, Continue };

using ScopePtr = std::shared_ptr<Scope>;

class Evaluator {
public:
    explicit Evaluator(Runtime &rt) : rt_(rt) {}

    // Counts nested evaluation frames; throws Limit past kMaxEvalDepth.
    struct DepthGuard {
        int &depth;
        explicit DepthGuard(int &d) : depth(d) {
            if (++depth > kMaxEvalDepth) {
                --depth;
                throw ChatTemplateError(ChatTemplateErrorKind::Limit, "evaluation nests too deeply");
            }
        }
        ~DepthGuard() { --depth; }
    };

    Flow exec_body(const Body &body, const ScopePtr &scope, std::string &out) {
        DepthGuard guard(depth_);
        for (const StmtPtr &stmt : body) {
            Flow flow;
            try {
                flow = exec(*stmt, scope, out);
            } catch (const ChatTemplateError &e) {
                if (e.line() == 0) throw e.at_line(stmt->line);
                throw;
            }
            if (flow != Flow::Normal) return flow;
        }
        return Flow::Normal;
    }

private:
    Flow exec(const Stmt &s, const ScopePtr &scope, std::string &out) {
        rt_.step();
        switch (s.kind) {
        case StmtKind::Text: append(out, s.text); return Flow::Normal;
        case StmtKind::Output: append(out, to_str(eval(*s.expr, scope))); return Flow::Normal;
        case StmtKind::If:
            for (const auto &[cond, body] : s.branches)
                if (truthy(eval(*cond, scope))) return exec_body(body, scope, out);
            return exec_body(s.else_body, scope, out);
        case StmtKind::For: exec_for(s, scope, out); return Flow::Normal;
        case StmtKind::Set: exec_set(s, scope); return Flow::Normal;
        case StmtKind::Macro:
            scope->set(s.macro->name, Value::callable({.kind = Callable::Kind::Macro, .name = s.macro->name,
                                                       .macro = s.macro.get(), .closure = scope}));
            return Flow::Normal;
        case StmtKind::Break: return Flow::Break;
        case StmtKind::Continue: return Flow::Continue;
        case StmtKind::Block: return exec_body(s.body, scope, out);
        }
        return Flow::Normal;
    }

    void append(std::string &out, const std::string &text) {
        rt_.check_size(out.size() + text.size());
        out += text;
    }

    void assign_targets(const std::vector<std::string> &targets, const Value &value, Scope &scope) {
        if (targets.size() == 1) {
            scope.set(targets[0], value);
            return;
        }
        if (!value.is_string() && !value.is_sequence() && !value.is_dict())
            render_error("cannot unpack non-iterable " + value.type_name() + " object");
        const std::vector<Value> items = iterate(value);
        if (items.size() != targets.size())
            render_error(items.size() < targets.size()
                             ? "not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " + std::to_string(items.size()) + ")"
                             : "too many values to unpack (expected " + std::to_string(targets.size()) + ")");
        for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], items[i]);
    }

    void exec_set(const Stmt &s, const ScopePtr &scope) {
        Value value;
        if (s.expr) {
            value = eval(*s.expr, scope);
        } else {
            std::string captured;
            exec_body(s.body, scope, captured);
            value = Value(std::move(captured));
        }
        if (s.attribute.empty()) {
            assign_targets(s.targets, value, *scope);
            return;
        }
        const Value *target = scope->find(s.targets[0]);
        if (target == nullptr || !target->is_namespace())
            render_error("cannot assign attribute '" + s.attribute + "' on '" + s.targets[0] + "': it is not a namespace()");
        target->as_namespace().attributes.set(Value(s.attribute), std::move(value));
    }

    void exec_for(const Stmt &s, const ScopePtr &scope, std::string &out) {
        std::vector<Value> items = iterate(eval(*s.expr, scope));
        if (s.filter) {
            // jinja2 filters first, so loop.length and loop.last count only the kept items.
            std::vector<Value> kept;
            for (Value &item : items) {
                rt_.step();
                auto probe = std::make_shared<Scope>(scope);
                assign_targets(s.targets, item, *probe);
                if (truthy(eval(*s.filter, probe))) kept.push_back(std::move(item));
            }
            items = std::move(kept);
        }
        if (items.empty()) {
            exec_body(s.else_body, scope, out);
            return;
        }
        const int64_t n = int64_t(items.size());
        for (int64_t i = 0; i < n; ++i) {
            rt_.step();
            auto iteration = std::make_shared<Scope>(scope);
            Dict loop;
            loop.entries.reserve(12);
            auto field = [&](const char *name, Value v) { loop.entries.emplace_back(Value(name), std::move(v)); };
            field("index0", Value(i));
            field("index", Value(i + 1));
            field("revindex0", Value(n - i - 1));
            field("revindex", Value(n - i));
            field("first", Value(i == 0));
            field("last", Value(i == n - 1));
            field("length", Value(n));
            field("depth0", Value(int64_t(0)));
            field("depth", Value(int64_t(1)));
            field("previtem", i > 0 ? items[size_t(i - 1)] : Value::undefined("there is no previous item"));
            field("nextitem", i + 1 < n ? items[size_t(i + 1)] : Value::undefined("there is no next item"));
            field("cycle", Value::callable({.kind = Callable::Kind::Method, .name = "loop.cycle", .self = Value(i)}));
            iteration->set("loop", Value::dict(std::move(loop)));
            assign_targets(s.targets, items[size_t(i)], *iteration);
            if (exec_body(s.body, iteration, out) == Flow::Break) break;
        }
    }

    CallArgs eval_args(const Expr &e, size_t first, const ScopePtr &scope) {
        CallArgs args;
        for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i], scope));
        for (const auto &[k, v] : e.kwargs) args.keywords.emplace_back(k, eval(*v, scope));
        return args;
    }

    Value call_macro(const Callable &c, const CallArgs &args) {
        const MacroDef &m = *c.macro;
        ScopePtr closure = c.closure.lock();
        if (!closure) render_error("macro '" + m.name + "' was called after the scope it was defined in ended");
        if (args.positional.size() > m.params.size())
            render_error("macro '" + m.name + "' takes not more than " + std::to_string(m.params.size()) + " argument(s)");
        if (macro_depth_ >= kMaxMacroDepth)
            throw ChatTemplateError(ChatTemplateErrorKind::Limit, "macros nest deeper than " + std::to_string(kMaxMacroDepth) + " calls");
        auto scope = std::make_shared<Scope>(closure);
        for (const auto &[k, v] : args.keywords) {
            bool known = false;
            for (const auto &p : m.params) known = known || p.first == k;
            if (!known) render_error("macro '" + m.name + "' takes no keyword argument '" + k + "'");
        }
        for (size_t i = 0; i < m.params.size(); ++i) {
            const auto &[name, def] = m.params[i];
            if (const Value *v = args.get(i, name.c_str())) scope->set(name, *v);
            else if (def) scope->set(name, eval(*def, scope));
            else scope->set(name, Value::undefined("parameter '" + name + "' was not provided"));
        }
        ++macro_depth_;
        struct Leave {
            int &depth;
            ~Leave() { --depth; }
        } leave{macro_depth_};
        std::string out;
        exec_body(m.body, scope, out);
        return Value(std::move(out));
    }

    Value call(const Value &callee, const CallArgs &args) {
        if (callee.is_undefined()) render_error(callee.undefined_hint().empty() ? "undefined value is not callable" : callee.undefined_hint());
        if (!callee.is_callable()) render_error("'" + callee.type_name() + "' object is not callable");
        const Callable &c = callee.as_callable();
        if (c.kind == Callable::Kind::Macro) return call_macro(c, args);
        if (c.name == "loop.cycle") {
            if (args.positional.empty()) render_error("no items for cycling given");
            return args.positional[size_t(c.self.as_int()) % args.positional.size()];
        }
        return call_builtin(c, args, rt_);
    }

    // Calls, filters and operators can do work in proportion to what they return (a long list, a
    // long string); counting it keeps a loop over them within the step budget.
    Value charged(Value v) {
        if (v.is_sequence()) rt_.step(v.as_sequence().items.size());
        else if (v.is_string()) rt_.step(v.as_string().size() / 256);
        return v;
    }

    Value eval(const Expr &e, const ScopePtr &scope) {
        DepthGuard guard(depth_);
        switch (e.kind) {
        case ExprKind::Literal: return e.value;
        case ExprKind::Name: {
            const Value *v = scope->find(e.name);
            return v ? *v : Value::undefined("'" + e.name + "' is undefined");
        }
        case ExprKind::List:
        case ExprKind::Tuple: {
            std::vector<Value> items;
            items.reserve(e.args.size());
            for (const ExprPtr &a : e.args) items.push_back(eval(*a, scope));
            return Value::sequence(std::move(items), e.kind == ExprKind::List ? SeqKind::List : SeqKind::Tuple);
        }
        case ExprKind::DictLit: {
            Dict d;
            for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                Value key = eval(*e.args[i], scope);
                if ((key.is_sequence() && key.as_sequence().kind != SeqKind::Tuple) || key.is_dict() || key.is_namespace())
                    render_error("unhashable type: '" + key.type_name() + "'");
                d.set(std::move(key), eval(*e.args[i + 1], scope));
            }
            return Value::dict(std::move(d));
        }
        case ExprKind::GetAttr: return get_attribute(eval(*e.args[0], scope), e.name);
        case ExprKind::GetItem: {
            Value obj = eval(*e.args[0], scope);
            return get_item(obj, eval(*e.args[1], scope));
        }
        case ExprKind::Slice: {
            Value obj = eval(*e.args[0], scope);
            Value parts[3];
            const Value *ptrs[3] = {nullptr, nullptr, nullptr};
            for (int i = 0; i < 3; ++i)
                if (e.args[size_t(i) + 1]) {
                    parts[i] = eval(*e.args[size_t(i) + 1], scope);
                    ptrs[i] = &parts[i];
                }
            return slice(obj, ptrs[0], ptrs[1], ptrs[2]);
        }
        case ExprKind::Call: {
            Value callee = eval(*e.args[0], scope);
            return charged(call(callee, eval_args(e, 1, scope)));
        }
        case ExprKind::Filter: {
            Value subject = eval(*e.args[0], scope);
            return charged(apply_filter(e.name, subject, eval_args(e, 1, scope), rt_));
        }
        case ExprKind::Test: {
            Value subject = eval(*e.args[0], scope);
            return Value(apply_test(e.name, subject, eval_args(e, 1, scope)) != e.negated);
        }
        case ExprKind::Not: return Value(!truthy(eval(*e.args[0], scope)));
        case ExprKind::Negate: return negate(eval(*e.args[0], scope));
        case ExprKind::Plus: {
            Value v = eval(*e.args[0], scope);
            if (v.is_undefined()) render_error(v.undefined_hint());
            if (!v.is_number()) render_error("bad operand type for unary +: '" + v.type_name() + "'");
            return v.is_bool() ? Value(v.integer()) : v;
        }
        case ExprKind::Binary: {
            Value a = eval(*e.args[0], scope);
            return charged(binary_operator(e.name, a, eval(*e.args[1], scope), rt_));
        }
        case ExprKind::And: {
            Value a = eval(*e.args[0], scope);
            return truthy(a) ? eval(*e.args[1], scope) : a;
        }
        case ExprKind::Or: {
            Value a = eval(*e.args[0], scope);
            return truthy(a) ? a : eval(*e.args[1], scope);
        }
        case ExprKind::Compare: {
            Value left = eval(*e.args[0], scope);
            for (size_t i = 0; i < e.ops.size(); ++i) {
                Value right = eval(*e.args[i + 1], scope);
                if (!compare(e.ops[i], left, right)) return Value(false);
                left = std::move(right);
            }
            return Value(true);
        }
        case ExprKind::Conditional:
            if (truthy(eval(*e.args[1], scope))) return eval(*e.args[0], scope);
            if (e.args[2]) return eval(*e.args[2], scope);
            return Value::undefined("the conditional expression had no else branch");
        }
        unsupported("expression");
    }

    Runtime &rt_;
    int macro_depth_ = 0;
    int depth_ = 0;
};

}  // namespace

std::string render(const Body &body, const std::shared_ptr<Scope> &context, Runtime &rt) {
    // The template's own top level is a scope below the context, so `{% set messages = ... %}`
    // shadows the caller's value instead of changing it.
    auto top = std::make_shared<Scope>(context);
    std::string out;
    struct BreakCycles {
        Runtime &rt;
        ~BreakCycles() {
            for (auto &ns : rt.namespaces) ns->attributes.entries.clear();
            rt.namespaces.clear();
        }
    } break_cycles{rt};
    Evaluator(rt).exec_body(body, top, out);
    return out;
}

}  // namespace pagoda::tok::jinja
