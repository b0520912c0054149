// What LlamaForward keeps between steps, shared by the files that implement it: the forward
// pass itself (llama_forward.cpp), decode steps by bucket and graph (llama_forward_decode.cpp)
// and picking tokens on the device (llama_forward_sampling.cpp). Internal to exec/.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "exec/decode_graphs.hpp"
#include "exec/llama_forward.hpp"
#include "exec/llama_weights.hpp"
#include "exec/scratch_buffer.hpp"
#include "runtime/kernel_choices.hpp"

namespace pagoda::exec {

// A device address that a step's launches read through get(): bound, before each step, to the
// eager scratch or to a decode bucket's fixed memory (which a recorded graph bakes in).
struct StepBuffer {
    void *ptr = nullptr;
    void *get() const noexcept { return ptr; }
};

// One step's activations, [tokens, width] f32.
struct Activations {
    ScratchBuffer residual{"the residual stream"}, normed{"normalised hidden states"};
    // Cache parallelism: this device's attention log-normalisers, and every kvp peer's partial
    // attention and log-normalisers, gathered.
    ScratchBuffer lse{"attention log-normalisers"}, kv_parts{"the KV shards' attention"},
        kv_lse{"the KV shards' log-normalisers"};
    ScratchBuffer q{"queries"}, k{"keys"}, v{"values"}, attn{"attention output"};
    ScratchBuffer delta{"sublayer output"}, gate{"MLP gate"}, up{"MLP up"};
    ScratchBuffer gathered{"hidden states of logit rows"}, logits{"logits"};
    ScratchBuffer pooled{"hidden states of pooled rows"};  // f32, for embeddings
    // Mixture-of-experts layers: the router's logits, and per token its experts and weights.
    ScratchBuffer router_logits{"router logits"}, expert_ids{"routed experts"},
        expert_weights{"routing weights"};
};

// The batch's index arrays on the device, for steps run op by op.
struct StepInputs {
    ScratchBuffer token_ids{"token ids"}, positions{"positions"}, slots{"slot mapping"};
    ScratchBuffer query_start{"query starts"}, context_lens{"context lengths"};
    ScratchBuffer block_tables{"block tables"}, logit_rows{"logit rows"};
    ScratchBuffer hidden_rows{"hidden rows"};
};


struct LlamaForward::State {
    State(std::shared_ptr<const model::Model> m, const runtime::Stream &s, const ModelShard &sh)
        : model(std::move(m)), stream(s), shard(sh), weights(*model, s, sh), decode_graphs(s) {}

    void check_kv_ops(const kv::KvGeometry &g);
    // Binds the activation views to `memory`, grown for `tokens` tokens and `rows` logit rows;
    // true when a buffer moved (a graph recorded on the old ones is stale).
    bool bind_activations(Activations &memory, size_t tokens, size_t rows);
    // Uploads the batch's index arrays; `block_size` is the device's, whose KV run of each cache
    // block the slots are translated to under cache parallelism.
    void stage(const ForwardBatch &b, int32_t block_size);
    void bind_bucket(const DecodeBucket &bucket);
    // The launches of a step from the embedding (or the stage's first layer) to the LM head (or
    // the stage's hidden states), on the bound buffers; no host copies, so it can be recorded.
    void launch_layers(const ForwardBatch &b, const kv::KvGeometry &g,
                       const std::vector<kv::LayerPools> &pools, const Stage &st);
    // A decode-only step padded to its bucket: by graph where there is one (recording it on
    // the bucket's second step), op by op otherwise. False when the batch does not fit a bucket.
    bool run_bucketed(const ForwardBatch &b, const kv::KvGeometry &g,
                      const std::vector<kv::LayerPools> &pools, float *logits);
    // RoPE of layer `layer` (Gemma 3's layers differ) for `n_tokens` tokens at the step's
    // positions; `x` and `n_heads` unset.
    pagoda_op_rope_t rope_args(int64_t n_tokens, int64_t layer) const;
    // Hands the step's first `rows` rows of `logits` to the caller (copied to `host_logits`, or
    // picked on the device for run_sampled) and synchronizes.
    void deliver(size_t rows, float *host_logits);
    void sample_on_device(size_t rows);
    // The descriptor of y = x · Wᵀ (+ bias) for `m` rows, with x, y and ldy unset.
    pagoda_op_matmul_t matmul_args(const DeviceTensor &w, const DeviceTensor &bias, int64_t m,
                                   pagoda_dtype_t x_dtype, pagoda_dtype_t y_dtype) const;
    // The variant pinned for `a` (0: the backend's rules).
    int32_t kernel_variant(const pagoda_op_matmul_t &a) const;
    // y = x · Wᵀ (+ bias), x and y of the step's activation type unless `y_dtype` says.
    void matmul(const DeviceTensor &w, const DeviceTensor &bias, const void *x, int64_t m, void *y,
                pagoda_dtype_t y_dtype = PAGODA_DTYPE_INVALID, int64_t ldy = 0);
    // Sums a row-parallel projection's partial outputs over the tensor-parallel group.
    void all_reduce(void *buffer, int64_t elements, pagoda_dtype_t dtype);
    void lm_head(const void *x, int64_t rows, float *out);
    // Row i of `out` (of `out_dtype`) = row rows[i] (device int32) of `normed`, [n, hidden]
    // of the step's activation type.
    void gather(int64_t n, const void *rows, size_t count, pagoda_dtype_t out_dtype, void *out);
    // out = rmsnorm(residual += x), x and out of the activation type, the residual f32.
    void rmsnorm(const DeviceTensor &w, int64_t rows, const void *x, float *residual, void *out);
    // A mixture-of-experts MLP on `n` tokens: `normed` → `delta` (this device's share, to be
    // all-reduced as a dense MLP's), through `gate` and `up` as scratch.
    void moe_mlp(const LlamaLayerWeights &l, int64_t n);
    // Layer `layer`'s attention sublayer: `normed` → `attn`.
    void attention(int64_t layer, const LlamaLayerWeights &l, const ForwardBatch &b,
                   const kv::KvGeometry &g, const kv::LayerPools &pools);

