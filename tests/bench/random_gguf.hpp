// Random-weight Llama, Qwen3 and Qwen3-MoE models for benchmarks: a named shape, written as a
// GGUF v3 file that Pagoda's loader accepts (<arch>.* keys, llama.cpp tensor names, no
// vocabulary), into a temporary file that goes away with its owner. Throughput does not depend
// on the weights' values, so a model of the right shape measures what a trained one of that
// shape would (a mixture of experts' routing aside: decode_weights.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "pagoda/dtype.h"

namespace pagoda::bench {

// A Llama-family shape; kv_heads below heads is grouped-query attention (K and V projections of
// kv_heads · head_dim rows). Embeddings are tied (no output.weight), as in llama2.c's stories
// models and Llama-3.2-1B.
struct RandomModelShape {
    std::string name;
    int64_t hidden = 0;
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t ffn = 0;  // the dense MLP's width (a qwen3moe file states it too, unused)
    int64_t vocab = 0;
    int64_t context = 0;
    // "llama"; "qwen3" adds per-head RMSNorms of Q and K (attn_q_norm, attn_k_norm); "qwen3moe"
    // has those and, in every layer, a mixture of experts in place of the dense MLP: a router
    // (ffn_gate_inp) and the experts' projections stacked [experts, rows, cols]
    // (ffn_{gate,up,down}_exps), as llama.cpp converts Qwen3-30B-A3B.
    std::string architecture = "llama";
    int64_t experts = 0;            // qwen3moe: experts per layer
    int64_t experts_per_token = 0;  // and the top k each token is routed to
    int64_t expert_ffn = 0;         // each expert's MLP width
};

// "110m": Karpathy's stories110M (hidden 768, 12 layers, 12 heads, FFN 2048, vocab 32000,
// context 1024). "tiny": hidden 64, 2 layers, 4 heads, FFN 128, vocab 256, context 512.
// "serve": hidden 256, 4 layers, 4 heads, FFN 768, vocab 1024, context 2048 (pagoda-bench-serve:
// decodes thousands of tokens/s on two cores, while long contexts make the KV cache the limit).
// "serve-large": hidden 768, 8 layers, 12 heads, FFN 2048, vocab 2048, context 2048 (~60M
// parameters, 240 MB in F32: more than a CPU's caches, so decode is bandwidth-bound at batch 1
// and batching pays, as on a GPU).
// "1b": Llama-3.2-1B (hidden 2048, 16 layers, 32 query heads sharing 8 KV heads, FFN 8192,
// vocab 128256, tied embeddings; context 4096 here rather than its 128K, which only the KV
// cache's size would notice): 1.24B parameters, 2.5 GB in BF16, the GPU decode benchmark's model.
// "moe32": Qwen3-MoE-shaped (hidden 2048, 8 layers, 16 query heads sharing 4 KV heads of 128,
// 32 experts of width 1024 per layer, top-4, vocab 8192, context 1024): 1.71B parameters of
// which 0.30B are active per token; 3.4 GB in BF16, 0.6 GB active, both more than a CPU's
// last-level cache (480 MiB on the VM it was sized on), so that no model of the comparison
// decodes from the cache. "moe32-dense-active": the same as Qwen3 with a dense MLP of the
// active width (4 · 1024), the same bytes per token at batch 1. "moe32-dense-total": dense of
// the total width (32 · 1024), every expert's bytes. "moe-tiny" (8 experts of 32, top-2,
// hidden 64, 2 layers) and "moe-tiny-dense-active": a smoke test's pair.
// Throws std::invalid_argument naming the spec and the known ones for anything else.
RandomModelShape random_model_shape(const std::string &spec);

// Writes `shape` to `path` as GGUF v3 with weights of `dtype` (F32, F16 or BF16): matrices
// uniform in ±1/sqrt(fan_in) from a PRNG seeded with `seed`, RMSNorm gains 1. Throws
// std::runtime_error naming the path on an I/O failure, std::invalid_argument for another dtype.
void write_random_gguf(const std::string &path, const RandomModelShape &shape,
                       pagoda_dtype_t dtype, uint64_t seed);

// A fresh empty file "<dir>/pagoda-bench-XXXXXX.gguf" in $TMPDIR (or /tmp), removed when the
// object goes (or earlier through remove(), e.g. once the file is mapped).
class TempGgufFile {
public:
    TempGgufFile();
    ~TempGgufFile() { remove(); }
    TempGgufFile(const TempGgufFile &) = delete;
    TempGgufFile &operator=(const TempGgufFile &) = delete;

    const std::string &path() const { return path_; }
    void remove();

private:
    std::string path_;
    bool exists_ = false;
};

}  // namespace pagoda::bench
