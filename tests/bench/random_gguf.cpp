#include "random_gguf.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pagoda::bench {

namespace {

// GGUF's tags: metadata value types and ggml tensor types.
constexpr uint32_t kGgufI32 = 5, kGgufU32 = 4, kGgufF32 = 6, kGgufString = 8, kGgufArray = 9;
constexpr uint32_t kGgmlF32 = 0, kGgmlF16 = 1, kGgmlBF16 = 30;
constexpr uint64_t kAlignment = 32;  // GGUF's default; no general.alignment key needed

uint64_t align_up(uint64_t x) { return (x + kAlignment - 1) / kAlignment * kAlignment; }

// splitmix64 (Steele et al., "Fast splittable pseudorandom number generators", 2014): one add
// and two multiplies per 64 bits, plenty for weights whose values nobody reads.
struct SplitMix64 {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
};

// Round to nearest, ties to even, as a converter would store a trained model's weights.
uint16_t f32_to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t biased = (x >> 23) & 0xFFu;
    uint32_t mant = x & 0x7FFFFFu;
    if (biased == 0xFF) return uint16_t(sign | 0x7C00u | (mant ? 0x200u : 0u));
    const int32_t exp = int32_t(biased) - 127 + 15;
    if (exp >= 31) return uint16_t(sign | 0x7C00u);
    if (exp <= 0) {  // an f16 subnormal: value / 2^-24, rounded
        if (exp < -10) return uint16_t(sign);
        mant |= 0x800000u;
        const uint32_t shift = uint32_t(14 - exp);
        uint32_t half = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) ++half;
        return uint16_t(sign | half);
    }
    uint32_t half = (uint32_t(exp) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // a carry into the exponent is right
    return uint16_t(sign | half);
}

uint16_t f32_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);  // finite values only, as here
}

struct TensorSpec {
    std::string name;
    std::vector<uint64_t> dims;  // innermost first, as GGUF lists them
    double fan_in;               // 0: an RMSNorm gain, all ones
    uint64_t elements() const {
        uint64_t n = 1;
        for (uint64_t d : dims) n *= d;
        return n;
    }
};

std::vector<TensorSpec> model_tensors(const RandomModelShape &s) {
    const uint64_t h = uint64_t(s.hidden), f = uint64_t(s.ffn), v = uint64_t(s.vocab);
    const uint64_t head_dim = h / uint64_t(s.heads);
    const uint64_t q = uint64_t(s.heads) * head_dim, kv = uint64_t(s.kv_heads) * head_dim;
    const bool qk_norm = s.architecture != "llama", moe = s.architecture == "qwen3moe";
    const uint64_t e = uint64_t(s.experts), ef = uint64_t(s.expert_ffn);
    std::vector<TensorSpec> t;
    t.push_back({"token_embd.weight", {h, v}, double(h)});
    for (int64_t l = 0; l < s.layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        t.push_back({p + "attn_norm.weight", {h}, 0});
        t.push_back({p + "attn_q.weight", {h, q}, double(h)});
        t.push_back({p + "attn_k.weight", {h, kv}, double(h)});
        t.push_back({p + "attn_v.weight", {h, kv}, double(h)});
        if (qk_norm) {
            t.push_back({p + "attn_q_norm.weight", {head_dim}, 0});
            t.push_back({p + "attn_k_norm.weight", {head_dim}, 0});
        }
        t.push_back({p + "attn_output.weight", {q, h}, double(q)});
        t.push_back({p + "ffn_norm.weight", {h}, 0});
        if (moe) {
            t.push_back({p + "ffn_gate_inp.weight", {h, e}, double(h)});
            t.push_back({p + "ffn_gate_exps.weight", {h, ef, e}, double(h)});
            t.push_back({p + "ffn_up_exps.weight", {h, ef, e}, double(h)});
            t.push_back({p + "ffn_down_exps.weight", {ef, h, e}, double(ef)});
            continue;
        }
        t.push_back({p + "ffn_gate.weight", {h, f}, double(h)});
        t.push_back({p + "ffn_up.weight", {h, f}, double(h)});
        t.push_back({p + "ffn_down.weight", {f, h}, double(f)});
    }
    t.push_back({"output_norm.weight", {h}, 0});
    return t;  // no output.weight: tied to token_embd
}

