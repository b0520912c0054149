// What the engine runs its steps through: the forward pass of one model over the devices of its
// KV cache. One device runs the whole model on the caller's thread (LlamaForward, with decode
// graphs and sampling on the device); several run the mesh layout's stages and tensor-parallel
// shards, one worker thread per device (mesh_executor.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "exec/decode_graphs.hpp"
#include "exec/forward_batch.hpp"
#include "kv/kv_cache.hpp"
#include "mesh/layout.hpp"
#include "mesh/process_group.hpp"
#include "model/model.hpp"
#include "model/page_residency.hpp"
#include "runtime/kernel_choices.hpp"

namespace pagoda::exec {

// What one device of the executor holds and runs.
struct DeviceUsage {
    std::string device;  // "cpu:1"
    int32_t stage = 0;
    int32_t tp_rank = 0;
    int32_t tp_size = 1;
    int32_t kvp_rank = 0;
    int32_t kvp_size = 1;
    int32_t first_layer = 0;  // layers [first_layer, end_layer)
    int32_t end_layer = 0;
    int64_t kv_heads = 0;       // KV heads its cache shard holds
    uint64_t weight_bytes = 0;  // its share of the weights
    uint64_t layer_weight_bytes = 0;  // of which its decoder layers
    uint64_t expert_weight_bytes = 0; // of which its experts
    int32_t ep_rank = 0;
    int32_t ep_size = 1;
    uint64_t kv_bytes = 0;      // its KV pools
};

// How a multi-stage pipeline feeds its stages within a step.
struct PipelineOptions {
    // The step's sequences are cut into this many micro-batches so that the stages work at the
    // same time; 0 = automatic: one per stage when each gets at least `micro_batch_min_tokens`
    // tokens, fewer otherwise. A decode step is bound by reading the weights, which every
    // micro-batch does again, so cutting it only adds the pipeline's fill and drain
    // (pagoda-bench-mesh measured 0.65–0.89× at batch 16 on pp=2).
    int32_t micro_batches = 0;
    int64_t micro_batch_min_tokens = 128;
    // TeraPipe: a prefill chunk of at least `slice_min_tokens` tokens is cut into slices in the
    // proportions of `prefill_slices` (the plan's slicing of a prompt of that many tokens in
    // total), each a multiple of `granularity` tokens, the last taking the remainder. Empty:
    // prefill chunks are not sliced.
    std::vector<int64_t> prefill_slices;
    int64_t granularity = 8;
    int64_t slice_min_tokens = 64;
};

class Executor {
public:
    virtual ~Executor() = default;

    // Runs `batch` (its block ids are the cache's) and writes the logits of batch.logit_rows,
    // in order, to `logits` (host, [rows, vocab] f32). A failure on any device fails the call,
    // on the caller's thread, once every device has stopped.
    virtual void run(const ForwardBatch &batch, float *logits) = 0;
    // As LlamaForward's (llama_forward.hpp): picking tokens on the device.
    virtual bool can_sample_on_device() const = 0;
    virtual bool run_sampled(const ForwardBatch &batch, const DeviceSampling &sampling, int32_t *tokens,
                             float *logprobs) = 0;
    virtual void copy_logits(float *logits) = 0;
    // Whether run() and run_sampled() take batch.hidden_rows (embedding requests): one device
    // only; a mesh refuses them (the engine refuses such requests at submit).
    virtual bool returns_hidden_states() const = 0;
    // The last step's hidden states after the final norm at batch.hidden_rows, in order (host,
    // [hidden_rows.size(), hidden_size] f32).
    virtual void copy_hidden(float *hidden) = 0;

    virtual void set_activation_dtype(pagoda_dtype_t dtype) = 0;
    virtual pagoda_dtype_t weight_dtype() const = 0;
    virtual void set_decode_mode(DecodeMode mode) = 0;
    // As LlamaForward's, on every device.
    virtual void set_quantized_activations(bool allow) = 0;
    // As LlamaForward's, on every device; tuning measures one device at a time, so that devices
    // sharing a machine's cores or memory do not disturb each other's timings.
    virtual void set_kernel_choices(std::shared_ptr<const runtime::KernelChoices> choices) = 0;
    virtual void tune_kernels(runtime::KernelChoices &choices, int64_t max_rows) = 0;
    virtual int64_t graph_launches() const = 0;
    // Whether every device is one the host cannot address (a GPU): the engine's AUTO choices.
    virtual bool devices_apart_from_host() const = 0;
    virtual size_t device_count() const = 0;
    // This process's devices only, when the mesh spans several.
    virtual std::vector<DeviceUsage> device_usage() const = 0;
    // The bytes of the model's mapping this process's devices read in place.
    virtual std::vector<model::ByteRange> host_weight_ranges() const = 0;
    // The mesh's processes, when it spans several (null otherwise): the engine keeps its steps
    // in lockstep over it.
    virtual const mesh::ProcessGroup *processes() const { return nullptr; }
};

// What each of `devices` holds of the KV cache under `layout`, where devices[i] is mesh device
// first + i: its stage's layers and its tensor-parallel rank's KV heads (model_shard.hpp), and
// its run of every block under cache parallelism. A KV cache made of these shards is one the
// executor below takes.
std::vector<kv::KvShardSpec> kv_shards_for(const model::ModelConfig &config,
                                           const std::vector<std::shared_ptr<const runtime::Device>> &devices,
                                           const mesh::Layout &layout, size_t first = 0);

// The executor for `cache`'s devices laid out as `layout` says (one device: the whole model
// there). With a `world` of several processes, the cache holds this process's devices' shards
// only, and the layout spans every process's. Throws as placing the weights does, and
// INVALID_ARGUMENT when the cache's shards do not match the layout.
std::unique_ptr<Executor> make_executor(std::shared_ptr<const model::Model> model,
                                        std::shared_ptr<kv::KvCache> cache, const mesh::Layout &layout,
                                        const PipelineOptions &pipeline,
                                        std::shared_ptr<const mesh::World> world = nullptr);

}  // namespace pagoda::exec
