// GGUF loading: the vendored stories260K model, a tiny written model, and every malformed file we
// know how to make (each must fail with its status and a message naming the file and the culprit,
// never crash).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "gguf_writer.hpp"
#include "model/gguf_file.hpp"
#include "model/gguf_model.hpp"

// Last: cmocka defines macros (fail) that would rename members in the headers above.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {  // this cmocka.h declares its functions without C linkage for C++
#include <cmocka.h>
}

using pagoda::Error;
using pagoda::model::GgufFile;
using pagoda::model::GgufModel;
using pagoda::model::TensorType;
using pagoda::test::GgufWriter;
using Bytes = GgufWriter::Bytes;

namespace {

const std::string kStories = PAGODA_FIXTURES_DIR "/models/stories260K/stories260K.gguf";

Bytes read_all(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), {});
}

// A file holding `bytes` for the life of the object.
struct TempFile {
    std::string path;
    explicit TempFile(const Bytes &bytes) {
        char name[] = "/tmp/pagoda_test_gguf_XXXXXX";
        const int fd = mkstemp(name);
        assert_true(fd >= 0);
        path = name;
        size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
            assert_true(n > 0);
            done += size_t(n);
        }
        close(fd);
    }
    ~TempFile() { unlink(path.c_str()); }
};

// Opens `bytes` as a model and expects Error(status) whose message starts with the file's path and
// contains every needle. Any other exception (or none) fails the test. (cmocka fails by longjmp,
// so the verdict is reached first and reported after the C++ objects are gone.)
void expect_error(const Bytes &bytes, pagoda_status_t status,
                  std::initializer_list<const char *> needles = {}) {
    std::string problem;
    {
        TempFile f(bytes);
        try {
            GgufModel m = pagoda::model::open_gguf_model(f.path);
            problem = "loaded a file that should fail with status " + std::to_string(int(status));
        } catch (const Error &e) {
            const std::string msg = e.what();
            if (e.status() != status)
                problem = "status " + std::to_string(int(e.status())) + ", want " +
                          std::to_string(int(status)) + ": " + msg;
            else if (msg.rfind(f.path, 0) != 0)
                problem = "message does not start with the path: " + msg;
            for (const char *n : needles)
                if (problem.empty() && msg.find(n) == std::string::npos)
                    problem = std::string("message lacks '") + n + "': " + msg;
        }
    }
    if (!problem.empty()) fail_msg("%s", problem.c_str());
}

// Loads `f` as a model; an error fails the test.
GgufModel expect_model(const TempFile &f) {
    try {
        return pagoda::model::open_gguf_model(f.path);
    } catch (const Error &e) {
        std::fprintf(stderr, "unexpected error: %s\n", e.what());
    }
    std::abort();
}

Bytes raw_header(uint32_t version, uint64_t tensors, uint64_t kvs) {
    Bytes b = {'G', 'G', 'U', 'F'};
    GgufWriter::put_u32(b, version);
    GgufWriter::put_u64(b, tensors);
    GgufWriter::put_u64(b, kvs);
    return b;
}

// ---- the real model ----

