// Random-weight Llama models for benchmarks: a named shape, written as a GGUF v3 file that
// Pagoda's loader accepts (llama.* keys, llama.cpp tensor names, no vocabulary), into a
// temporary file that goes away with its owner. Throughput does not depend on the weights'
// values, so a model of the right shape measures what a trained one of that shape would.
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
    int64_t ffn = 0;
    int64_t vocab = 0;
    int64_t context = 0;
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
