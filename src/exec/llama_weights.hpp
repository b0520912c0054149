// The weights of a Llama-family model where one device's kernels can read them: the mapped file
// itself when the device runs kernels on host memory, device copies otherwise. Checks at
// placement that the backend can run every op the forward pass gives each weight.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "pagoda/dtype.h"
#include "runtime/device.hpp"

namespace pagoda::exec {

// One tensor as kernels see it. `rows` and `cols` are the [out, in] shape of a matrix; a vector
// (norm weight, bias) has rows = 1.
struct DeviceTensor {
    const void *data = nullptr;  // NULL: absent (an optional bias)
    pagoda_dtype_t dtype = PAGODA_DTYPE_F32;
    int64_t rows = 0;
    int64_t cols = 0;
    const std::string *name = nullptr;  // the canonical name, for messages

    explicit operator bool() const noexcept { return data != nullptr; }
};

struct LlamaLayerWeights {
    DeviceTensor input_norm, q, k, v, q_bias, k_bias, v_bias, o;
    DeviceTensor post_attention_norm, gate, up, down;
};

class LlamaWeights {
public:
    // Places every weight of `model` for `stream`'s device (uploads on `stream`, then waits).
    // Throws UNSUPPORTED naming the tensor, op and dtype when the backend refuses an op.
    LlamaWeights(const model::Model &model, const runtime::Stream &stream);
    LlamaWeights(const LlamaWeights &) = delete;
    LlamaWeights &operator=(const LlamaWeights &) = delete;

    const DeviceTensor &embed_tokens() const noexcept { return embed_tokens_; }
    const std::vector<LlamaLayerWeights> &layers() const noexcept { return layers_; }
    const DeviceTensor &final_norm() const noexcept { return final_norm_; }
    // model.embed_tokens.weight itself when the model ties its LM head to the embeddings.
    const DeviceTensor &lm_head() const noexcept { return lm_head_; }
    // RoPE frequency divisors (GGUF rope_freqs.weight); absent (false) for most models.
    const DeviceTensor &rope_freqs() const noexcept { return rope_freqs_; }

private:
    DeviceTensor place(const model::TensorRef &t);
    DeviceTensor place(const std::string &name);
    DeviceTensor f32_bias(const DeviceTensor &bias);
    void check_ops() const;

    const model::Model &model_;
    const runtime::Stream &stream_;
    // Device copies of weights (none when kernels read the mapped file) and widened biases.
    std::vector<runtime::DeviceBuffer> uploads_;
    runtime::DeviceBuffer zero_id_;  // the id EMBEDDING looks up when widening a bias
    DeviceTensor embed_tokens_, final_norm_, lm_head_, rope_freqs_;
    std::vector<LlamaLayerWeights> layers_;
};

// pagoda_dtype_t of a float tensor type; throws UNSUPPORTED naming the tensor otherwise.
pagoda_dtype_t weight_dtype(const model::TensorRef &t);

// Asks the backend whether `device` runs `op` as `args` describes (pointers may be NULL). Throws
// UNSUPPORTED "<device> cannot run <op> for <what>: <backend's reason>" when it says no, and
// INTERNAL when it calls the descriptor itself invalid (a bug in the caller).
void require_support(const runtime::Device &device, pagoda_op_t op, const void *args,
                     const std::string &what);

}  // namespace pagoda::exec
