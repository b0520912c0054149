#include "exec/local_executor.hpp"

namespace pagoda::exec {

LocalExecutor::LocalExecutor(std::shared_ptr<const model::Model> model, std::shared_ptr<kv::KvCache> cache)
    : cache_(std::move(cache)), stream_(cache_->device()), forward_(std::move(model), stream_) {}

void LocalExecutor::run(const ForwardBatch &batch, float *logits) {
    forward_.run(batch, cache_->shard(0).geometry(), cache_->pools(), logits);
}

bool LocalExecutor::run_sampled(const ForwardBatch &batch, const DeviceSampling &sampling, int32_t *tokens,
                                float *logprobs) {
    return forward_.run_sampled(batch, cache_->shard(0).geometry(), cache_->pools(), sampling, tokens, logprobs);
}

std::vector<DeviceUsage> LocalExecutor::device_usage() const {
    const model::ModelConfig &c = forward_.model().config();
    DeviceUsage u;
    u.device = stream_.device().name();
    u.end_layer = int32_t(c.n_layers);
    u.kv_heads = c.n_kv_heads;
    u.weight_bytes = forward_.weight_bytes();
    u.layer_weight_bytes = forward_.layer_weight_bytes();
    u.expert_weight_bytes = forward_.expert_weight_bytes();
    u.kv_bytes = cache_->shard(0).bytes();
    return {u};
}

}  // namespace pagoda::exec
