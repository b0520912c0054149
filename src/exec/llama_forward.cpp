// The Llama-family forward pass as a sequence of backend ops. The host only stages the batch's
// index arrays and reads the logits back, so any backend (CPU, CUDA) runs this same code.
//
// The residual stream stays in one buffer; each sublayer's output is added into it by the next
// RMSNorm (the op's fused `residual` mode), as in the pre-norm transformer:
//   h = embed(tokens)
//   per layer: x = norm(h); h += attn(x); x = norm(h); h += mlp(x)
//   logits = lm_head(norm(h))
// so that "h += delta; x = norm(h)" is one RMSNORM launch with residual = h and x = delta.
#include "exec/llama_forward.hpp"

#include <cmath>
#include <string>

#include "common/error.hpp"
#include "exec/llama_weights.hpp"
#include "exec/scratch_buffer.hpp"
#include "names.hpp"

namespace pagoda::exec {

namespace {

void invalid(const std::string &what) {
    throw Error(PAGODA_ERR_INVALID_ARGUMENT, "forward batch: " + what);
}

// Checks the shapes of `batch` against each other (the backend checks the values: slots, block
// ids, token ids).
void check_batch(const ForwardBatch &b) {
    const size_t t = b.token_ids.size(), s = b.context_lens.size();
    if (b.positions.size() != t)
        invalid("positions has " + std::to_string(b.positions.size()) + " entries for " +
                std::to_string(t) + " tokens");
    if (b.slot_mapping.size() != t)
        invalid("slot_mapping has " + std::to_string(b.slot_mapping.size()) + " entries for " +
                std::to_string(t) + " tokens");
    if (t > size_t(INT32_MAX)) invalid(std::to_string(t) + " tokens are too many for int32 rows");
    if (b.query_start.size() != s + 1)
        invalid("query_start has " + std::to_string(b.query_start.size()) + " entries for " +
                std::to_string(s) + " sequences (needs n_seqs + 1)");
    if (b.query_start[0] != 0)
        invalid("query_start[0] = " + std::to_string(b.query_start[0]) + ", not 0");
    for (size_t i = 0; i < s; ++i)
        if (b.query_start[i + 1] < b.query_start[i])
            invalid("query_start decreases at sequence " + std::to_string(i));
    if (size_t(b.query_start[s]) != t)
        invalid("query_start[n_seqs] = " + std::to_string(b.query_start[s]) +
                " but the batch has " + std::to_string(t) + " tokens");
    if (s > 0 && b.max_blocks_per_seq < 1)
        invalid("max_blocks_per_seq = " + std::to_string(b.max_blocks_per_seq) +
                " must be at least 1");
    if (b.block_tables.size() != s * size_t(s > 0 ? b.max_blocks_per_seq : 0))
        invalid("block_tables has " + std::to_string(b.block_tables.size()) +
                " entries, not n_seqs (" + std::to_string(s) + ") x max_blocks_per_seq (" +
                std::to_string(b.max_blocks_per_seq) + ")");
    for (size_t i = 0; i < b.logit_rows.size(); ++i)
        if (b.logit_rows[i] < 0 || size_t(b.logit_rows[i]) >= t)
            invalid("logit_rows[" + std::to_string(i) + "] = " + std::to_string(b.logit_rows[i]) +
                    " is outside the batch's " + std::to_string(t) + " tokens");
}

void check_geometry(const model::ModelConfig &c, const kv::KvGeometry &g,
                    const std::vector<kv::LayerPools> &pools) {
    if (g.n_layers != c.n_layers || g.n_kv_heads != c.n_kv_heads || g.head_dim != c.head_dim)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "KV geometry (" + std::to_string(g.n_layers) + " layers, " +
                        std::to_string(g.n_kv_heads) + " KV heads of " +
                        std::to_string(g.head_dim) + ") does not fit the model (" +
                        std::to_string(c.n_layers) + " layers, " + std::to_string(c.n_kv_heads) +
                        " KV heads of " + std::to_string(c.head_dim) + ")");
    if (pools.size() != size_t(c.n_layers))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "KV pools: " + std::to_string(pools.size()) +
                                                     " layers given, the model has " +
                                                     std::to_string(c.n_layers));
}

