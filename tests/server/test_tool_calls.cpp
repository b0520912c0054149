// Tool calling in the server, without an engine: the families told from the fixture chat
// templates; each family's output read back as content and calls (unknown tools, bad JSON and
// text after the calls left as content); a stream fed in every chunking gives the non-streamed
// answer and sends plain text before a call completes; the grammars that force a call admit the
// family's calls (named, parallel or not, markers left out) and what they admit reads back as
// calls; the request fields refused with 400s naming the field.
#include <cctype>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.hpp"
#include "server/api_error.hpp"
#include "server/tool_call_format.hpp"
#include "server/tool_call_grammar.hpp"
#include "server/tool_call_parser.hpp"
#include "server/tool_call_stream.hpp"
#include "server/tool_request.hpp"

// cmocka after the C++ headers: its macros (fail, skip) would rename their members.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
}

using namespace pagoda::server;
using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

namespace {

const char *kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
     "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}}},
  {"type": "function", "function": {"name": "get_time"}}])";

ToolRequest tools_for(ToolCallFamily family, const std::string &choice = "\"auto\"",
                      bool parallel = true) {
    ToolRequest r = parse_tool_request(
        ojson::parse(std::string(R"({"tools": )") + kTools + R"(, "tool_choice": )" + choice +
                     R"(, "parallel_tool_calls": )" + (parallel ? "true" : "false") + "}"));
    r.family = family;
    return r;
}

std::string read_template(const char *name) {
    std::ifstream in(std::string(PAGODA_CHAT_TEMPLATES_DIR) + "/" + name + ".jinja");
    std::stringstream s;
    s << in.rdbuf();
    assert_true(in.good() || in.eof());
    return s.str();
}

void families_come_from_the_templates(void **) {
    const std::vector<std::pair<const char *, ToolCallFamily>> cases = {
        {"llama3_2", ToolCallFamily::llama3_json}, {"qwen2_5", ToolCallFamily::hermes},
        {"qwen3", ToolCallFamily::hermes},         {"minicpm_v4_5", ToolCallFamily::hermes},
        {"mistral_nemo", ToolCallFamily::mistral}, {"llama3", ToolCallFamily::none},
        {"llama3_1", ToolCallFamily::none},        {"gemma3", ToolCallFamily::none},
        {"deepseek_v3", ToolCallFamily::none},
    };
    for (const auto &[name, family] : cases) {
        const ToolCallFamily got = detect_tool_call_family(read_template(name));
        if (got != family)
            fail_msg("%s: %s, expected %s", name, tool_call_family_name(got),
                     tool_call_family_name(family));
    }
    // Ids: "call_" + 24 for most; 9 letters and digits for Mistral, whose templates check.
    assert_int_equal(new_tool_call_id(ToolCallFamily::hermes).size(), 29);
    const std::string m = new_tool_call_id(ToolCallFamily::mistral);
    assert_int_equal(m.size(), 9);
    for (char c : m) assert_true(std::isalnum(static_cast<unsigned char>(c)));
    assert_string_not_equal(m.c_str(), new_tool_call_id(ToolCallFamily::mistral).c_str());
}

