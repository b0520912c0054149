// GGUF vocabularies: the real stories260K model's 512-piece SentencePiece vocabulary (its text
// and ids are known from SOURCE.md), and a "gpt2" vocabulary built from Llama 3's tokenizer.json,
// which must encode the parity corpus exactly as that tokenizer.json does.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "model/gguf_file.hpp"
#include "model/gguf_vocabulary.hpp"
#include "pagoda/tokenizer.h"
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
using pagoda::model::GgufFile;
using pagoda::GgufVocabulary;
using pagoda::tok::Tokenizer;

namespace {

const std::string kStories = PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf";
constexpr uint32_t kAll = PAGODA_TOKENIZE_ADD_SPECIAL | PAGODA_TOKENIZE_PARSE_SPECIAL;

std::shared_ptr<const Tokenizer> stories() {
    const GgufFile file(kStories);
    return Tokenizer::from_gguf(pagoda::model::read_gguf_vocabulary(file), kStories);
}

void test_stories_vocabulary(void **) {
    const auto t = stories();
    assert_string_equal(t->model_name(), "spm");
    assert_int_equal(t->vocab_size(), 512);
    assert_int_equal(t->bos_token_id(), 1);
    assert_int_equal(t->eos_token_id(), 2);
    assert_int_equal(t->unk_token_id(), 0);
    assert_true(t->is_special(1));
    assert_false(t->is_special(403));
}

// SOURCE.md: greedy decoding from BOS gives ids starting with these ten, which read as the start
// of "Once upon a time, there was a little girl": the last is "▁g", and "girl" ends with "ir" (315)
// and "l" (421), the only pieces of tok512 that spell it.
const std::vector<int32_t> kGirlIds = {403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421};
const char *kGirlText = "Once upon a time, there was a little girl";

void test_stories_decode(void **) {
    const auto t = stories();
    assert_string_equal(t->decode(kGirlIds, 0).c_str(), kGirlText);
    const std::vector<int32_t> first_ten(kGirlIds.begin(), kGirlIds.begin() + 10);
    assert_string_equal(t->decode(first_ten, 0).c_str(), "Once upon a time, there was a little g");
    std::vector<int32_t> with_bos = kGirlIds;
    with_bos.insert(with_bos.begin(), 1);
    assert_string_equal(t->decode(with_bos, PAGODA_DETOKENIZE_SKIP_SPECIAL).c_str(), kGirlText);
    assert_string_equal(t->decode(with_bos, 0).c_str(), (std::string("<s> ") + kGirlText).c_str());
    assert_string_equal(t->token_to_piece(403).c_str(), " Once");
}

void test_stories_encode(void **) {
    const auto t = stories();
    std::vector<int32_t> want = kGirlIds;
    want.insert(want.begin(), 1);
    assert_true(t->encode(kGirlText, kAll) == want);
    assert_true(t->encode(kGirlText, 0) == kGirlIds);
    // The prompt the model card uses, and a round trip of text outside the vocabulary: characters
    // with no piece are spelled in byte tokens and come back whole.
    const std::vector<int32_t> prompt = t->encode("Once upon a time", kAll);
    assert_int_equal(prompt[0], 1);
    assert_int_equal(prompt[1], 403);
    for (const char *text : {"Lily saw a big, red ball.", "Grüße, 世界! 🚀", "  two  spaces\nand lines\n"}) {
        const std::vector<int32_t> ids = t->encode(text, 0);
        assert_string_equal(t->decode(ids, 0).c_str(), text);
    }
    // "<s>" in the text is the BOS token only when specials are parsed.
    assert_true(t->encode("<s>Once", PAGODA_TOKENIZE_PARSE_SPECIAL)[0] == 1);
    assert_true(t->encode("<s>Once", 0)[0] != 1);
}

// A GgufVocabulary of model "gpt2" made from a tokenizer.json's BPE model and added tokens.
GgufVocabulary gpt2_vocabulary(const std::string &path, const std::string &pre) {
    std::ifstream in(path);
    const auto j = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    GgufVocabulary v;
    v.model = "gpt2";
    v.pre = pre;
    size_t n = j["model"]["vocab"].size();
    for (const auto &a : j["added_tokens"]) n = std::max(n, size_t(a["id"].get<int>()) + 1);
    v.tokens.resize(n);
    v.token_types.assign(n, 1);
    for (const auto &[token, id] : j["model"]["vocab"].items()) v.tokens[id.get<int>()] = token;
    for (const auto &a : j["added_tokens"]) {
        v.tokens[a["id"].get<int>()] = a["content"].get<std::string>();
        v.token_types[a["id"].get<int>()] = a["special"].get<bool>() ? 3 : 4;
    }
    for (const auto &m : j["model"]["merges"])
        v.merges.push_back(m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>());
    return v;
}

void test_gpt2_vocabulary_matches_tokenizer_json(void **) {
    const std::string dir = std::string(PAGODA_TOKENIZERS_DIR) + "/llama3";
    const auto hf = Tokenizer::from_file(dir);
    GgufVocabulary v = gpt2_vocabulary(dir + "/tokenizer.json", "llama-bpe");
    v.bos_token_id = 128000;
    v.add_bos_token = 1;
    const auto gguf = Tokenizer::from_gguf(v, "llama3.gguf");
    assert_string_equal(gguf->model_name(), "bpe");
    std::ifstream in(PAGODA_FIXTURES_DIR "/tokenizers/corpus.json");
    const auto corpus = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    for (const auto &entry : corpus) {
        const std::string text = entry;
        const std::vector<int32_t> ids = gguf->encode(text, PAGODA_TOKENIZE_PARSE_SPECIAL);
        assert_true(ids == hf->encode(text, PAGODA_TOKENIZE_PARSE_SPECIAL));
        assert_true(gguf->decode(ids, 0) == hf->decode(ids, 0));
    }
    assert_int_equal(gguf->encode("Hi", kAll).front(), 128000);
}

void expect_error(const GgufVocabulary &v, pagoda_status_t status, const char *needle) {
    try {
        Tokenizer::from_gguf(v, "x.gguf");
        fail_msg("expected an error mentioning %s", needle);
    } catch (const Error &e) {
        assert_int_equal(e.status(), status);
        if (std::string(e.what()).find(needle) == std::string::npos) fail_msg("message: %s", e.what());
    }
}

void test_gguf_errors(void **) {
    GgufVocabulary v;
    expect_error(v, PAGODA_ERR_NOT_FOUND, "no tokenizer");
    v.tokens = {"a", "b", "ab"};
    v.model = "bert";
    expect_error(v, PAGODA_ERR_UNSUPPORTED, "'bert'");
    v.model = "gpt2";
    v.pre = "made-up-pre";
    expect_error(v, PAGODA_ERR_UNSUPPORTED, "'made-up-pre'");
    v.pre = "qwen2";
    v.merges = {"a c"};
    expect_error(v, PAGODA_ERR_FORMAT, "\"c\"");
    v.merges = {"ab"};
    expect_error(v, PAGODA_ERR_FORMAT, "merges[0]");
    v.merges = {"a b"};
    const auto t = Tokenizer::from_gguf(v, "x.gguf");
    assert_true(t->encode("ab", 0) == std::vector<int32_t>{2});
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories_vocabulary),
        cmocka_unit_test(test_stories_decode),
        cmocka_unit_test(test_stories_encode),
        cmocka_unit_test(test_gpt2_vocabulary_matches_tokenizer_json),
        cmocka_unit_test(test_gguf_errors),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
