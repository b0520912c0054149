// A step's intake on the wire (engine/intake_wire.hpp): every field back exactly (floats bit for
// bit), and every malformed input refused with PAGODA_ERR_FORMAT, without reading past the bytes
// or reserving what they could not hold.
//
// With PAGODA_INTAKE_WIRE_SEEDS=<dir> set, the test also writes the fuzzer's seeds there
// (tests/fuzz/corpus/fuzz_intake_wire/ holds the committed ones).
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "engine/intake_wire.hpp"

// Last: cmocka defines macros that clash with the C++ library; it needs these first.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using pagoda::Error;
using pagoda::engine::decode_intake;
using pagoda::engine::encode_intake;
using pagoda::engine::RequestConfig;
using pagoda::engine::StepIntake;
using pagoda::engine::SubmittedRequest;
using Bytes = std::vector<unsigned char>;

namespace {

// Bits, not values: -0.0f == 0.0f would hide a lost sign.
bool same_float(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }

// Field by field. The structured bindings must name every member, so a field added to
// RequestConfig or SamplingParams breaks this build until it is compared here too (and carried
// by the wire, whose encoder binds the same way).
bool same_config(const RequestConfig &a, const RequestConfig &b) {
    const auto &[a_flags, a_max_tokens, a_sampling, a_seed, a_stop_ids, a_stop_strings,
                 a_prompt_logprobs, a_priority, a_n, a_best_of, a_beam_width, a_length_penalty,
                 a_early_stopping, a_controls, a_processor, a_processor_user, a_constraint_kind,
                 a_constraint_text, a_constraint, a_pooling, a_normalize] = a;
    const auto &[b_flags, b_max_tokens, b_sampling, b_seed, b_stop_ids, b_stop_strings,
                 b_prompt_logprobs, b_priority, b_n, b_best_of, b_beam_width, b_length_penalty,
                 b_early_stopping, b_controls, b_processor, b_processor_user, b_constraint_kind,
                 b_constraint_text, b_constraint, b_pooling, b_normalize] = b;
    const auto &[a_bias, a_min_tokens, a_bad_words, a_allowed] = a_controls;
    const auto &[b_bias, b_min_tokens, b_bad_words, b_allowed] = b_controls;
    bool same_bias = a_bias.size() == b_bias.size();
    for (size_t i = 0; same_bias && i < a_bias.size(); ++i)
        same_bias = a_bias[i].first == b_bias[i].first &&
                    same_float(a_bias[i].second, b_bias[i].second);
    const auto &[a_temp, a_top_k, a_top_p, a_min_p, a_rep, a_presence, a_frequency, a_logprobs] =
        a_sampling;
    const auto &[b_temp, b_top_k, b_top_p, b_min_p, b_rep, b_presence, b_frequency, b_logprobs] =
        b_sampling;
    return a_flags == b_flags && a_max_tokens == b_max_tokens && same_float(a_temp, b_temp) &&
           a_top_k == b_top_k && same_float(a_top_p, b_top_p) && same_float(a_min_p, b_min_p) &&
           same_float(a_rep, b_rep) && same_float(a_presence, b_presence) &&
           same_float(a_frequency, b_frequency) && a_logprobs == b_logprobs && a_seed == b_seed &&
           a_stop_ids == b_stop_ids && a_stop_strings == b_stop_strings &&
           a_prompt_logprobs == b_prompt_logprobs && a_priority == b_priority && a_n == b_n &&
           a_best_of == b_best_of && a_beam_width == b_beam_width &&
           same_float(a_length_penalty, b_length_penalty) && a_early_stopping == b_early_stopping &&
           same_bias && a_min_tokens == b_min_tokens && a_bad_words == b_bad_words &&
           a_allowed == b_allowed && a_processor == b_processor &&
           a_processor_user == b_processor_user && a_constraint_kind == b_constraint_kind &&
           a_constraint_text == b_constraint_text && a_constraint == b_constraint &&
           a_pooling == b_pooling && a_normalize == b_normalize;
}

bool same_intake(const StepIntake &a, const StepIntake &b) {
    if (a.step != b.step || a.stop != b.stop || a.aborted != b.aborted ||
        a.submitted.size() != b.submitted.size())
        return false;
    for (size_t i = 0; i < a.submitted.size(); ++i) {
        const SubmittedRequest &x = a.submitted[i], &y = b.submitted[i];
        if (x.id != y.id || x.prompt != y.prompt || !same_config(x.config, y.config)) return false;
    }
    return true;
}

void expect_round_trip(const StepIntake &intake) {
    const Bytes bytes = encode_intake(intake);
    assert_true(same_intake(decode_intake(bytes), intake));
    assert_true(encode_intake(decode_intake(bytes)) == bytes);
}

// Decoding `bytes` must fail with PAGODA_ERR_FORMAT; returns the message.
std::string format_error(const Bytes &bytes) {
    try {
        decode_intake(bytes);
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_FORMAT);
        return e.what();
    }
    fail_msg("decoded %zu malformed bytes", bytes.size());
    return {};
}

