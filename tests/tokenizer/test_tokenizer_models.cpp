// Unigram and WordPiece on small hand-made tokenizer.json files, with the components their real
// vocabularies bring (BertNormalizer, BertPreTokenizer, BertProcessing, the WordPiece decoder;
// Metaspace): Viterbi choice and its ties, unknown characters fused, byte fallback, greedy
// longest-match, words over max_input_chars_per_word, empty input, a missing unknown token,
// malformed models (each error names the field), and what the C API reports.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "pagoda/pagoda.h"
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

constexpr uint32_t kAll = PAGODA_TOKENIZE_ADD_SPECIAL | PAGODA_TOKENIZE_PARSE_SPECIAL;
#define MS "\xE2\x96\x81"  // "▁"

std::shared_ptr<const Tokenizer> open_json(const std::string &json) {
    return Tokenizer::from_json_text(json, "tokenizer.json", nullptr, "");
}

// A Unigram model over [piece, score] pairs (ids in order), with `rest` after the model.
std::string unigram_json(const std::vector<std::pair<std::string, double>> &vocab, const std::string &model_extra,
                         const std::string &rest = "") {
    std::string v;
    for (size_t i = 0; i < vocab.size(); ++i)
        v += (i ? "," : "") + std::string("[\"") + vocab[i].first + "\"," + std::to_string(vocab[i].second) + "]";
    return "{\"model\":{\"type\":\"Unigram\",\"vocab\":[" + v + "]" + model_extra + "}" + rest + "}";
}

void expect_error(const std::string &json, pagoda_status_t status, std::vector<const char *> needles) {
    try {
        open_json(json);
        fail_msg("opened a bad tokenizer.json; expected an error mentioning %s", needles[0]);
    } catch (const Error &e) {
        if (e.status() != status) fail_msg("status %d, message: %s", e.status(), e.what());
        for (const char *needle : needles)
            if (std::string(e.what()).find(needle) == std::string::npos)
                fail_msg("message lacks \"%s\": %s", needle, e.what());
    }
}