// One metadata entry: a u32, an f32 or a string.
struct MetadataKey {
    std::string key;
    uint32_t type;
    uint32_t u32;
    float f32;
    std::string text;
};

std::vector<MetadataKey> model_keys(const RandomModelShape &s) {
    const std::string &arch = s.architecture;
    auto u32 = [&](const std::string &k, int64_t v) {
        return MetadataKey{arch + "." + k, kGgufU32, uint32_t(v), 0.0f, ""};
    };
    auto f32 = [&](const std::string &k, float v) { return MetadataKey{arch + "." + k, kGgufF32, 0, v, ""}; };
    const int64_t head_dim = s.hidden / s.heads;
    std::vector<MetadataKey> keys{
        {"general.architecture", kGgufString, 0, 0.0f, arch},
        {"general.name", kGgufString, 0, 0.0f, "pagoda-bench random " + s.name},
        u32("context_length", s.context),
        u32("embedding_length", s.hidden),
        u32("block_count", s.layers),
        u32("feed_forward_length", s.ffn),
        u32("attention.head_count", s.heads),
        u32("attention.head_count_kv", s.kv_heads),
        u32("rope.dimension_count", head_dim),
        u32("vocab_size", s.vocab),  // the vocabulary's length, also for a model too small for one
        f32("attention.layer_norm_rms_epsilon", 1e-5f),
        f32("rope.freq_base", 10000.0f),
    };
    if (arch != "llama") {  // as llama.cpp's converter writes Qwen3's
        keys.push_back(u32("attention.key_length", head_dim));
        keys.push_back(u32("attention.value_length", head_dim));
    }
    if (arch == "qwen3moe") {
        keys.push_back(u32("expert_count", s.experts));
        keys.push_back(u32("expert_used_count", s.experts_per_token));
        keys.push_back(u32("expert_feed_forward_length", s.expert_ffn));
    }
    return keys;
}

// Buffered writes to one file; every failure names the file.
class Output {
public:
    explicit Output(const std::string &path) : path_(path), file_(std::fopen(path.c_str(), "wb")) {
        if (!file_) fail("cannot open for writing");
    }
    ~Output() {
        if (file_) std::fclose(file_);
    }
    void bytes(const void *p, size_t n) {
        if (n != 0 && std::fwrite(p, 1, n, file_) != n) fail("write failed");
        position_ += n;
    }
    void u32(uint32_t v) { bytes(&v, 4); }
    void u64(uint64_t v) { bytes(&v, 8); }
    void f32(float v) { bytes(&v, 4); }
    void string(const std::string &s) {
        u64(s.size());
        bytes(s.data(), s.size());
    }
    void pad_to(uint64_t offset) {
        static const unsigned char zeros[kAlignment] = {};
        while (position_ < offset) bytes(zeros, size_t(std::min<uint64_t>(offset - position_, kAlignment)));
    }
    uint64_t position() const { return position_; }
    // A key's name and type (the value follows).
    void key(const std::string &name, uint32_t type) {
        string(name);
        u32(type);
    }
    void close() {
        const int rc = std::fclose(file_);
        file_ = nullptr;
        if (rc != 0) fail("close failed");
    }

private:
    [[noreturn]] void fail(const char *what) {
        throw std::runtime_error(path_ + ": " + what + " (" + std::strerror(errno) + ")");
    }
    std::string path_;
    std::FILE *file_;
    uint64_t position_ = 0;
};

// A vocabulary of `n` tokens in llama.cpp's SentencePiece form, so that llama.cpp (which refuses a
// file without one) loads these models as Pagoda does: <unk>, <s>, </s>, the 256 byte tokens,
// then placeholders. The benchmarks feed token ids, so what the pieces say does not matter.
constexpr int64_t kVocabularyMinimum = 3 + 256;
constexpr uint64_t kVocabularyKeys = 7;