void test_stories260k(void **) {
    const Bytes whole = read_all(kStories);
    assert_int_equal(whole.size(), 1185376);
    GgufModel m = pagoda::model::open_gguf_model(kStories);
    assert_int_equal(m.file.version(), 3);
    assert_int_equal(m.file.tensors().size(), 48);
    for (const auto &t : m.file.tensors()) assert_true(t.type == TensorType::F32);

    const auto &c = m.config;
    assert_string_equal(c.architecture_name.c_str(), "llama");
    assert_true(c.architecture == pagoda::model::Architecture::Llama);
    assert_int_equal(c.hidden_size, 64);
    assert_int_equal(c.intermediate_size, 172);
    assert_int_equal(c.n_layers, 5);
    assert_int_equal(c.n_heads, 8);
    assert_int_equal(c.n_kv_heads, 4);
    assert_int_equal(c.head_dim, 8);
    assert_int_equal(c.vocab_size, 512);
    assert_int_equal(c.max_position, 2048);  // the converter's default; SOURCE.md explains
    assert_true(std::fabs(c.rms_norm_eps - 1e-5) < 1e-9);
    assert_true(c.rope.theta == 10000.0);
    assert_int_equal(c.rope.layout, PAGODA_ROPE_INTERLEAVED);
    assert_false(c.tie_word_embeddings);
    assert_int_equal(c.bos_token_id, 1);
    assert_int_equal(c.eos_token_ids.size(), 1);
    assert_int_equal(c.eos_token_ids[0], 2);

    const auto &embed = m.tensors.require("model.embed_tokens.weight", "test");
    assert_true(embed.shape == (std::vector<int64_t>{512, 64}));
    assert_int_equal(embed.bytes, 512 * 64 * 4);
    assert_string_equal(embed.file.c_str(), kStories.c_str());
    // Mapped, not copied: the tensor's bytes lie in the mapping and equal the file's.
    const unsigned char *base = m.file.mapping().data();
    const auto *p = static_cast<const unsigned char *>(embed.data);
    assert_true(p >= base && p + embed.bytes <= base + m.file.mapping().size());
    assert_int_equal((p - base) % 32, 0);
    assert_memory_equal(p, whole.data() + (p - base), 64);
    assert_true(m.tensors.require("model.layers.4.mlp.down_proj.weight", "test").shape ==
                (std::vector<int64_t>{64, 172}));
    assert_true(m.tensors.require("model.layers.0.self_attn.k_proj.weight", "test").shape ==
                (std::vector<int64_t>{32, 64}));
    assert_non_null(m.tensors.find("lm_head.weight"));
    assert_int_equal(m.tensors.all().size(), 48);

    const auto &v = m.vocabulary;
    assert_string_equal(v.model.c_str(), "llama");
    assert_int_equal(v.tokens.size(), 512);
    assert_string_equal(v.tokens[1].c_str(), "<s>");
    assert_string_equal(v.tokens[2].c_str(), "</s>");
    assert_int_equal(v.scores.size(), 512);
    assert_int_equal(v.token_types.size(), 512);
    assert_int_equal(v.token_types[1], 3);  // control
    assert_int_equal(v.bos_token_id, 1);
    assert_int_equal(v.eos_token_id, 2);
    assert_int_equal(v.unknown_token_id, 0);
    assert_int_equal(v.padding_token_id, -1);  // written as 0xFFFFFFFF
    assert_true(v.merges.empty());
}

// Every cut of the real file: each byte of the header region, then a sample of the data.
void test_stories260k_truncated(void **) {
    const Bytes whole = read_all(kStories);
    GgufFile file(kStories);
    const uint64_t header = file.data_offset();
    std::vector<uint64_t> cuts;
    for (uint64_t n = 0; n <= header; ++n) cuts.push_back(n);
    for (uint64_t n = header + 1; n < whole.size(); n += 9973) cuts.push_back(n);
    cuts.push_back(whole.size() - 1);
    for (uint64_t n : cuts) expect_error(Bytes(whole.begin(), whole.begin() + long(n)), PAGODA_ERR_FORMAT);
}

// ---- a tiny written model ----

void test_tiny_model(void **) {
    TempFile f(pagoda::test::tiny_llama().bytes());
    GgufModel m = expect_model(f);
    assert_int_equal(m.config.hidden_size, 16);
    assert_int_equal(m.config.head_dim, 8);
    assert_int_equal(m.config.n_kv_heads, 1);
    assert_int_equal(m.config.vocab_size, 8);
    assert_false(m.config.tie_word_embeddings);
    assert_int_equal(m.tensors.all().size(), 2 * 9 + 3);
    assert_true(m.tensors.require("model.layers.1.mlp.gate_proj.weight", "t").shape ==
                (std::vector<int64_t>{32, 16}));
    assert_int_equal(m.vocabulary.scores.size(), 8);
    assert_true(m.vocabulary.scores[4] == -2.0f);
}

void test_tied_embeddings(void **) {
    GgufWriter w = pagoda::test::tiny_llama();
    w.remove_tensor("output.weight");
    TempFile f(w.bytes());
    GgufModel m = expect_model(f);
    assert_true(m.config.tie_word_embeddings);
    assert_null(m.tensors.find("lm_head.weight"));
}

