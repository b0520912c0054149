// The parts of a tokenizer.json pipeline on small hand-made tokenizers: BPE merge order,
// ignore_merges, byte fallback, unknown tokens, added tokens (special or not, lstrip/rstrip,
// single_word, longest match), split behaviors, Metaspace, templates and tokenizer_config.json,
// normalizers; malformed files (each error names the field); and the C API's argument checks.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "pagoda/pagoda.h"
#include "tokenizer/pre_tokenizers.hpp"
#include "tokenizer/tokenizer.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

using pagoda::Error;
using pagoda::tok::Tokenizer;
using Ids = std::vector<int32_t>;

namespace {

constexpr uint32_t kParse = PAGODA_TOKENIZE_PARSE_SPECIAL;

// A folder holding tokenizer.json (and tokenizer_config.json when given), removed at the end.
struct TempTokenizer {
    std::string dir;
    TempTokenizer(const std::string &json, const std::string &config = "") {
        char name[] = "/tmp/pagoda_test_tok_XXXXXX";
        assert_non_null(mkdtemp(name));
        dir = name;
        std::ofstream(dir + "/tokenizer.json") << json;
        if (!config.empty()) std::ofstream(dir + "/tokenizer_config.json") << config;
    }
    ~TempTokenizer() {
        std::remove((dir + "/tokenizer.json").c_str());
        std::remove((dir + "/tokenizer_config.json").c_str());
        rmdir(dir.c_str());
    }
    std::shared_ptr<const Tokenizer> open() const { return Tokenizer::from_file(dir); }
};

// A BPE tokenizer.json over a vocabulary of the given tokens (ids in order).
std::string bpe_json(const std::vector<std::string> &tokens, const std::string &merges,
                     const std::string &extra_model = "", const std::string &rest = "") {
    std::string vocab;
    for (size_t i = 0; i < tokens.size(); ++i)
        vocab += (i ? "," : "") + std::string("\"") + tokens[i] + "\":" + std::to_string(i);
    return "{\"model\":{\"type\":\"BPE\",\"vocab\":{" + vocab + "},\"merges\":" + merges + extra_model +
           "}" + rest + "}";
}

void test_merge_order(void **) {
    const std::vector<std::string> v = {"a", "b", "c", "ab", "bc", "abc"};
    // The lowest rank merges first: "b c" before "a b" leaves a + bc.
    auto t = TempTokenizer(bpe_json(v, R"(["b c", "a b", "ab c"])")).open();
    assert_true(t->encode("abc", 0) == (Ids{0, 4}));
    t = TempTokenizer(bpe_json(v, R"(["a b", "b c", "ab c"])")).open();
    assert_true(t->encode("abc", 0) == (Ids{5}));
    // The array form of merges reads the same.
    t = TempTokenizer(bpe_json(v, R"([["a", "b"], ["b", "c"], ["ab", "c"]])")).open();
    assert_true(t->encode("abc", 0) == (Ids{5}));
    assert_true(t->encode("cab", 0) == (Ids{2, 3}));
    // Equal ranks apply left to right: "aaa" with "a a" is aa + a.
    t = TempTokenizer(bpe_json({"a", "aa"}, R"(["a a"])")).open();
    assert_true(t->encode("aaa", 0) == (Ids{1, 0}));
    assert_true(t->encode("aaaa", 0) == (Ids{1, 1}));
    // A piece splits into words before each "▁" only when no token joins a character to a
    // following "▁": here "a▁" does, and merges first, so the piece must stay whole.
    const std::vector<std::string> meta = {"\xE2\x96\x81", "a", "\xE2\x96\x81" "a", "a\xE2\x96\x81"};
    t = TempTokenizer(bpe_json(meta, R"([["a", "▁"], ["▁", "a"]])")).open();
    assert_true(t->encode("\xE2\x96\x81" "a" "\xE2\x96\x81" "a", 0) == (Ids{0, 3, 1}));
    t = TempTokenizer(bpe_json({"\xE2\x96\x81", "a", "\xE2\x96\x81" "a"}, R"([["▁", "a"]])")).open();
    assert_true(t->encode("\xE2\x96\x81" "a" "\xE2\x96\x81" "a" "\xE2\x96\x81\xE2\x96\x81" "a", 0) == (Ids{2, 2, 0, 2}));
}

void test_ignore_merges(void **) {
    // "abc" is a token no merge makes: only ignore_merges finds it.
    const std::vector<std::string> v = {"a", "b", "c", "ab", "abc"};
    auto t = TempTokenizer(bpe_json(v, R"(["a b"])")).open();
    assert_true(t->encode("abc", 0) == (Ids{3, 2}));
    t = TempTokenizer(bpe_json(v, R"(["a b"])", ",\"ignore_merges\":true")).open();
    assert_true(t->encode("abc", 0) == (Ids{4}));
}

void test_byte_fallback_and_unknown(void **) {
    const std::vector<std::string> v = {"<unk>", "a", "<0xC3>", "<0xA9>"};
    const std::string decoder = R"(,"decoder":{"type":"Sequence","decoders":[{"type":"ByteFallback"},{"type":"Fuse"}]})";
    auto t = TempTokenizer(bpe_json(v, "[]", R"(,"byte_fallback":true,"unk_token":"<unk>")", decoder)).open();
    // é has no token but its bytes do; ü's second byte (0xBC) has none, so it is unknown.
    assert_true(t->encode("aéa", 0) == (Ids{1, 2, 3, 1}));
    assert_true(t->encode("ü", 0) == (Ids{0}));
    assert_string_equal(t->decode(Ids{1, 2, 3}, 0).c_str(), "aé");
    // A run of byte tokens that is not UTF-8 is one U+FFFD per byte, as in Hugging Face.
    assert_string_equal(t->decode(Ids{1, 2, 1}, 0).c_str(), "a\xEF\xBF\xBD" "a");
    assert_string_equal(t->decode(Ids{3, 3}, 0).c_str(), "\xEF\xBF\xBD\xEF\xBF\xBD");
    assert_string_equal(t->token_to_piece(2).c_str(), "\xC3");
    assert_true(t->is_byte_fallback(2));
    assert_false(t->is_byte_fallback(1));
    // Without byte fallback unknown characters become <unk>; fuse_unk joins neighbours.
    t = TempTokenizer(bpe_json(v, "[]", R"(,"unk_token":"<unk>")")).open();
    assert_true(t->encode("axyza", 0) == (Ids{1, 0, 0, 0, 1}));
    t = TempTokenizer(bpe_json(v, "[]", R"(,"unk_token":"<unk>","fuse_unk":true)")).open();
    assert_true(t->encode("axyza", 0) == (Ids{1, 0, 1}));
    assert_int_equal(t->unk_token_id(), 0);
}

// Single characters a..z, space, "<", ">", "[", "]", then added tokens from id 31.
std::string added_json(const std::string &added) {
    std::vector<std::string> v;
    for (char c = 'a'; c <= 'z'; ++c) v.push_back(std::string(1, c));
    for (const char *s : {" ", "<", ">", "[", "]"}) v.push_back(s);
    return bpe_json(v, "[]", "", ",\"added_tokens\":" + added);
}

void test_added_tokens(void **) {
    const std::string added = R"([
      {"id":31,"content":"<tag>","special":true},
      {"id":32,"content":"<t","special":true},
      {"id":33,"content":"[x]","special":false,"lstrip":true,"rstrip":true},
      {"id":34,"content":"cat","special":false,"single_word":true}])";
    const auto t = TempTokenizer(added_json(added)).open();
    assert_int_equal(t->vocab_size(), 35);
    // Special tokens are found only when asked; the longest match wins.
    assert_true(t->encode("a<tag>b", kParse) == (Ids{0, 31, 1}));
    assert_true(t->encode("a<tb", kParse) == (Ids{0, 32, 1}));
    assert_true(t->encode("a<tag>b", 0) == (Ids{0, 27, 19, 0, 6, 28, 1}));
    // Non-special added tokens are always found; lstrip/rstrip take the spaces around them.
    assert_true(t->encode("a  [x]  b", 0) == (Ids{0, 33, 1}));
    // single_word: not inside a longer word.
    assert_true(t->encode("a cat b", 0) == (Ids{0, 26, 34, 26, 1}));
    assert_true(t->encode("cats", 0) == (Ids{2, 0, 19, 18}));
    assert_true(t->encode("cat", 0) == (Ids{34}));
    assert_true(t->is_special(31));
    assert_false(t->is_special(34));
    // Decoding without a decoder joins tokens with spaces; skip leaves specials out.
    assert_string_equal(t->decode(Ids{0, 31, 1}, 0).c_str(), "a <tag> b");
    assert_string_equal(t->decode(Ids{0, 31, 1}, PAGODA_DETOKENIZE_SKIP_SPECIAL).c_str(), "a b");
}