void test_unigram_viterbi(void **) {
    // 0 <unk>, 1 a, 2 b, 3 ab, 4 c, 5 abc, 6 bc
    const auto t = open_json(unigram_json(
        {{"<unk>", 0}, {"a", -1}, {"b", -1.5}, {"ab", -1.2}, {"c", -3}, {"abc", -5}, {"bc", -1}}, ",\"unk_id\":0"));
    assert_string_equal(t->model_name(), "unigram");
    // ab (-1.2) beats a + b (-2.5); for "abc": a + bc (-2) beats ab + c (-4.2) and abc (-5).
    assert_true(t->encode("ab", 0) == (Ids{3}));
    assert_true(t->encode("abc", 0) == (Ids{1, 6}));
    assert_true(t->encode("", 0).empty());
    // Unknown characters score the lowest score minus 10; a run of them is one <unk>.
    assert_true(t->encode("axyzb", 0) == (Ids{1, 0, 2}));
    assert_true(t->encode("x\xC3\xA9y", 0) == (Ids{0}));
    assert_int_equal(t->unk_token_id(), 0);
    // Hugging Face's own example (its Unigram::encode documentation): abcd, a, cd, then "xx" as one
    // unknown.
    const auto doc = open_json(unigram_json({{"<unk>", 0}, {"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}, {"cd", 1},
                                             {"ab", 2}, {"abc", 5}, {"abcd", 10}},
                                            ",\"unk_id\":0"));
    assert_true(doc->encode("abcdacdxx", 0) == (Ids{8, 1, 5, 0}));
    // A tie keeps the spelling found first (the one whose last piece starts earliest).
    const auto tie = open_json(unigram_json({{"<unk>", 0}, {"a", -1}, {"b", -1}, {"ab", -2}}, ",\"unk_id\":0"));
    assert_true(tie->encode("ab", 0) == (Ids{3}));
    const auto tie2 = open_json(unigram_json({{"<unk>", 0}, {"ab", -2}, {"a", -1}, {"b", -1}}, ",\"unk_id\":0"));
    assert_true(tie2->encode("ab", 0) == (Ids{1}));
}

void test_unigram_byte_fallback(void **) {
    // é is C3 A9: both bytes have tokens; ü (C3 BC) lacks one, so it stays unknown.
    const std::vector<std::pair<std::string, double>> vocab = {
        {"<unk>", 0}, {"a", -1}, {"<0xC3>", -5}, {"<0xA9>", -5}, {"<0x78>", -5}};
    const std::string decoder = R"(,"decoder":{"type":"Sequence","decoders":[{"type":"ByteFallback"},{"type":"Fuse"}]})";
    const auto t = open_json(unigram_json(vocab, ",\"unk_id\":0,\"byte_fallback\":true", decoder));
    assert_true(t->encode("a\xC3\xA9" "a", 0) == (Ids{1, 2, 3, 1}));
    // A fused run of unknowns falls back as a whole: "éx" is C3 A9 78.
    assert_true(t->encode("\xC3\xA9x", 0) == (Ids{2, 3, 4}));
    assert_true(t->encode("\xC3\xBC", 0) == (Ids{0}));
    assert_true(t->encode("\xC3\xA9\xC3\xBC", 0) == (Ids{0}));
    assert_string_equal(t->decode(Ids{1, 2, 3}, 0).c_str(), "a\xC3\xA9");
    assert_true(t->is_byte_fallback(2));
    assert_string_equal(t->token_to_piece(3).c_str(), "\xA9");
    // Without byte fallback the same text is one <unk>.
    const auto plain = open_json(unigram_json(vocab, ",\"unk_id\":0"));
    assert_true(plain->encode("a\xC3\xA9" "a", 0) == (Ids{1, 0, 1}));
    assert_false(plain->is_byte_fallback(2));
}

void test_unigram_metaspace(void **) {
    // T5's layout: <pad> </s> <unk>, Metaspace in front of every word, </s> after the text.
    const auto t = open_json(unigram_json(
        {{"<pad>", 0}, {"</s>", 0}, {"<unk>", 0}, {MS, -2}, {MS "hello", -3}, {MS "world", -3}, {"o", -4}, {MS "w", -4},
         {"orld", -4}},
        ",\"unk_id\":2",
        R"(,"added_tokens":[{"id":0,"content":"<pad>","special":true},{"id":1,"content":"</s>","special":true},
            {"id":2,"content":"<unk>","special":true}],
          "pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true},
          "decoder":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true},
          "post_processor":{"type":"TemplateProcessing","single":[{"Sequence":{"id":"A","type_id":0}},
            {"SpecialToken":{"id":"</s>","type_id":0}}],
            "special_tokens":{"</s>":{"id":"</s>","ids":[1],"tokens":["</s>"]}}})"));
    assert_true(t->encode("hello world", 0) == (Ids{4, 5}));
    assert_true(t->encode("hello world", kAll) == (Ids{4, 5, 1}));
    assert_true(t->encode("hello</s>", kAll) == (Ids{4, 1, 1}));
    // "▁" alone is a piece: "hello  world" has an empty word between the spaces.
    assert_true(t->encode("hello  world", 0) == (Ids{4, 3, 5}));
    assert_true(t->encode("hello q", 0) == (Ids{4, 3, 2}));
    assert_string_equal(t->decode(Ids{4, 5, 1}, 0).c_str(), "hello world</s>");
    assert_string_equal(t->decode(Ids{4, 5, 1}, PAGODA_DETOKENIZE_SKIP_SPECIAL).c_str(), "hello world");
    assert_string_equal(t->token_to_piece(5).c_str(), " world");
    assert_int_equal(t->bos_token_id(), -1);
}

void test_unigram_errors(void **) {
    const auto fmt = PAGODA_ERR_FORMAT;
    expect_error(R"({"model":{"type":"Unigram","vocab":[]}})", fmt, {"model.vocab is empty"});
    expect_error(R"({"model":{"type":"Unigram","vocab":{"a":0}}})", fmt, {"model.vocab", "an array"});
    expect_error(R"({"model":{"type":"Unigram","vocab":[["a"]]}})", fmt, {"model.vocab[0]", "[piece, score]"});
    expect_error(R"({"model":{"type":"Unigram","vocab":[["a","x"]]}})", fmt, {"model.vocab[0][1]", "a number"});
    expect_error(R"({"model":{"type":"Unigram","vocab":[["a",0]],"unk_id":3}})", fmt, {"model.unk_id = 3", "outside"});
    // No unk_id: text no piece covers cannot be encoded, as in Hugging Face (MissingUnkId).
    const auto t = open_json(unigram_json({{"a", -1}}, ""));
    assert_true(t->encode("aa", 0) == (Ids{0, 0}));
    try {
        t->encode("ab", 0);
        fail_msg("encoded text that needs an unknown token without one");
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_FORMAT);
        assert_non_null(std::strstr(e.what(), "unk_id"));
    }
}

