#include "exec/llama_weights.hpp"

#include "common/error.hpp"
#include "model/llama_tensors.hpp"
#include "names.hpp"
#include "pagoda/ops.h"

namespace pagoda::exec {

pagoda_dtype_t weight_dtype(const model::TensorRef &t) {
    switch (t.type) {
    case model::TensorType::F32:
        return PAGODA_DTYPE_F32;
    case model::TensorType::F16:
        return PAGODA_DTYPE_F16;
    case model::TensorType::BF16:
        return PAGODA_DTYPE_BF16;
    default:
        break;
    }
    throw Error(PAGODA_ERR_UNSUPPORTED, t.file + ": tensor '" + t.name + "' has type " +
                                            model::tensor_type_name(t.type) +
                                            "; the forward pass takes F32, F16 or BF16 weights");
}

void require_support(const runtime::Device &device, pagoda_op_t op, const void *args,
                     const std::string &what) {
    const pagoda_backend_iface_t &f = device.iface();
    clear_last_error();
    const pagoda_status_t s = f.kernels->supports(f.self, device.index(), op, args);
    if (s == PAGODA_OK) return;
    const std::string reason = last_error()[0] != '\0' ? last_error() : "no reason given";
    if (s == PAGODA_ERR_UNSUPPORTED)
        throw Error(PAGODA_ERR_UNSUPPORTED, device.name() + " cannot run " + pagoda_op_name(op) +
                                                " for " + what + ": " + reason);
    throw Error(PAGODA_ERR_INTERNAL, device.name() + " rejects the " + pagoda_op_name(op) +
                                         " descriptor for " + what + " (" +
                                         pagoda_status_string(s) + "): " + reason);
}

namespace {

std::string describe(const DeviceTensor &t) {
    return "'" + *t.name + "' (" + plugin::dtype_name(t.dtype) + ")";
}

void check_matmul(const runtime::Device &device, const DeviceTensor &w, const DeviceTensor *bias) {
    pagoda_op_matmul_t m{};
    m.struct_size = sizeof m;
    m.x_dtype = PAGODA_DTYPE_F32;
    m.w_dtype = w.dtype;
    m.y_dtype = PAGODA_DTYPE_F32;
    m.m = 1;
    m.n = w.rows;
    m.k = w.cols;
    require_support(device, PAGODA_OP_MATMUL, &m, describe(w));
    if (bias != nullptr && *bias) {
        // Biases are F32 by now (f32_bias). A descriptor with a bias pointer: supports() looks
        // at flags and types, and a backend may decide on the bias's presence.
        m.bias = bias->data;
        require_support(device, PAGODA_OP_MATMUL, &m,
                        describe(w) + " with bias " + describe(*bias));
    }
}

void check_rmsnorm(const runtime::Device &device, const DeviceTensor &w) {
    pagoda_op_rmsnorm_t r{};
    r.struct_size = sizeof r;
    r.weight_dtype = w.dtype;
    r.rows = 1;
    r.dim = w.cols;
    r.eps = 1e-5f;
    require_support(device, PAGODA_OP_RMSNORM, &r, describe(w));
}

}  // namespace

LlamaWeights::LlamaWeights(const model::Model &model, const runtime::Stream &stream)
    : model_(model), stream_(stream) {
    const model::ModelConfig &c = model.config();
    embed_tokens_ = place("model.embed_tokens.weight");
    layers_.resize(size_t(c.n_layers));
    for (int64_t i = 0; i < c.n_layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        LlamaLayerWeights &l = layers_[size_t(i)];
        l.input_norm = place(p + "input_layernorm.weight");
        l.q = place(p + "self_attn.q_proj.weight");
        l.k = place(p + "self_attn.k_proj.weight");
        l.v = place(p + "self_attn.v_proj.weight");
        if (c.attention_bias) {
            l.q_bias = f32_bias(place(p + "self_attn.q_proj.bias"));
            l.k_bias = f32_bias(place(p + "self_attn.k_proj.bias"));
            l.v_bias = f32_bias(place(p + "self_attn.v_proj.bias"));
        }
        l.o = place(p + "self_attn.o_proj.weight");
        l.post_attention_norm = place(p + "post_attention_layernorm.weight");
        l.gate = place(p + "mlp.gate_proj.weight");
        l.up = place(p + "mlp.up_proj.weight");
        l.down = place(p + "mlp.down_proj.weight");
    }
    final_norm_ = place("model.norm.weight");
    lm_head_ = c.tie_word_embeddings ? embed_tokens_ : place("lm_head.weight");
    if (const model::TensorRef *f = model.tensors().find(model::kRopeFreqsTensor)) rope_freqs_ = place(*f);
    check_ops();
    // Uploads read the mapped file asynchronously; waiting here surfaces their failures now.
    stream_.synchronize();
}

DeviceTensor LlamaWeights::place(const std::string &name) {
    return place(model_.tensors().require(name, model_.source()));
}

DeviceTensor LlamaWeights::place(const model::TensorRef &t) {
    DeviceTensor d;
    d.dtype = weight_dtype(t);
    d.rows = t.shape.size() >= 2 ? t.shape[0] : 1;
    d.cols = t.shape.empty() ? 1 : t.shape.back();
    d.name = &t.name;
    const runtime::Device &device = stream_.device();
    if (device.uses_host_weights()) {
        d.data = t.data;
        return d;
    }
    runtime::DeviceBuffer buffer(device, size_t(t.bytes), "weight '" + t.name + "'");
    stream_.copy(buffer.get(), t.data, size_t(t.bytes), PAGODA_COPY_HOST_TO_DEVICE);
    d.data = buffer.get();
    uploads_.push_back(std::move(buffer));
    return d;
}

// Matmul adds its bias in y's type, F32; an F16 or BF16 bias (as Hugging Face Qwen2 checkpoints
// store them) is widened on the device by EMBEDDING, which converts a table row to f32: the
// bias is a one-row table and row 0 is looked up.
DeviceTensor LlamaWeights::f32_bias(const DeviceTensor &bias) {
    if (bias.dtype == PAGODA_DTYPE_F32) return bias;
    const runtime::Device &device = stream_.device();
    pagoda_op_embedding_t e{};
    e.struct_size = sizeof e;
    e.table_dtype = bias.dtype;
    e.vocab_size = 1;
    e.dim = bias.cols;
    e.n_tokens = 1;
    require_support(device, PAGODA_OP_EMBEDDING, &e, "widening bias " + describe(bias) + " to f32");
    if (!zero_id_.get()) {
        static const int32_t kZero = 0;
        zero_id_ = runtime::DeviceBuffer(device, sizeof kZero, "a zero token id");
        stream_.copy(zero_id_.get(), &kZero, sizeof kZero, PAGODA_COPY_HOST_TO_DEVICE);
    }
    runtime::DeviceBuffer widened(device, size_t(bias.cols) * sizeof(float),
                                  "bias '" + *bias.name + "' in f32");
    e.table = bias.data;
    e.ids = static_cast<const int32_t *>(zero_id_.get());
    e.out = widened.get();
    stream_.launch(PAGODA_OP_EMBEDDING, &e);
    DeviceTensor out = bias;
    out.dtype = PAGODA_DTYPE_F32;
    out.data = widened.get();
    uploads_.push_back(std::move(widened));
    return out;
}

void LlamaWeights::check_ops() const {
    const runtime::Device &device = stream_.device();
    const model::ModelConfig &c = model_.config();

    pagoda_op_embedding_t e{};
    e.struct_size = sizeof e;
    e.table_dtype = embed_tokens_.dtype;
    e.vocab_size = embed_tokens_.rows;
    e.dim = embed_tokens_.cols;
    e.n_tokens = 1;
    require_support(device, PAGODA_OP_EMBEDDING, &e, describe(embed_tokens_));
    // The same op gathers the rows that need logits out of the f32 hidden states.
    e.table_dtype = PAGODA_DTYPE_F32;
    require_support(device, PAGODA_OP_EMBEDDING, &e, "gathering f32 hidden states");

    for (const LlamaLayerWeights &l : layers_) {
        check_rmsnorm(device, l.input_norm);
        check_matmul(device, l.q, &l.q_bias);
        check_matmul(device, l.k, &l.k_bias);
        check_matmul(device, l.v, &l.v_bias);
        check_matmul(device, l.o, nullptr);
        check_rmsnorm(device, l.post_attention_norm);
        check_matmul(device, l.gate, nullptr);
        check_matmul(device, l.up, nullptr);
        check_matmul(device, l.down, nullptr);
    }
    check_rmsnorm(device, final_norm_);
    check_matmul(device, lm_head_, nullptr);

    pagoda_op_rope_t r{};
    r.struct_size = sizeof r;
    r.layout = c.rope.layout;
    r.scaling = c.rope.scaling;
    r.n_tokens = 1;
    r.n_heads = c.n_heads;
    r.head_dim = c.head_dim;
    r.theta = float(c.rope.theta);
    r.factor = float(c.rope.factor);
    r.low_freq_factor = float(c.rope.low_freq_factor);
    r.high_freq_factor = float(c.rope.high_freq_factor);
    r.original_max_position = c.rope.original_max_position;
    require_support(device, PAGODA_OP_ROPE, &r, "the model's rotary embedding");

    pagoda_op_silu_mul_t s{};
    s.struct_size = sizeof s;
    s.rows = 1;
    s.dim = c.intermediate_size;
    require_support(device, PAGODA_OP_SILU_MUL, &s, "the MLP's activation");
}

}  // namespace pagoda::exec