struct Expected {
    json content;                                            // a string or null
    std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

struct ParseCase {
    ToolCallFamily family;
    bool forced;
    std::string text;
    Expected expected;
};

const std::string kOslo = R"({"city": "Oslo", "unit": "celsius"})";

const std::vector<ParseCase> &parse_cases() {
    using F = ToolCallFamily;
    static const std::vector<ParseCase> cases = {
        // Hermes: content before the first opener, calls in blocks, the space between dropped.
        {F::hermes,
         false,
         "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
         "{\"city\":\"Oslo\",\"unit\":\"celsius\"}}\n</tool_call>",
         {"Let me check.", {{"get_weather", kOslo}}}},
        {F::hermes,
         false,
         "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + kOslo +
             "}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n"
             "</tool_call>\n",
         {nullptr, {{"get_weather", kOslo}, {"get_time", "{}"}}}},
        // No arguments member: {}; the closer missing at the very end: still a call.
        {F::hermes, false, "<tool_call>{\"name\": \"get_time\"}", {nullptr, {{"get_time", "{}"}}}},
        {F::hermes,
         false,
         "Hi <tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>",
         {"Hi <tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>", {}}},
        {F::hermes,
         false,
         "<tool_call>\n{\"name\": \"get_time\", \"arguments\": [1]}\n</tool_call>",
         {"<tool_call>\n{\"name\": \"get_time\", \"arguments\": [1]}\n</tool_call>", {}}},
        {F::hermes,
         false,
         "<tool_call>\n{\"name\": \"get_time\", \"argum",
         {"<tool_call>\n{\"name\": "
          "\"get_time\", \"argum",
          {}}},
        // A good call, then an unknown one: the call stays, the rest is content.
        {F::hermes,
         false,
         "<tool_call>{\"name\": \"get_time\"}</tool_call>\n<tool_call>{\"name\": "
         "\"x\"}</tool_call>",
         {"<tool_call>{\"name\": \"x\"}</tool_call>", {{"get_time", "{}"}}}},
        {F::hermes,
         false,
         "<tool_call>{\"name\": \"get_time\"}</tool_call> Done.",
         {"Done.", {{"get_time", "{}"}}}},
        {F::hermes,
         false,
         "No calls, a < sign and <tool_ca",
         {"No calls, a < sign and <tool_ca", {}}},
        // Forced, the markers left out (special tokens): objects one after another.
        {F::hermes,
         true,
         "{\"name\": \"get_time\", \"arguments\": {}}\n{\"name\": \"get_weather\", "
         "\"arguments\": " +
             kOslo + "}",
         {nullptr, {{"get_time", "{}"}, {"get_weather", kOslo}}}},
        // Mistral: a list after [TOOL_CALLS], or one object.
        {F::mistral,
         false,
         "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": " + kOslo +
             "}, {\"name\": \"get_time\", \"arguments\": {}}]",
         {nullptr, {{"get_weather", kOslo}, {"get_time", "{}"}}}},
        {F::mistral,
         false,
         "Sure. [TOOL_CALLS] {\"name\": \"get_time\", \"arguments\": {}}",
         {"Sure.", {{"get_time", "{}"}}}},
        {F::mistral,
         false,
         "[TOOL_CALLS][{\"name\": \"get_time\"}, oops]",
         {"oops]", {{"get_time", "{}"}}}},
        {F::mistral, false, "[TOOL_CALLS]not a list", {"[TOOL_CALLS]not a list", {}}},
        {F::mistral,
         true,
         "[{\"name\": \"get_time\", \"arguments\": {}}]",
         {nullptr, {{"get_time", "{}"}}}},
        // Llama 3: a call only as the whole answer; "parameters" (or "arguments"); "; " between.
        {F::llama3_json,
         false,
         " {\"name\": \"get_weather\", \"parameters\": " + kOslo + "}",
         {nullptr, {{"get_weather", kOslo}}}},
        {F::llama3_json,
         false,
         "<|python_tag|>{\"name\": \"get_time\", \"parameters\": {}}; {\"name\": \"get_weather\", "
         "\"arguments\": {\"unit\": \"fahrenheit\", \"city\": \"Zürich\"}}",
         {nullptr,
          {{"get_time", "{}"}, {"get_weather", R"({"unit": "fahrenheit", "city": "Zürich"})"}}}},
        {F::llama3_json,
         false,
         "It is {\"name\": \"get_time\"}",
         {"It is {\"name\": \"get_time\"}", {}}},
        {F::llama3_json,
         false,
         "{\"name\": \"get_time\", \"parameters\": {}} and more",
         {"and more", {{"get_time", "{}"}}}},
        {F::llama3_json,
         false,
         "{\"name\": \"get_time\", \"parameters\": {}",
         {"{\"name\": \"get_time\", "
          "\"parameters\": {}",
          {}}},
    };
    return cases;
}

void check_message(const json &m, const Expected &e, const std::string &text) {
    if (m["content"] != e.content)
        fail_msg("%s: content %s, expected %s", text.c_str(), m["content"].dump().c_str(),
                 e.content.dump().c_str());
    const size_t n = m.contains("tool_calls") ? m["tool_calls"].size() : 0;
    if (n != e.calls.size())
        fail_msg("%s: %zu calls, expected %zu", text.c_str(), n, e.calls.size());
    for (size_t i = 0; i < n; ++i) {
        const json &c = m["tool_calls"][i];
        assert_string_equal(c["type"].get<std::string>().c_str(), "function");
        assert_string_equal(c["function"]["name"].get<std::string>().c_str(),
                            e.calls[i].first.c_str());
        assert_string_equal(c["function"]["arguments"].get<std::string>().c_str(),
                            e.calls[i].second.c_str());
        assert_true(c["id"].is_string() && !c.contains("index"));
    }
}

void outputs_read_back_as_calls(void **) {
    for (const ParseCase &pc : parse_cases()) {
        ToolRequest tools = tools_for(pc.family, pc.forced ? "\"required\"" : "\"auto\"");
        ToolCallStream stream(tools);
        check_message(stream.message(pc.text), pc.expected, pc.text);
    }
}

// Every way of cutting the text into two or three pieces, and one piece per byte.
void for_each_chunking(const std::string &text,
                       const std::function<void(const std::vector<std::string> &)> &f) {
    std::vector<std::string> bytes;
    for (char c : text) bytes.emplace_back(1, c);
    f(bytes);
    for (size_t i = 0; i <= text.size(); ++i)
        for (size_t j = i; j <= text.size(); j += 3)
            f({text.substr(0, i), text.substr(i, j - i), text.substr(j)});
}

void streams_equal_the_whole_answer(void **) {
    for (const ParseCase &pc : parse_cases()) {
        for_each_chunking(pc.text, [&](const std::vector<std::string> &pieces) {
            ToolRequest tools = tools_for(pc.family, pc.forced ? "\"required\"" : "\"auto\"");
            ToolCallStream stream(tools);
            std::string content;
            json calls = json::array();
            for (size_t i = 0; i < pieces.size(); ++i) {
                ToolCallStream::Delta d = stream.push(pieces[i], i + 1 == pieces.size());
                content += d.content;
                for (json &c : d.tool_calls) {
                    assert_int_equal(c["index"].get<size_t>(), calls.size());
                    c.erase("index");
                    calls.push_back(c);
                }
            }
            json m = {{"content", content}};
            if (!calls.empty()) {
                if (content.empty()) m["content"] = nullptr;
                m["tool_calls"] = calls;
            }
            check_message(m, pc.expected, pc.text);
        });
    }
    // Plain text streams before the call is complete; what may begin an opener waits.
    ToolRequest tools = tools_for(ToolCallFamily::hermes);
    ToolCallStream stream(tools);
    assert_string_equal(stream.push("Checking the", false).content.c_str(), "Checking the");
    assert_string_equal(stream.push(" weather <tool", false).content.c_str(), " weather");
    ToolCallStream::Delta d = stream.push("_call>\n{\"name\": \"get_time\"}\n</tool", false);
    assert_true(d.content.empty() && d.tool_calls.empty());
    d = stream.push("_call>", false);
    assert_int_equal(d.tool_calls.size(), 1);
    assert_true(stream.called());
}

// A text the grammar admits, read back under the forced syntax, gives `calls` calls.
void admits(const std::string &gbnf, ToolRequest &tools, const std::string &text, size_t calls) {
    const pagoda::grammar::Grammar g = pagoda::grammar::parse_gbnf(gbnf);
    if (!pagoda::grammar::matches_fully(g, text))
        fail_msg("the grammar refuses %s:\n%s", text.c_str(), gbnf.c_str());
    ToolCallStream stream(tools);
    const json m = stream.message(text);
    assert_int_equal(m.contains("tool_calls") ? m["tool_calls"].size() : 0, calls);
    assert_true(m["content"].is_null());
}

void refuses(const std::string &gbnf, const std::string &text) {
    if (pagoda::grammar::matches_fully(pagoda::grammar::parse_gbnf(gbnf), text))
        fail_msg("the grammar admits %s:\n%s", text.c_str(), gbnf.c_str());
}

void grammars_force_the_family_layout(void **) {
    const std::string oslo =
        R"({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}})";
    const std::string time = R"({"name": "get_time", "arguments": {"any": [1, "x"]}})";
    {
        ToolRequest t = tools_for(ToolCallFamily::hermes, "\"required\"");
        const std::string g = tool_call_grammar(t, {});
        const std::string one = "<tool_call>\n" + oslo + "\n</tool_call>";
        admits(g, t, one, 1);
        admits(g, t, one + "\n<tool_call>\n" + time + "\n</tool_call>", 2);
        refuses(g,
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"
                "\n</tool_call>");  // unit is required
        refuses(g, "Sure. " + one);
        refuses(g, "<tool_call>\n" + std::string(R"({"name": "nope", "arguments": {}})") +
                       "\n</tool_call>");
        // The markers as special tokens: left out.
        const std::string bare = tool_call_grammar(t, {false, false});
        admits(bare, t, oslo + "\n" + time, 2);
        refuses(bare, one);
    }
    {
        ToolRequest t = tools_for(ToolCallFamily::hermes, "\"required\"", false);
        const std::string g = tool_call_grammar(t, {});
        refuses(g,
                "<tool_call>\n" + oslo + "\n</tool_call>\n<tool_call>\n" + time + "\n</tool_call>");
    }
    {
        ToolRequest t = tools_for(ToolCallFamily::mistral,
                                  R"({"type": "function", "function": {"name": "get_time"}})");
        const std::string g = tool_call_grammar(t, {});
        admits(g, t, "[TOOL_CALLS][" + time + "]", 1);
        refuses(g, "[TOOL_CALLS][" + oslo + "]");  // not the named function
        refuses(g, "[TOOL_CALLS][" + time + ", " + time + "]");
    }
    {
        ToolRequest t = tools_for(ToolCallFamily::mistral, "\"required\"");
        admits(tool_call_grammar(t, {}), t, "[TOOL_CALLS][" + oslo + ", " + time + "]", 2);
        admits(tool_call_grammar(t, {false, true}), t, "[" + time + "]", 1);
    }
    {
        ToolRequest t = tools_for(ToolCallFamily::llama3_json, "\"required\"");
        const std::string g = tool_call_grammar(t, {});
        const std::string p =
            R"({"name": "get_weather", "parameters": {"city": "Oslo", "unit": "celsius"}})";
        admits(g, t, p, 1);
        admits(g, t, p + "; " + p, 2);
        refuses(g, oslo);  // Llama's key is "parameters"
    }
    // A schema the compiler refuses is a 400 naming the tool's parameters.
    ToolRequest t = parse_tool_request(ojson::parse(
        R"({"tools": [{"type": "function", "function": {"name": "a"}}, {"type": "function",
            "function": {"name": "b", "parameters": {"type": "object", "not": {}}}}],
            "tool_choice": "required"})"));
    t.family = ToolCallFamily::hermes;
    try {
        tool_call_grammar(t, {});
        fail_msg("a schema with 'not' compiled");
    } catch (const ApiError &e) {
        assert_int_equal(e.status(), 400);
        assert_string_equal(e.param().c_str(), "tools[1].function.parameters");
    }
}