// bert-base-uncased in miniature.
std::string bert_json(const std::string &model_extra = "", bool lowercase = true) {
    const char *tokens[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", ",", "un", "##aff", "##able", "aff",
                            "!", "a", "##b", "\xE4\xB8\xAD", "e", "##e", "'", "t", "don", "."};
    std::string vocab;
    for (size_t i = 0; i < sizeof tokens / sizeof *tokens; ++i)
        vocab += (i ? "," : "") + std::string("\"") + tokens[i] + "\":" + std::to_string(i);
    std::string added;
    for (int i = 0; i < 4; ++i)
        added += (i ? "," : "") + std::string("{\"id\":") + std::to_string(i) + ",\"content\":\"" + tokens[i] +
                 "\",\"special\":true}";
    return R"({"added_tokens":[)" + added + R"(],
      "normalizer":{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,
                    "lowercase":)" + std::string(lowercase ? "true" : "false") + R"(},
      "pre_tokenizer":{"type":"BertPreTokenizer"},
      "post_processor":{"type":"BertProcessing","sep":["[SEP]",3],"cls":["[CLS]",2]},
      "decoder":{"type":"WordPiece","prefix":"##","cleanup":true},
      "model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",
               "max_input_chars_per_word":100)" + model_extra + R"(,"vocab":{)" + vocab + "}}}";
}

void test_wordpiece(void **) {
    const auto t = open_json(bert_json());
    assert_string_equal(t->model_name(), "wordpiece");
    // Longest first: "un" then "##aff", "##able"; a word with an uncovered part is [UNK] whole.
    assert_true(t->encode("unaffable", 0) == (Ids{6, 7, 8}));
    assert_true(t->encode("affable", 0) == (Ids{9, 8}));
    assert_true(t->encode("unaffablex", 0) == (Ids{1}));
    assert_true(t->encode("abbb", 0) == (Ids{11, 12, 12, 12}));
    assert_true(t->encode("", 0).empty());
    assert_true(t->encode("  \t\n ", 0).empty());
    // Lowercased, accents stripped, punctuation apart, CJK ideographs spaced, controls dropped.
    assert_true(t->encode("Hello, UNAFFABLE!", 0) == (Ids{4, 5, 6, 7, 8, 10}));
    assert_true(t->encode("\xC3\x89\xC3\xA9", 0) == (Ids{14, 15}));
    assert_true(t->encode("a\xE4\xB8\xAD" "a", 0) == (Ids{11, 13, 11}));
    assert_true(t->encode("hel\xE2\x80\x8Dlo\x01", 0) == (Ids{4}));
    assert_true(t->encode("don't.", 0) == (Ids{18, 16, 17, 19}));
    // BertProcessing: [CLS] $A [SEP]; the added tokens are found in the text.
    assert_true(t->encode("hello", kAll) == (Ids{2, 4, 3}));
    assert_true(t->encode("[CLS] hello[SEP]", kAll) == (Ids{2, 2, 4, 3, 3}));
    assert_int_equal(t->unk_token_id(), 1);
    // The decoder joins "##" pieces, spaces the rest and takes spaces out before punctuation.
    assert_string_equal(t->decode(Ids{2, 4, 5, 6, 7, 8, 10, 3}, 0).c_str(), "[CLS] hello, unaffable! [SEP]");
    assert_string_equal(t->decode(Ids{2, 4, 5, 6, 7, 8, 10, 3}, PAGODA_DETOKENIZE_SKIP_SPECIAL).c_str(),
                        "hello, unaffable!");
    // The cleanup works token by token: " '" alone is left as it is.
    assert_string_equal(t->decode(Ids{18, 16, 17, 19}, 0).c_str(), "don ' t.");
    // A "##" piece first keeps its prefix, as Hugging Face's decoder leaves it.
    assert_string_equal(t->decode(Ids{7, 8}, 0).c_str(), "##affable");
    assert_string_equal(t->token_to_piece(7).c_str(), "aff");
    assert_string_equal(t->token_to_piece(6).c_str(), "un");
}