void test_other_alignment_and_v2(void **) {
    GgufWriter w = pagoda::test::tiny_llama();
    w.version = 2;
    w.alignment = 64;
    w.add_u32("general.alignment", 64);
    TempFile f(w.bytes());
    GgufModel m = expect_model(f);
    assert_int_equal(m.file.version(), 2);
    assert_int_equal(m.file.alignment(), 64);
    assert_int_equal(m.file.data_offset() % 64, 0);
}

void test_tensor_types(void **) {
    GgufWriter w;
    w.add_tensor("f16", {4, 2}, 1, 16);
    w.add_tensor("bf16", {4}, 30, 8);
    w.add_tensor("q8", {64, 3}, 8, 6 * 34);
    TempFile f(w.bytes());
    GgufFile g(f.path);
    assert_true(g.find_tensor("f16")->type == TensorType::F16);
    assert_true(g.find_tensor("bf16")->type == TensorType::BF16);
    const auto *q = g.find_tensor("q8");
    assert_true(q->type == TensorType::Q8_0);
    assert_int_equal(q->bytes, 6 * 34);
    assert_null(g.find_tensor("nope"));

    // Q8_0 rows must be whole 32-element blocks.
    GgufWriter bad;
    bad.add_tensor("q8", {48, 2}, 8, 3 * 34);
    expect_error(bad.bytes(), PAGODA_ERR_FORMAT, {"'q8'", "Q8_0"});
}

// The quantized types beside Q8_0, with ggml's ids and block sizes; the K types' rows must be
// whole 256-value super-blocks.
void test_quantized_tensor_types(void **) {
    struct Case {
        const char *name;
        uint32_t id;
        TensorType type;
        uint64_t elements, bytes;  // per block
    };
    const Case cases[] = {{"q4_0", 2, TensorType::Q4_0, 32, 18},
                          {"q4_k", 12, TensorType::Q4_K, 256, 144},
                          {"q5_k", 13, TensorType::Q5_K, 256, 176},
                          {"q6_k", 14, TensorType::Q6_K, 256, 210}};
    GgufWriter w;
    for (const Case &c : cases) w.add_tensor(c.name, {c.elements * 2, 3}, c.id, 6 * c.bytes);
    TempFile f(w.bytes());
    GgufFile g(f.path);
    for (const Case &c : cases) {
        const auto *t = g.find_tensor(c.name);
        assert_non_null(t);
        assert_true(t->type == c.type);
        assert_int_equal(t->bytes, 6 * c.bytes);
    }
    GgufWriter bad;
    bad.add_tensor("q4k", {128, 4}, 12, 2 * 144);
    expect_error(bad.bytes(), PAGODA_ERR_FORMAT, {"'q4k'", "Q4_K", "256-element block"});
    // Types ggml has that Pagoda does not read are named as such.
    GgufWriter other;
    other.add_tensor("q3k", {256, 1}, 11, 110);
    expect_error(other.bytes(), PAGODA_ERR_UNSUPPORTED, {"'q3k'", "Q3_K", "Q4_K"});
}

void test_typed_accessors(void **) {
    GgufWriter w;
    w.add_string("s", "hello");
    w.add_u32("u", 7);
    w.add_f32("f", 0.5f);
    w.add_string_array("sa", {"x", "", "yz"});
    w.add_i32_array("ia", {-1, 2});
    w.add_f32_array("fa", {1.5f});
    TempFile f(w.bytes());
    GgufFile g(f.path);
    assert_string_equal(g.get_string("s").c_str(), "hello");
    assert_int_equal(g.get_u32("u"), 7);
    assert_true(g.get_f32("f") == 0.5f);
    assert_true(g.get_string_array("sa") == (std::vector<std::string>{"x", "", "yz"}));
    assert_true(g.get_i32_array("ia") == (std::vector<int32_t>{-1, 2}));
    assert_true(g.get_f32_array("fa") == (std::vector<float>{1.5f}));
    assert_int_equal(g.get_array_length("sa"), 3);
    try {
        (void)g.get_u32("s");
        fail();
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_FORMAT);
        assert_non_null(strstr(e.what(), "'s'"));
        assert_non_null(strstr(e.what(), "u32"));
        assert_non_null(strstr(e.what(), "string"));
    }
    try {
        (void)g.get_string_array("ia");
        fail();
    } catch (const Error &e) {
        assert_non_null(strstr(e.what(), "array of string"));
        assert_non_null(strstr(e.what(), "array of i32"));
    }
    try {
        (void)g.get_string("absent.key");
        fail();
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_FORMAT);
        assert_non_null(strstr(e.what(), "absent.key"));
    }
}