std::vector<std::string> split(const char *pattern, pagoda::tok::SplitBehavior b, bool invert,
                               const std::string &text) {
    using namespace pagoda::tok;
    SplitPreTokenizer s(TextPattern::literal(pattern), b, invert);
    std::vector<std::string> out;
    s.split(text, out);
    return out;
}

void test_split_behaviors(void **) {
    using B = pagoda::tok::SplitBehavior;
    using V = std::vector<std::string>;
    const std::string text = "a-b--c-";
    assert_true(split("-", B::Removed, false, text) == (V{"a", "b", "c"}));
    assert_true(split("-", B::Isolated, false, text) == (V{"a", "-", "b", "-", "-", "c", "-"}));
    assert_true(split("-", B::MergedWithPrevious, false, text) == (V{"a-", "b-", "-", "c-"}));
    assert_true(split("-", B::MergedWithNext, false, text) == (V{"a", "-b", "-", "-c", "-"}));
    assert_true(split("-", B::Contiguous, false, text) == (V{"a", "-", "b", "--", "c", "-"}));
    // invert: the pattern marks what to keep.
    assert_true(split("-", B::Removed, true, text) == (V{"-", "-", "-", "-"}));
    // The regex splits of real models: Llama 3 keeps digits in threes.
    using namespace pagoda::tok;
    SplitPreTokenizer llama3(TextPattern::regex(kLlama3SplitRegex, "test"), B::Isolated, false);
    V out;
    llama3.split("I'LL pay 1234567 now", out);
    assert_true(out == (V{"I", "'LL", " pay", " ", "123", "456", "7", " now"}));
}