    std::shared_ptr<const model::Model> model;
    const runtime::Stream &stream;
    ModelShard shard;
    const mesh::Communicator *tp_comm = nullptr;
    const mesh::Communicator *kv_comm = nullptr;
    std::vector<int64_t> local_slots;  // the slots this device writes (cache parallelism)
    LlamaWeights weights;

    // What the current step's launches use, bound to one of the memories below.
    StepBuffer residual, normed, q, k, v, attn, delta, gate, up, gathered, logits;
    StepBuffer router_logits, expert_ids, expert_weights;
    StepBuffer lse, kv_parts, kv_lse;
    StepBuffer token_ids, positions, slots, query_start, context_lens, block_tables, logit_rows;
    // The step's hidden rows (ForwardBatch::hidden_rows): only steps run op by op over the
    // whole model take them, so a recorded decode graph never holds their gather.
    StepBuffer hidden_rows, pooled;
    size_t hidden_count = 0;       // rows the step in flight gathers into `pooled`
    size_t last_hidden_rows = 0;   // rows the last step left there
    // Steps run op by op own these...
    Activations eager_memory;
    StepInputs eager_inputs;
    // ...decode buckets share these activations (one step runs at a time) and own their inputs.
    Activations bucket_memory;
    DecodeGraphs decode_graphs;
    DecodeMode decode_mode = DecodeMode::Graphs;
    DecodeGraphStats decode_stats;

    // run_sampled's request for the current step, and what became of it.
    struct DevicePick {
        const DeviceSampling *sampling = nullptr;
        int32_t *tokens = nullptr;
        float *logprobs = nullptr;
        bool refused = false;
    };
    DevicePick *pick = nullptr;
    // SAMPLE's per-row arrays and results on the device.
    ScratchBuffer pick_temperature{"sampling temperatures"}, pick_top_k{"sampling top-k"},
        pick_top_p{"sampling top-p"}, pick_min_p{"sampling min-p"},
        pick_uniform{"sampling draws"}, pick_tokens{"sampled tokens"},
        pick_logprobs{"sampled log-probabilities"};
    size_t last_logit_rows = 0;  // rows the last step left in `logits`
    int can_sample = -1;         // whether the backend runs SAMPLE here; -1 = not asked yet

    // The KV cache shape whose ops the backend already accepted.
    bool kv_checked = false;
    // KV_WRITE rotates the keys itself (its `k_rope`), saving a ROPE launch and a pass over K.
    bool fused_key_rope = false;
    // The activations' type in whole-model runs (set_activation_dtype); `act` is what the step
    // in flight uses: F32 in a pipeline stage, whose hidden states cross as f32.
    pagoda_dtype_t activation_dtype = PAGODA_DTYPE_F32;
    pagoda_dtype_t act = PAGODA_DTYPE_F32;
    bool quantized_activations = false;  // set_quantized_activations
    // set_kernel_choices: this device's pinned MATMUL variants by shape (the device field left
    // empty, so that a launch's lookup builds its key without allocating).
    std::map<runtime::MatmulShape, int32_t> pinned_variants;
    kv::KvGeometry kv_checked_geometry;
    pagoda_dtype_t kv_checked_act = PAGODA_DTYPE_F32;
};

}  // namespace pagoda::exec