// ---- malformed files ----

void test_not_found(void **) {
    try {
        GgufFile g("/nonexistent/pagoda.gguf");
        fail();
    } catch (const Error &e) {
        assert_int_equal(e.status(), PAGODA_ERR_NOT_FOUND);
    }
}

void test_truncated_everywhere(void **) {
    const Bytes whole = pagoda::test::tiny_llama().bytes();
    for (size_t n = 0; n < whole.size(); ++n)
        expect_error(Bytes(whole.begin(), whole.begin() + long(n)), PAGODA_ERR_FORMAT);
    expect_error(Bytes(whole.begin(), whole.begin() + 30), PAGODA_ERR_FORMAT, {"truncated"});
}

void test_bad_magic(void **) {
    Bytes b = pagoda::test::tiny_llama().bytes();
    b[0] = 'X';
    expect_error(b, PAGODA_ERR_FORMAT, {"magic"});
}

void test_versions(void **) {
    GgufWriter w = pagoda::test::tiny_llama();
    w.version = 1;
    expect_error(w.bytes(), PAGODA_ERR_UNSUPPORTED, {"version 1", "2 and 3"});
    w.version = 4;
    expect_error(w.bytes(), PAGODA_ERR_UNSUPPORTED, {"version 4"});
    w.version = 0x03000000;  // a big-endian file read little-endian
    expect_error(w.bytes(), PAGODA_ERR_UNSUPPORTED, {"big-endian"});
}

void test_string_past_end(void **) {
    Bytes b = raw_header(3, 0, 1);
    GgufWriter::put_u64(b, 1000);  // key length
    b.insert(b.end(), {'a', 'b', 'c'});
    b.resize(b.size() + 40, 0);  // enough bytes that the entry count itself is plausible
    expect_error(b, PAGODA_ERR_FORMAT, {"truncated", "key"});

    // A string value whose length runs past the end.
    GgufWriter w;
    Bytes v;
    GgufWriter::put_u64(v, uint64_t(1) << 62);
    w.add_raw("general.name", 8, v);
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"general.name", "truncated"});
}

void test_huge_counts(void **) {
    for (uint32_t element : {0u, 8u, 9u, 12u}) {  // u8, string, array, f64
        GgufWriter w;
        Bytes v;
        GgufWriter::put_u32(v, element);
        GgufWriter::put_u64(v, uint64_t(1) << 60);
        w.add_raw("big.array", 9, v);
        expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"big.array", "1152921504606846976"});
    }
    expect_error(raw_header(3, 0, uint64_t(1) << 60), PAGODA_ERR_FORMAT, {"metadata"});
    expect_error(raw_header(3, UINT64_MAX, 0), PAGODA_ERR_FORMAT, {"tensors"});
}

void test_nested_arrays(void **) {
    // Arrays of arrays are legal a level or two deep...
    GgufWriter ok;
    Bytes v;
    GgufWriter::put_u32(v, 9);
    GgufWriter::put_u64(v, 2);
    for (int i = 0; i < 2; ++i) {
        GgufWriter::put_u32(v, 4);
        GgufWriter::put_u64(v, 1);
        GgufWriter::put_u32(v, 7);
    }
    ok.add_raw("nested", 9, v);
    TempFile f(ok.bytes());
    GgufFile g(f.path);
    assert_int_equal(g.get_array_length("nested"), 2);

    // ...but a file nesting them thousands deep must not exhaust the stack.
    GgufWriter deep;
    Bytes d;
    for (int i = 0; i < 10000; ++i) {
        GgufWriter::put_u32(d, 9);
        GgufWriter::put_u64(d, 1);
    }
    deep.add_raw("deep", 9, d);
    expect_error(deep.bytes(), PAGODA_ERR_FORMAT, {"deep", "nests"});

    // An unknown value type, alone or as an element type.
    GgufWriter bad;
    bad.add_raw("odd", 13, {0, 0, 0, 0});
    expect_error(bad.bytes(), PAGODA_ERR_FORMAT, {"odd", "13"});
}