void check_stage(const model::ModelConfig &c, const LlamaForward::Stage &st) {
    if (st.first_layer < 0 || st.first_layer >= st.end_layer || st.end_layer > c.n_layers)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "forward stage: layers [" + std::to_string(st.first_layer) + ", " +
                        std::to_string(st.end_layer) + ") are not a non-empty range of the model's " +
                        std::to_string(c.n_layers));
    if (st.first_layer > 0 && st.hidden_in == nullptr)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "forward stage: starts at layer " +
                                                     std::to_string(st.first_layer) +
                                                     " without hidden states to start from");
    if (st.end_layer < c.n_layers && st.hidden_out == nullptr)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "forward stage: ends before the last layer " +
                                                     std::string("without a buffer for its hidden states"));
}

}  // namespace

struct LlamaForward::State {
    State(std::shared_ptr<const model::Model> m, const runtime::Stream &s)
        : model(std::move(m)), stream(s), weights(*model, s) {}

    void check_kv_ops(const kv::KvGeometry &g);
    void stage(const ForwardBatch &b);
    void matmul(const DeviceTensor &w, const DeviceTensor &bias, const float *x, int64_t m,
                float *y);
    void rmsnorm(const DeviceTensor &w, int64_t rows, const float *x, float *residual, float *out);
    void attention(const LlamaLayerWeights &l, const ForwardBatch &b, const kv::KvGeometry &g,
                   const kv::LayerPools &pools);

    std::shared_ptr<const model::Model> model;
    const runtime::Stream &stream;
    LlamaWeights weights;

    // Activations, [tokens, width] f32.
    ScratchBuffer residual{"the residual stream"}, normed{"normalised hidden states"};
    ScratchBuffer q{"queries"}, k{"keys"}, v{"values"}, attn{"attention output"};
    ScratchBuffer delta{"sublayer output"}, gate{"MLP gate"}, up{"MLP up"};
    ScratchBuffer gathered{"hidden states of logit rows"}, logits{"logits"};
    // The batch's index arrays on the device.
    ScratchBuffer token_ids{"token ids"}, positions{"positions"}, slots{"slot mapping"};
    ScratchBuffer query_start{"query starts"}, context_lens{"context lengths"};
    ScratchBuffer block_tables{"block tables"}, logit_rows{"logit rows"};

    // The KV cache shape whose ops the backend already accepted.
    bool kv_checked = false;
    kv::KvGeometry kv_checked_geometry;
};

// The cache's type and shape arrive with the first run, not at construction, so the KV ops are
// checked then, and again whenever a run brings a cache of another shape.
void LlamaForward::State::check_kv_ops(const kv::KvGeometry &g) {
    if (kv_checked && g.dtype == kv_checked_geometry.dtype &&
        g.block_size == kv_checked_geometry.block_size &&
        g.num_blocks == kv_checked_geometry.num_blocks)
        return;
    const runtime::Device &device = stream.device();
    const model::ModelConfig &c = model->config();
    const std::string what = std::string("a ") + plugin::dtype_name(g.dtype) + " KV cache of " +
                             std::to_string(g.num_blocks) + " blocks of " +
                             std::to_string(g.block_size) + " tokens";
    pagoda_op_kv_write_t w{};
    w.struct_size = sizeof w;
    w.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    w.cache_dtype = g.dtype;
    w.n_tokens = 1;
    w.n_kv_heads = c.n_kv_heads;
    w.head_dim = c.head_dim;
    w.block_size = g.block_size;
    w.num_blocks = g.num_blocks;
    require_support(device, PAGODA_OP_KV_WRITE, &w, what);

    pagoda_op_paged_attention_t a{};
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = g.dtype;
    a.causal = 1;
    a.n_seqs = 1;
    a.n_q_heads = c.n_heads;
    a.n_kv_heads = c.n_kv_heads;
    a.head_dim = c.head_dim;
    a.block_size = g.block_size;
    a.num_blocks = g.num_blocks;
    a.max_blocks_per_seq = 1;
    a.scale = float(1.0 / std::sqrt(double(c.head_dim)));
    a.sliding_window = int32_t(c.sliding_window);
    require_support(device, PAGODA_OP_PAGED_ATTENTION, &a, what);
    kv_checked = true;
    kv_checked_geometry = g;
}