void write_vocabulary(Output &out, int64_t n) {
    auto piece = [](int64_t i) {
        if (i < 3) return std::string(i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        if (i < kVocabularyMinimum) {
            char byte[8];
            std::snprintf(byte, sizeof byte, "<0x%02X>", unsigned(i - 3));
            return std::string(byte);
        }
        return "\xE2\x96\x81r" + std::to_string(i);  // "▁r<i>"
    };
    out.key("tokenizer.ggml.model", kGgufString);
    out.string("llama");
    out.key("tokenizer.ggml.tokens", kGgufArray);
    out.u32(kGgufString);
    out.u64(uint64_t(n));
    for (int64_t i = 0; i < n; ++i) out.string(piece(i));
    out.key("tokenizer.ggml.scores", kGgufArray);
    out.u32(kGgufF32);
    out.u64(uint64_t(n));
    for (int64_t i = 0; i < n; ++i) out.f32(i < kVocabularyMinimum ? 0.0f : -float(i));
    out.key("tokenizer.ggml.token_type", kGgufArray);
    out.u32(kGgufI32);
    out.u64(uint64_t(n));
    for (int64_t i = 0; i < n; ++i) out.u32(i == 0 ? 2 : i < 3 ? 3 : i < kVocabularyMinimum ? 6 : 1);
    for (const auto &[name, id] : {std::pair<const char *, uint32_t>{"tokenizer.ggml.unknown_token_id", 0},
                                   {"tokenizer.ggml.bos_token_id", 1},
                                   {"tokenizer.ggml.eos_token_id", 2}}) {
        out.key(name, kGgufU32);
        out.u32(id);
    }
}

uint32_t ggml_type(pagoda_dtype_t dtype) {
    switch (dtype) {
    case PAGODA_DTYPE_F32: return kGgmlF32;
    case PAGODA_DTYPE_F16: return kGgmlF16;
    case PAGODA_DTYPE_BF16: return kGgmlBF16;
    default: break;
    }
    throw std::invalid_argument("random model weights must be f32, f16 or bf16, not dtype " +
                                std::to_string(int(dtype)));
}

size_t element_bytes(pagoda_dtype_t dtype) { return dtype == PAGODA_DTYPE_F32 ? 4 : 2; }

// Vectors (the norms) are F32 whatever the matrices are, as llama.cpp's converter writes them
// (its CPU backend multiplies by F32 vectors only).
pagoda_dtype_t stored_dtype(const TensorSpec &t, pagoda_dtype_t matrices) {
    return t.dims.size() == 1 ? PAGODA_DTYPE_F32 : matrices;
}

// Elements in one independently seeded chunk of a tensor.
constexpr size_t kChunkElements = size_t(1) << 20;

// The seed of chunk `chunk` of tensor number `tensor`: every chunk has its own splitmix stream,
// so chunks can be made on any thread in any order and the file is the same for every thread
// count.
uint64_t chunk_seed(uint64_t seed, uint64_t tensor, uint64_t chunk) {
    SplitMix64 per_tensor{seed ^ (tensor * 0xD1B54A32D192ED03ull)};
    SplitMix64 per_chunk{per_tensor.next() ^ (chunk * 0x9E3779B97F4A7C15ull)};
    return per_chunk.next();
}

// Encodes elements [chunk · kChunkElements, + n) of `t` (tensor number `tensor`) into `dst`.
void encode_chunk(const TensorSpec &t, uint64_t tensor, uint64_t chunk, size_t n,
                  pagoda_dtype_t dtype, uint64_t seed, unsigned char *dst) {
    const float scale = t.fan_in > 0 ? float(1.0 / std::sqrt(t.fan_in)) : 0.0f;
    std::vector<float> values(n);
    if (scale == 0.0f) {
        std::fill(values.begin(), values.end(), 1.0f);
    } else {
        // 24 random bits per value, two values per draw, mapped to [-scale, scale).
        constexpr float kUnit = 1.0f / float(1u << 23);
        SplitMix64 rng{chunk_seed(seed, tensor, chunk)};
        for (size_t i = 0; i < n; i += 2) {
            const uint64_t r = rng.next();
            values[i] = (float(uint32_t(r >> 40)) * kUnit - 1.0f) * scale;
            if (i + 1 < n) values[i + 1] = (float(uint32_t(r >> 8) & 0xFFFFFFu) * kUnit - 1.0f) * scale;
        }
    }
    if (dtype == PAGODA_DTYPE_F32) {
        std::memcpy(dst, values.data(), n * 4);
    } else {
        auto *h = reinterpret_cast<uint16_t *>(dst);
        for (size_t i = 0; i < n; ++i)
            h[i] = dtype == PAGODA_DTYPE_F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
    }
}

// Writes `t`'s values in `dtype`, `threads` chunks at a time: a 1B-parameter model is over a
// billion values to draw and convert, which one core does at a few hundred MB/s at best; the
// writes stay sequential, and memory stays at one chunk per thread for any model.
void write_values(Output &out, const TensorSpec &t, uint64_t tensor, pagoda_dtype_t dtype,
                  uint64_t seed, unsigned threads, std::vector<unsigned char> &batch) {
    const uint64_t total = t.elements();
    const uint64_t chunks = (total + kChunkElements - 1) / kChunkElements;
    const size_t chunk_bytes = kChunkElements * element_bytes(dtype);
    batch.resize(size_t(threads) * chunk_bytes);
    auto elements_of = [&](uint64_t c) { return size_t(std::min<uint64_t>(kChunkElements, total - c * kChunkElements)); };
    for (uint64_t first = 0; first < chunks; first += threads) {
        const unsigned here = unsigned(std::min<uint64_t>(threads, chunks - first));
        auto encode = [&](unsigned j) {
            encode_chunk(t, tensor, first + j, elements_of(first + j), dtype, seed, batch.data() + j * chunk_bytes);
        };
        std::vector<std::thread> pool;
        for (unsigned j = 1; j < here; ++j) pool.emplace_back(encode, j);
        encode(0);
        for (auto &th : pool) th.join();
        for (unsigned j = 0; j < here; ++j)
            out.bytes(batch.data() + j * chunk_bytes, elements_of(first + j) * element_bytes(dtype));
    }
}

}  // namespace

