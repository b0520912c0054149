// The weights of a Llama-family model, or of one device's shard of it (model_shard.hpp), where
// that device's kernels can read them: the mapped file itself when the device runs kernels on
// host memory (a shard then points into it: row slices are contiguous, column slices strided),
// device copies of just the shard otherwise, from one arena (each slice once). Block-quantized
// weights stay quantized where the backend's kernels decode them and the shard cuts no block;
// otherwise they are widened to F32.
// Checks at placement that the backend can run every op the forward pass gives each weight.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "exec/model_shard.hpp"
#include "model/model.hpp"
#include "model/page_residency.hpp"
#include "pagoda/dtype.h"
#include "pagoda/ops.h"
#include "runtime/device.hpp"
#include "runtime/device_arena.hpp"

namespace pagoda::exec {

// One tensor as kernels see it. `rows` and `cols` are the [out, in] shape of a matrix; a vector
// (norm weight, bias) has rows = 1.
struct DeviceTensor {
    const void *data = nullptr;  // NULL: absent (an optional bias)
    pagoda_dtype_t dtype = PAGODA_DTYPE_F32;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t ld = 0;  // values between rows; 0 = cols (a column slice keeps the full row's)
    const std::string *name = nullptr;  // the canonical name, for messages
    // A block-quantized matrix whose backend takes PAGODA_MATMUL_QUANTIZE_X (ABI 1.4), with
    // PAGODA_MATMUL_QUANTIZE_X_BLOCK where its blocks are longer than 32 values (ABI 1.9), and
    // PAGODA_MATMUL_ROUND_W with half activations (ABI 1.5).
    bool quantize_x = false;
    bool quantize_x_block = false;
    bool round_w = false;

    uint64_t bytes() const noexcept;

    explicit operator bool() const noexcept { return data != nullptr; }
};

struct LlamaLayerWeights {
    DeviceTensor input_norm, q, k, v, q_bias, k_bias, v_bias, q_norm, k_norm, o;
    // Gemma only: the attention's output is normalised before the residual add.
    DeviceTensor attn_out_norm;
    // The MLP's input norm (Llama's post_attention_layernorm, Gemma's pre_feedforward_layernorm).
    DeviceTensor mlp_norm, gate, up, down;
    DeviceTensor mlp_out_norm;  // Gemma only, as attn_out_norm
    // A mixture-of-experts layer (ModelConfig::is_sparse): the router, and per projection the
    // device's share of each expert and a device array of their addresses (MOE_MATMUL's
    // `experts`).
    DeviceTensor router;
    std::vector<DeviceTensor> expert_gate, expert_up, expert_down;
    const void *const *expert_gate_ptrs = nullptr, *const *expert_up_ptrs = nullptr,
                      *const *expert_down_ptrs = nullptr;
};

class LlamaWeights {
public:
    // Places `shard` of `model` for `stream`'s device (uploads on `stream`, then waits). Throws
    // UNSUPPORTED naming the tensor, op and dtype when the backend refuses an op.
    LlamaWeights(const model::Model &model, const runtime::Stream &stream, const ModelShard &shard);
    LlamaWeights(const LlamaWeights &) = delete;
    LlamaWeights &operator=(const LlamaWeights &) = delete;

    const DeviceTensor &embed_tokens() const noexcept { return embed_tokens_; }
    // One entry per model layer; only the shard's layers are placed.
    const std::vector<LlamaLayerWeights> &layers() const noexcept { return layers_; }
    const LlamaLayerWeights &first_layer() const { return layers_.at(size_t(shard_.first_layer)); }
    // The first layer's MLP gate (its first expert's in a mixture of experts).
    const DeviceTensor &first_mlp_weight() const {
        const LlamaLayerWeights &l = first_layer();
        return l.router ? l.expert_gate.front() : l.gate;
    }
    const DeviceTensor &final_norm() const noexcept { return final_norm_; }
    // model.embed_tokens.weight itself when the model ties its LM head to the embeddings.
    const DeviceTensor &lm_head() const noexcept { return lm_head_; }
    // RoPE frequency divisors (GGUF rope_freqs.weight, or LongRoPE's factors); absent (false)
    // for most models.
    const DeviceTensor &rope_freqs() const noexcept { return rope_freqs_; }
    // Bytes of the weights this device holds: its shard, counted once.
    uint64_t bytes() const noexcept { return bytes_; }
    // Of those, the decoder layers' (no embedding, final norm or LM head).
    uint64_t layer_bytes() const noexcept { return layer_bytes_; }
    // The bytes of the model's mapping that the kernels read in place (on a device that uses
    // host weights; a copied shard reads none).
    const std::vector<model::ByteRange> &host_ranges() const noexcept { return host_ranges_; }
    // Of those, the experts' (those of this device's expert-parallel group).
    uint64_t expert_bytes() const noexcept { return expert_bytes_; }

private:
    // What the forward pass does with a weight: which op must decode a block-quantized one.
    enum class WeightUse { Matmul, Table, Vector };