// Copies the batch's index arrays to the device. The vectors stay alive until run() has
// synchronized, as an asynchronous copy from pageable memory needs.
void LlamaForward::State::stage(const ForwardBatch &b) {
    const runtime::Device &d = stream.device();
    auto upload = [&](ScratchBuffer &dst, const auto &src) {
        const size_t bytes = src.size() * sizeof(src[0]);
        void *p = dst.reserve(d, bytes);
        stream.copy(p, src.data(), bytes, PAGODA_COPY_HOST_TO_DEVICE);
    };
    upload(token_ids, b.token_ids);
    upload(positions, b.positions);
    upload(slots, b.slot_mapping);
    upload(query_start, b.query_start);
    upload(context_lens, b.context_lens);
    upload(block_tables, b.block_tables);
    upload(logit_rows, b.logit_rows);
}

void LlamaForward::State::matmul(const DeviceTensor &w, const DeviceTensor &bias, const float *x,
                                 int64_t m, float *y) {
    pagoda_op_matmul_t a{};
    a.struct_size = sizeof a;
    a.x_dtype = PAGODA_DTYPE_F32;
    a.w_dtype = w.dtype;
    a.y_dtype = PAGODA_DTYPE_F32;
    a.m = m;
    a.n = w.rows;
    a.k = w.cols;
    a.x = x;
    a.w = w.data;
    a.bias = bias.data;
    a.y = y;
    stream.launch(PAGODA_OP_MATMUL, &a);
}