RandomModelShape random_model_shape(const std::string &spec) {
    if (spec == "110m") return {"110m", 768, 12, 12, 12, 2048, 32000, 1024};
    if (spec == "tiny") return {"tiny", 64, 2, 4, 4, 128, 256, 512};
    if (spec == "serve") return {"serve", 256, 4, 4, 4, 768, 1024, 2048};
    if (spec == "serve-large") return {"serve-large", 768, 8, 12, 12, 2048, 2048, 2048};
    if (spec == "1b") return {"1b", 2048, 16, 32, 8, 8192, 128256, 4096};
    // A mixture of experts and the dense models it is compared with: all but the MLP alike.
    auto moe = [](const char *name, int64_t hidden, int64_t layers, int64_t heads, int64_t kv_heads,
                  int64_t experts, int64_t top_k, int64_t expert_ffn, int64_t vocab) {
        return RandomModelShape{name, hidden, layers, heads, kv_heads, expert_ffn, vocab, 1024,
                                "qwen3moe", experts, top_k, expert_ffn};
    };
    auto dense_like = [](RandomModelShape s, const char *name, int64_t experts_read) {
        s.name = name;
        s.architecture = "qwen3";
        s.ffn = experts_read * s.expert_ffn;
        s.experts = s.experts_per_token = s.expert_ffn = 0;
        return s;
    };
    const RandomModelShape moe32 = moe("moe32", 2048, 8, 16, 4, 32, 4, 1024, 8192);
    if (spec == "moe32") return moe32;
    if (spec == "moe32-dense-active") return dense_like(moe32, "moe32-dense-active", moe32.experts_per_token);
    if (spec == "moe32-dense-total") return dense_like(moe32, "moe32-dense-total", moe32.experts);
    const RandomModelShape tiny = moe("moe-tiny", 64, 2, 4, 4, 8, 2, 32, 256);
    if (spec == "moe-tiny") return tiny;
    if (spec == "moe-tiny-dense-active")
        return dense_like(tiny, "moe-tiny-dense-active", tiny.experts_per_token);
    throw std::invalid_argument("unknown random model '" + spec +
                                "' (known: 110m, tiny, serve, serve-large, 1b, moe32, moe32-dense-active, "
                                "moe32-dense-total, moe-tiny, moe-tiny-dense-active)");
}