bool mentions(const std::string &message, const char *word) {
    return message.find(word) != std::string::npos;
}

// Every field away from its default, and floats that a lossy encoding would change.
RequestConfig odd_config(int32_t salt) {
    RequestConfig c;
    // Every bit but the embedding flag's, which never travels (test_embedding_never_travels).
    c.flags = (0xA5A5A5A5u ^ uint32_t(salt)) & ~uint32_t(PAGODA_REQUEST_EMBED);
    c.max_tokens = 1000 + salt;
    c.sampling.temperature = 0.1f;
    c.sampling.top_k = -1;
    c.sampling.top_p = std::numeric_limits<float>::denorm_min();
    c.sampling.min_p = -0.0f;
    c.sampling.repetition_penalty = 1e-40f;  // denormal
    c.sampling.presence_penalty = -std::numeric_limits<float>::infinity();
    c.sampling.frequency_penalty = std::numeric_limits<float>::max();
    c.sampling.logprobs = 20;
    c.seed = 0xFEDCBA9876543210ull + uint64_t(salt);
    c.stop_token_ids = {0, -1, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
    c.stop_strings = {std::string("a\0b", 3), "\xc3\xbc\xf0\x9f\x98\x80 end", "", std::string(1, '\0')};
    c.prompt_logprobs = 5;
    c.priority = -7;
    c.n = 3;
    c.best_of = 4;
    c.beam_width = 2;
    c.length_penalty = -1.5f;
    c.early_stopping = 2;
    // The wire carries what it is given; the engine checks the values when it admits them.
    c.controls.logit_bias = {
        {50256, -100.0f}, {-3, -0.0f}, {7, std::numeric_limits<float>::denorm_min()}};
    c.controls.min_tokens = 11 + salt;
    c.controls.bad_words = {{1, 2, 3}, {}, {std::numeric_limits<int32_t>::min()}};
    c.controls.allowed_token_ids = {9, 0, 9};
    // A constraint travels as its kind and text (NUL and UTF-8 inside), never compiled.
    c.constraint_kind = pagoda::grammar::ConstraintKind::grammar;
    c.constraint_text = std::string("root ::= \"caf\xc3\xa9\" [a-z]*  # ") + char('0' + salt % 10) +
                        std::string(1, '\0') + "tail";
    return c;
}

StepIntake small_intake() {
    StepIntake in;
    in.step = 42;
    in.submitted.push_back({7, {1, 2, 3}, odd_config(0)});
    in.submitted.push_back({8, {}, RequestConfig{}});
    in.aborted = {3, 5};
    return in;
}

void test_empty_intake(void **) {
    const StepIntake empty;
    // Magic, version, step, stop, two zero counts.
    assert_int_equal(encode_intake(empty).size(), 4 + 4 + 8 + 1 + 4 + 4);
    expect_round_trip(empty);
}

void test_stop_flag(void **) {
    StepIntake in;
    in.stop = true;
    in.step = std::numeric_limits<uint64_t>::max();
    expect_round_trip(in);
    assert_true(decode_intake(encode_intake(in)).stop);
}

void test_every_field(void **) {
    StepIntake in;
    in.step = 123456789012345ull;
    for (int32_t i = 0; i < 5; ++i) {
        SubmittedRequest r{uint64_t(1000 + i), {}, odd_config(i)};
        for (int32_t t = 0; t < 10 * i; ++t) r.prompt.push_back(t * 7919 - 3);
        in.submitted.push_back(r);
    }
    // Every field differs from the default, so a field the wire dropped would show.
    assert_false(same_config(in.submitted[0].config, RequestConfig{}));
    const StepIntake out = decode_intake(encode_intake(in));
    assert_true(same_intake(out, in));
    assert_int_equal(out.submitted[0].config.stop_strings[0].size(), 3);
    assert_true(std::signbit(out.submitted[0].config.sampling.min_p));
    expect_round_trip(in);
}

void test_big_prompt(void **) {
    StepIntake in;
    SubmittedRequest r{1, {}, RequestConfig{}};
    r.prompt.resize(100000);
    for (size_t i = 0; i < r.prompt.size(); ++i) r.prompt[i] = int32_t(i * 2654435761u);
    in.submitted.push_back(r);
    expect_round_trip(in);
}

void test_aborts(void **) {
    StepIntake in;
    in.step = 9;
    in.aborted = {0, 1, std::numeric_limits<uint64_t>::max(), 1};  // order and repeats kept
    expect_round_trip(in);
}

// Requests of the fewest bytes: the decoder's lower bound per request must not refuse them.
void test_minimal_requests(void **) {
    StepIntake in;
    for (uint64_t i = 0; i < 3; ++i) in.submitted.push_back({i, {}, RequestConfig{}});
    assert_int_equal(encode_intake(in).size(), 25 + 3 * 120);
    expect_round_trip(in);
}

// The layout is fixed, not the host's: the header's bytes in order.
void test_little_endian_header(void **) {
    StepIntake in;
    in.step = 0x0102030405060708ull;
    const Bytes b = encode_intake(in);
    const Bytes head(b.begin(), b.begin() + 16);
    assert_true(head == (Bytes{'P', 'G', 'I', 'W', 3, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}));
}

void test_every_truncation(void **) {
    const Bytes whole = encode_intake(small_intake());
    for (size_t len = 0; len < whole.size(); ++len)
        format_error(Bytes(whole.begin(), whole.begin() + long(len)));
}

void test_bad_header(void **) {
    const Bytes good = encode_intake(small_intake());
    Bytes b = good;
    b[0] ^= 0x20;
    assert_true(mentions(format_error(b), "magic"));
    b = good;
    b[4] = 1;  // the version before the logit controls
    assert_true(mentions(format_error(b), "version"));
    b = good;
    b[16] = 2;  // the stop flag is a bool
    assert_true(mentions(format_error(b), "stop flag"));
}

void put_u32(Bytes &b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + size_t(i)] = static_cast<unsigned char>(v >> (8 * i));
}