void LlamaForward::State::rmsnorm(const DeviceTensor &w, int64_t rows, const float *x,
                                  float *residual_stream, float *out) {
    pagoda_op_rmsnorm_t a{};
    a.struct_size = sizeof a;
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

// normed → Q, K, V → RoPE → cache → paged attention → `attn`.
void LlamaForward::State::attention(const LlamaLayerWeights &l, const ForwardBatch &b,
                                    const kv::KvGeometry &g, const kv::LayerPools &pools) {
    const model::ModelConfig &c = model->config();
    const int64_t n = b.n_tokens();
    auto *x = static_cast<const float *>(normed.get());
    auto *qp = static_cast<float *>(q.get());
    auto *kp = static_cast<float *>(k.get());
    auto *vp = static_cast<float *>(v.get());
    matmul(l.q, l.q_bias, x, n, qp);
    matmul(l.k, l.k_bias, x, n, kp);
    matmul(l.v, l.v_bias, x, n, vp);

    pagoda_op_rope_t r{};
    r.struct_size = sizeof r;
    r.layout = c.rope.layout;
    r.scaling = c.rope.scaling;
    r.n_tokens = n;
    r.head_dim = c.head_dim;
    r.positions = static_cast<const int32_t *>(positions.get());
    r.theta = float(c.rope.theta);
    r.factor = float(c.rope.factor);
    r.low_freq_factor = float(c.rope.low_freq_factor);
    r.high_freq_factor = float(c.rope.high_freq_factor);
    r.original_max_position = c.rope.original_max_position;
    r.freq_factors = static_cast<const float *>(weights.rope_freqs().data);
    r.x = qp;
    r.n_heads = c.n_heads;
    stream.launch(PAGODA_OP_ROPE, &r);
    r.x = kp;
    r.n_heads = c.n_kv_heads;
    stream.launch(PAGODA_OP_ROPE, &r);

    pagoda_op_kv_write_t w{};
    w.struct_size = sizeof w;
    w.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    w.cache_dtype = g.dtype;
    w.n_tokens = n;
    w.n_kv_heads = c.n_kv_heads;
    w.head_dim = c.head_dim;
    w.block_size = g.block_size;
    w.num_blocks = g.num_blocks;
    w.k = kp;
    w.v = vp;
    w.k_cache = pools.k;
    w.v_cache = pools.v;
    w.slot_mapping = static_cast<const int64_t *>(slots.get());
    stream.launch(PAGODA_OP_KV_WRITE, &w);

    pagoda_op_paged_attention_t a{};
    a.struct_size = sizeof a;
    a.layout = PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN;
    a.cache_dtype = g.dtype;
    a.causal = 1;
    a.n_seqs = b.n_seqs();
    a.n_q_heads = c.n_heads;
    a.n_kv_heads = c.n_kv_heads;
    a.head_dim = c.head_dim;
    a.block_size = g.block_size;
    a.num_blocks = g.num_blocks;
    a.max_blocks_per_seq = b.max_blocks_per_seq;
    a.max_context_len = b.max_context_len;
    a.scale = float(1.0 / std::sqrt(double(c.head_dim)));
    a.sliding_window = int32_t(c.sliding_window);
    a.q = qp;
    a.k_cache = pools.k;
    a.v_cache = pools.v;
    a.block_tables = static_cast<const int32_t *>(block_tables.get());
    a.context_lens = static_cast<const int32_t *>(context_lens.get());
    a.query_start = static_cast<const int32_t *>(query_start.get());
    a.out = attn.get();
    stream.launch(PAGODA_OP_PAGED_ATTENTION, &a);
}

LlamaForward::LlamaForward(std::shared_ptr<const model::Model> model,
                           const runtime::Stream &stream) {
    if (!model) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "LlamaForward: no model");
    state_ = std::make_unique<State>(std::move(model), stream);
}

LlamaForward::~LlamaForward() = default;

const model::Model &LlamaForward::model() const noexcept {
    return *state_->model;
}

void LlamaForward::run(const ForwardBatch &batch, const kv::KvGeometry &geometry,
                       const std::vector<kv::LayerPools> &pools, float *logits) {
    run_stage(batch, geometry, pools, Stage{0, int32_t(state_->model->config().n_layers)}, logits);
}

