// The forward pass of a Llama-family decoder (Llama, Mistral, Qwen2, Qwen3) on one device,
// through the backend's ops: embedding → per layer [RMSNorm → Q/K/V (+bias) (→ per-head Q/K
// RMSNorm) → RoPE → KV write → paged attention → O → add+RMSNorm → gate/up → SiLU·mul → down]
// → final norm → LM head, for a batch of sequences of any mix of prefill chunks and decode
// tokens.
#pragma once

#include <memory>
#include <vector>

#include "exec/decode_graphs.hpp"
#include "exec/forward_batch.hpp"
#include "exec/model_shard.hpp"
#include "kv/kv_geometry.hpp"
#include "model/model.hpp"
#include "model/page_residency.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_choices.hpp"

namespace pagoda::mesh {
class Communicator;
}

namespace pagoda::exec {

// How a pipeline stage gets the residual stream of its first layer and hands on that of its
// last, in device memory ([n_tokens, hidden_size] f32) on the stage's stream.
class StageHandoff {
public:
    virtual ~StageHandoff() = default;
    virtual void receive(const runtime::Stream &stream, float *residual, int64_t n_tokens) = 0;
    virtual void send(const runtime::Stream &stream, const float *residual, int64_t n_tokens) = 0;
};

class LlamaForward {
public:
    // Places `shard` of the weights on `stream`'s device: used in place from the mapped file
    // when the device runs kernels on host weights, uploaded otherwise. Throws UNSUPPORTED
    // naming the tensor and op when the backend cannot run an op on a weight's dtype. A shard
    // split over several devices (tp_size > 1) needs set_tensor_parallel() before running.
    LlamaForward(std::shared_ptr<const model::Model> model, const runtime::Stream &stream,
                 const ModelShard &shard = ModelShard::whole());
    ~LlamaForward();
    LlamaForward(const LlamaForward &) = delete;
    LlamaForward &operator=(const LlamaForward &) = delete;

    // Runs `batch`, reading and writing the KV pools (`pools[layer]`, shaped by `geometry`),
    // and writes the logits of batch.logit_rows, in that order, to `logits` (host,
    // [logit_rows.size(), vocab_size] f32). Synchronizes before returning. A decode-only batch
    // of at most 256 sequences runs as a recorded graph where the backend records them (see
    // set_decode_mode); the pools must then stay where they are, or the graphs are re-recorded.
    void run(const ForwardBatch &batch, const kv::KvGeometry &geometry,
             const std::vector<kv::LayerPools> &pools, float *logits);

    // Whether the backend picks tokens on the device (PAGODA_OP_SAMPLE over this vocabulary).
    bool can_sample_on_device() const;
    // Like run(), but picks each logit row's token on the device, so that only the tokens
    // travel back instead of vocabulary-sized rows: `tokens` and `logprobs` (host, one per
    // logit row) get the chosen token and its raw log-probability. Returns false, with nothing
    // picked, when the device refused a row (a NaN logit, every logit -inf); the step's logits
    // are then still there for copy_logits() and the host sampler. Other failures throw.
    bool run_sampled(const ForwardBatch &batch, const kv::KvGeometry &geometry,
                     const std::vector<kv::LayerPools> &pools, const DeviceSampling &sampling,
                     int32_t *tokens, float *logprobs);
    // The logits of the last step's logit rows, as run() would have written them.
    void copy_logits(float *logits);
    // The last step's hidden states after the final norm at batch.hidden_rows, in that order
    // (host, [hidden_rows.size(), hidden_size] f32). Only whole-model runs op by op take
    // hidden rows; a pipeline stage given some throws UNSUPPORTED.
    void copy_hidden(float *hidden);