void write_random_gguf(const std::string &path, const RandomModelShape &shape,
                       pagoda_dtype_t dtype, uint64_t seed) {
    ggml_type(dtype);  // throws for a type random weights do not come in
    // Grouped-query attention needs whole heads of hidden and whole groups of query heads.
    if (shape.heads <= 0 || shape.kv_heads <= 0 || shape.hidden % shape.heads != 0 ||
        shape.heads % shape.kv_heads != 0)
        throw std::invalid_argument("random model '" + shape.name + "': hidden " +
                                    std::to_string(shape.hidden) + ", " + std::to_string(shape.heads) +
                                    " heads and " + std::to_string(shape.kv_heads) +
                                    " KV heads do not divide evenly");
    const bool moe = shape.architecture == "qwen3moe";
    if (shape.architecture != "llama" && shape.architecture != "qwen3" && !moe)
        throw std::invalid_argument("random model '" + shape.name + "': architecture '" + shape.architecture +
                                    "' is not one of llama, qwen3, qwen3moe");
    if (moe && (shape.experts <= 0 || shape.experts_per_token <= 0 ||
                shape.experts_per_token > shape.experts || shape.expert_ffn <= 0))
        throw std::invalid_argument("random model '" + shape.name + "': " + std::to_string(shape.experts) +
                                    " experts of width " + std::to_string(shape.expert_ffn) + ", top " +
                                    std::to_string(shape.experts_per_token) + " is no mixture of experts");
    const std::vector<TensorSpec> tensors = model_tensors(shape);
    const std::vector<MetadataKey> keys = model_keys(shape);

    const bool vocabulary = shape.vocab >= kVocabularyMinimum;

    Output out(path);
    out.bytes("GGUF", 4);
    out.u32(3);
    out.u64(tensors.size());
    out.u64(keys.size() + (vocabulary ? kVocabularyKeys : 0));
    for (const MetadataKey &k : keys) {
        out.key(k.key, k.type);
        if (k.type == kGgufU32) out.u32(k.u32);
        else if (k.type == kGgufF32) out.f32(k.f32);
        else out.string(k.text);
    }
    if (vocabulary) write_vocabulary(out, shape.vocab);

    uint64_t offset = 0;
    for (const TensorSpec &t : tensors) {
        out.string(t.name);
        out.u32(uint32_t(t.dims.size()));
        for (uint64_t d : t.dims) out.u64(d);
        out.u32(ggml_type(stored_dtype(t, dtype)));
        out.u64(offset);
        offset = align_up(offset + t.elements() * element_bytes(stored_dtype(t, dtype)));
    }
    const uint64_t data_start = align_up(out.position());
    out.pad_to(data_start);
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 32u);
    std::vector<unsigned char> batch;
    for (size_t i = 0; i < tensors.size(); ++i) {
        out.pad_to(align_up(out.position()));  // data_start is aligned, so this aligns the offset
        write_values(out, tensors[i], uint64_t(i), stored_dtype(tensors[i], dtype), seed, threads, batch);
    }
    out.close();
}

TempGgufFile::TempGgufFile() {
    const char *dir = std::getenv("TMPDIR");
    std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/pagoda-bench-XXXXXX.gguf";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int fd = mkstemps(name.data(), 5);  // 5: the ".gguf" suffix
    if (fd < 0)
        throw std::runtime_error("cannot create a temporary file like " + pattern + " (" +
                                 std::strerror(errno) + ")");
    ::close(fd);
    path_ = name.data();
    exists_ = true;
}

void TempGgufFile::remove() {
    if (exists_) ::unlink(path_.c_str());
    exists_ = false;
}

}  // namespace pagoda::bench