void test_metaspace_and_template(void **) {
    // Metaspace with "first": "▁" in front of the input only, not after an added token.
    const std::string json = bpe_json(
        {"<s>", "</s>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a"}, R"(["▁ a"])", "",
        R"(,"added_tokens":[{"id":0,"content":"<s>","special":true},{"id":1,"content":"</s>","special":true}],
          "pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},
          "decoder":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first"},
          "post_processor":{"type":"TemplateProcessing",
            "single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"</s>","type_id":0}}],
            "special_tokens":{"<s>":{"id":"<s>","ids":[0],"tokens":["<s>"]},"</s>":{"id":"</s>","ids":[1],"tokens":["</s>"]}}})");
    auto t = TempTokenizer(json).open();
    assert_string_equal(t->model_name(), "spm");
    assert_true(t->encode("a b", 0) == (Ids{5, 2, 4}));
    assert_true(t->encode("a<s>a", kParse) == (Ids{5, 0, 3}));
    assert_true(t->encode("a", PAGODA_TOKENIZE_ADD_SPECIAL) == (Ids{0, 5, 1}));
    assert_int_equal(t->bos_token_id(), 0);
    assert_string_equal(t->decode(Ids{5, 2, 4}, 0).c_str(), "a b");
    assert_string_equal(t->token_to_piece(5).c_str(), " a");
    // tokenizer_config.json's switches rebuild the template (LlamaTokenizerFast's rule).
    t = TempTokenizer(json, R"({"bos_token":"<s>","eos_token":{"content":"</s>"},"add_bos_token":false,"add_eos_token":true})").open();
    assert_true(t->encode("a", PAGODA_TOKENIZE_ADD_SPECIAL) == (Ids{5, 1}));
    assert_int_equal(t->eos_token_id(), 1);
}

