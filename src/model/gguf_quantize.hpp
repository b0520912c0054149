// `pagoda quantize`: a model's weight matrices written in a quantized type to a GGUF file, the rest
// (metadata, vocabulary, norms) carried over as it is. The source is a GGUF file (F32/F16/BF16) or,
// through hf_to_gguf.hpp, a Hugging Face folder converted on the way. Which tensor gets which type follows
// llama.cpp's recipes, so the files match what people download: Q6_K for the output matrix, and
// for the _M mixes Q6_K for attn_v and ffn_down in the layers llama.cpp gives more bits.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "model/gguf_writer.hpp"
#include "model/model.hpp"
#include "model/tensor_table.hpp"

namespace pagoda::model {

enum class QuantMix { Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K };

// What one tensor type received.
struct QuantizedTypeStats {
    TensorType type = TensorType::F32;
    int64_t tensors = 0;
    uint64_t values = 0;
    double squared_error = 0;  // of the values as written against the source's
    double squared_values = 0;  // of the source's values
};

struct QuantizeSummary {
    uint64_t input_bytes = 0, output_bytes = 0;
    int64_t tensors_kept = 0;  // copied as they were (norms, biases, rows no block fits)
    std::vector<QuantizedTypeStats> types;  // one per type written, in TensorType order
};

// `n` values of float type `t` (F32, F16 or BF16) at `src` (any alignment) as f32 into `dst`;
// Error(INTERNAL) for another type.
void widen_row(TensorType t, const unsigned char *src, uint64_t n, float *dst);

// The type `mix` gives the GGUF tensor `name` with `dims` (innermost first), in a model of
// `n_layers` layers that has (or not) a separate output matrix; `source` when it stays as is.
TensorType quant_type_for(QuantMix mix, const std::string &name, const std::vector<uint64_t> &dims,
                          TensorType source, int64_t n_layers, bool has_output);

// One tensor to write, as GGUF names and lays it out, its values in a float type.
struct SourceTensor {
    std::string name;                 // GGUF name: "blk.0.attn_q.weight"
    TensorType type = TensorType::F32;  // F32, F16 or BF16
    std::vector<uint64_t> dims;       // innermost first
    const unsigned char *data = nullptr;
    uint64_t bytes = 0;
    // Empty: rows as stored. Else row r of the output is row row_order[r] of `data` (llama.cpp's
    // Q/K permutation for interleaved RoPE, applied as the rows are written).
    std::vector<uint32_t> row_order;
    // Empty: the rows are at `data`. Else the tensor is these matrices stacked in order, each
    // bytes / parts.size() bytes (a mixture's experts, one tensor each in a Hugging Face folder).
    std::vector<const unsigned char *> parts;
};

// What a quantized file is made from: its metadata (general.file_type and
// general.quantization_version are set by the writer) and its tensors, in file order.
struct QuantizeSource {
    std::string path;                // for messages
    GgufMetadata metadata;
    std::vector<SourceTensor> tensors;
    int64_t n_layers = 0;
    uint64_t alignment = 32;
    std::shared_ptr<const void> backing;             // the mapped files `data` points into
    std::deque<std::vector<unsigned char>> converted;  // tensors made on the way (F32 norms, ...)
};

// The GGUF at `path` as a source. Throws Error: the reader's errors naming the file,
// UNSUPPORTED for weights already quantized (naming the tensor).
QuantizeSource gguf_quantize_source(const std::string &path);

// Writes `output_path` from `source` with `threads` threads (0: one per core). The output appears
// whole or not at all (written beside it, then renamed). Throws Error: IO naming the output,
// CANCELLED when `progress` (called with the fraction done and the tensor at hand) returns false.
QuantizeSummary quantize_to_gguf(const QuantizeSource &source, const std::string &output_path,
                                 QuantMix mix, int threads, const ProgressFn &progress);

// quantize_to_gguf(gguf_quantize_source(input_path), ...).
QuantizeSummary quantize_gguf(const std::string &input_path, const std::string &output_path,
                              QuantMix mix, int threads, const ProgressFn &progress);

}  // namespace pagoda::model