// A forged count must be refused from the bytes left, before anything is reserved: reserving
// 0xFFFFFFFF requests or ids would take gigabytes (or throw bad_alloc, not FORMAT).
void test_huge_counts(void **) {
    const Bytes empty = encode_intake(StepIntake{});
    Bytes b = empty;
    put_u32(b, 17, 0xFFFFFFFFu);  // submitted
    assert_true(mentions(format_error(b), "submitted count"));
    b = empty;
    put_u32(b, 21, 0xFFFFFFFFu);  // aborted
    assert_true(mentions(format_error(b), "aborted count"));

    StepIntake one;
    one.submitted.push_back({1, {}, RequestConfig{}});
    const Bytes single = encode_intake(one);
    const size_t prompt_at = 21 + 8, stop_ids_at = prompt_at + 4 + 10 * 4 + 8;
    b = single;
    put_u32(b, prompt_at, 0xFFFFFFFFu);
    assert_true(mentions(format_error(b), "prompt count"));
    b = single;
    put_u32(b, stop_ids_at, 0xFFFFFFFFu);
    assert_true(mentions(format_error(b), "stop_token_ids count"));
    b = single;
    put_u32(b, stop_ids_at + 4, 0xFFFFFFFFu);
    assert_true(mentions(format_error(b), "stop_strings count"));
    // After stop strings: 7 four-byte scalars, then the controls' counts.
    const size_t bias_at = stop_ids_at + 8 + 7 * 4;
    b = single;
    put_u32(b, bias_at, 0xFFFFFFFFu);
    assert_true(mentions(format_error(b), "logit_bias count"));
    b = single;
    put_u32(b, bias_at + 8, 0xFFFFFFFFu);
    assert_true(mentions(format_error(b), "bad_words count"));
    b = single;
    put_u32(b, bias_at + 12, 0xFFFFFFFFu);
    assert_true(mentions(format_error(b), "allowed_token_ids count"));
}