void test_normalizers(void **) {
    // NFC composes "e" + U+0301 into "é"; a regex Replace collapses spaces.
    const std::string json = bpe_json(
        {"\xC3\xA9", "e", "\xCC\x81", "_", "x"}, "[]", "",
        R"(,"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"},
             {"type":"Replace","pattern":{"Regex":" +"},"content":"_"}]})");
    const auto t = TempTokenizer(json).open();
    assert_true(t->encode("e\xCC\x81  x", 0) == (Ids{0, 3, 4}));
}

void expect_open_error(const std::string &json, pagoda_status_t status, std::vector<const char *> needles) {
    const TempTokenizer tmp(json);
    try {
        tmp.open();
        fail_msg("opened a bad tokenizer.json; expected an error mentioning %s", needles[0]);
    } catch (const Error &e) {
        if (e.status() != status) fail_msg("status %d, message: %s", e.status(), e.what());
        for (const char *needle : needles)
            if (std::string(e.what()).find(needle) == std::string::npos)
                fail_msg("message lacks \"%s\": %s", needle, e.what());
    }
}

void test_malformed(void **) {
    const auto fmt = PAGODA_ERR_FORMAT, unsup = PAGODA_ERR_UNSUPPORTED;
    expect_open_error("{\"model\": ", fmt, {"tokenizer.json", "not valid JSON"});
    expect_open_error("[]", fmt, {"must be an object"});
    expect_open_error("{}", fmt, {"model is missing"});
    expect_open_error(R"({"model":{"type":"BPE","vocab":[],"merges":[]}})", fmt, {"model.vocab", "found an array"});
    expect_open_error(R"({"model":{"type":"BPE","vocab":{"a":"x"},"merges":[]}})", fmt, {"model.vocab[\"a\"]", "an integer"});
    expect_open_error(R"({"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}})", fmt, {"not a valid token id"});
    expect_open_error(bpe_json({"a"}, R"(["a b"])"), fmt, {"merges[0]", "\"b\""});
    expect_open_error(bpe_json({"a"}, R"(["a"])"), fmt, {"model.merges[0]", "two tokens"});
    expect_open_error(bpe_json({"a"}, R"([["a"]])"), fmt, {"model.merges[0]", "2 tokens"});
    expect_open_error(bpe_json({"a"}, "[]", R"(,"unk_token":"<unk>")"), fmt, {"unk_token", "<unk>"});
    expect_open_error(R"({"model":{"type":"WordLevel","vocab":{}}})", unsup, {"model.type", "'WordLevel'"});
    expect_open_error(bpe_json({"a"}, "[]", "", R"(,"normalizer":{"type":"Precompiled"})"), unsup,
                      {"normalizer", "'Precompiled'"});
    expect_open_error(bpe_json({"a"}, "[]", "", R"(,"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"UnicodeScripts"}]})"),
                      unsup, {"pre_tokenizer.pretokenizers[0]", "'UnicodeScripts'"});
    expect_open_error(bpe_json({"a"}, "[]", "", R"(,"decoder":{"type":"CTC"})"), unsup, {"decoder", "'CTC'"});
    expect_open_error(bpe_json({"a"}, "[]", "", R"(,"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(a"},"behavior":"Isolated"})"),
                      fmt, {"pre_tokenizer.pattern.Regex", "(a"});
    expect_open_error(bpe_json({"a"}, "[]", "", R"(,"pre_tokenizer":{"type":"Split","pattern":{"String":"a"},"behavior":"Sideways"})"),
                      fmt, {"pre_tokenizer.behavior", "'Sideways'"});
    expect_open_error(bpe_json({"a"}, "[]", "", R"(,"pre_tokenizer":{"type":"Split","pattern":{"Glob":"a"},"behavior":"Isolated"})"),
                      fmt, {"pre_tokenizer.pattern", "\"Regex\""});
    expect_open_error(bpe_json({"a"}, "[]", "", R"(,"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},{"Sequence":{"id":"A"}}],"special_tokens":{}})"),
                      fmt, {"post_processor.special_tokens", "<s>"});
    expect_open_error(bpe_json({"a"}, "[]", "", R"(,"added_tokens":[{"id":5}])"), fmt, {"added_tokens[0].content is missing"});
    try {
        Tokenizer::from_file("/nonexistent/pagoda/tokenizer");
        fail_msg("opened a missing file");
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_NOT_FOUND);
        assert_non_null(std::strstr(e.what(), "/nonexistent/pagoda/tokenizer"));
    }
}

