// The Detokenizer on every tokenizer we have, and on small WordPiece and Unigram ones: for random
// id sequences (with many byte tokens, so UTF-8 characters and byte-fallback runs break across
// pushes), what push() and flush() give together equals decode() of the whole, each piece is valid
// UTF-8, and after a prompt the text is what the ids add to the prompt's text.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "model/gguf_file.hpp"
#include "model/gguf_vocabulary.hpp"
#include "pagoda/tokenizer.h"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/utf8.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

using pagoda::tok::Detokenizer;
using pagoda::tok::Tokenizer;

namespace {

std::shared_ptr<const Tokenizer> stories() {
    const std::string path = PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf";
    const pagoda::model::GgufFile file(path);
    return Tokenizer::from_gguf(pagoda::model::read_gguf_vocabulary(file), path);
}

std::shared_ptr<const Tokenizer> hf(const char *name) {
    return Tokenizer::from_file(std::string(PAGODA_TOKENIZERS_DIR) + "/" + name);
}

// Ids whose piece is a single byte: byte-fallback tokens, or byte-level symbols of bytes >= 0x80.
std::vector<int32_t> single_byte_ids(const Tokenizer &t) {
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < t.vocab_size(); ++id) {
        const std::string piece = t.token_to_piece(id);
        if (piece.size() == 1 && (t.is_byte_fallback(id) || static_cast<unsigned char>(piece[0]) >= 0x80))
            ids.push_back(id);
    }
    return ids;
}

std::string run(const std::shared_ptr<const Tokenizer> &t, const std::vector<int32_t> &prompt,
                const std::vector<int32_t> &ids, uint32_t flags) {
    Detokenizer d(t, prompt, flags);
    std::string text;
    for (int32_t id : ids) {
        const std::string piece = d.push(id);
        assert_true(pagoda::tok::is_valid_utf8(piece));
        text += piece;
    }
    const std::string rest = d.flush();
    assert_true(pagoda::tok::is_valid_utf8(rest));
    return text + rest;
}

void check_random_sequences(const std::shared_ptr<const Tokenizer> &t, uint32_t seed) {
    std::mt19937 rng(seed);
    const std::vector<int32_t> bytes = single_byte_ids(*t);
    assert_true(bytes.size() >= 64);
    std::uniform_int_distribution<int32_t> any_id(0, t->vocab_size() - 1);
    std::uniform_int_distribution<size_t> any_byte(0, bytes.size() - 1);
    std::uniform_int_distribution<int> length(0, 40), coin(0, 9);
    const std::vector<int32_t> prompt = t->encode("Once upon a time", PAGODA_TOKENIZE_ADD_SPECIAL);
    for (int round = 0; round < 300; ++round) {
        std::vector<int32_t> ids(size_t(length(rng)));
        for (int32_t &id : ids) id = coin(rng) < 4 ? bytes[any_byte(rng)] : any_id(rng);
        for (uint32_t flags : {0u, uint32_t(PAGODA_DETOKENIZE_SKIP_SPECIAL)}) {
            if (run(t, {}, ids, flags) != t->decode(ids, flags))
                fail_msg("round %d flags %u: streamed text differs from decode()", round, flags);
            // After a prompt: the text the ids add to the prompt's own.
            std::vector<int32_t> all = prompt;
            all.insert(all.end(), ids.begin(), ids.end());
            const std::string before = t->decode(prompt, flags), whole = t->decode(all, flags);
            assert_true(whole.compare(0, before.size(), before) == 0);
            if (run(t, prompt, ids, flags) != whole.substr(before.size()))
                fail_msg("round %d flags %u: streamed text after the prompt differs", round, flags);
        }
    }
}

// Random ids of a tokenizer with no byte tokens: streamed text equals decode(), alone and after
// a prompt.
void check_streaming(const std::shared_ptr<const Tokenizer> &t, uint32_t seed, const char *prompt_text) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> any_id(0, t->vocab_size() - 1);
    std::uniform_int_distribution<int> length(0, 30);
    const std::vector<int32_t> prompt = t->encode(prompt_text, PAGODA_TOKENIZE_ADD_SPECIAL);
    for (int round = 0; round < 200; ++round) {
        std::vector<int32_t> ids(size_t(length(rng)));
        for (int32_t &id : ids) id = any_id(rng);
        for (uint32_t flags : {0u, uint32_t(PAGODA_DETOKENIZE_SKIP_SPECIAL)}) {
            if (run(t, {}, ids, flags) != t->decode(ids, flags))
                fail_msg("round %d flags %u: streamed text differs from decode()", round, flags);
            std::vector<int32_t> all = prompt;
            all.insert(all.end(), ids.begin(), ids.end());
            const std::string before = t->decode(prompt, flags), whole = t->decode(all, flags);
            assert_true(whole.compare(0, before.size(), before) == 0);
            if (run(t, prompt, ids, flags) != whole.substr(before.size()))
                fail_msg("round %d flags %u: streamed text after the prompt differs", round, flags);
        }
    }
}

