// The Jinja subset of chat templates: each construct and Python's semantics on the cases of
// chat_template_cases.json (expected outputs written by jinja2, see chat_template_cases.py);
// templates outside the subset or malformed (the error names the construct and its line);
// raise_exception; bad messages; work limits; and the C API (tokenizer_config.json templates,
// named templates, overrides, GGUF metadata, argument checks).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "tokenizer/gguf_vocabulary.hpp"
#include "pagoda/pagoda.h"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

using nlohmann::ordered_json;
using pagoda::tok::ChatTemplate;
using pagoda::tok::ChatTemplateError;
using Kind = pagoda::tok::ChatTemplateErrorKind;

namespace {

// 2024-07-26 10:30:00 UTC, the reference renderer's clock.
std::chrono::system_clock::time_point fixed_now() { return std::chrono::system_clock::from_time_t(1721989800); }

std::string render(const std::string &source, const ordered_json &context = ordered_json::object()) {
    return ChatTemplate(source).render(context, fixed_now);
}

// The error rendering `source` gives; fails the test when it renders.
ChatTemplateError error_of(const std::string &source, const ordered_json &context = ordered_json::object(),
                           const pagoda::tok::ChatRenderLimits &limits = {}) {
    try {
        const std::string out = ChatTemplate(source).render(context, fixed_now, limits);
        std::fprintf(stderr, "expected an error from %s, got %s\n", source.c_str(), out.c_str());
    } catch (const ChatTemplateError &e) {
        return e;
    }
    fail();
}

bool contains(const std::string &haystack, const std::string &needle) { return haystack.find(needle) != std::string::npos; }

ordered_json read_cases() {
    std::ifstream in(PAGODA_CHAT_CASES_JSON);
    std::stringstream s;
    s << in.rdbuf();
    return ordered_json::parse(s.str());
}

void setup_clock() {
    setenv("TZ", "UTC", 1);
    tzset();
}

void test_constructs_match_jinja2(void **) {
    setup_clock();
    const ordered_json cases = read_cases();
    size_t failures = 0;
    for (const auto &c : cases["cases"]) {
        const std::string source = c["template"].get<std::string>();
        const std::string expected = c["output"].get<std::string>();
        std::string got;
        try {
            got = render(source, c["context"]);
        } catch (const std::exception &e) {
            got = std::string("<error> ") + e.what();
        }
        if (got == expected) continue;
        ++failures;
        std::fprintf(stderr, "case %s\n  jinja2: %s\n  pagoda: %s\n", ordered_json(source).dump().c_str(),
                     ordered_json(expected).dump().c_str(), ordered_json(got).dump().c_str());
    }
    std::fprintf(stderr, "%zu of %zu cases match jinja2\n", cases["cases"].size() - failures, cases["cases"].size());
    assert_int_equal(failures, 0);
    // transformers' {% generation %} (assistant masks) renders its body in place.
    assert_string_equal(render("a{% generation %}b {{ 1 }}{% endgeneration %}c").c_str(), "ab 1c");
}

void test_errors_name_the_construct(void **) {
    const ordered_json cases = read_cases();
    for (const auto &c : cases["errors"]) {
        const std::string source = c["template"].get<std::string>();
        const std::string want = c["error"].get<std::string>();
        const ChatTemplateError e = error_of(source, c["context"]);
        const std::string message = e.what();
        bool ok = false;
        if (want.rfind("raised:", 0) == 0)
            ok = e.kind() == Kind::Raised && e.template_message() == want.substr(7) && e.status() == PAGODA_ERR_INVALID_ARGUMENT;
        else if (want.rfind("unsupported:", 0) == 0)
            ok = e.kind() == Kind::Unsupported && contains(message, want.substr(12)) && contains(message, "at line 1") &&
                 e.status() == PAGODA_ERR_UNSUPPORTED;
        else if (want == "syntax")
            ok = e.kind() == Kind::Syntax && e.status() == PAGODA_ERR_FORMAT;
        else if (want == "render")
            ok = e.kind() == Kind::Render && e.status() == PAGODA_ERR_INVALID_ARGUMENT;
        if (!ok) std::fprintf(stderr, "%s: expected %s, got %s\n", source.c_str(), want.c_str(), message.c_str());
        assert_true(ok);
    }
    // Lines are counted through text, tags and multi-line strings.
    ChatTemplateError e = error_of("line 1\n{% if true %}\n\n  {{ x|xmlattr }}\n{% endif %}");
    assert_string_equal(e.what(), "chat template: unsupported filter 'xmlattr' at line 4");
    e = error_of("{{ 'a\nb' }}\n{{ 'x' + 1 }}");
    assert_true(contains(e.what(), "at line 3"));
    e = error_of("{% for m in [1] %}\n{{ raise_exception('Roles must alternate') }}{% endfor %}");
    assert_string_equal(e.template_message().c_str(), "Roles must alternate");
    assert_string_equal(e.what(), "chat template raised an exception at line 2: Roles must alternate");
    e = error_of("{% if x %}\n{% else %}\n{% endfor %}");
    assert_int_equal(e.kind(), Kind::Syntax);
    assert_true(contains(e.what(), "at line 3"));
}

void test_limits(void **) {
    pagoda::tok::ChatRenderLimits small;
    small.max_steps = 100000;
    small.max_output_bytes = 1 << 20;
    assert_int_equal(error_of("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", ordered_json::object(), small).kind(),
                     Kind::Limit);
    assert_int_equal(error_of("{{ 'x' * 2000000 }}", ordered_json::object(), small).kind(), Kind::Limit);
    assert_int_equal(error_of("{% for i in range(100) %}{{ 'y' * 20000 }}{% endfor %}", ordered_json::object(), small).kind(), Kind::Limit);
    assert_int_equal(error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").kind(), Kind::Limit);
    // Nesting past what templates use is refused at parse time, not by a crash.
    assert_int_equal(error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").kind(), Kind::Unsupported);
    assert_int_equal(error_of("{{ " + std::string(5000, '[') + " }}").kind(), Kind::Syntax);
    std::string nested;
    for (int i = 0; i < 1000; ++i) nested += "{% if true %}";
    assert_int_equal(error_of(nested).kind(), Kind::Unsupported);
    assert_int_equal(error_of("{{ 9223372036854775807 + 1 }}").kind(), Kind::Unsupported);
    // A namespace holding itself: no leak (the render empties its namespaces), and printing it
    // fails instead of recursing without end (Python prints "{...}").
    assert_string_equal(render("{% set ns = namespace(a=[]) %}{% set ns.self = ns %}{% set ns.a = [ns] %}{{ ns.self.a|length }}").c_str(), "1");
    assert_int_equal(error_of("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}").kind(), Kind::Render);
    // Doubling a list or a string in a loop stops at the size limit.
    assert_int_equal(error_of("{% set ns = namespace(l=[1], s='ab') %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
                              ordered_json::object(), small).kind(), Kind::Limit);
    assert_int_equal(error_of("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                              ordered_json::object(), small).kind(), Kind::Limit);
    // Work done by filters counts: a large list filtered in a loop runs out of steps.
    assert_int_equal(error_of("{% for i in range(1000) %}{{ range(10000)|select('odd')|list|length }}{% endfor %}",
                              ordered_json::object(), small).kind(), Kind::Limit);
    assert_int_equal(error_of("{{ 99999999999999999999 }}").kind(), Kind::Unsupported);
    // Repeating nothing a huge number of times is nothing, at once (as in Python), not 2^63
    // rounds of a loop.
    assert_string_equal(render("{{ ([] * 1000000000000000000)|length }}{{ '' * 9223372036854775807 }}|"
                               "{{ (() * 1000000000000000000)|length }}{{ (1000000000000000000 * [])|length }}").c_str(),
                        "0|00");
}

void test_bad_messages(void **) {
    const ChatTemplate t("{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}");
    const ordered_json specials = ordered_json::object();
    pagoda::tok::ChatRenderOptions o;
    auto input_error = [&](const std::string &messages_json) -> std::string {
        try {
            pagoda::tok::render_chat_text(t, messages_json, o, specials);
        } catch (const ChatTemplateError &e) {
            assert_int_equal(e.kind(), Kind::Input);
            assert_int_equal(e.status(), PAGODA_ERR_INVALID_ARGUMENT);
            return e.what();
        }
        fail();
    };
    assert_true(contains(input_error(""), "messages is not valid JSON"));
    assert_true(contains(input_error("[{\"role\": \"user\", \"content\": \"x\"}"), "not valid JSON"));
    assert_true(contains(input_error("{\"role\": \"user\"}"), "messages must be a JSON array of message objects, found an object"));
    assert_true(contains(input_error("\"hi\""), "found a string"));
    assert_true(contains(input_error("[1]"), "messages[0] must be an object"));
    assert_true(contains(input_error("[{\"content\": \"x\"}]"), "messages[0] has no \"role\""));
    assert_true(contains(input_error("[{\"role\": 5}]"), "messages[0].role must be a string, found a number"));
    assert_true(contains(input_error("[{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"user\", \"content\": 7}]"),
                         "messages[1].content must be a string, an array of parts or null"));
    assert_true(contains(input_error("[{\"role\": \"user\", \"content\": [\"text\"]}]"), "messages[0].content[0] must be an object"));
    assert_true(contains(input_error("[{\"role\": \"assistant\", \"tool_calls\": {}}]"), "messages[0].tool_calls must be an array"));
    assert_true(contains(input_error("[\"\xff\"]"), "not valid JSON"));
    const ordered_json bad_tools = ordered_json::object();
    o.tools = &bad_tools;
    assert_true(contains(input_error("[]"), "tools must be a JSON array"));
    o.tools = nullptr;
    // Good input renders; content null and absent are fine.
    assert_string_equal(pagoda::tok::render_chat_text(t, "[{\"role\": \"user\", \"content\": null}, {\"role\": \"x\"}]", o, specials).c_str(),
                        "user:None;x:;");
}

void test_template_sets(void **) {
    const ordered_json config = ordered_json::parse(R"({
        "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "unk_token": null, "pad_token": "",
        "additional_special_tokens": ["<a>", {"content": "<b>"}],
        "chat_template": [{"name": "default", "template": "D{{ bos_token }}{{ eos_token }}{{ unk_token is defined }}{{ pad_token is defined }}{{ additional_special_tokens }}"},
                          {"name": "tool_use", "template": "T{{ tools|length }}"},
                          {"name": "broken", "template": "{% if %}"}]})");
    const auto set = pagoda::tok::chat_templates_from_config(config, "tokenizer_config.json");
    assert_non_null(set.get());
    assert_int_equal(set->sources().size(), 3);
    const ordered_json messages = ordered_json::array();
    pagoda::tok::ChatRenderOptions o;
    assert_string_equal(pagoda::tok::render_chat(set->get(""), messages, o, set->special_tokens).c_str(),
                        "D<s></s>FalseFalse['<a>', '<b>']");
    const ordered_json tools = ordered_json::parse("[{\"name\": \"f\"}]");
    o.tools = &tools;
    assert_string_equal(pagoda::tok::render_chat(set->get("", true), messages, o, set->special_tokens).c_str(), "T1");
    assert_true(&set->get("tool_use") == &set->get("", true));  // parsed once
    for (int i = 0; i < 2; ++i) {  // the parse error is kept and given each time
        try {
            set->get("broken");
            fail();
        } catch (const ChatTemplateError &e) {
            assert_int_equal(e.kind(), Kind::Syntax);
        }
    }
    try {
        set->get("rag");
        fail();
    } catch (const ChatTemplateError &e) {
        assert_int_equal(e.kind(), Kind::NoTemplate);
        assert_true(contains(e.what(), "no chat template named 'rag' (it has: default, tool_use, broken)"));
    }
    const auto none = pagoda::tok::chat_templates_from_config(ordered_json::parse("{\"eos_token\": \"x\"}"), "c");
    assert_true(none->sources().empty());
    assert_string_equal(none->special_tokens["eos_token"].get<std::string>().c_str(), "x");
    try {
        none->get("");
        fail();
    } catch (const ChatTemplateError &e) {
        assert_int_equal(e.kind(), Kind::NoTemplate);
        assert_string_equal(e.what(), "the model has no chat template (c has none)");
    }
    try {
        pagoda::tok::chat_templates_from_config(ordered_json::parse("{\"chat_template\": 5}"), "c");
        fail();
    } catch (const ChatTemplateError &e) {
        assert_int_equal(e.kind(), Kind::Input);
    }
}

// A folder with a tiny tokenizer.json and a tokenizer_config.json, removed at the end.
struct TempTokenizer {
    std::string dir;
    explicit TempTokenizer(const std::string &config) {
        char name[] = "/tmp/pagoda_test_chat_XXXXXX";
        assert_non_null(mkdtemp(name));
        dir = name;
        std::ofstream(dir + "/tokenizer.json")
            << R"({"model": {"type": "BPE", "vocab": {"<s>": 0, "</s>": 1, "a": 2}, "merges": []},
                  "added_tokens": [{"id": 0, "content": "<s>", "special": true}, {"id": 1, "content": "</s>", "special": true}]})";
        if (!config.empty()) std::ofstream(dir + "/tokenizer_config.json") << config;
    }
    ~TempTokenizer() {
        std::remove((dir + "/tokenizer.json").c_str());
        std::remove((dir + "/tokenizer_config.json").c_str());
        rmdir(dir.c_str());
    }
};

// pagoda_tokenizer_apply_chat_template's text, or "" with `*status` set.
std::string apply(pagoda_tokenizer_t *tok, const char *messages, const pagoda_chat_template_options_t *o,
                  pagoda_status_t *status) {
    char *text = nullptr;
    size_t len = 0;
    *status = pagoda_tokenizer_apply_chat_template(tok, messages, o, &text, &len);
    if (*status != PAGODA_OK) return {};
    std::string out(text, len);
    assert_int_equal(std::strlen(text), len);
    pagoda_free(text);
    return out;
}

void test_c_api(void **) {
    TempTokenizer folder(R"({"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}{% if tools %} tools={{ tools|tojson }}{% endif %}{{ extra }}"})");
    pagoda_tokenizer_t *tok = nullptr;
    assert_int_equal(pagoda_tokenizer_open(folder.dir.c_str(), &tok), PAGODA_OK);
    pagoda_status_t s;
    const char *messages = R"([{"role": "user", "content": "Hi é😀"}, {"role": "assistant", "content": "Hello"}])";
    assert_string_equal(apply(tok, messages, nullptr, &s).c_str(), "<s>[user] Hi é😀</s>[assistant] Hello</s>");
    pagoda_chat_template_options_t o;
    pagoda_chat_template_options_default(&o);
    assert_int_equal(o.struct_size, sizeof o);
    assert_int_equal(o.add_generation_prompt, 0);
    assert_null(o.chat_template);
    o.add_generation_prompt = 1;
    o.tools_json = R"([{"type": "function", "function": {"name": "f"}}])";
    o.context_json = R"({"extra": "!"})";
    assert_string_equal(apply(tok, "[]", &o, &s).c_str(),
                        "<s>[assistant] tools=[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]!");
    // raise_exception: INVALID_ARGUMENT carrying the template's message.
    assert_string_equal(apply(tok, R"([{"role": "system", "content": "x"}])", nullptr, &s).c_str(), "");
    assert_int_equal(s, PAGODA_ERR_INVALID_ARGUMENT);
    assert_string_equal(pagoda_last_error_message(),
                        "pagoda_tokenizer_apply_chat_template: chat template raised an exception at line 1: System role not supported");
    // An override template, with the tokenizer's special tokens.
    pagoda_chat_template_options_default(&o);
    o.chat_template = "{{ eos_token }}{{ messages|length }}";
    assert_string_equal(apply(tok, messages, &o, &s).c_str(), "</s>2");
    o.chat_template = "{{ x|xmlattr }}";
    apply(tok, messages, &o, &s);
    assert_int_equal(s, PAGODA_ERR_UNSUPPORTED);
    assert_true(contains(pagoda_last_error_message(), "unsupported filter 'xmlattr' at line 1"));
    o.chat_template = "{% for %}";
    apply(tok, messages, &o, &s);
    assert_int_equal(s, PAGODA_ERR_FORMAT);
    // Bad arguments.
    pagoda_chat_template_options_default(&o);
    o.tools_json = "[";
    apply(tok, messages, &o, &s);
    assert_int_equal(s, PAGODA_ERR_INVALID_ARGUMENT);
    assert_true(contains(pagoda_last_error_message(), "options->tools_json is not valid JSON"));
    o.tools_json = nullptr;
    o.context_json = "[1]";
    apply(tok, messages, &o, &s);
    assert_int_equal(s, PAGODA_ERR_INVALID_ARGUMENT);
    assert_true(contains(pagoda_last_error_message(), "the extra context must be a JSON object"));
    o.context_json = nullptr;
    o.template_name = "rag";
    apply(tok, messages, &o, &s);
    assert_int_equal(s, PAGODA_ERR_UNSUPPORTED);
    apply(tok, "{\"role\": \"user\"}", nullptr, &s);
    assert_int_equal(s, PAGODA_ERR_INVALID_ARGUMENT);
    assert_true(contains(pagoda_last_error_message(), "messages must be a JSON array"));
    char *text = nullptr;
    assert_int_equal(pagoda_tokenizer_apply_chat_template(tok, nullptr, nullptr, &text, nullptr), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_tokenizer_apply_chat_template(tok, "[]", nullptr, nullptr, nullptr), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_tokenizer_apply_chat_template(nullptr, "[]", nullptr, &text, nullptr), PAGODA_ERR_INVALID_HANDLE);
    o.struct_size = 2;
    assert_int_equal(pagoda_tokenizer_apply_chat_template(tok, "[]", &o, &text, nullptr), PAGODA_ERR_INVALID_ARGUMENT);
    // An older, shorter struct: the fields past it keep their defaults.
    pagoda_chat_template_options_init(&o, offsetof(pagoda_chat_template_options_t, chat_template));
    assert_int_equal(o.struct_size, offsetof(pagoda_chat_template_options_t, chat_template));
    o.add_generation_prompt = 1;
    o.chat_template = "ignored: past struct_size";
    assert_string_equal(apply(tok, "[]", &o, &s).c_str(), "<s>[assistant]");
    pagoda_tokenizer_destroy(tok);

    // No chat template: UNSUPPORTED, saying so.
    TempTokenizer bare(R"({"bos_token": "<s>"})");
    assert_int_equal(pagoda_tokenizer_open(bare.dir.c_str(), &tok), PAGODA_OK);
    apply(tok, messages, nullptr, &s);
    assert_int_equal(s, PAGODA_ERR_UNSUPPORTED);
    assert_true(contains(pagoda_last_error_message(), "the tokenizer has no chat template"));
    pagoda_chat_template_options_default(&o);
    o.chat_template = "{{ bos_token }}{{ messages[0].content }}";
    assert_string_equal(apply(tok, messages, &o, &s).c_str(), "<s>Hi é😀");
    pagoda_tokenizer_destroy(tok);
    // A malformed chat_template costs the template, not the tokenizer.
    TempTokenizer odd(R"({"chat_template": 12})");
    assert_int_equal(pagoda_tokenizer_open(odd.dir.c_str(), &tok), PAGODA_OK);
    apply(tok, messages, nullptr, &s);
    assert_int_equal(s, PAGODA_ERR_UNSUPPORTED);
    pagoda_tokenizer_destroy(tok);
}

void test_gguf_templates(void **) {
    pagoda::GgufVocabulary v;
    v.model = "llama";
    v.tokens = {"<unk>", "<s>", "</s>", "a"};
    v.token_types = {2, 3, 3, 1};
    v.scores = {0, 0, 0, -1};
    v.bos_token_id = 1;
    v.eos_token_id = 2;
    v.unknown_token_id = 0;
    const auto plain = pagoda::tok::Tokenizer::from_gguf(v, "x.gguf");
    assert_true(plain->chat_templates()->sources().empty());
    v.chat_templates = {{"default", "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}{{ unk_token }}"},
                        {"tool_use", "tools"}};
    const auto t = pagoda::tok::Tokenizer::from_gguf(v, "x.gguf");
    const auto &set = t->chat_templates();
    assert_non_null(set.get());
    pagoda::tok::ChatRenderOptions o;
    assert_string_equal(pagoda::tok::render_chat_text(set->get(""), "[{\"role\": \"user\", \"content\": \"a\"}]", o, set->special_tokens).c_str(),
                        "<s>a</s><unk>");
    assert_string_equal(set->origin.c_str(), "x.gguf: tokenizer.chat_template");
    assert_int_equal(set->sources().size(), 2);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constructs_match_jinja2),
        cmocka_unit_test(test_errors_name_the_construct),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_bad_messages),
        cmocka_unit_test(test_template_sets),
        cmocka_unit_test(test_c_api),
        cmocka_unit_test(test_gguf_templates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
