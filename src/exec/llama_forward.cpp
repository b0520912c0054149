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
#include "common/log.hpp"
#include "exec/decode_graphs.hpp"
#include "exec/llama_weights.hpp"
#include "exec/scratch_buffer.hpp"
#include "exec/llama_forward_state.hpp"
#include "mesh/communicator.hpp"
#include "formats/dtypes.hpp"
#include "formats/names.hpp"

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
    for (size_t i = 0; i < b.hidden_rows.size(); ++i)
        if (b.hidden_rows[i] < 0 || size_t(b.hidden_rows[i]) >= t)
            invalid("hidden_rows[" + std::to_string(i) + "] = " +
                    std::to_string(b.hidden_rows[i]) + " is outside the batch's " +
                    std::to_string(t) + " tokens");
}

void check_geometry(const model::ModelConfig &c, const ModelShard &shard, const kv::KvGeometry &g,
                    const std::vector<kv::LayerPools> &pools) {
    const int64_t kv_heads = shard.n_kv_heads(c);
    if (g.n_layers != c.n_layers || g.n_kv_heads != kv_heads || g.head_dim != c.head_dim)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "KV geometry (" + std::to_string(g.n_layers) + " layers, " +
                        std::to_string(g.n_kv_heads) + " KV heads of " +
                        std::to_string(g.head_dim) + ") does not fit the model's shard (" +
                        std::to_string(c.n_layers) + " layers, " + std::to_string(kv_heads) +
                        " KV heads of " + std::to_string(c.head_dim) + ")");
    if (pools.size() != size_t(c.n_layers))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "KV pools: " + std::to_string(pools.size()) +
                                                     " layers given, the model has " +
                                                     std::to_string(c.n_layers));
}

void check_stage(const model::ModelConfig &c, const ModelShard &shard, const LlamaForward::Stage &st) {
    if (st.first_layer < shard.first_layer || st.first_layer >= st.end_layer || st.end_layer > shard.end(c))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "forward stage: layers [" + std::to_string(st.first_layer) + ", " +
                        std::to_string(st.end_layer) + ") are not a non-empty range of the shard's [" +
                        std::to_string(shard.first_layer) + ", " + std::to_string(shard.end(c)) + ")");
    if (st.handoff != nullptr) return;
    if (st.first_layer > 0 && st.hidden_in == nullptr)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "forward stage: starts at layer " +
                                                     std::to_string(st.first_layer) +
                                                     " without hidden states to start from");
    if (st.end_layer < c.n_layers && st.hidden_out == nullptr)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "forward stage: ends before the last layer " +
                                                     std::string("without a buffer for its hidden states"));
}

}  // namespace

LlamaForward::LlamaForward(std::shared_ptr<const model::Model> model, const runtime::Stream &stream,
                           const ModelShard &shard) {
    if (!model) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "LlamaForward: no model");
    const model::ModelConfig &c = model->config();
    if (shard.first_layer < 0 || shard.first_layer >= shard.end(c) || shard.end(c) > c.n_layers ||
        shard.tp_size < 1 || shard.tp_rank < 0 || shard.tp_rank >= shard.tp_size || shard.kv_size < 1 ||
        shard.kv_rank < 0 || shard.kv_rank >= shard.kv_size)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "LlamaForward: shard of layers [" +
                                                     std::to_string(shard.first_layer) + ", " +
                                                     std::to_string(shard.end(c)) + "), tp rank " +
                                                     std::to_string(shard.tp_rank) + " of " +
                                                     std::to_string(shard.tp_size) + " does not fit the model");
    if (shard.ep_size < 1 || shard.tp_size % shard.ep_size != 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "LlamaForward: expert parallelism of " + std::to_string(shard.ep_size) +
                                                     " does not divide the stage's " + std::to_string(shard.tp_size) +
                                                     " devices");
    if (shard.ep_size > 1 && (c.n_experts == 0 || c.n_experts % shard.ep_size != 0))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "LlamaForward: expert parallelism of " + std::to_string(shard.ep_size) +
                                                     " over the model's " + std::to_string(c.n_experts) +
                                                     " experts (they must split evenly)");
    if (c.n_experts > 0 && c.expert_intermediate_size % shard.expert_tp() != 0)
        throw Error(PAGODA_ERR_UNSUPPORTED, "LlamaForward: the experts' " + std::to_string(c.expert_intermediate_size) +
                                                " MLP columns do not split evenly over " +
                                                std::to_string(shard.expert_tp()) + " tensor-parallel devices");
    state_ = std::make_unique<State>(std::move(model), stream, shard);
}