// A function pointer means nothing in another process: the encoder refuses one (submit
// refuses it first on a mesh over processes).
void test_processor_never_travels(void **) {
    StepIntake in;
    RequestConfig c;
    c.processor = [](void *, uint64_t, int32_t, const int32_t *, size_t, size_t, float *,
                     size_t) -> int32_t { return 0; };
    in.submitted.push_back({1, {1}, c});
    try {
        encode_intake(in);
        fail_msg("a request with a processor was encoded");
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_INTERNAL);
        assert_true(mentions(e.what(), "logits processor"));
    }
}

// Embedding requests stay on one device: the encoder refuses one (submit refuses it first on a
// mesh), and the decoder refuses the flag as malformed.
void test_embedding_never_travels(void **) {
    StepIntake in;
    RequestConfig c;
    c.flags = PAGODA_REQUEST_EMBED;
    in.submitted.push_back({1, {1}, c});
    try {
        encode_intake(in);
        fail_msg("an embedding request was encoded");
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_INTERNAL);
        assert_true(mentions(e.what(), "embedding"));
    }
    in.submitted[0].config.flags = 0;
    Bytes b = encode_intake(in);
    // The flags' low byte is where an encoding with another flag differs: set the bit there.
    in.submitted[0].config.flags = PAGODA_REQUEST_FRESH_SEED;
    const Bytes marked = encode_intake(in);
    size_t at = 0;
    while (at < b.size() && b[at] == marked[at]) ++at;
    assert_true(at < b.size());
    b[at] = uint8_t(PAGODA_REQUEST_EMBED);
    assert_true(mentions(format_error(b), "embedding"));
}

void test_trailing_bytes(void **) {
    Bytes b = encode_intake(small_intake());
    b.push_back(0);
    assert_true(mentions(format_error(b), "trailing"));
}

void write_file(const std::string &path, const Bytes &bytes) {
    FILE *f = std::fopen(path.c_str(), "wb");
    assert_non_null(f);
    assert_int_equal(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    assert_int_equal(std::fclose(f), 0);
}

void test_write_fuzz_seeds(void **) {
    const char *dir = std::getenv("PAGODA_INTAKE_WIRE_SEEDS");
    if (!dir) skip();
    write_file(std::string(dir) + "/two_requests", encode_intake(small_intake()));
    StepIntake stop;
    stop.step = 3;
    stop.stop = true;
    stop.aborted = {11};
    write_file(std::string(dir) + "/stop_with_abort", encode_intake(stop));
    StepIntake minimal;
    minimal.step = 1;
    minimal.submitted.push_back({0, {5}, RequestConfig{}});
    write_file(std::string(dir) + "/default_request", encode_intake(minimal));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_intake),
        cmocka_unit_test(test_stop_flag),
        cmocka_unit_test(test_every_field),
        cmocka_unit_test(test_big_prompt),
        cmocka_unit_test(test_aborts),
        cmocka_unit_test(test_minimal_requests),
        cmocka_unit_test(test_little_endian_header),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_huge_counts),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_processor_never_travels),
        cmocka_unit_test(test_embedding_never_travels),
        cmocka_unit_test(test_write_fuzz_seeds),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