    // A pipeline stage's share of a forward pass: decoder layers [first_layer, end_layer). The
    // stage holding layer 0 embeds the token ids, a later one starts from the hidden states its
    // predecessor handed on; the stage holding the last layer writes the logits as run() does,
    // an earlier one writes its hidden states (the residual stream after its last layer)
    // instead and ignores batch.logit_rows. Only the stage's layers' pools are touched, so
    // stages running at once on different threads may share one cache.
    // A handoff, when given, takes the place of the host buffers.
    struct Stage {
        int32_t first_layer = 0;
        int32_t end_layer = 0;
        const float *hidden_in = nullptr;  // host [n_tokens, hidden_size] f32, if first_layer > 0
        float *hidden_out = nullptr;  // host [n_tokens, hidden_size] f32, if end_layer < n_layers
        StageHandoff *handoff = nullptr;
        // A last stage's rank that is not the one reporting: it runs the LM head (its share of
        // a split one) but copies no logits back.
        bool discard_logits = false;
    };
    void run_stage(const ForwardBatch &batch, const kv::KvGeometry &geometry,
                   const std::vector<kv::LayerPools> &pools, const Stage &stage, float *logits);

    const model::Model &model() const noexcept;
    const ModelShard &shard() const noexcept;
    // The communicator over the shard's tensor-parallel group (size shard().tp_size, rank
    // shard().tp_rank): the O and down projections' partial sums, and a vocabulary-split LM
    // head's logits, are all-reduced over it. Set again when the mesh rebuilds its groups.
    void set_tensor_parallel(const mesh::Communicator *comm) noexcept;
    // The communicator over the device's kvp peers (size shard().kv_size, rank shard().kv_rank):
    // each attends over its run of every block, and the runs' results are gathered and merged
    // by log-sum-exp (PAGODA_OP_ATTENTION_MERGE).
    void set_cache_parallel(const mesh::Communicator *comm) noexcept;
    // Bytes of the weights this device holds.
    uint64_t weight_bytes() const noexcept;
    uint64_t layer_weight_bytes() const noexcept;
    uint64_t expert_weight_bytes() const noexcept;
    // The bytes of the model's mapping its kernels read in place.
    const std::vector<model::ByteRange> &host_weight_ranges() const noexcept;

    // The type of the activations between ops (F32, BF16 or F16; F32 by default) in whole-model
    // runs; the residual stream and the logits stay f32, and a pipeline stage runs in f32.
    // Throws UNSUPPORTED naming the op when the backend cannot run the layer's ops in it.
    void set_activation_dtype(pagoda_dtype_t dtype);
    pagoda_dtype_t activation_dtype() const noexcept;
    // The type of the layers' matmul weights as placed on the device (the first MLP's).
    pagoda_dtype_t weight_dtype() const noexcept;

    // How decode-only batches run (decode_graphs.hpp); DecodeMode::Graphs by default, which
    // falls back to op by op where the backend records no graphs.
    void set_decode_mode(DecodeMode mode) noexcept;
    const DecodeGraphStats &decode_graph_stats() const noexcept;

    // Whether products on block-quantized weights may round the activations to 8 bits where
    // the backend takes PAGODA_MATMUL_QUANTIZE_X; off (exact) by default.
    void set_quantized_activations(bool allow) noexcept;

    // Kernel choice by measurement (runtime/kernel_choices.hpp): each product pins the variant
    // `choices` holds for this device's kind and its shape; the backend's own rules elsewhere,
    // and everywhere when `choices` is null. Throws INVALID_ARGUMENT when an entry for this
    // device's kind names a variant its backend lacks or refuses for the entry's shape.
    void set_kernel_choices(std::shared_ptr<const runtime::KernelChoices> choices);
    // Times the backend's variants of every product shape this device runs (its layers' and LM
    // head's, at the activation type of whole-model runs), for each power-of-two row bucket up
    // to the one holding `max_rows`, where `choices` has no entry yet, and adds what it chose.
    // Nothing to do when the backend offers no variants.
    void tune_kernels(runtime::KernelChoices &choices, int64_t max_rows);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace pagoda::exec
