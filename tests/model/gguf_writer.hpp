// A small GGUF writer for tests and fuzz seeds: builds valid files and, through its raw hooks,
// the malformed ones the reader must reject. Header-only; test code, not the library.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace pagoda::test {

class GgufWriter {
public:
    using Bytes = std::vector<unsigned char>;

    uint32_t version = 3;
    uint64_t alignment = 32;  // used to lay out data; write general.alignment yourself to change it

    // Encoding helpers, public so tests can build raw values.
    static void put_u32(Bytes &b, uint32_t v) { put(b, &v, 4); }
    static void put_u64(Bytes &b, uint64_t v) { put(b, &v, 8); }
    static void put_f32(Bytes &b, float v) { put(b, &v, 4); }
    static void put_string(Bytes &b, const std::string &s) {
        put_u64(b, s.size());
        put(b, s.data(), s.size());
    }

    // A key with a raw type tag and already-encoded value bytes.
    void add_raw(const std::string &key, uint32_t type, const Bytes &value) {
        Bytes b;
        put_string(b, key);
        put_u32(b, type);
        b.insert(b.end(), value.begin(), value.end());
        kvs_.push_back(b);
    }
    void add_u32(const std::string &key, uint32_t v) {
        Bytes b;
        put_u32(b, v);
        add_raw(key, 4, b);
    }
    void add_f32(const std::string &key, float v) {
        Bytes b;
        put_f32(b, v);
        add_raw(key, 6, b);
    }
    void add_string(const std::string &key, const std::string &v) {
        Bytes b;
        put_string(b, v);
        add_raw(key, 8, b);
    }
    void add_string_array(const std::string &key, const std::vector<std::string> &v) {
        Bytes b;
        put_u32(b, 8);
        put_u64(b, v.size());
        for (const auto &s : v) put_string(b, s);
        add_raw(key, 9, b);
    }
    void add_f32_array(const std::string &key, const std::vector<float> &v) {
        Bytes b;
        put_u32(b, 6);
        put_u64(b, v.size());
        for (float f : v) put_f32(b, f);
        add_raw(key, 9, b);
    }
    void add_i32_array(const std::string &key, const std::vector<int32_t> &v) {
        Bytes b;
        put_u32(b, 5);
        put_u64(b, v.size());
        for (int32_t x : v) put_u32(b, uint32_t(x));
        add_raw(key, 9, b);
    }

    // A tensor of `data_bytes` zero bytes (computed by the caller, so any type id can be written).
    // `offset` < 0 places it after the previous one, aligned; otherwise it is written as given.
    void add_tensor(const std::string &name, const std::vector<uint64_t> &dims, uint32_t type,
                    uint64_t data_bytes, int64_t offset = -1) {
        tensors_.push_back({name, dims, type, data_bytes, offset});
    }
    // An F32 tensor of the given (innermost-first) dims.
    void add_f32_tensor(const std::string &name, const std::vector<uint64_t> &dims) {
        uint64_t n = 1;
        for (uint64_t d : dims) n *= d;
        add_tensor(name, dims, 0, n * 4);
    }
    // Drops the tensor of that name, if present.
    void remove_tensor(const std::string &name) {
        for (size_t i = 0; i < tensors_.size(); ++i)
            if (tensors_[i].name == name) {
                tensors_.erase(tensors_.begin() + long(i));
                return;
            }
    }

    Bytes bytes() const {
        Bytes b;
        put(b, "GGUF", 4);
        put_u32(b, version);
        put_u64(b, tensors_.size());
        put_u64(b, kvs_.size());
        for (const auto &kv : kvs_) b.insert(b.end(), kv.begin(), kv.end());
        uint64_t next = 0, end = 0;
        std::vector<uint64_t> offsets;
        for (const auto &t : tensors_) {
            put_string(b, t.name);
            put_u32(b, uint32_t(t.dims.size()));
            for (uint64_t d : t.dims) put_u64(b, d);
            put_u32(b, t.type);
            const uint64_t off = t.offset >= 0 ? uint64_t(t.offset) : next;
            put_u64(b, off);
            offsets.push_back(off);
            if (t.offset < 0) next = align(off + t.data_bytes);
            // Data is written up to the furthest tensor end, except that ends past 1 MiB (or
            // wrapping) are left unwritten: they are there to point outside the file.
            const uint64_t stop = off + t.data_bytes;
            if (stop >= off && stop <= (uint64_t(1) << 20) && stop > end) end = stop;
        }
        if (tensors_.empty()) return b;
        b.resize(size_t(align(b.size())), 0);
        b.resize(b.size() + size_t(end), 0);  // the data: zeros, ending at the last tensor
        return b;
    }

private:
    struct Tensor {
        std::string name;
        std::vector<uint64_t> dims;
        uint32_t type;
        uint64_t data_bytes;
        int64_t offset;
    };

    static void put(Bytes &b, const void *p, size_t n) {
        const auto *c = static_cast<const unsigned char *>(p);
        b.insert(b.end(), c, c + n);
    }
    uint64_t align(uint64_t x) const { return (x + alignment - 1) / alignment * alignment; }

    std::vector<Bytes> kvs_;
    std::vector<Tensor> tensors_;
};

// A tiny valid llama model: hidden 16, 2 heads of 8, 1 KV head, FFN 32, 2 layers, vocab 8,
// context 64. `skip_key` leaves one key out; every tensor is F32 zeros.
inline GgufWriter tiny_llama(const std::string &skip_key = "") {
    GgufWriter w;
    auto keep = [&](const std::string &k) { return k != skip_key; };
    auto u32 = [&](const std::string &k, uint32_t v) {
        if (keep(k)) w.add_u32(k, v);
    };
    if (keep("general.architecture")) w.add_string("general.architecture", "llama");
    u32("llama.context_length", 64);
    u32("llama.embedding_length", 16);
    u32("llama.block_count", 2);
    u32("llama.feed_forward_length", 32);
    u32("llama.attention.head_count", 2);
    u32("llama.attention.head_count_kv", 1);
    u32("llama.rope.dimension_count", 8);
    if (keep("llama.attention.layer_norm_rms_epsilon"))
        w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (keep("tokenizer.ggml.model")) w.add_string("tokenizer.ggml.model", "llama");
    if (keep("tokenizer.ggml.tokens"))
        w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "b", "c", "d", "e"});
    if (keep("tokenizer.ggml.scores"))
        w.add_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -2, -3, -4, -5});
    if (keep("tokenizer.ggml.token_type"))
        w.add_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1, 1, 1});
    u32("tokenizer.ggml.bos_token_id", 1);
    u32("tokenizer.ggml.eos_token_id", 2);

    w.add_f32_tensor("token_embd.weight", {16, 8});
    for (int l = 0; l < 2; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        w.add_f32_tensor(p + "attn_norm.weight", {16});
        w.add_f32_tensor(p + "attn_q.weight", {16, 16});
        w.add_f32_tensor(p + "attn_k.weight", {16, 8});
        w.add_f32_tensor(p + "attn_v.weight", {16, 8});
        w.add_f32_tensor(p + "attn_output.weight", {16, 16});
        w.add_f32_tensor(p + "ffn_norm.weight", {16});
        w.add_f32_tensor(p + "ffn_gate.weight", {16, 32});
        w.add_f32_tensor(p + "ffn_up.weight", {16, 32});
        w.add_f32_tensor(p + "ffn_down.weight", {32, 16});
    }
    w.add_f32_tensor("output_norm.weight", {16});
    w.add_f32_tensor("output.weight", {16, 8});
    return w;
}

}  // namespace pagoda::test