const ModelShard &LlamaForward::shard() const noexcept { return state_->shard; }

void LlamaForward::set_tensor_parallel(const mesh::Communicator *comm) noexcept { state_->tp_comm = comm; }

void LlamaForward::set_cache_parallel(const mesh::Communicator *comm) noexcept { state_->kv_comm = comm; }

uint64_t LlamaForward::weight_bytes() const noexcept { return state_->weights.bytes(); }

uint64_t LlamaForward::layer_weight_bytes() const noexcept { return state_->weights.layer_bytes(); }

uint64_t LlamaForward::expert_weight_bytes() const noexcept { return state_->weights.expert_bytes(); }

const std::vector<model::ByteRange> &LlamaForward::host_weight_ranges() const noexcept {
    return state_->weights.host_ranges();
}

LlamaForward::~LlamaForward() = default;

const model::Model &LlamaForward::model() const noexcept {
    return *state_->model;
}

void LlamaForward::run(const ForwardBatch &batch, const kv::KvGeometry &geometry,
                       const std::vector<kv::LayerPools> &pools, float *logits) {
    const ModelShard &sh = state_->shard;
    if (!sh.first_stage() || !sh.last_stage(state_->model->config()))
        throw Error(PAGODA_ERR_INTERNAL, "LlamaForward::run on a pipeline stage's shard: use run_stage");
    run_stage(batch, geometry, pools, Stage{0, sh.end(state_->model->config())}, logits);
}

void LlamaForward::set_activation_dtype(pagoda_dtype_t dtype) {
    State &s = *state_;
    if (dtype != PAGODA_DTYPE_F32 && dtype != PAGODA_DTYPE_BF16 && dtype != PAGODA_DTYPE_F16)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    std::string("activations of type ") + formats::dtype_name(dtype) +
                        ": only f32, bf16 and f16 are activation types");
    // The dense ops of a layer, asked up front, so that a backend without half activations is
    // refused here rather than at the first step. (The KV ops are asked with the cache.)
    const runtime::Device &d = s.stream.device();
    const model::ModelConfig &c = s.model->config();
    const std::string what = std::string(formats::dtype_name(dtype)) + " activations";
    const pagoda_op_matmul_t m = matmul_query(s.weights.first_mlp_weight(), dtype);
    require_support(d, PAGODA_OP_MATMUL, &m, what);
    pagoda_op_rmsnorm_t r{};
    r.struct_size = sizeof r;
    r.weight_dtype = s.weights.final_norm().dtype;
    r.rows = 1;
    r.dim = c.hidden_size;
    r.eps = float(c.rms_norm_eps);
    r.act_dtype = dtype;
    require_support(d, PAGODA_OP_RMSNORM, &r, what);
    pagoda_op_silu_mul_t sm{};
    sm.struct_size = sizeof sm;
    sm.rows = 1;
    sm.dim = s.shard.intermediate(c);
    sm.act_dtype = dtype;
    sm.activation = c.mlp_activation;
    require_support(d, PAGODA_OP_SILU_MUL, &sm, what);
    if (dtype != s.activation_dtype) s.decode_graphs.drop_graphs();  // recorded with the old type
    s.activation_dtype = dtype;
}

pagoda_dtype_t LlamaForward::activation_dtype() const noexcept {
    return state_->activation_dtype;
}

pagoda_dtype_t LlamaForward::weight_dtype() const noexcept {
    return state_->weights.first_mlp_weight().dtype;
}

void LlamaForward::set_quantized_activations(bool allow) noexcept {
    State &s = *state_;
    if (allow != s.quantized_activations) s.decode_graphs.drop_graphs();  // recorded with the old flags
    s.quantized_activations = allow;
}

void LlamaForward::set_decode_mode(DecodeMode mode) noexcept {
    state_->decode_mode = mode;
}

const DecodeGraphStats &LlamaForward::decode_graph_stats() const noexcept {
    return state_->decode_stats;
}

