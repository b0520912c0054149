// Hugging Face tokenizers converted to GGUF vocabularies (gguf_vocabulary_from_hf) on the three
// real vocabularies of tests/fixtures/tokenizers: the vocabulary read back (Tokenizer::from_gguf)
// must encode and decode the whole parity corpus as tokenizer.json does. Qwen3's NFC normalizer
// is not carried (as llama.cpp's converter drops it), so its corpus is compared in NFC. What GGUF
// cannot carry is refused, naming the file and the field.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "pagoda/tokenizer.h"
#include "tokenizer/hf_gguf_vocabulary.hpp"
#include "tokenizer/normalizers.hpp"
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
using pagoda::GgufVocabulary;
using pagoda::tok::Tokenizer;

namespace {

constexpr uint32_t kAll = PAGODA_TOKENIZE_ADD_SPECIAL | PAGODA_TOKENIZE_PARSE_SPECIAL;

nlohmann::json read_json(const std::string &path) {
    std::ifstream in(path);
    return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
}

std::string folder(const char *name) { return std::string(PAGODA_TOKENIZERS_DIR) + "/" + name; }

void check_corpus(const char *name, int64_t vocab_size, bool nfc, const char *model, const char *pre) {
    const std::string dir = folder(name);
    const GgufVocabulary v = pagoda::tok::gguf_vocabulary_from_hf(dir, vocab_size, -1, -1);
    assert_string_equal(v.model.c_str(), model);
    assert_string_equal(v.pre.c_str(), pre);
    assert_int_equal(v.tokens.size(), size_t(vocab_size));
    const auto hf = Tokenizer::from_file(dir);
    const auto gguf = Tokenizer::from_gguf(v, std::string(name) + ".gguf");
    assert_int_equal(gguf->bos_token_id(), hf->bos_token_id());
    assert_int_equal(gguf->eos_token_id(), hf->eos_token_id());
    const pagoda::tok::UnicodeNormalizer to_nfc(pagoda::tok::UnicodeNormalizer::Form::NFC);
    for (const auto &entry : read_json(PAGODA_FIXTURES_DIR "/tokenizers/corpus.json")) {
        std::string text = entry;
        if (nfc) to_nfc.normalize(text);
        for (uint32_t flags : {0u, kAll}) {
            const std::vector<int32_t> want = hf->encode(text, flags);
            if (gguf->encode(text, flags) != want) fail_msg("%s: \"%s\" encodes differently", name, text.c_str());
            assert_true(gguf->decode(want, 0) == hf->decode(want, 0));
            assert_true(gguf->decode(want, PAGODA_DETOKENIZE_SKIP_SPECIAL) ==
                        hf->decode(want, PAGODA_DETOKENIZE_SKIP_SPECIAL));
        }
    }
}

// Mistral-7B's SentencePiece vocabulary (see SOURCE.md): scores made from the merges' ranks.
void test_sentencepiece(void **) { check_corpus("llama2", 32000, false, "llama", ""); }
void test_llama3(void **) { check_corpus("llama3", 128256, false, "gpt2", "llama-bpe"); }
// Qwen3's config.json has 151936 embedding rows for 151669 tokens: the rest are padding.
void test_qwen3(void **) { check_corpus("qwen3", 151936, true, "gpt2", "qwen2"); }

void test_padding_and_switches(void **) {
    const GgufVocabulary v = pagoda::tok::gguf_vocabulary_from_hf(folder("qwen3"), 151936, -1, -1);
    assert_string_equal(v.tokens[151935].c_str(), "[PAD151935]");
    assert_int_equal(v.token_types[151935], 5);
    assert_int_equal(v.token_types[151644], 3);  // <|im_start|>: control
    assert_int_equal(v.add_bos_token, 0);
    assert_int_equal(v.bos_token_id, -1);
    assert_int_equal(v.padding_token_id, 151643);
    assert_false(v.chat_templates.empty());
    const GgufVocabulary s = pagoda::tok::gguf_vocabulary_from_hf(folder("llama2"), 32000, -1, -1);
    assert_int_equal(s.add_bos_token, 1);
    assert_int_equal(s.token_types[0], 2);  // <unk>
    assert_int_equal(s.token_types[3], 6);  // <0x00>
    assert_true(s.merges.empty());
}

// A copy of a fixture tokenizer with tokenizer.json edited by `edit`.
template <class F>
void expect_refused(const char *name, F edit, pagoda_status_t status, std::vector<const char *> fragments) {
    char tmpl[] = "/tmp/pagoda-tok-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) fail_msg("mkdtemp failed");
    const std::string dir = tmpl;
    std::filesystem::copy(folder(name), dir, std::filesystem::copy_options::recursive);
    nlohmann::json t = read_json(dir + "/tokenizer.json");
    edit(t);
    std::ofstream(dir + "/tokenizer.json") << t.dump();
    try {
        pagoda::tok::gguf_vocabulary_from_hf(dir, 160000, -1, -1);
        std::filesystem::remove_all(dir);
        fail_msg("%s: no error", name);
    } catch (const Error &e) {
        std::filesystem::remove_all(dir);
        if (e.status() != status) fail_msg("status %d: %s", int(e.status()), e.what());
        for (const char *f : fragments)
            if (std::string(e.what()).find(f) == std::string::npos) fail_msg("message \"%s\" lacks \"%s\"", e.what(), f);
    }
}

void test_refusals(void **) {
    // Unigram and WordPiece are refused by name, not converted as if they were BPE.
    expect_refused("llama2", [](nlohmann::json &t) { t["model"]["type"] = "Unigram"; }, PAGODA_ERR_UNSUPPORTED,
                   {"tokenizer.json", "model.type", "Unigram", "\"t5\""});
    expect_refused("llama2", [](nlohmann::json &t) { t["model"]["type"] = "WordPiece"; }, PAGODA_ERR_UNSUPPORTED,
                   {"tokenizer.json", "model.type", "WordPiece", "\"bert\""});
    // A merge SentencePiece would make that the BPE list lacks: the two would disagree.
    expect_refused("llama2", [](nlohmann::json &t) { t["model"]["merges"].erase(0); }, PAGODA_ERR_UNSUPPORTED,
                   {"tokenizer.json", "model.merges lacks"});
    expect_refused("llama2", [](nlohmann::json &t) { t["normalizer"] = {{"type", "NFKC"}}; }, PAGODA_ERR_UNSUPPORTED,
                   {"tokenizer.json", "normalizer"});
    expect_refused("llama3", [](nlohmann::json &t) { t["model"]["ignore_merges"] = false; }, PAGODA_ERR_UNSUPPORTED,
                   {"tokenizer.json", "ignore_merges"});
    expect_refused("llama3", [](nlohmann::json &t) { t["decoder"] = nullptr; }, PAGODA_ERR_UNSUPPORTED,
                   {"tokenizer.json", "decoder"});
    expect_refused("qwen3", [](nlohmann::json &t) { t["normalizer"] = {{"type", "Lowercase"}}; },
                   PAGODA_ERR_UNSUPPORTED, {"tokenizer.json", "normalizer 'Lowercase'"});
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sentencepiece),
        cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_padding_and_switches),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