void test_wordpiece_limits(void **) {
    // Words longer than max_input_chars_per_word characters (not bytes) are [UNK].
    const auto t = open_json(bert_json(",\"max_input_chars_per_word\":3"));
    assert_true(t->encode("abb", 0) == (Ids{11, 12, 12}));
    assert_true(t->encode("abbb", 0) == (Ids{1}));
    assert_true(t->encode("\xE4\xB8\xAD", 0) == (Ids{13}));
    // Without lowercasing or accent stripping the vocabulary's lowercase pieces miss.
    const auto cased = open_json(bert_json("", false));
    assert_true(cased->encode("Hello hello", 0) == (Ids{1, 4}));
    assert_true(cased->encode("\xC3\xA9", 0) == (Ids{1}));
    // An unknown word with no unk token in the vocabulary is an error, as in Hugging Face.
    std::string json = bert_json();
    json.replace(json.find("\"unk_token\":\"[UNK]\""), 19, "\"unk_token\":\"<unk>\"");
    const auto no_unk = open_json(json);
    assert_true(no_unk->encode("hello", 0) == (Ids{4}));
    try {
        no_unk->encode("hellox", 0);
        fail_msg("encoded an unknown word without an unk token");
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_FORMAT);
        assert_non_null(std::strstr(e.what(), "<unk>"));
    }
    expect_error(R"({"model":{"type":"WordPiece","vocab":[]}})", PAGODA_ERR_FORMAT, {"model.vocab", "an object"});
    // An id far past the entries is refused before a table is sized for it (found by the fuzzer).
    expect_error(R"({"model":{"type":"WordPiece","vocab":{"[UNK]":0,"a":2147483646}}})", PAGODA_ERR_FORMAT,
                 {"2147483646", "ids must number the vocabulary from 0"});
    expect_error(R"({"model":{"type":"WordPiece","vocab":{},"max_input_chars_per_word":-1}})", PAGODA_ERR_FORMAT,
                 {"model.max_input_chars_per_word", "negative"});
}

void test_bert_components(void **) {
    // Punctuation apart (ASCII symbols count), whitespace of any kind between words.
    const auto t = open_json(R"({"model":{"type":"WordPiece","unk_token":"?","vocab":{"?":0,"a":1,"$":2,"b":3,"\u00bf":4}},
                                 "pre_tokenizer":{"type":"BertPreTokenizer"}})");
    assert_true(t->encode("a$b", 0) == (Ids{1, 2, 3}));
    assert_true(t->encode("a\xE3\x80\x80" "b\xC2\xBF", 0) == (Ids{1, 3, 4}));
    assert_string_equal(t->decode(Ids{1, 2, 3}, 0).c_str(), "a $ b");  // no decoder: spaces between
    // StripAccents and Strip normalizers, Punctuation pre-tokenizer.
    const auto s = open_json(R"({"model":{"type":"WordPiece","unk_token":"?","vocab":{"?":0,"a":1,"-":2,"e":3}},
        "normalizer":{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},{"type":"Strip"}]},
        "pre_tokenizer":{"type":"Punctuation","behavior":"Isolated"}})");
    assert_true(s->encode("  a-e\xCC\x81  ", 0) == (Ids{1, 2, 3}));
}

void test_c_api_model_names(void **) {
    struct Case {
        std::string json;
        const char *name;
    } cases[] = {{bert_json(), "wordpiece"}, {unigram_json({{"<unk>", 0}, {"a", -1}}, ",\"unk_id\":0"), "unigram"}};
    for (const Case &c : cases) {
        char dir[] = "/tmp/pagoda_test_models_XXXXXX";
        assert_non_null(mkdtemp(dir));
        const std::string path = std::string(dir) + "/tokenizer.json";
        FILE *f = std::fopen(path.c_str(), "w");
        assert_non_null(f);
        std::fwrite(c.json.data(), 1, c.json.size(), f);
        std::fclose(f);
        pagoda_tokenizer_t *t = nullptr;
        assert_int_equal(pagoda_tokenizer_open(dir, &t), PAGODA_OK);
        pagoda_tokenizer_info_t info;
        std::memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        assert_int_equal(pagoda_tokenizer_get_info(t, &info), PAGODA_OK);
        assert_string_equal(info.model, c.name);
        pagoda_tokenizer_destroy(t);
        std::remove(path.c_str());
        rmdir(dir);
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unigram_viterbi),
        cmocka_unit_test(test_unigram_byte_fallback),
        cmocka_unit_test(test_unigram_metaspace),
        cmocka_unit_test(test_unigram_errors),
        cmocka_unit_test(test_wordpiece),
        cmocka_unit_test(test_wordpiece_limits),
        cmocka_unit_test(test_bert_components),
        cmocka_unit_test(test_c_api_model_names),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
