#include "server/tool_request.hpp"

#include <set>
#include <utility>
#include <vector>

#include "server/api_error.hpp"

namespace pagoda::server {

using ojson = nlohmann::ordered_json;

namespace {

// OpenAI caps a request at 128 tools.
constexpr size_t kMaxTools = 128;
// Copies between the two JSON types recurse once per level: a hostile depth is refused first.
constexpr int kMaxDepth = 128;

bool nests_deeper(const nlohmann::json &v, int limit) {
    std::vector<std::pair<const nlohmann::json *, int>> stack = {{&v, 0}};
    while (!stack.empty()) {
        const auto [at, depth] = stack.back();
        stack.pop_back();
        if (depth > limit) return true;
        if (at->is_structured())
            for (const nlohmann::json &child : *at) stack.emplace_back(&child, depth + 1);
    }
    return false;
}

const ojson *field(const ojson &body, const char *name) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
}

void unsupported(const std::string &param, const std::string &why) {
    throw ApiError(400, param + ": " + why, param, "unsupported_value");
}

void only_members(const ojson &o, const std::string &where, const std::set<std::string> &known) {
    for (auto it = o.begin(); it != o.end(); ++it)
        if (known.count(it.key()) == 0)
            invalid_field(where + "." + it.key(),
                          where + "." + it.key() + " is not a member this server knows");
}

// OpenAI's rule for function names; it also keeps names safe inside JSON and GBNF literals.
bool valid_name(const std::string &n) {
    if (n.empty() || n.size() > 64) return false;
    for (char c : n)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    return true;
}

void check_tool(const ojson &t, size_t i, ToolRequest &r) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) invalid_field(where, where + " must be an object");
    const ojson *type = field(t, "type");
    if (type == nullptr || !type->is_string())
        invalid_field(where + ".type", where + ".type must be \"function\"");
    if (*type != "function")
        unsupported(where + ".type",
                    "only function tools are supported (got " + type->dump() + ")");
    only_members(t, where, {"type", "function"});
    const ojson *f = field(t, "function");
    if (f == nullptr || !f->is_object())
        invalid_field(where + ".function", where + ".function must be an object");
    const std::string fw = where + ".function";
    only_members(*f, fw, {"name", "description", "parameters", "strict"});
    const ojson *name = field(*f, "name");
    if (name == nullptr || !name->is_string() || !valid_name(name->get<std::string>()))
        invalid_field(fw + ".name", fw + ".name must be 1 to 64 letters, digits, '_' or '-'");
    for (const std::string &seen : r.names)
        if (seen == name->get<std::string>())
            invalid_field(fw + ".name", fw + ".name '" + seen + "' names an earlier tool too");
    if (const ojson *d = field(*f, "description"); d != nullptr && !d->is_string())
        invalid_field(fw + ".description", fw + ".description must be a string");
    if (const ojson *p = field(*f, "parameters"); p != nullptr && !p->is_object())
        invalid_field(fw + ".parameters", fw + ".parameters must be a JSON Schema object");
    if (const ojson *s = field(*f, "strict"); s != nullptr && !s->is_boolean())
        invalid_field(fw + ".strict", fw + ".strict must be a boolean");
    r.names.push_back(name->get<std::string>());
    r.tools.push_back(t);
}

void parse_choice(const ojson &tc, ToolRequest &r) {
    if (tc.is_string()) {
        const std::string s = tc.get<std::string>();
        if (s == "none")
            r.choice = ToolChoice::none;
        else if (s == "auto")
            r.choice = r.tools.empty() ? ToolChoice::none : ToolChoice::automatic;
        else if (s == "required")
            r.choice = ToolChoice::required;
        else
            invalid_field("tool_choice",
                          "tool_choice must be \"none\", \"auto\", \"required\" "
                          "or {\"type\": \"function\", \"function\": {\"name\": ...}}");
        if (r.choice == ToolChoice::required && r.tools.empty())
            invalid_field("tool_choice", "tool_choice \"required\" needs tools");
        return;
    }
    if (!tc.is_object()) invalid_field("tool_choice", "tool_choice must be a string or an object");
    only_members(tc, "tool_choice", {"type", "function"});
    if (tc.value("type", ojson()) != "function")
        invalid_field("tool_choice.type", "tool_choice.type must be \"function\"");
    const ojson *f = field(tc, "function");
    if (f == nullptr || !f->is_object())
        invalid_field("tool_choice.function", "tool_choice.function must be an object");
    only_members(*f, "tool_choice.function", {"name"});
    const ojson *name = field(*f, "name");
    if (name == nullptr || !name->is_string())
        invalid_field("tool_choice.function.name", "tool_choice.function.name must be a string");
    r.named = name->get<std::string>();
    bool known = false;
    for (const std::string &n : r.names) known = known || n == r.named;
    if (!known)
        invalid_field("tool_choice.function.name",
                      "tool_choice.function.name '" + r.named + "' is not among the tools");
    r.choice = ToolChoice::named;
}

}  // namespace