void LlamaForward::run_stage(const ForwardBatch &batch, const kv::KvGeometry &geometry,
                             const std::vector<kv::LayerPools> &pools, const Stage &stage,
                             float *logits) {
    State &s = *state_;
    const model::ModelConfig &c = s.model->config();
    check_batch(batch);
    check_geometry(c, s.shard, geometry, pools);
    check_stage(c, s.shard, stage);
    const bool first = stage.first_layer == 0, last = stage.end_layer == c.n_layers;
    const int64_t n = batch.n_tokens();
    s.hidden_count = 0;
    s.last_hidden_rows = 0;
    if (n == 0) return;  // check_batch made sure no logits were asked for
    if (last && !batch.logit_rows.empty() && logits == nullptr && s.pick == nullptr && !stage.discard_logits)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "forward batch: logits requested into a NULL buffer");
    s.act = first && last ? s.activation_dtype : PAGODA_DTYPE_F32;
    s.check_kv_ops(geometry);

    // A whole-model decode step goes by bucket where the mode and the backend allow; a pipeline
    // stage always runs op by op.
    const bool padded = s.decode_mode == DecodeMode::PaddedOpByOp ||
                        (s.decode_mode == DecodeMode::Graphs && s.stream.supports_graphs());
    if (padded && first && last && s.shard.tp_size == 1 && s.shard.kv_size == 1 &&
        batch.hidden_rows.empty() && is_decode_only(batch) &&
        decode_bucket(batch.n_seqs()) > 0 &&
        s.run_bucketed(batch, geometry, pools, logits))
        return;

    const size_t f = sizeof(float), tokens = size_t(n);
    const size_t hidden_bytes = tokens * size_t(c.hidden_size) * f;
    const size_t rows = last ? batch.logit_rows.size() : 0;
    s.bind_activations(s.eager_memory, tokens, rows);
    s.stage(batch, geometry.block_size);
    // Hidden states after the final norm exist on the stage holding the last layer only; the
    // others run the same batch (a pipeline's units) and leave its hidden rows alone.
    s.hidden_count = last ? batch.hidden_rows.size() : 0;
    s.pooled.ptr = s.eager_memory.pooled.reserve(
        s.stream.device(), s.hidden_count * size_t(c.hidden_size) * f);
    if (!first && stage.handoff != nullptr)
        stage.handoff->receive(s.stream, static_cast<float *>(s.residual.get()), n);
    else if (!first)
        s.stream.copy(s.residual.get(), stage.hidden_in, hidden_bytes,
                      PAGODA_COPY_HOST_TO_DEVICE);
    s.launch_layers(batch, geometry, pools, stage);
    if (!last) {
        if (stage.handoff != nullptr) {
            stage.handoff->send(s.stream, static_cast<const float *>(s.residual.get()), n);
        } else {
            s.stream.copy(stage.hidden_out, s.residual.get(), hidden_bytes,
                          PAGODA_COPY_DEVICE_TO_HOST);
        }
        s.stream.synchronize();
        return;
    }
    if (stage.discard_logits) {
        s.stream.synchronize();
        return;
    }
    s.deliver(rows, logits);
    s.last_hidden_rows = s.hidden_count;
}

void LlamaForward::copy_hidden(float *hidden) {
    State &s = *state_;
    if (s.last_hidden_rows == 0) return;
    s.stream.copy(hidden, s.pooled.get(),
                  s.last_hidden_rows * size_t(s.model->config().hidden_size) * sizeof(float),
                  PAGODA_COPY_DEVICE_TO_HOST);
    s.stream.synchronize();
}

// ops.h has no gather; EMBEDDING over the hidden states is one.
void LlamaForward::State::gather(int64_t n, const void *rows, size_t count,
                                 pagoda_dtype_t out_dtype, void *out) {
    pagoda_op_embedding_t g{};
    g.struct_size = sizeof g;
    g.table_dtype = act;
    g.out_dtype = out_dtype;
    g.vocab_size = n;
    g.dim = model->config().hidden_size;
    g.n_tokens = int64_t(count);
    g.table = normed.get();
    g.ids = static_cast<const int32_t *>(rows);
    g.out = out;
    stream.launch(PAGODA_OP_EMBEDDING, &g);
}