    // Rows [row_begin, row_begin + rows) and columns [col_begin, col_begin + cols) of a tensor
    // (a vector counts as one row); rows or cols −1 = all.
    DeviceTensor place(const model::TensorRef &t, int64_t row_begin = 0, int64_t rows = -1,
                       int64_t col_begin = 0, int64_t cols = -1, WeightUse use = WeightUse::Matmul);
    DeviceTensor place(const std::string &name, int64_t row_begin = 0, int64_t rows = -1,
                       int64_t col_begin = 0, int64_t cols = -1, WeightUse use = WeightUse::Matmul);
    // Whether a block-quantized slice `d` starting at column `col_begin` goes to the kernels as
    // it is: its columns are whole blocks and the backend runs `use`'s op on the type.
    bool keeps_blocks(const DeviceTensor &d, int64_t col_begin, WeightUse use) const;
    DeviceTensor widened(const model::TensorRef &t, DeviceTensor d, int64_t row_begin, int64_t col_begin);
    // An RMSNorm weight as the op applies it: the stored one, or (config.norm_weight_offset,
    // Gemma's 1 + w) an F32 copy with the offset added.
    DeviceTensor norm_weight(const std::string &name);
    // `values` as an F32 vector on the device (`what` names it in messages).
    DeviceTensor upload_f32(const std::vector<float> &values, const std::string &what);
    // Layer `layer`'s router and experts (the shard's columns of each), from per-expert tensors
    // or stacked ones.
    void place_experts(int64_t layer, LlamaLayerWeights &l);
    // A device array of the addresses of `tensors`' data.
    const void *const *address_array(const std::vector<DeviceTensor> &tensors, const std::string &what);
    DeviceTensor f32_bias(const DeviceTensor &bias);
    // `bytes` of the device's memory from the weights' arena (made on first use).
    void *device_memory(size_t bytes, const std::string &what);
    void check_ops() const;

    // A slice of a tensor, by its first byte in the mapping and its shape, and where it went.
    using SliceKey = std::tuple<const void *, int64_t, int64_t>;
    struct Placement {
        const void *data;
        int64_t ld;
    };

    const model::Model &model_;
    const runtime::Stream &stream_;
    ModelShard shard_;
    uint64_t bytes_ = 0;
    uint64_t layer_bytes_ = 0;
    uint64_t expert_bytes_ = 0;
    std::vector<model::ByteRange> host_ranges_;
    std::map<SliceKey, Placement> placed_;
    // Device copies of weights (none when kernels read the mapped file), widened biases and
    // widened block-quantized weights.
    std::unique_ptr<runtime::DeviceArena> arena_;
    runtime::DeviceBuffer zero_id_;  // the id EMBEDDING looks up when widening a bias
    DeviceTensor embed_tokens_, final_norm_, lm_head_, rope_freqs_;
    std::vector<LlamaLayerWeights> layers_;
};

// pagoda_dtype_t of a weight's tensor type (float or block-quantized); throws UNSUPPORTED naming
// the tensor for an integer type.
pagoda_dtype_t weight_dtype(const model::TensorRef &t);

// Support queries (pointers NULL): a one-row product with W = `w` on `act` activations, and
// looking one row up in `table`.
pagoda_op_matmul_t matmul_query(const DeviceTensor &w, pagoda_dtype_t act);
pagoda_op_embedding_t lookup_query(const DeviceTensor &table);
// A one-token MOE_MATMUL over `shard`'s experts shaped as `w`, per token, without weights.
pagoda_op_moe_matmul_t moe_matmul_query(const DeviceTensor &w, const model::ModelConfig &c, const ModelShard &shard,
                                        pagoda_dtype_t act);

// Whether `device`'s backend runs `op` as `args` describes; a refusal leaves no error message.
bool backend_supports(const runtime::Device &device, pagoda_op_t op, const void *args);

// Asks the backend whether `device` runs `op` as `args` describes (pointers may be NULL). Throws
// UNSUPPORTED "<device> cannot run <op> for <what>: <backend's reason>" when it says no, and
// INTERNAL when it calls the descriptor itself invalid (a bug in the caller).
void require_support(const runtime::Device &device, pagoda_op_t op, const void *args,
                     const std::string &what);

}  // namespace pagoda::exec