ToolRequest parse_tool_request(const ojson &body) {
    ToolRequest r;
    if (const ojson *f = field(body, "functions"))
        if (!f->is_array() || !f->empty())
            unsupported("functions", "the legacy functions are not supported: send them as tools");
    if (const ojson *fc = field(body, "function_call"))
        if (!fc->is_string() || (*fc != "none" && *fc != "auto"))
            unsupported("function_call",
                        "the legacy function_call is not supported: use tool_choice");
    if (const ojson *tools = field(body, "tools")) {
        if (!tools->is_array()) invalid_field("tools", "tools must be an array of tools");
        if (tools->size() > kMaxTools)
            invalid_field("tools", "tools holds more than " + std::to_string(kMaxTools) + " tools");
        for (size_t i = 0; i < tools->size(); ++i) check_tool(tools->at(i), i, r);
    }
    // OpenAI's default: "auto" when tools are given, "none" otherwise.
    r.choice = r.tools.empty() ? ToolChoice::none : ToolChoice::automatic;
    if (const ojson *tc = field(body, "tool_choice")) parse_choice(*tc, r);
    if (const ojson *p = field(body, "parallel_tool_calls")) {
        if (!p->is_boolean())
            invalid_field("parallel_tool_calls", "parallel_tool_calls must be a boolean");
        r.parallel = p->get<bool>();
    }
    return r;
}

ToolRequest parse_tool_request(const nlohmann::json &body) {
    ojson fields = ojson::object();
    for (const char *k :
         {"tools", "tool_choice", "parallel_tool_calls", "functions", "function_call"})
        if (auto it = body.find(k); it != body.end()) {
            if (nests_deeper(*it, kMaxDepth))
                invalid_field(k, std::string(k) + " nests deeper than " +
                                     std::to_string(kMaxDepth) + " levels");
            fields[k] = ojson(*it);
        }
    return parse_tool_request(fields);
}

nlohmann::json checked_tool_calls(const nlohmann::json &calls, const std::string &where) {
    if (!calls.is_array()) invalid_field(where, where + " must be an array of tool calls");
    nlohmann::json out = nlohmann::json::array();
    for (size_t j = 0; j < calls.size(); ++j) {
        const nlohmann::json &c = calls[j];
        const std::string cw = where + "[" + std::to_string(j) + "]";
        if (!c.is_object()) invalid_field(cw, cw + " must be an object");
        if (nests_deeper(c, kMaxDepth))
            invalid_field(cw, cw + " nests deeper than " + std::to_string(kMaxDepth) + " levels");
        const ojson call(c);
        only_members(call, cw, {"id", "type", "function"});
        const ojson *id = field(call, "id");
        if (id == nullptr || !id->is_string())
            invalid_field(cw + ".id", cw + ".id must be a string");
        if (const ojson *type = field(call, "type"); type != nullptr && *type != "function")
            invalid_field(cw + ".type", cw + ".type must be \"function\"");
        const ojson *f = field(call, "function");
        if (f == nullptr || !f->is_object())
            invalid_field(cw + ".function", cw + ".function must be an object");
        only_members(*f, cw + ".function", {"name", "arguments"});
        const ojson *name = field(*f, "name");
        if (name == nullptr || !name->is_string())
            invalid_field(cw + ".function.name", cw + ".function.name must be a string");
        const ojson *args = field(*f, "arguments");
        const std::string aw = cw + ".function.arguments";
        if (args == nullptr || !args->is_string())
            invalid_field(aw, aw + " must be a string holding JSON");
        const nlohmann::json parsed =
            nlohmann::json::parse(args->get<std::string>(), nullptr, false);
        if (parsed.is_discarded()) invalid_field(aw, aw + " is not valid JSON");
        if (nests_deeper(parsed, kMaxDepth))
            invalid_field(aw, aw + " nests deeper than " + std::to_string(kMaxDepth) + " levels");
        out.push_back(
            {{"id", id->get<std::string>()},
             {"type", "function"},
             {"function",
              {{"name", name->get<std::string>()}, {"arguments", args->get<std::string>()}}}});
    }
    return out;
}

void keep_client_order(ToolRequest &tools, const std::string &body_text) {
    if (tools.tools.empty()) return;
    const ojson body = ojson::parse(body_text, nullptr, false);
    // The text parsed once already (as nlohmann::json); only its key order differs here.
    if (!body.is_object() || !body.contains("tools")) return;
    const ToolRequest ordered = parse_tool_request(body);
    tools.tools = ordered.tools;
}

}  // namespace pagoda::server