void LlamaForward::State::launch_layers(const ForwardBatch &batch, const kv::KvGeometry &geometry,
                                        const std::vector<kv::LayerPools> &pools,
                                        const Stage &stage) {
    State &s = *this;
    const model::ModelConfig &c = model->config();
    const bool first = stage.first_layer == 0, last = stage.end_layer == c.n_layers;
    const int64_t n = batch.n_tokens();
    const size_t rows = last ? batch.logit_rows.size() : 0;
    auto *h_stream = static_cast<float *>(s.residual.get());
    void *normed_x = s.normed.get(), *sublayer_out = s.delta.get(), *attn_out = s.attn.get();
    void *mlp_gate = s.gate.get(), *mlp_up = s.up.get(), *gathered_rows = s.gathered.get();
    void *device_logits = s.logits.get();
    const size_t act_bytes = formats::dtype_size(act);

    const LlamaWeights &w = s.weights;
    if (first) {
        pagoda_op_embedding_t e{};
        e.struct_size = sizeof e;
        e.table_dtype = w.embed_tokens().dtype;
        e.vocab_size = w.embed_tokens().rows;
        e.dim = c.hidden_size;
        e.n_tokens = n;
        e.table = w.embed_tokens().data;
        e.ids = static_cast<const int32_t *>(s.token_ids.get());
        e.out = h_stream;
        e.scale = float(c.embedding_scale);
        s.stream.launch(PAGODA_OP_EMBEDDING, &e);
    }
    // Every layer starts with "h += the previous sublayer's output; x = norm(h)", the first
    // one too: with nothing to add yet, that output is zero. (In f32, h + 0 is h exactly.)
    s.stream.memset(sublayer_out, 0, size_t(n) * size_t(c.hidden_size) * act_bytes);

    const DeviceTensor none;
    for (size_t i = size_t(stage.first_layer); i < size_t(stage.end_layer); ++i) {
        const LlamaLayerWeights &l = w.layers()[i];
        s.rmsnorm(l.input_norm, n, sublayer_out, h_stream, normed_x);  // h += mlp output
        s.attention(int64_t(i), l, batch, geometry, pools[i]);
        s.matmul(l.o, none, attn_out, n, sublayer_out);
        s.all_reduce(sublayer_out, n * c.hidden_size, act);
        if (l.attn_out_norm) s.rmsnorm(l.attn_out_norm, n, sublayer_out, nullptr, sublayer_out);
        // h += attention output
        s.rmsnorm(l.mlp_norm, n, sublayer_out, h_stream, normed_x);
        if (l.router) {
            s.moe_mlp(l, n);
        } else {
            s.matmul(l.gate, none, normed_x, n, mlp_gate);
            s.matmul(l.up, none, normed_x, n, mlp_up);
            pagoda_op_silu_mul_t m{};
            m.struct_size = sizeof m;
            m.rows = n;
            m.dim = s.shard.intermediate(c);
            m.gate = mlp_gate;
            m.up = mlp_up;
            m.out = mlp_gate;
            m.act_dtype = act;
            m.activation = c.mlp_activation;
            s.stream.launch(PAGODA_OP_SILU_MUL, &m);
            s.matmul(l.down, none, mlp_gate, n, sublayer_out);
        }
        s.all_reduce(sublayer_out, n * c.hidden_size, act);
        if (l.mlp_out_norm) s.rmsnorm(l.mlp_out_norm, n, sublayer_out, nullptr, sublayer_out);
    }

    if (!last) {
        // Hand on h itself: the last layer's MLP output is still pending in `sublayer_out`
        // (f32: a stage's activations are).
        pagoda_op_add_t add{};
        add.struct_size = sizeof add;
        add.n = n * c.hidden_size;
        add.a = h_stream;
        add.b = sublayer_out;
        add.out = h_stream;
        s.stream.launch(PAGODA_OP_ADD, &add);
    } else if (rows > 0 || s.hidden_count > 0) {
        s.rmsnorm(w.final_norm(), n, sublayer_out, h_stream, normed_x);
        if (s.hidden_count > 0)
            s.gather(n, s.hidden_rows.get(), s.hidden_count, PAGODA_DTYPE_F32, s.pooled.get());
    }
    if (last && rows > 0) {
        s.gather(n, s.logit_rows.get(), rows, act, gathered_rows);
        s.lm_head(gathered_rows, int64_t(rows), static_cast<float *>(device_logits));
    }
}

}  // namespace pagoda::exec