void expect_400(const std::function<void()> &f, const char *param) {
    try {
        f();
    } catch (const ApiError &e) {
        if (e.status() != 400 || e.param() != param)
            fail_msg("%d naming '%s' (%s), expected 400 naming '%s'", e.status(), e.param().c_str(),
                     e.what(), param);
        return;
    }
    fail_msg("no error; expected 400 naming '%s'", param);
}

void request_fields_are_checked(void **) {
    auto parse = [](const char *body) { return [body] { parse_tool_request(json::parse(body)); }; };
    const std::string tool = R"({"type": "function", "function": {"name": "f"}})";
    expect_400(parse(R"({"tools": {}})"), "tools");
    expect_400(parse(R"({"tools": [{"type": "function", "function": {"name": "f"}},
                                   {"type": "function", "function": {"name": "bad name"}}]})"),
               "tools[1].function.name");
    expect_400(parse(R"({"tools": [{"type": "function", "function": {"name": "f"}},
                                   {"type": "function", "function": {"name": "f"}}]})"),
               "tools[1].function.name");
    expect_400(parse(R"({"tools": [{"type": "custom", "custom": {}}]})"), "tools[0].type");
    expect_400(parse(R"({"tools": [{"type": "retrieval"}]})"), "tools[0].type");
    expect_400(
        parse(R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}]})"),
        "tools[0].function.parameters");
    expect_400(
        parse(R"({"tools": [{"type": "function", "function": {"name": "f", "strict": 1}}]})"),
        "tools[0].function.strict");
    expect_400(parse(R"({"tools": [{"type": "function", "function": {"name": "f"}}],
                         "tool_choice": "sometimes"})"),
               "tool_choice");
    expect_400(parse(R"({"tools": [{"type": "function", "function": {"name": "f"}}],
                         "tool_choice": {"type": "function", "function": {"name": "g"}}})"),
               "tool_choice.function.name");
    expect_400(parse(R"({"tool_choice": "required"})"), "tool_choice");
    expect_400(parse(R"({"functions": [{"name": "f"}]})"), "functions");
    expect_400(parse(R"({"function_call": {"name": "f"}})"), "function_call");
    expect_400(parse(R"({"parallel_tool_calls": "yes"})"), "parallel_tool_calls");
    // Defaults: auto with tools, none without; "auto" without tools asks for nothing.
    assert_true(parse_tool_request(json::parse("{\"tools\": [" + tool + "]}")).choice ==
                ToolChoice::automatic);
    assert_true(parse_tool_request(json::parse(R"({"tool_choice": "auto", "tools": []})")).choice ==
                ToolChoice::none);
    const ToolRequest named =
        parse_tool_request(json::parse("{\"tools\": [" + tool +
                                       "], \"tool_choice\": {\"type\": \"function\", \"function\": "
                                       "{\"name\": \"f\"}}, \"parallel_tool_calls\": false}"));
    assert_true(named.choice == ToolChoice::named && named.forced() && !named.parallel);
    // The client's key order, from the body text.
    ToolRequest ordered = parse_tool_request(json::parse(
        R"({"tools": [{"type": "function", "function": {"name": "f", "parameters":
            {"type": "object", "properties": {"z": {}, "a": {}}}}}]})"));
    keep_client_order(ordered, R"({"tools": [{"type": "function", "function": {"name": "f",
        "parameters": {"type": "object", "properties": {"z": {}, "a": {}}}}}]})");
    assert_string_equal(
        ordered.tools[0]["function"]["parameters"]["properties"].begin().key().c_str(), "z");
    // Assistant tool calls in messages.
    auto calls = [](const char *c) {
        return [c] { checked_tool_calls(json::parse(c), "messages[1].tool_calls"); };
    };
    expect_400(
        calls(R"([{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{"}}])"),
        "messages[1].tool_calls[0].function.arguments");
    expect_400(
        calls(R"([{"id": "a", "type": "function", "function": {"name": "f", "arguments": {}}}])"),
        "messages[1].tool_calls[0].function.arguments");
    expect_400(calls(R"([{"type": "function", "function": {"name": "f", "arguments": "{}"}}])"),
               "messages[1].tool_calls[0].id");
    expect_400(calls(R"([{"id": "a", "function": {"arguments": "{}"}}])"),
               "messages[1].tool_calls[0].function.name");
    const json ok = checked_tool_calls(
        json::parse(R"([{"id": "a", "function": {"name": "f", "arguments": "{\"x\": 1}"}}])"), "m");
    assert_string_equal(ok[0]["type"].get<std::string>().c_str(), "function");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(families_come_from_the_templates),
        cmocka_unit_test(outputs_read_back_as_calls),
        cmocka_unit_test(streams_equal_the_whole_answer),
        cmocka_unit_test(grammars_force_the_family_layout),
        cmocka_unit_test(request_fields_are_checked),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