void test_c_api(void **) {
    const TempTokenizer tmp(added_json(R"([{"id":31,"content":"<tag>","special":true}])"));
    pagoda_tokenizer_t *t = nullptr;
    assert_int_equal(pagoda_tokenizer_open(nullptr, &t), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(pagoda_tokenizer_open("/nonexistent/x", &t), PAGODA_ERR_NOT_FOUND);
    assert_null(t);
    assert_int_equal(pagoda_tokenizer_open(tmp.dir.c_str(), &t), PAGODA_OK);

    pagoda_tokenizer_info_t info;
    std::memset(&info, 0xAB, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(pagoda_tokenizer_get_info(t, &info), PAGODA_OK);
    assert_int_equal(info.vocab_size, 32);
    assert_int_equal(info.bos_token_id, -1);
    assert_string_equal(info.model, "spm");
    // An older, shorter struct gets only what it has room for.
    pagoda_tokenizer_info_t small;
    std::memset(&small, 0xAB, sizeof small);
    small.struct_size = offsetof(pagoda_tokenizer_info_t, bos_token_id);
    assert_int_equal(pagoda_tokenizer_get_info(t, &small), PAGODA_OK);
    assert_int_equal(small.vocab_size, 32);
    assert_int_equal(uint32_t(small.bos_token_id), 0xABABABABu);

    int32_t *ids = nullptr;
    size_t n = 0;
    assert_int_equal(pagoda_tokenizer_encode(t, "ab<tag>", 7, kParse, &ids, &n), PAGODA_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[2], 31);
    char *text = nullptr;
    size_t len = 0;
    assert_int_equal(pagoda_tokenizer_decode(t, ids, n, PAGODA_DETOKENIZE_SKIP_SPECIAL, &text, &len), PAGODA_OK);
    assert_string_equal(text, "a b");
    pagoda_free(text);
    pagoda_free(ids);
    assert_int_equal(pagoda_tokenizer_encode(t, "", 0, 0, &ids, &n), PAGODA_OK);
    assert_int_equal(n, 0);
    assert_null(ids);
    assert_int_equal(pagoda_tokenizer_encode(t, "a", 1, 0x100, &ids, &n), PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(pagoda_last_error_message(), "flags"));
    assert_int_equal(pagoda_tokenizer_encode(nullptr, "a", 1, 0, &ids, &n), PAGODA_ERR_INVALID_HANDLE);

    const int32_t bad[] = {0, 32};
    assert_int_equal(pagoda_tokenizer_decode(t, bad, 2, 0, &text, &len), PAGODA_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(pagoda_last_error_message(), "32"));

    char buffer[8];
    assert_int_equal(pagoda_tokenizer_token_to_piece(t, 31, buffer, sizeof buffer, &len), PAGODA_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(buffer, "<tag>", 5);
    assert_int_equal(pagoda_tokenizer_token_to_piece(t, 31, buffer, 2, &len), PAGODA_ERR_INVALID_ARGUMENT);
    assert_int_equal(len, 5);
    assert_int_equal(pagoda_tokenizer_token_to_piece(t, -1, buffer, sizeof buffer, &len), PAGODA_ERR_INVALID_ARGUMENT);

    pagoda_tokenizer_destroy(t);
    pagoda_tokenizer_destroy(nullptr);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_order),
        cmocka_unit_test(test_ignore_merges),
        cmocka_unit_test(test_byte_fallback_and_unknown),
        cmocka_unit_test(test_added_tokens),
        cmocka_unit_test(test_split_behaviors),
        cmocka_unit_test(test_metaspace_and_template),
        cmocka_unit_test(test_normalizers),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_c_api),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
