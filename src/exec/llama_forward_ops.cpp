// LlamaForward's building blocks, one op (or one sublayer) each, as the per-layer program in
// llama_forward.cpp strings them together: the KV ops checked against the cache's shape, the
// activations bound and the batch staged, matmuls, all-reduces, the LM head, norms, RoPE and
// the attention sublayer.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.hpp"
#include "common/log.hpp"
#include "exec/llama_forward_state.hpp"
#include "exec/llama_weights.hpp"
#include "exec/scratch_buffer.hpp"
#include "mesh/communicator.hpp"
#include "formats/dtypes.hpp"
#include "formats/names.hpp"

namespace pagoda::exec {

// The cache's type and shape arrive with the first run, not at construction, so the KV ops are
// checked then, and again whenever a run brings a cache of another shape.
void LlamaForward::State::check_kv_ops(const kv::KvGeometry &g) {
    if (kv_checked && act == kv_checked_act && g.dtype == kv_checked_geometry.dtype &&
        g.block_size == kv_checked_geometry.block_size &&
        g.num_blocks == kv_checked_geometry.num_blocks)
        return;
    const runtime::Device &device = stream.device();
    const model::ModelConfig &c = model->config();
    const std::string what = std::string("a ") + formats::dtype_name(g.dtype) + " KV cache of " +
                             std::to_string(g.num_blocks) + " blocks of " +
                             std::to_string(g.block_size) + " tokens";
    pagoda_op_kv_write_t w{};
    w.struct_size = sizeof w;
    w.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    w.cache_dtype = g.dtype;
    w.n_tokens = 1;
    w.n_kv_heads = shard.n_kv_heads(c);
    w.head_dim = c.head_dim;
    w.block_size = g.block_size;
    w.num_blocks = g.num_blocks;
    w.act_dtype = act;
    require_support(device, PAGODA_OP_KV_WRITE, &w, what);
    // A backend that cannot fuse (or predates the field) says so; the keys then get their own
    // ROPE launch.
    // (Every layer's rotation: Gemma 3's windowed layers have one of their own.)
    const pagoda_backend_iface_t &f = device.iface();
    fused_key_rope = true;
    for (int64_t layer = 0; layer < c.n_layers; ++layer) {
        if (layer > 0 && &c.rope_of(layer) == &c.rope_of(layer - 1)) continue;
        const pagoda_op_rope_t rope = rope_args(1, layer);
        w.k_rope = &rope;
        fused_key_rope = fused_key_rope &&
                         f.kernels->supports(f.self, device.index(), PAGODA_OP_KV_WRITE, &w) == PAGODA_OK;
    }
    clear_last_error();

    pagoda_op_paged_attention_t a{};
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = g.dtype;
    a.causal = 1;
    a.n_seqs = 1;
    a.n_q_heads = shard.n_heads(c);
    a.n_kv_heads = shard.n_kv_heads(c);
    a.head_dim = c.head_dim;
    a.block_size = g.block_size;
    a.num_blocks = g.num_blocks;
    a.max_blocks_per_seq = 1;
    a.scale = float(c.attention_scale());
    a.sliding_window = int32_t(c.sliding_window);
    a.softcap = float(c.attn_logit_softcap);
    a.act_dtype = act;
    if (shard.kv_size > 1) {
        a.kv_shards = shard.kv_size;
        a.kv_shard = shard.kv_rank;
        float lse_probe = 0.0f;  // supports() looks at whether lse is asked, not at its memory
        a.lse = &lse_probe;
        require_support(device, PAGODA_OP_PAGED_ATTENTION, &a, what + " split over " +
                                                                  std::to_string(shard.kv_size) + " devices");
        a.lse = nullptr;
        pagoda_op_attention_merge_t m{};
        m.struct_size = sizeof m;
        m.n_parts = shard.kv_size;
        m.n_tokens = 1;
        m.n_heads = shard.n_heads(c);
        m.head_dim = c.head_dim;
        m.act_dtype = act;
        require_support(device, PAGODA_OP_ATTENTION_MERGE, &m, "merging attention over the KV shards");
    }
    require_support(device, PAGODA_OP_PAGED_ATTENTION, &a, what);
    kv_checked = true;
    kv_checked_geometry = g;
    kv_checked_act = act;
}

bool LlamaForward::State::bind_activations(Activations &m, size_t tokens, size_t rows) {
    const runtime::Device &d = stream.device();
    const model::ModelConfig &c = model->config();
    // The residual stream and the logits stay f32; the rest is of the activation type.
    const size_t f = sizeof(float), a = formats::dtype_size(act), hidden = size_t(c.hidden_size),
                 inter = std::max(size_t(shard.intermediate(c)),  // a token's, or its experts'
                                  size_t(c.experts_per_token * shard.expert_intermediate(c))),
                 q_width = size_t(shard.n_heads(c) * c.head_dim),
                 kv_width = size_t(shard.n_kv_heads(c) * c.head_dim);
    bool moved = false;
    auto bind = [&](StepBuffer &view, ScratchBuffer &buffer, size_t bytes) {
        void *before = buffer.get();
        view.ptr = buffer.reserve(d, bytes);
        moved = moved || (before != nullptr && view.ptr != before);
    };
    bind(residual, m.residual, tokens * hidden * f);
    bind(normed, m.normed, tokens * hidden * a);
    bind(delta, m.delta, tokens * hidden * a);
    bind(q, m.q, tokens * q_width * a);
    bind(k, m.k, tokens * kv_width * a);
    bind(v, m.v, tokens * kv_width * a);
    bind(attn, m.attn, tokens * q_width * a);
    bind(gate, m.gate, tokens * inter * a);
    bind(up, m.up, tokens * inter * a);
    bind(gathered, m.gathered, rows * hidden * a);
    bind(logits, m.logits, rows * size_t(c.vocab_size) * f);
    const size_t experts = size_t(c.n_experts), picked = size_t(c.experts_per_token);
    bind(router_logits, m.router_logits, tokens * experts * f);
    bind(expert_ids, m.expert_ids, tokens * picked * sizeof(int32_t));
    bind(expert_weights, m.expert_weights, tokens * picked * f);
    const size_t shards = size_t(shard.kv_size), q_heads = size_t(shard.n_heads(c));
    bind(lse, m.lse, shards > 1 ? tokens * q_heads * f : 0);
    bind(kv_parts, m.kv_parts, shards > 1 ? shards * tokens * q_width * a : 0);
    bind(kv_lse, m.kv_lse, shards > 1 ? shards * tokens * q_heads * f : 0);
    return moved;
}

// Copies the batch's index arrays to the device. The vectors stay alive until run() has
// synchronized, as an asynchronous copy from pageable memory needs.
void LlamaForward::State::stage(const ForwardBatch &b, int32_t block_size) {
    const runtime::Device &d = stream.device();
    auto upload = [&](StepBuffer &view, ScratchBuffer &dst, const auto &src) {
        const size_t bytes = src.size() * sizeof(src[0]);
        view.ptr = dst.reserve(d, bytes);
        stream.copy(view.ptr, src.data(), bytes, PAGODA_COPY_HOST_TO_DEVICE);
    };
    StepInputs &in = eager_inputs;
    upload(token_ids, in.token_ids, b.token_ids);
    upload(positions, in.positions, b.positions);
    if (shard.kv_size == 1) {
        upload(slots, in.slots, b.slot_mapping);
    } else {
        // A slot of the cache's block of block_size · kv_size tokens: the device writes the
        // tokens of its own run, at their place in its pools; its peers write the rest.
        const int64_t runs = shard.kv_size, whole = int64_t(block_size) * runs;
        local_slots.resize(b.slot_mapping.size());
        for (size_t i = 0; i < b.slot_mapping.size(); ++i) {
            const int64_t s = b.slot_mapping[i], block = s / whole, offset = s % whole;
            local_slots[i] = s >= 0 && offset / block_size == shard.kv_rank ? block * block_size + offset % block_size : -1;
        }
        upload(slots, in.slots, local_slots);
    }
    upload(query_start, in.query_start, b.query_start);
    upload(context_lens, in.context_lens, b.context_lens);
    upload(block_tables, in.block_tables, b.block_tables);
    upload(logit_rows, in.logit_rows, b.logit_rows);
    upload(hidden_rows, in.hidden_rows, b.hidden_rows);
}

pagoda_op_matmul_t LlamaForward::State::matmul_args(const DeviceTensor &w, const DeviceTensor &bias,
                                                    int64_t m, pagoda_dtype_t x_dtype,
                                                    pagoda_dtype_t y_dtype) const {
    pagoda_op_matmul_t a{};
    a.struct_size = sizeof a;
    if (quantized_activations && w.quantize_x) a.flags = PAGODA_MATMUL_QUANTIZE_X;
    if (quantized_activations && w.quantize_x_block) a.flags |= PAGODA_MATMUL_QUANTIZE_X_BLOCK;
    if (quantized_activations && w.round_w &&
        (x_dtype == PAGODA_DTYPE_BF16 || x_dtype == PAGODA_DTYPE_F16))
        a.flags |= PAGODA_MATMUL_ROUND_W;
    a.x_dtype = x_dtype;
    a.w_dtype = w.dtype;
    a.y_dtype = y_dtype;
    a.m = m;
    a.n = w.rows;
    a.k = w.cols;
    a.w = w.data;
    a.ldw = w.ld;
    a.bias = bias.data;
    return a;
}

int32_t LlamaForward::State::kernel_variant(const pagoda_op_matmul_t &a) const {
    if (pinned_variants.empty()) return 0;
    const auto it = pinned_variants.find(runtime::KernelChoices::shape_of(std::string(), a));
    return it == pinned_variants.end() ? 0 : it->second;
}

void LlamaForward::State::matmul(const DeviceTensor &w, const DeviceTensor &bias, const void *x,
                                 int64_t m, void *y, pagoda_dtype_t y_dtype, int64_t ldy) {
    pagoda_op_matmul_t a = matmul_args(w, bias, m, act, y_dtype == PAGODA_DTYPE_INVALID ? act : y_dtype);
    a.x = x;
    a.y = y;
    a.ldy = ldy;
    a.variant = kernel_variant(a);
    stream.launch(PAGODA_OP_MATMUL, &a);
}

void LlamaForward::State::all_reduce(void *buffer, int64_t elements, pagoda_dtype_t dtype) {
    if (shard.tp_size == 1) return;
    if (tp_comm == nullptr)
        throw Error(PAGODA_ERR_INTERNAL, "forward: a tensor-parallel shard runs without its communicator");
    tp_comm->all_reduce_sum(stream, buffer, size_t(elements), dtype);
}

// Logits in f32, for the sampler. A vocabulary-split head writes its columns of the rows and
// leaves zeros elsewhere, so that summing over the group assembles every row exactly.
void LlamaForward::State::lm_head(const void *x, int64_t rows, float *out) {
    const model::ModelConfig &c = model->config();
    if (!shard.vocab_split(c)) {
        matmul(weights.lm_head(), DeviceTensor(), x, rows, out, PAGODA_DTYPE_F32);
    } else {
        stream.memset(out, 0, size_t(rows * c.vocab_size) * sizeof(float));
        matmul(weights.lm_head(), DeviceTensor(), x, rows, out + shard.vocab_begin(c), PAGODA_DTYPE_F32,
               c.vocab_size);
        all_reduce(out, rows * c.vocab_size, PAGODA_DTYPE_F32);
    }
    if (c.final_logit_softcap != 0.0) {  // Gemma 2
        pagoda_op_softcap_t cap{};
        cap.struct_size = sizeof cap;
        cap.n = rows * c.vocab_size;
        cap.cap = float(c.final_logit_softcap);
        cap.x = out;
        cap.dtype = PAGODA_DTYPE_F32;
        stream.launch(PAGODA_OP_SOFTCAP, &cap);
    }
}

void LlamaForward::State::rmsnorm(const DeviceTensor &w, int64_t rows, const void *x,
                                  float *residual_stream, void *out) {
    pagoda_op_rmsnorm_t a{};
    a.struct_size = sizeof a;
    a.act_dtype = act;
    a.weight_dtype = w.dtype;
    a.rows = rows;
    a.dim = w.cols;
    a.eps = float(model->config().rms_norm_eps);
    a.x = x;
    a.residual = residual_stream;
    a.weight = w.data;
    a.out = out;
    stream.launch(PAGODA_OP_RMSNORM, &a);
}

pagoda_op_rope_t LlamaForward::State::rope_args(int64_t n_tokens, int64_t layer) const {
    const model::ModelConfig &c = model->config();
    const model::RopeConfig &rope = c.rope_of(layer);
    pagoda_op_rope_t r{};
    r.struct_size = sizeof r;
    r.layout = rope.layout;
    r.scaling = rope.scaling;
    r.n_tokens = n_tokens;
    r.head_dim = c.head_dim;
    r.positions = static_cast<const int32_t *>(positions.get());
    r.theta = float(rope.theta);
    r.factor = float(rope.factor);
    r.low_freq_factor = float(rope.low_freq_factor);
    r.high_freq_factor = float(rope.high_freq_factor);
    r.original_max_position = rope.original_max_position;
    // The file's divisors belong to the model's main rotation (Llama 3.1's).
    if (&rope == &c.rope) r.freq_factors = static_cast<const float *>(weights.rope_freqs().data);
    r.act_dtype = act;
    return r;
}

// normed → Q, K, V → RoPE → cache → paged attention → `attn`.
void LlamaForward::State::attention(int64_t layer, const LlamaLayerWeights &l, const ForwardBatch &b,
                                    const kv::KvGeometry &g, const kv::LayerPools &pools) {
    const model::ModelConfig &c = model->config();
    const int64_t n = b.n_tokens();
    const void *x = normed.get();
    void *qp = q.get(), *kp = k.get(), *vp = v.get();
    matmul(l.q, l.q_bias, x, n, qp);
    matmul(l.k, l.k_bias, x, n, kp);
    matmul(l.v, l.v_bias, x, n, vp);

    const int64_t q_heads = shard.n_heads(c), kv_heads = shard.n_kv_heads(c);
    if (l.q_norm) {  // Qwen3, Gemma 3: each head of Q and K normalised on its own, in place
        rmsnorm(l.q_norm, n * q_heads, qp, nullptr, qp);
        rmsnorm(l.k_norm, n * kv_heads, kp, nullptr, kp);
    }
    pagoda_op_rope_t r = rope_args(n, layer);
    r.x = qp;
    r.n_heads = q_heads;
    stream.launch(PAGODA_OP_ROPE, &r);
    if (!fused_key_rope) {
        r.x = kp;
        r.n_heads = kv_heads;
        stream.launch(PAGODA_OP_ROPE, &r);
    }

    pagoda_op_kv_write_t w{};
    w.struct_size = sizeof w;
    w.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    w.cache_dtype = g.dtype;
    w.n_tokens = n;
    w.n_kv_heads = kv_heads;
    w.head_dim = c.head_dim;
    w.block_size = g.block_size;
    w.num_blocks = g.num_blocks;
    w.k = kp;
    w.v = vp;
    w.k_cache = pools.k;
    w.v_cache = pools.v;
    w.slot_mapping = static_cast<const int64_t *>(slots.get());
    w.act_dtype = act;
    if (fused_key_rope) w.k_rope = &r;  // r.x and r.n_heads are ignored here
    stream.launch(PAGODA_OP_KV_WRITE, &w);

    pagoda_op_paged_attention_t a{};
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = g.dtype;
    a.causal = 1;
    a.n_seqs = b.n_seqs();
    a.n_q_heads = q_heads;
    a.n_kv_heads = kv_heads;
    a.head_dim = c.head_dim;
    a.block_size = g.block_size;
    a.num_blocks = g.num_blocks;
    a.max_blocks_per_seq = b.max_blocks_per_seq;
    a.max_context_len = b.max_context_len;
    a.scale = float(c.attention_scale());
    a.sliding_window = int32_t(c.window_of(layer));
    a.softcap = float(c.attn_logit_softcap);
    a.q = qp;
    a.k_cache = pools.k;
    a.v_cache = pools.v;
    a.block_tables = static_cast<const int32_t *>(block_tables.get());
    a.context_lens = static_cast<const int32_t *>(context_lens.get());
    a.query_start = static_cast<const int32_t *>(query_start.get());
    a.out = attn.get();
    a.act_dtype = act;
    if (shard.kv_size == 1) {
        stream.launch(PAGODA_OP_PAGED_ATTENTION, &a);
        return;
    }
    // Cache parallelism: attention over this device's run of every block, then every run's
    // result merged by log-sum-exp (flash-decoding's merge, across devices).
    if (kv_comm == nullptr)
        throw Error(PAGODA_ERR_INTERNAL, "forward: a cache-parallel shard runs without its communicator");
    a.kv_shards = shard.kv_size;
    a.kv_shard = shard.kv_rank;
    a.lse = static_cast<float *>(lse.get());
    stream.launch(PAGODA_OP_PAGED_ATTENTION, &a);
    const size_t width = size_t(q_heads * c.head_dim);
    kv_comm->all_gather(stream, attn.get(), kv_parts.get(), size_t(n) * width, act);
    kv_comm->all_gather(stream, lse.get(), kv_lse.get(), size_t(n * q_heads), PAGODA_DTYPE_F32);
    pagoda_op_attention_merge_t m{};
    m.struct_size = sizeof m;
    m.n_parts = shard.kv_size;
    m.n_tokens = n;
    m.n_heads = q_heads;
    m.head_dim = c.head_dim;
    m.parts = kv_parts.get();
    m.lse = static_cast<const float *>(kv_lse.get());
    m.out = attn.get();
    m.act_dtype = act;
    stream.launch(PAGODA_OP_ATTENTION_MERGE, &m);
}

}  // namespace pagoda::exec
