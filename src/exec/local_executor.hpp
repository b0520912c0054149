// The whole model on one device, run on the caller's thread: LlamaForward over the cache's only
// shard, with everything a single device offers (decode graphs, sampling on the device, half
// activations).
#pragma once

#include "exec/executor.hpp"
#include "exec/llama_forward.hpp"

namespace pagoda::exec {

class LocalExecutor final : public Executor {
public:
    LocalExecutor(std::shared_ptr<const model::Model> model, std::shared_ptr<kv::KvCache> cache);

    void run(const ForwardBatch &batch, float *logits) override;
    bool can_sample_on_device() const override { return forward_.can_sample_on_device(); }
    bool run_sampled(const ForwardBatch &batch, const DeviceSampling &sampling, int32_t *tokens,
                     float *logprobs) override;
    void copy_logits(float *logits) override { forward_.copy_logits(logits); }
    bool returns_hidden_states() const override { return true; }
    void copy_hidden(float *hidden) override { forward_.copy_hidden(hidden); }
    void set_activation_dtype(pagoda_dtype_t dtype) override { forward_.set_activation_dtype(dtype); }
    pagoda_dtype_t weight_dtype() const override { return forward_.weight_dtype(); }
    void set_decode_mode(DecodeMode mode) override { forward_.set_decode_mode(mode); }
    void set_quantized_activations(bool allow) override { forward_.set_quantized_activations(allow); }
    void set_kernel_choices(std::shared_ptr<const runtime::KernelChoices> choices) override {
        forward_.set_kernel_choices(std::move(choices));
    }
    void tune_kernels(runtime::KernelChoices &choices, int64_t max_rows) override {
        forward_.tune_kernels(choices, max_rows);
    }
    int64_t graph_launches() const override { return forward_.decode_graph_stats().graph_launches; }
    bool devices_apart_from_host() const override { return !stream_.device().host_accessible(); }
    size_t device_count() const override { return 1; }
    std::vector<DeviceUsage> device_usage() const override;
    std::vector<model::ByteRange> host_weight_ranges() const override { return forward_.host_weight_ranges(); }

private:
    std::shared_ptr<kv::KvCache> cache_;
    runtime::Stream stream_;
    LlamaForward forward_;
};

}  // namespace pagoda::exec
