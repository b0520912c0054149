#include "exec/llama_weights.hpp"

#include <algorithm>

#include "formats/block_formats.hpp"
#include "common/error.hpp"
#include "model/gguf_quantize.hpp"
#include "model/quant_blocks.hpp"
#include "model/llama_tensors.hpp"
#include "formats/names.hpp"
#include "pagoda/ops.h"

namespace pagoda::exec {

pagoda_dtype_t weight_dtype(const model::TensorRef &t) {
    const pagoda_dtype_t d = model::dtype_of(t.type);
    if (d != PAGODA_DTYPE_I32 && d != PAGODA_DTYPE_I64) return d;
    throw Error(PAGODA_ERR_UNSUPPORTED, t.file + ": tensor '" + t.name + "' has type " +
                                            model::tensor_type_name(t.type) +
                                            ", which is not a weight type");
}

pagoda_op_matmul_t matmul_query(const DeviceTensor &w, pagoda_dtype_t act) {
    pagoda_op_matmul_t m{};
    m.struct_size = sizeof m;
    m.x_dtype = m.y_dtype = act;
    m.w_dtype = w.dtype;
    m.m = 1;
    m.n = w.rows;
    m.k = w.cols;
    m.ldw = w.ld;
    return m;
}

pagoda_op_embedding_t lookup_query(const DeviceTensor &table) {
    pagoda_op_embedding_t e{};
    e.struct_size = sizeof e;
    e.table_dtype = table.dtype;
    e.vocab_size = table.rows;
    e.dim = table.cols;
    e.n_tokens = 1;
    return e;
}

bool backend_supports(const runtime::Device &device, pagoda_op_t op, const void *args) {
    const pagoda_backend_iface_t &f = device.iface();
    const bool yes = f.kernels->supports(f.self, device.index(), op, args) == PAGODA_OK;
    clear_last_error();
    return yes;
}

void require_support(const runtime::Device &device, pagoda_op_t op, const void *args,
                     const std::string &what) {
    const pagoda_backend_iface_t &f = device.iface();
    clear_last_error();
    const pagoda_status_t s = f.kernels->supports(f.self, device.index(), op, args);
    if (s == PAGODA_OK) return;
    const std::string reason = last_error()[0] != '\0' ? last_error() : "no reason given";
    if (s == PAGODA_ERR_UNSUPPORTED)
        throw Error(PAGODA_ERR_UNSUPPORTED, device.name() + " cannot run " + formats::op_name(op) +
                                                " for " + what + ": " + reason);
    throw Error(PAGODA_ERR_INTERNAL, device.name() + " rejects the " + formats::op_name(op) +
                                         " descriptor for " + what + " (" +
                                         status_name(s) + "): " + reason);
}

namespace {

std::string describe(const DeviceTensor &t) {
    return "'" + *t.name + "' (" + formats::dtype_name(t.dtype) + ")";
}

void check_matmul(const runtime::Device &device, const DeviceTensor &w, const DeviceTensor *bias) {
    pagoda_op_matmul_t m = matmul_query(w, PAGODA_DTYPE_F32);
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

// A mixture-of-experts layer's ops: the router's product (logits in f32), the routing, and the
// three expert products (gate and up per token, down per slot and weighted).
void check_moe(const runtime::Device &device, const model::ModelConfig &c, const ModelShard &shard,
               const LlamaLayerWeights &l) {
    pagoda_op_matmul_t m = matmul_query(l.router, PAGODA_DTYPE_F32);
    require_support(device, PAGODA_OP_MATMUL, &m, describe(l.router));
    pagoda_op_moe_route_t r{};
    r.struct_size = sizeof r;
    r.n_tokens = 1;
    r.n_experts = c.n_experts;
    r.top_k = c.experts_per_token;
    r.routing = c.moe_routing;
    require_support(device, PAGODA_OP_MOE_ROUTE, &r, "the router of " + describe(l.router));
    for (const std::vector<DeviceTensor> *experts : {&l.expert_gate, &l.expert_up, &l.expert_down}) {
        const DeviceTensor &w = experts->front();
        pagoda_op_moe_matmul_t e = moe_matmul_query(w, c, shard, PAGODA_DTYPE_F32);
        if (experts == &l.expert_down) {
            e.x_per_slot = 1;
            static const float kWeight = 1.0f;
            e.weights = &kWeight;  // supports() looks at whether they are given
        }
        require_support(device, PAGODA_OP_MOE_MATMUL, &e, describe(w) + " and its fellow experts");
    }
}

}  // namespace

pagoda_op_moe_matmul_t moe_matmul_query(const DeviceTensor &w, const model::ModelConfig &c, const ModelShard &shard,
                                        pagoda_dtype_t act) {
    pagoda_op_moe_matmul_t e{};
    e.struct_size = sizeof e;
    e.x_dtype = e.y_dtype = act;
    e.w_dtype = w.dtype;
    e.n_tokens = 1;
    e.top_k = c.experts_per_token;
    e.n_experts = shard.n_local_experts(c);
    e.expert_offset = shard.expert_begin(c);
    e.n = w.rows;
    e.k = w.cols;
    e.ldw = w.ld;
    return e;
}

uint64_t DeviceTensor::bytes() const noexcept {
    return data == nullptr ? 0 : uint64_t(rows) * uint64_t(formats::row_bytes(dtype, cols));
}

LlamaWeights::LlamaWeights(const model::Model &model, const runtime::Stream &stream, const ModelShard &shard)
    : model_(model), stream_(stream), shard_(shard) {
    const model::ModelConfig &c = model.config();
    const int64_t hd = c.head_dim, q0 = shard.head_begin(c) * hd, nq = shard.n_heads(c) * hd;
    const int64_t kv0 = shard.kv_head_begin(c) * hd, nkv = shard.n_kv_heads(c) * hd;
    const int64_t i0 = shard.intermediate_begin(c), ni = shard.intermediate(c);
    const bool first = shard.first_stage(), last = shard.last_stage(c);
    if (first || (last && c.tie_word_embeddings))
        embed_tokens_ = place("model.embed_tokens.weight", 0, -1, 0, -1, WeightUse::Table);
    layers_.resize(size_t(c.n_layers));
    for (int64_t i = shard.first_layer; i < shard.end(c); ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        LlamaLayerWeights &l = layers_[size_t(i)];
        l.input_norm = norm_weight(p + "input_layernorm.weight");
        // Column-parallel: the shard's output rows of Q, K, V, gate and up.
        if (c.fused_projections) {  // Phi-3: the shard's rows of each part of [Q; K; V]
            const std::string qkv = p + "self_attn.qkv_proj.weight";
            const int64_t q_rows = c.n_heads * hd, kv_rows = c.n_kv_heads * hd;
            l.q = place(qkv, q0, nq);
            l.k = place(qkv, q_rows + kv0, nkv);
            l.v = place(qkv, q_rows + kv_rows + kv0, nkv);
        } else {
            l.q = place(p + "self_attn.q_proj.weight", q0, nq);
            l.k = place(p + "self_attn.k_proj.weight", kv0, nkv);
            l.v = place(p + "self_attn.v_proj.weight", kv0, nkv);
        }
        if (c.attention_bias) {
            l.q_bias = f32_bias(place(p + "self_attn.q_proj.bias", 0, -1, q0, nq, WeightUse::Vector));
            l.k_bias = f32_bias(place(p + "self_attn.k_proj.bias", 0, -1, kv0, nkv, WeightUse::Vector));
            l.v_bias = f32_bias(place(p + "self_attn.v_proj.bias", 0, -1, kv0, nkv, WeightUse::Vector));
        }
        if (c.qk_norm) {  // one weight per head dimension, shared by every head
            l.q_norm = norm_weight(p + "self_attn.q_norm.weight");
            l.k_norm = norm_weight(p + "self_attn.k_norm.weight");
        }
        // Row-parallel: the shard's input columns of O and down; their partial sums are
        // all-reduced.
        l.o = place(p + "self_attn.o_proj.weight", 0, -1, q0, nq);
        if (c.sandwich_norms) {
            l.attn_out_norm = norm_weight(p + "post_attention_layernorm.weight");
            l.mlp_norm = norm_weight(p + "pre_feedforward_layernorm.weight");
            l.mlp_out_norm = norm_weight(p + "post_feedforward_layernorm.weight");
        } else {
            l.mlp_norm = norm_weight(p + "post_attention_layernorm.weight");
        }
        if (c.is_sparse(i)) {
            place_experts(i, l);
        } else if (c.fused_projections) {  // [gate; up]
            l.gate = place(p + "mlp.gate_up_proj.weight", i0, ni);
            l.up = place(p + "mlp.gate_up_proj.weight", c.intermediate_size + i0, ni);
        } else {
            l.gate = place(p + "mlp.gate_proj.weight", i0, ni);
            l.up = place(p + "mlp.up_proj.weight", i0, ni);
        }
        if (!c.is_sparse(i)) l.down = place(p + "mlp.down_proj.weight", 0, -1, i0, ni);
    }
    layer_bytes_ = bytes_ - embed_tokens_.bytes();
    if (last) {
        final_norm_ = norm_weight("model.norm.weight");
        const int64_t v0 = shard.vocab_begin(c), nv = shard.vocab_rows(c);
        lm_head_ = c.tie_word_embeddings ? place("model.embed_tokens.weight", v0, nv) : place("lm_head.weight", v0, nv);
    }
    if (const model::TensorRef *f = model.tensors().find(model::kRopeFreqsTensor))
        rope_freqs_ = place(*f, 0, -1, 0, -1, WeightUse::Vector);
    else if (!c.longrope_divisors().empty())  // LongRoPE's, from the config
        rope_freqs_ = upload_f32(c.longrope_divisors(), "LongRoPE factors");
    check_ops();
    // Uploads read the mapped file asynchronously; waiting here surfaces their failures now.
    stream_.synchronize();
}

DeviceTensor LlamaWeights::place(const std::string &name, int64_t row_begin, int64_t rows, int64_t col_begin,
                                 int64_t cols, WeightUse use) {
    return place(model_.tensors().require(name, model_.source()), row_begin, rows, col_begin, cols, use);
}

DeviceTensor LlamaWeights::place(const model::TensorRef &t, int64_t row_begin, int64_t rows, int64_t col_begin,
                                 int64_t cols, WeightUse use) {
    DeviceTensor d;
    d.dtype = weight_dtype(t);
    // A stacked [experts, rows, cols] tensor is sliced as its experts·rows rows.
    int64_t all_rows = 1;
    for (size_t i = 0; i + 1 < t.shape.size(); ++i) all_rows *= t.shape[i];
    const int64_t all_cols = t.shape.empty() ? 1 : t.shape.back();
    d.rows = rows < 0 ? all_rows : rows;
    d.cols = cols < 0 ? all_cols : cols;
    if (row_begin < 0 || col_begin < 0 || row_begin + d.rows > all_rows || col_begin + d.cols > all_cols)
        throw Error(PAGODA_ERR_INTERNAL, "weight '" + t.name + "': slice out of its shape");
    d.name = &t.name;
    const bool column_slice = d.cols != all_cols;
    d.ld = column_slice ? all_cols : 0;
    // A block-quantized slice goes to the kernels as it is when its columns are whole blocks
    // and the backend decodes the type for this use; otherwise it is widened to F32 here.
    // A kept matrix is asked once whether its products may round x to 8 bits, and (with half
    // activations) W to x's type.
    if (formats::is_block_dtype(d.dtype)) {
        if (!keeps_blocks(d, col_begin, use)) return widened(t, d, row_begin, col_begin);
        if (use == WeightUse::Matmul) {
            pagoda_op_matmul_t m = matmul_query(d, PAGODA_DTYPE_F32);
            m.flags = PAGODA_MATMUL_QUANTIZE_X;
            d.quantize_x = backend_supports(stream_.device(), PAGODA_OP_MATMUL, &m);
            // Runs of a whole block only change anything for blocks longer than 32 values.
            m.flags |= PAGODA_MATMUL_QUANTIZE_X_BLOCK;
            d.quantize_x_block = d.quantize_x && formats::block_shape(d.dtype).elements > 32 &&
                                 backend_supports(stream_.device(), PAGODA_OP_MATMUL, &m);
            m = matmul_query(d, PAGODA_DTYPE_F16);
            m.flags = PAGODA_MATMUL_ROUND_W;
            const bool f16 = backend_supports(stream_.device(), PAGODA_OP_MATMUL, &m);
            m.x_dtype = m.y_dtype = PAGODA_DTYPE_BF16;
            d.round_w = f16 && backend_supports(stream_.device(), PAGODA_OP_MATMUL, &m);
        }
    }
    const int64_t full_row_bytes = formats::row_bytes(d.dtype, all_cols);
    const auto *start = static_cast<const unsigned char *>(t.data) + row_begin * full_row_bytes +
                        formats::row_bytes(d.dtype, col_begin);
    // A slice placed before (a tied LM head is the embedding table) is that placement again.
    const SliceKey key{start, d.rows, d.cols};
    if (auto earlier = placed_.find(key); earlier != placed_.end()) {
        d.data = earlier->second.data;
        d.ld = earlier->second.ld;
        return d;
    }
    const auto row_bytes = size_t(formats::row_bytes(d.dtype, d.cols));
    bytes_ += uint64_t(d.rows) * row_bytes;
    const runtime::Device &device = stream_.device();
    if (device.uses_host_weights()) {
        d.data = start;
        host_ranges_.push_back({start, start + size_t(d.rows - 1) * size_t(full_row_bytes) + row_bytes});
    } else {
        // Only the shard crosses to the device: a row slice in one copy, a column slice row by row.
        d.ld = 0;
        auto *copy = static_cast<unsigned char *>(device_memory(row_bytes * size_t(d.rows), "weight '" + t.name + "'"));
        if (!column_slice) {
            stream_.copy(copy, start, row_bytes * size_t(d.rows), PAGODA_COPY_HOST_TO_DEVICE);
        } else {
            for (int64_t r = 0; r < d.rows; ++r)
                stream_.copy(copy + size_t(r) * row_bytes, start + size_t(r) * size_t(full_row_bytes), row_bytes,
                             PAGODA_COPY_HOST_TO_DEVICE);
        }
        d.data = copy;
    }
    placed_.emplace(key, Placement{d.data, d.ld});
    return d;
}

void *LlamaWeights::device_memory(size_t bytes, const std::string &what) {
    if (!arena_) arena_ = std::make_unique<runtime::DeviceArena>(stream_.device());
    return arena_->allocate(bytes, what);
}

bool LlamaWeights::keeps_blocks(const DeviceTensor &d, int64_t col_begin, WeightUse use) const {
    const int64_t block = formats::block_shape(d.dtype).elements;
    if (col_begin % block != 0 || d.cols % block != 0 || use == WeightUse::Vector) return false;
    // A refusal only means widening: backend_supports leaves no error message behind.
    if (use == WeightUse::Matmul) {
        const pagoda_op_matmul_t m = matmul_query(d, PAGODA_DTYPE_F32);
        return backend_supports(stream_.device(), PAGODA_OP_MATMUL, &m);
    }
    const pagoda_op_embedding_t e = lookup_query(d);
    return backend_supports(stream_.device(), PAGODA_OP_EMBEDDING, &e);
}

// A block-quantized slice decoded to F32 on the host (the reference decoders), then placed as an
// F32 weight: for backends without kernels for the type, and for slices that cut blocks.
DeviceTensor LlamaWeights::widened(const model::TensorRef &t, DeviceTensor d, int64_t row_begin,
                                   int64_t col_begin) {
    const int64_t block = formats::block_shape(d.dtype).elements;
    const int64_t first_block = col_begin / block, end_block = (col_begin + d.cols + block - 1) / block;
    const int64_t full_row_bytes = formats::row_bytes(d.dtype, t.shape.back());
    std::vector<float> row(size_t((end_block - first_block) * block));
    std::vector<float> values(size_t(d.rows * d.cols));
    for (int64_t r = 0; r < d.rows; ++r) {
        const auto *src = static_cast<const unsigned char *>(t.data) + (row_begin + r) * full_row_bytes +
                          formats::row_bytes(d.dtype, first_block * block);
        formats::decode_blocks(d.dtype, src, end_block - first_block, row.data());
        std::copy_n(row.begin() + (col_begin - first_block * block), d.cols, values.begin() + r * d.cols);
    }
    const size_t bytes = values.size() * sizeof(float);
    void *copy = device_memory(bytes, "weight '" + t.name + "' widened to f32");
    stream_.copy(copy, values.data(), bytes, PAGODA_COPY_HOST_TO_DEVICE);
    stream_.synchronize();  // `values` goes when this returns
    d.dtype = PAGODA_DTYPE_F32;
    d.ld = 0;
    d.data = copy;
    bytes_ += bytes;
    return d;
}

DeviceTensor LlamaWeights::norm_weight(const std::string &name) {
    const double offset = model_.config().norm_weight_offset;
    if (offset == 0.0) return place(name, 0, -1, 0, -1, WeightUse::Vector);
    const model::TensorRef &t = model_.tensors().require(name, model_.source());
    std::vector<float> values(size_t(t.shape.empty() ? 1 : t.shape.back()));
    model::widen_row(t.type, static_cast<const unsigned char *>(t.data), values.size(), values.data());
    for (float &v : values) v = float(double(v) + offset);  // as transformers: 1 + w.float()
    DeviceTensor d = upload_f32(values, "norm weight '" + t.name + "' plus its offset");
    d.name = &t.name;
    return d;
}

void LlamaWeights::place_experts(int64_t layer, LlamaLayerWeights &l) {
    const model::ModelConfig &c = model_.config();
    const std::string p = "model.layers." + std::to_string(layer) + ".mlp.";
    const int64_t ei = c.expert_intermediate_size, i0 = shard_.expert_intermediate_begin(c),
                  ni = shard_.expert_intermediate(c), hidden = c.hidden_size;
    l.router = place(p + "gate.weight");  // every expert's logit, on every device
    const model::TensorRef *gate = model_.tensors().find(p + "experts.gate_proj.weight");
    const model::TensorRef *up = gate ? &model_.tensors().require(p + "experts.up_proj.weight", model_.source()) : nullptr;
    const model::TensorRef *down = gate ? &model_.tensors().require(p + "experts.down_proj.weight", model_.source()) : nullptr;
    const int64_t first = shard_.expert_begin(c);
    for (int64_t j = first; j < first + shard_.n_local_experts(c); ++j) {
        if (gate != nullptr) {  // stacked (GGUF): expert j's rows of each
            l.expert_gate.push_back(place(*gate, j * ei + i0, ni));
            l.expert_up.push_back(place(*up, j * ei + i0, ni));
            l.expert_down.push_back(place(*down, j * hidden, hidden, i0, ni));
        } else {
            const std::string x = p + "experts." + std::to_string(j) + ".";
            l.expert_gate.push_back(place(x + "gate_proj.weight", i0, ni));
            l.expert_up.push_back(place(x + "up_proj.weight", i0, ni));
            l.expert_down.push_back(place(x + "down_proj.weight", 0, -1, i0, ni));
        }
    }
    for (const auto *experts : {&l.expert_gate, &l.expert_up, &l.expert_down})
        for (const DeviceTensor &e : *experts) expert_bytes_ += e.bytes();
    const std::string what = "layer " + std::to_string(layer) + "'s experts' ";
    l.expert_gate_ptrs = address_array(l.expert_gate, what + "gate projections");
    l.expert_up_ptrs = address_array(l.expert_up, what + "up projections");
    l.expert_down_ptrs = address_array(l.expert_down, what + "down projections");
}

const void *const *LlamaWeights::address_array(const std::vector<DeviceTensor> &tensors, const std::string &what) {
    std::vector<const void *> addresses;
    for (const DeviceTensor &t : tensors) {
        // One MOE_MATMUL reads them all, with one type and row stride.
        if (t.dtype != tensors.front().dtype || t.ld != tensors.front().ld)
            throw Error(PAGODA_ERR_UNSUPPORTED, what + ": '" + *t.name + "' is " + formats::dtype_name(t.dtype) +
                                                    ", '" + *tensors.front().name + "' " +
                                                    formats::dtype_name(tensors.front().dtype) +
                                                    "; the experts of a projection must share a type");
        addresses.push_back(t.data);
    }
    const size_t bytes = addresses.size() * sizeof(void *);
    void *array = device_memory(bytes, what + " addresses");
    stream_.copy(array, addresses.data(), bytes, PAGODA_COPY_HOST_TO_DEVICE);
    stream_.synchronize();
    return static_cast<const void *const *>(array);
}

DeviceTensor LlamaWeights::upload_f32(const std::vector<float> &values, const std::string &what) {
    static const std::string kNoTensor = "(from the config)";
    DeviceTensor d;
    d.dtype = PAGODA_DTYPE_F32;
    d.rows = 1;
    d.cols = int64_t(values.size());
    d.name = &kNoTensor;
    const size_t bytes = values.size() * sizeof(float);
    void *copy = device_memory(bytes, what);
    stream_.copy(copy, values.data(), bytes, PAGODA_COPY_HOST_TO_DEVICE);
    stream_.synchronize();  // `values` may go when this returns
    d.data = copy;
    bytes_ += bytes;
    return d;
}

// Matmul adds its bias in y's type, F32; an F16 or BF16 bias (as Hugging Face Qwen2 checkpoints
// store them) is widened on the device by EMBEDDING, which converts a table row to f32: the
// bias is a one-row table and row 0 is looked up.
DeviceTensor LlamaWeights::f32_bias(const DeviceTensor &bias) {
    if (bias.dtype == PAGODA_DTYPE_F32) return bias;
    const runtime::Device &device = stream_.device();
    pagoda_op_embedding_t e = lookup_query(bias);  // a vector is one row
    require_support(device, PAGODA_OP_EMBEDDING, &e, "widening bias " + describe(bias) + " to f32");
    if (!zero_id_.get()) {
        static const int32_t kZero = 0;
        zero_id_ = runtime::DeviceBuffer(device, sizeof kZero, "a zero token id");
        stream_.copy(zero_id_.get(), &kZero, sizeof kZero, PAGODA_COPY_HOST_TO_DEVICE);
    }
    void *widened = device_memory(size_t(bias.cols) * sizeof(float), "bias '" + *bias.name + "' in f32");
    e.table = bias.data;
    e.ids = static_cast<const int32_t *>(zero_id_.get());
    e.out = widened;
    stream_.launch(PAGODA_OP_EMBEDDING, &e);
    DeviceTensor out = bias;
    out.dtype = PAGODA_DTYPE_F32;
    out.data = widened;
    return out;
}

void LlamaWeights::check_ops() const {
    const runtime::Device &device = stream_.device();
    const model::ModelConfig &c = model_.config();

    pagoda_op_embedding_t e = lookup_query(embed_tokens_);
    if (embed_tokens_) require_support(device, PAGODA_OP_EMBEDDING, &e, describe(embed_tokens_));
    // The same op gathers the rows that need logits out of the f32 hidden states.
    e.table_dtype = PAGODA_DTYPE_F32;
    e.vocab_size = 1;
    e.dim = c.hidden_size;
    require_support(device, PAGODA_OP_EMBEDDING, &e, "gathering f32 hidden states");

    for (int64_t i = shard_.first_layer; i < shard_.end(c); ++i) {
        const LlamaLayerWeights &l = layers_[size_t(i)];
        check_rmsnorm(device, l.input_norm);
        check_matmul(device, l.q, &l.q_bias);
        check_matmul(device, l.k, &l.k_bias);
        check_matmul(device, l.v, &l.v_bias);
        if (l.q_norm) {
            check_rmsnorm(device, l.q_norm);
            check_rmsnorm(device, l.k_norm);
        }
        check_matmul(device, l.o, nullptr);
        for (const DeviceTensor *norm : {&l.attn_out_norm, &l.mlp_norm, &l.mlp_out_norm})
            if (*norm) check_rmsnorm(device, *norm);
        if (l.router) {
            check_moe(device, c, shard_, l);
            continue;
        }
        check_matmul(device, l.gate, nullptr);
        check_matmul(device, l.up, nullptr);
        check_matmul(device, l.down, nullptr);
    }
    if (final_norm_) check_rmsnorm(device, final_norm_);
    if (lm_head_) check_matmul(device, lm_head_, nullptr);

    for (const model::RopeConfig *rope : {&c.rope, c.has_sliding_rope ? &c.sliding_rope : nullptr}) {
        if (rope == nullptr) continue;
        pagoda_op_rope_t r{};
        r.struct_size = sizeof r;
        r.layout = rope->layout;
        r.scaling = rope->scaling;
        r.n_tokens = 1;
        r.n_heads = shard_.n_heads(c);
        r.head_dim = c.head_dim;
        r.theta = float(rope->theta);
        r.factor = float(rope->factor);
        r.low_freq_factor = float(rope->low_freq_factor);
        r.high_freq_factor = float(rope->high_freq_factor);
        r.original_max_position = rope->original_max_position;
        require_support(device, PAGODA_OP_ROPE, &r, "the model's rotary embedding");
    }

    pagoda_op_silu_mul_t s{};
    s.struct_size = sizeof s;
    s.rows = 1;
    s.dim = shard_.intermediate(c);
    s.activation = c.mlp_activation;
    require_support(device, PAGODA_OP_SILU_MUL, &s, "the MLP's activation");
    if (c.embedding_scale != 0.0 && embed_tokens_) {
        e = lookup_query(embed_tokens_);
        e.scale = float(c.embedding_scale);
        require_support(device, PAGODA_OP_EMBEDDING, &e, "scaled embeddings");
    }
    if (c.final_logit_softcap != 0.0 && lm_head_) {
        pagoda_op_softcap_t cap{};
        cap.struct_size = sizeof cap;
        cap.n = 1;
        cap.cap = float(c.final_logit_softcap);
        cap.dtype = PAGODA_DTYPE_F32;
        require_support(device, PAGODA_OP_SOFTCAP, &cap, "the final logits' soft-capping");
    }
}

}  // namespace pagoda::exec