void test_tensor_outside_data(void **) {
    GgufWriter w = pagoda::test::tiny_llama();
    w.add_tensor("far", {4}, 0, 16, int64_t(1) << 40);
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"'far'", "outside the data"});

    GgufWriter wrap;  // offset + bytes wraps past 2^64
    wrap.add_tensor("wrap", {4}, 0, 16, int64_t(0x7fffffffffffffe0));
    expect_error(wrap.bytes(), PAGODA_ERR_FORMAT, {"'wrap'", "outside"});

    GgufWriter huge;  // element count overflows
    huge.add_tensor("huge", {uint64_t(1) << 40, uint64_t(1) << 40}, 0, 16);
    expect_error(huge.bytes(), PAGODA_ERR_FORMAT, {"'huge'"});

    GgufWriter zero;
    zero.add_tensor("zero", {4, 0}, 0, 0);
    expect_error(zero.bytes(), PAGODA_ERR_FORMAT, {"'zero'", "dimension of 0"});
}

void test_overlapping_tensors(void **) {
    GgufWriter w;
    w.add_tensor("a", {16}, 0, 64, 0);
    w.add_tensor("b", {16}, 0, 64, 32);
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"'a'", "'b'", "overlap"});
}

void test_misaligned_offset(void **) {
    GgufWriter w;
    w.add_tensor("a", {4}, 0, 16, 0);
    w.add_tensor("b", {4}, 0, 16, 36);
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"'b'", "36", "alignment"});
}

void test_unknown_type(void **) {
    GgufWriter w = pagoda::test::tiny_llama();
    w.add_tensor("odd.weight", {4}, 99, 16);
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"'odd.weight'", "99"});
    GgufWriter q = pagoda::test::tiny_llama();
    q.add_tensor("k.weight", {256}, 11, 110);
    expect_error(q.bytes(), PAGODA_ERR_UNSUPPORTED, {"'k.weight'", "Q3_K", "supported: F32"});
}

void test_duplicates(void **) {
    GgufWriter w = pagoda::test::tiny_llama();
    w.add_u32("llama.block_count", 2);
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"llama.block_count", "twice"});
    GgufWriter t = pagoda::test::tiny_llama();
    t.add_f32_tensor("output_norm.weight", {16});
    expect_error(t.bytes(), PAGODA_ERR_FORMAT, {"output_norm.weight", "twice"});
}

void test_too_many_dims(void **) {
    GgufWriter w;
    w.add_tensor("five", {1, 1, 1, 1, 4}, 0, 16);
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"'five'", "5 dimensions"});
}

void test_bad_alignment(void **) {
    for (uint32_t a : {0u, 3u, 48u}) {
        GgufWriter w = pagoda::test::tiny_llama();
        w.add_u32("general.alignment", a);
        expect_error(w.bytes(), PAGODA_ERR_FORMAT,
                     {"general.alignment", std::to_string(a).c_str(), "power of two"});
    }
    GgufWriter s = pagoda::test::tiny_llama();
    s.add_string("general.alignment", "32");
    expect_error(s.bytes(), PAGODA_ERR_FORMAT, {"general.alignment", "u32", "string"});
}

void test_missing_key(void **) {
    for (const char *key : {"llama.embedding_length", "llama.context_length", "llama.block_count",
                            "llama.attention.head_count", "llama.feed_forward_length",
                            "llama.attention.layer_norm_rms_epsilon"})
        expect_error(pagoda::test::tiny_llama(key).bytes(), PAGODA_ERR_FORMAT, {key});
    // head_count_kv defaults to head_count (here 2 heads: the K/V shapes then disagree).
    expect_error(pagoda::test::tiny_llama("llama.attention.head_count_kv").bytes(),
                 PAGODA_ERR_FORMAT, {"blk.0.attn_k.weight", "[16, 16]", "[8, 16]"});
}