void LlamaForward::run_stage(const ForwardBatch &batch, const kv::KvGeometry &geometry,
                             const std::vector<kv::LayerPools> &pools, const Stage &stage,
                             float *logits) {
    State &s = *state_;
    const model::ModelConfig &c = s.model->config();
    check_batch(batch);
    check_geometry(c, geometry, pools);
    check_stage(c, stage);
    const bool first = stage.first_layer == 0, last = stage.end_layer == c.n_layers;
    const int64_t n = batch.n_tokens();
    if (n == 0) return;  // check_batch made sure no logits were asked for
    if (last && !batch.logit_rows.empty() && logits == nullptr)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "forward batch: logits requested into a NULL buffer");
    s.check_kv_ops(geometry);

    // Size the scratch for this batch; the launches below find it through get().
    const runtime::Device &d = s.stream.device();
    const size_t f = sizeof(float), tokens = size_t(n);
    const size_t hidden = size_t(c.hidden_size), inter = size_t(c.intermediate_size);
    const size_t q_width = size_t(c.n_heads * c.head_dim),
                 kv_width = size_t(c.n_kv_heads * c.head_dim);
    const size_t rows = last ? batch.logit_rows.size() : 0;
    auto *residual = static_cast<float *>(s.residual.reserve(d, tokens * hidden * f));
    auto *normed = static_cast<float *>(s.normed.reserve(d, tokens * hidden * f));
    auto *delta = static_cast<float *>(s.delta.reserve(d, tokens * hidden * f));
    s.q.reserve(d, tokens * q_width * f);
    s.k.reserve(d, tokens * kv_width * f);
    s.v.reserve(d, tokens * kv_width * f);
    auto *attn = static_cast<float *>(s.attn.reserve(d, tokens * q_width * f));
    auto *gate = static_cast<float *>(s.gate.reserve(d, tokens * inter * f));
    auto *up = static_cast<float *>(s.up.reserve(d, tokens * inter * f));
    auto *gathered = static_cast<float *>(s.gathered.reserve(d, rows * hidden * f));
    auto *device_logits =
        static_cast<float *>(s.logits.reserve(d, rows * size_t(c.vocab_size) * f));
    s.stage(batch);

    const LlamaWeights &w = s.weights;
    const size_t hidden_bytes = tokens * hidden * f;
    if (first) {
        pagoda_op_embedding_t e{};
        e.struct_size = sizeof e;
        e.table_dtype = w.embed_tokens().dtype;
        e.vocab_size = w.embed_tokens().rows;
        e.dim = c.hidden_size;
        e.n_tokens = n;
        e.table = w.embed_tokens().data;
        e.ids = static_cast<const int32_t *>(s.token_ids.get());
        e.out = residual;
        s.stream.launch(PAGODA_OP_EMBEDDING, &e);
    } else {
        s.stream.copy(residual, stage.hidden_in, hidden_bytes, PAGODA_COPY_HOST_TO_DEVICE);
    }

    const DeviceTensor none;
    for (size_t i = size_t(stage.first_layer); i < size_t(stage.end_layer); ++i) {
        const LlamaLayerWeights &l = w.layers()[i];
        if (i == size_t(stage.first_layer))
            s.rmsnorm(l.input_norm, n, residual, nullptr, normed);
        else
            s.rmsnorm(l.input_norm, n, delta, residual, normed);  // h += mlp output
        s.attention(l, batch, geometry, pools[i]);
        s.matmul(l.o, none, attn, n, delta);
        s.rmsnorm(l.post_attention_norm, n, delta, residual, normed);  // h += attention output
        s.matmul(l.gate, none, normed, n, gate);
        s.matmul(l.up, none, normed, n, up);
        pagoda_op_silu_mul_t m{};
        m.struct_size = sizeof m;
        m.rows = n;
        m.dim = c.intermediate_size;
        m.gate = gate;
        m.up = up;
        m.out = gate;
        s.stream.launch(PAGODA_OP_SILU_MUL, &m);
        s.matmul(l.down, none, gate, n, delta);
    }

    if (!last) {
        // Hand on h itself: the last layer's MLP output is still pending in `delta`.
        pagoda_op_add_t add{};
        add.struct_size = sizeof add;
        add.n = n * c.hidden_size;
        add.a = residual;
        add.b = delta;
        add.out = residual;
        s.stream.launch(PAGODA_OP_ADD, &add);
        s.stream.copy(stage.hidden_out, residual, hidden_bytes, PAGODA_COPY_DEVICE_TO_HOST);
    } else if (rows > 0) {
        s.rmsnorm(w.final_norm(), n, delta, residual, normed);
        // ops.h has no gather; EMBEDDING over the f32 hidden states is one: row i of the output
        // is row logit_rows[i] of `normed`.
        pagoda_op_embedding_t g{};
        g.struct_size = sizeof g;
        g.table_dtype = PAGODA_DTYPE_F32;
        g.vocab_size = n;
        g.dim = c.hidden_size;
        g.n_tokens = int64_t(rows);
        g.table = normed;
        g.ids = static_cast<const int32_t *>(s.logit_rows.get());
        g.out = gathered;
        s.stream.launch(PAGODA_OP_EMBEDDING, &g);
        s.matmul(w.lm_head(), none, gathered, int64_t(rows), device_logits);
        s.stream.copy(logits, device_logits, rows * size_t(c.vocab_size) * f,
                      PAGODA_COPY_DEVICE_TO_HOST);
    }
    s.stream.synchronize();
}

}  // namespace pagoda::exec
