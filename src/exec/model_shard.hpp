// Which part of a model one device runs: a pipeline stage's layers and, under tensor
// parallelism (Megatron), its share of each layer: query heads and MLP columns split evenly
// over the stage's tp devices, KV heads split when tp ≤ n_kv_heads and otherwise each held by
// tp / n_kv_heads devices (as vLLM does), the LM head split by vocabulary rows when they
// divide evenly (its logits then summed into one full row by all-reduce) and replicated when
// not. Embeddings, norms and a mixture of experts' router are replicated.
//
// A mixture of experts' experts split two ways at once: expert parallelism puts whole experts
// on devices (the stage's tp_size devices form ep_size groups, group g holding experts
// [g·E/ep, (g+1)·E/ep)), and each expert's MLP columns split over the tp_size / ep_size devices
// of its group as a dense MLP's do. Every device has every token's hidden state (attention is
// tensor-parallel over all tp_size devices), so routing a token to its experts' devices costs
// nothing, and bringing the products back is the sum over devices that the stage's all-reduce
// of the MLP already is.
#pragma once

#include <cstdint>

#include "model/model_config.hpp"

namespace pagoda::exec {

struct ModelShard {
    int32_t first_layer = 0;
    int32_t end_layer = -1;  // -1: up to the model's last layer
    int32_t tp_rank = 0;
    int32_t tp_size = 1;
    // Cache parallelism: the device holds KV run kv_rank of every block, of kv_size (kv_shard.hpp),
    // and computes everything else as its kvp peers do.
    int32_t kv_rank = 0;
    int32_t kv_size = 1;
    // Expert parallelism: the groups the experts split into (divides tp_size).
    int32_t ep_size = 1;

    static ModelShard whole() { return {}; }

    int32_t end(const model::ModelConfig &c) const { return end_layer < 0 ? int32_t(c.n_layers) : end_layer; }
    bool first_stage() const { return first_layer == 0; }
    bool last_stage(const model::ModelConfig &c) const { return end(c) == int32_t(c.n_layers); }
    bool whole_model(const model::ModelConfig &c) const {
        return first_stage() && last_stage(c) && tp_size == 1 && kv_size == 1;
    }

    int64_t n_heads(const model::ModelConfig &c) const { return c.n_heads / tp_size; }
    int64_t head_begin(const model::ModelConfig &c) const { return tp_rank * n_heads(c); }
    int64_t n_kv_heads(const model::ModelConfig &c) const {
        return tp_size <= c.n_kv_heads ? c.n_kv_heads / tp_size : 1;
    }
    int64_t kv_head_begin(const model::ModelConfig &c) const {
        return tp_size <= c.n_kv_heads ? tp_rank * n_kv_heads(c) : tp_rank / (tp_size / c.n_kv_heads);
    }
    int64_t intermediate(const model::ModelConfig &c) const { return c.intermediate_size / tp_size; }
    int64_t intermediate_begin(const model::ModelConfig &c) const { return tp_rank * intermediate(c); }
    // Devices an expert's columns split over, the device's group and its place in the group.
    int32_t expert_tp() const { return tp_size / ep_size; }
    int32_t ep_rank() const { return tp_rank / expert_tp(); }
    int64_t n_local_experts(const model::ModelConfig &c) const { return c.n_experts / ep_size; }
    int64_t expert_begin(const model::ModelConfig &c) const { return ep_rank() * n_local_experts(c); }
    int64_t expert_intermediate(const model::ModelConfig &c) const { return c.expert_intermediate_size / expert_tp(); }
    int64_t expert_intermediate_begin(const model::ModelConfig &c) const {
        return (tp_rank % expert_tp()) * expert_intermediate(c);
    }
    bool vocab_split(const model::ModelConfig &c) const { return tp_size > 1 && c.vocab_size % tp_size == 0; }
    int64_t vocab_rows(const model::ModelConfig &c) const {
        return vocab_split(c) ? c.vocab_size / tp_size : c.vocab_size;
    }
    int64_t vocab_begin(const model::ModelConfig &c) const { return vocab_split(c) ? tp_rank * vocab_rows(c) : 0; }
};

}  // namespace pagoda::exec
