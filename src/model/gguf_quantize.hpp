// `pagoda quantize`: a GGUF file's weight matrices rewritten in a quantized type, the rest of the
// file (metadata, vocabulary, norms) carried over as it is. Which tensor gets which type follows
// llama.cpp's recipes, so the files match what people download: Q6_K for the output matrix, and
// for the _M mixes Q6_K for attn_v and ffn_down in the layers llama.cpp gives more bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// The type `mix` gives the GGUF tensor `name` with `dims` (innermost first), in a model of
// `n_layers` layers that has (or not) a separate output matrix; `source` when it stays as is.
TensorType quant_type_for(QuantMix mix, const std::string &name, const std::vector<uint64_t> &dims,
                          TensorType source, int64_t n_layers, bool has_output);

// Writes `output_path` from the GGUF at `input_path` (F32/F16/BF16 weights), with `threads`
// threads (0: one per core). The output appears whole or not at all (written beside it, then
// renamed). Throws Error: the reader's errors naming the input, UNSUPPORTED for weights already
// quantized, IO naming the output, CANCELLED when `progress` (called with the fraction done and
// the tensor at hand) returns false.
QuantizeSummary quantize_gguf(const std::string &input_path, const std::string &output_path,
                              QuantMix mix, int threads, const ProgressFn &progress);

}  // namespace pagoda::model