// WordPiece: "##" pieces join the word before them, other tokens get a space, and the cleanup
// takes the space before punctuation out; the first token of a decode gets no space.
void test_wordpiece(void **) {
    const auto t = Tokenizer::from_json_text(R"({
      "added_tokens":[{"id":0,"content":"[UNK]","special":true},{"id":1,"content":"[CLS]","special":true},
                      {"id":2,"content":"[SEP]","special":true}],
      "normalizer":{"type":"BertNormalizer","lowercase":true},
      "pre_tokenizer":{"type":"BertPreTokenizer"},
      "post_processor":{"type":"BertProcessing","sep":["[SEP]",2],"cls":["[CLS]",1]},
      "decoder":{"type":"WordPiece","prefix":"##","cleanup":true},
      "model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,"once":3,"upon":4,
               "a":5,"time":6,"##s":7,",":8,".":9,"'":10,"!":11,"##ly":12,"café":13,"##é":14}}})",
                                             "tokenizer.json", nullptr, "");
    check_streaming(t, 6, "Once upon a time");
    const std::vector<int32_t> prompt = t->encode("Once upon a", PAGODA_TOKENIZE_ADD_SPECIAL);
    Detokenizer d(t, prompt, PAGODA_DETOKENIZE_SKIP_SPECIAL);
    assert_string_equal(d.push(6).c_str(), " time");
    assert_string_equal(d.push(7).c_str(), "s");
    assert_string_equal(d.push(8).c_str(), ",");
}

// Unigram with Metaspace and byte fallback (ALBERT/T5-like pieces).
void test_unigram(void **) {
    std::string vocab = R"(["<unk>",0],["</s>",0],["▁",-2],["▁once",-3],["▁upon",-3],["▁a",-2],
                           ["▁time",-3],["s",-4],["▁caf",-5],["é",-6])";
    for (int b = 0; b < 256; ++b) {
        char piece[16];
        std::snprintf(piece, sizeof piece, ",[\"<0x%02X>\",-9]", b);
        vocab += piece;
    }
    const auto t = Tokenizer::from_json_text(R"({
      "added_tokens":[{"id":0,"content":"<unk>","special":true},{"id":1,"content":"</s>","special":true}],
      "pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true},
      "decoder":{"type":"Sequence","decoders":[{"type":"ByteFallback"},{"type":"Metaspace","replacement":"▁",
                 "prepend_scheme":"always"}]},
      "post_processor":{"type":"TemplateProcessing","single":[{"Sequence":{"id":"A","type_id":0}},
        {"SpecialToken":{"id":"</s>","type_id":0}}],"special_tokens":{"</s>":{"id":"</s>","ids":[1],"tokens":["</s>"]}}},
      "model":{"type":"Unigram","unk_id":0,"byte_fallback":true,"vocab":[)" + vocab + "]}}",
                                             "tokenizer.json", nullptr, "");
    check_random_sequences(t, 7);
    // An unknown character is spelled in its bytes, which stream out as one character.
    assert_true(t->encode("time\xF0\x9F\x9A\x80", 0) == (std::vector<int32_t>{6, 10 + 0xF0, 10 + 0x9F, 10 + 0x9A, 10 + 0x80}));
}

void test_stories(void **) {
    const auto t = stories();
    check_random_sequences(t, 1);
    // "▁time" after a prompt is " time", though decode() of it alone drops the space.
    const std::vector<int32_t> prompt = t->encode("Once upon a", PAGODA_TOKENIZE_ADD_SPECIAL);
    Detokenizer d(t, prompt, 0);
    assert_string_equal(d.push(378).c_str(), " time");
    assert_string_equal(t->decode(std::vector<int32_t>{378}, 0).c_str(), "time");
}

void test_llama3(void **) { check_random_sequences(hf("llama3"), 2); }
void test_qwen3(void **) { check_random_sequences(hf("qwen3"), 3); }
void test_llama2(void **) { check_random_sequences(hf("llama2"), 4); }
void test_gemma3(void **) { check_random_sequences(hf("gemma3"), 5); }

// A character split over byte tokens comes out whole when its last byte arrives.
void test_split_character(void **) {
    const auto t = hf("llama2");
    std::vector<int32_t> ids;  // "🚀" spelled in byte tokens
    for (unsigned char byte : std::string("🚀"))
        for (int32_t id = 0; id < t->vocab_size(); ++id)
            if (t->is_byte_fallback(id) && t->token_to_piece(id) == std::string(1, char(byte))) ids.push_back(id);
    assert_int_equal(ids.size(), 4);
    Detokenizer d(t, {}, 0);
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) {
        const std::string piece = d.push(ids[i]);
        if (i + 1 < ids.size()) assert_string_equal(piece.c_str(), "");
        text += piece;
    }
    text += d.flush();
    assert_string_equal(text.c_str(), t->decode(ids, 0).c_str());
    assert_string_equal(text.c_str(), "🚀");
}

// An unfinished character at the end comes out as U+FFFD from flush().
void test_flush_unfinished(void **) {
    const auto t = hf("llama3");
    const std::vector<int32_t> ids = t->encode("é", 0);
    std::vector<int32_t> first_byte;
    for (int32_t id = 0; id < t->vocab_size() && first_byte.empty(); ++id)
        if (t->token_to_piece(id) == "\xC3") first_byte.push_back(id);
    assert_int_equal(first_byte.size(), 1);
    Detokenizer d(t, {}, 0);
    assert_string_equal(d.push(first_byte[0]).c_str(), "");
    assert_string_equal(d.flush().c_str(), "\xEF\xBF\xBD");
    // An id naming no token (a padding row of a model's embedding) adds no text and changes
    // nothing, in the prompt's context as generated.
    const std::vector<int32_t> padded_prompt{t->vocab_size() + 5, t->vocab_size()};
    Detokenizer e(t, padded_prompt, 0);
    assert_false(t->has_token(t->vocab_size()));
    assert_string_equal(e.push(t->vocab_size()).c_str(), "");
    assert_string_equal(e.push(ids[0]).c_str(), "é");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories),
        cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_llama2),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_wordpiece),
        cmocka_unit_test(test_unigram),
        cmocka_unit_test(test_split_character),
        cmocka_unit_test(test_flush_unfinished),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