void test_wrong_key_type(void **) {
    GgufWriter w = pagoda::test::tiny_llama("llama.embedding_length");
    w.add_string("llama.embedding_length", "16");
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"llama.embedding_length", "u32", "string"});
    GgufWriter f = pagoda::test::tiny_llama("llama.attention.layer_norm_rms_epsilon");
    f.add_u32("llama.attention.layer_norm_rms_epsilon", 1);
    expect_error(f.bytes(), PAGODA_ERR_FORMAT, {"layer_norm_rms_epsilon", "f32", "u32"});
    GgufWriter t = pagoda::test::tiny_llama("llama.context_length");
    Bytes big;
    GgufWriter::put_u64(big, uint64_t(1) << 40);
    t.add_raw("llama.context_length", 10, big);
    expect_error(t.bytes(), PAGODA_ERR_FORMAT, {"llama.context_length", "1099511627776"});
}

void test_missing_tensor(void **) {
    GgufWriter w = pagoda::test::tiny_llama();
    w.remove_tensor("blk.1.ffn_up.weight");
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"missing tensor", "blk.1.ffn_up.weight",
                                                "model.layers.1.mlp.up_proj.weight"});
    GgufWriter e = pagoda::test::tiny_llama();
    e.remove_tensor("token_embd.weight");
    expect_error(e.bytes(), PAGODA_ERR_FORMAT, {"token_embd.weight"});
}

void test_shape_mismatch(void **) {
    GgufWriter w = pagoda::test::tiny_llama();
    w.remove_tensor("blk.0.attn_k.weight");
    w.add_f32_tensor("blk.0.attn_k.weight", {16, 16});
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"blk.0.attn_k.weight", "[16, 16]", "[8, 16]"});
}

void test_unexpected_tensors(void **) {
    GgufWriter w = pagoda::test::tiny_llama();
    w.add_f32_tensor("blk.7.attn_norm.weight", {16});
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"blk.7.attn_norm.weight", "does not belong"});
    GgufWriter u = pagoda::test::tiny_llama();
    u.add_f32_tensor("mystery.weight", {16});
    expect_error(u.bytes(), PAGODA_ERR_UNSUPPORTED, {"mystery.weight"});
    // RoPE frequency factors must be one F32 per rotated pair (head_dim 8: 4).
    GgufWriter r = pagoda::test::tiny_llama();
    r.add_f32_tensor("rope_freqs.weight", {3});
    expect_error(r.bytes(), PAGODA_ERR_FORMAT, {"rope_freqs.weight", "[3]", "head_dim / 2"});
    // A huge block_count fails before anything is built for it.
    GgufWriter b = pagoda::test::tiny_llama("llama.block_count");
    b.add_u32("llama.block_count", 4000);
    expect_error(b.bytes(), PAGODA_ERR_FORMAT, {"llama.block_count", "4000"});
}

// tiny_llama as Mixtral converts: 4 experts of 32 columns, 2 per token, stacked per projection.
GgufWriter tiny_mixtral(const std::string &skip = "", uint32_t expert_count = 4, uint32_t used = 2) {
    GgufWriter w = pagoda::test::tiny_llama();
    if (skip != "llama.expert_count") w.add_u32("llama.expert_count", expert_count);
    w.add_u32("llama.expert_used_count", used);
    for (int l = 0; l < 2; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const char *dense : {"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}) w.remove_tensor(p + dense);
        for (const auto &[name, dims] : std::vector<std::pair<std::string, std::vector<uint64_t>>>{
                 {"ffn_gate_inp.weight", {16, 4}},
                 {"ffn_gate_exps.weight", {16, 32, 4}},
                 {"ffn_up_exps.weight", {16, 32, 4}},
                 {"ffn_down_exps.weight", {32, 16, 4}}})
            if (p + name != skip) w.add_f32_tensor(p + name, dims);
    }
    return w;
}

// A mixture of experts loads with its keys; a missing expert tensor, an expert count the tensors
// disagree with, or more experts per token than experts are refused by name.
void test_mixture_of_experts(void **) {
    {
        TempFile f(tiny_mixtral().bytes());
        const GgufModel m = expect_model(f);
        assert_int_equal(int(m.config.architecture), int(pagoda::model::Architecture::Mixtral));
        assert_int_equal(m.config.n_experts, 4);
        assert_int_equal(m.config.experts_per_token, 2);
        assert_int_equal(m.config.expert_intermediate_size, 32);
        assert_non_null(m.tensors.find("model.layers.1.mlp.experts.down_proj.weight"));
    }
    expect_error(tiny_mixtral("blk.1.ffn_up_exps.weight").bytes(), PAGODA_ERR_FORMAT,
                 {"missing tensor", "blk.1.ffn_up_exps.weight"});
    expect_error(tiny_mixtral("", 5).bytes(), PAGODA_ERR_FORMAT,
                 {"blk.0.ffn_gate_inp.weight", "[4, 16]", "[5, 16]"});
    expect_error(tiny_mixtral("", 4, 5).bytes(), PAGODA_ERR_FORMAT, {"experts per token", "5"});
    GgufWriter r = pagoda::test::tiny_llama();
    r.add_string("llama.rope.scaling.type", "yarn");
    expect_error(r.bytes(), PAGODA_ERR_UNSUPPORTED, {"llama.rope.scaling.type", "yarn"});
}

void test_unsupported_architecture(void **) {
    GgufWriter w;
    w.add_string("general.architecture", "gpt2");
    expect_error(w.bytes(), PAGODA_ERR_UNSUPPORTED, {"'gpt2'", "supported: llama"});
    GgufWriter none;
    expect_error(none.bytes(), PAGODA_ERR_FORMAT, {"general.architecture"});
}

void test_vocabulary_checks(void **) {
    GgufWriter w = pagoda::test::tiny_llama("tokenizer.ggml.eos_token_id");
    w.add_u32("tokenizer.ggml.eos_token_id", 8);
    expect_error(w.bytes(), PAGODA_ERR_FORMAT, {"tokenizer.ggml.eos_token_id", "8"});
    GgufWriter s = pagoda::test::tiny_llama("tokenizer.ggml.scores");
    s.add_f32_array("tokenizer.ggml.scores", {1});
    expect_error(s.bytes(), PAGODA_ERR_FORMAT, {"tokenizer.ggml.scores", "1 entries for 8 tokens"});
    GgufWriter t = pagoda::test::tiny_llama("tokenizer.ggml.tokens");
    t.add_f32_array("tokenizer.ggml.tokens", {1});
    expect_error(t.bytes(), PAGODA_ERR_FORMAT, {"tokenizer.ggml.tokens", "array of f32"});
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stories260k),
        cmocka_unit_test(test_stories260k_truncated),
        cmocka_unit_test(test_tiny_model),
        cmocka_unit_test(test_tied_embeddings),
        cmocka_unit_test(test_other_alignment_and_v2),
        cmocka_unit_test(test_tensor_types),
        cmocka_unit_test(test_quantized_tensor_types),
        cmocka_unit_test(test_typed_accessors),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_string_past_end),
        cmocka_unit_test(test_huge_counts),
        cmocka_unit_test(test_nested_arrays),
        cmocka_unit_test(test_tensor_outside_data),
        cmocka_unit_test(test_overlapping_tensors),
        cmocka_unit_test(test_misaligned_offset),
        cmocka_unit_test(test_unknown_type),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_too_many_dims),
        cmocka_unit_test(test_bad_alignment),
        cmocka_unit_test(test_missing_key),
        cmocka_unit_test(test_wrong_key_type),
        cmocka_unit_test(test_missing_tensor),
        cmocka_unit_test(test_shape_mismatch),
        cmocka_unit_test(test_unexpected_tensors),
        cmocka_unit_test(test_mixture_of_experts),
        cmocka_unit_test(test_unsupported_architecture),
        cmocka_unit_test(test_vocabulary_checks),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
