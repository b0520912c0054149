// LlamaForward's mixture-of-experts MLP (Mixtral, Qwen3-MoE): the router's logits, the top-k
// experts per token (MOE_ROUTE), then the experts' gate and up products, SiLU·mul over every
// token's slots, and the down products weighted and summed per token (MOE_MATMUL, which groups
// tokens by expert, so each expert's weights are read once per step and unpicked ones not at all).
// Under expert parallelism the device holds some experts only: MOE_MATMUL leaves the other slots
// at zero, and the stage's all-reduce of the MLP's output adds the groups' sums.
#include "exec/llama_forward_state.hpp"

namespace pagoda::exec {

void LlamaForward::State::moe_mlp(const LlamaLayerWeights &l, int64_t n) {
    const model::ModelConfig &c = model->config();
    const int64_t picked = c.experts_per_token, width = shard.expert_intermediate(c);
    matmul(l.router, DeviceTensor(), normed.get(), n, router_logits.get(), PAGODA_DTYPE_F32);

    pagoda_op_moe_route_t r{};
    r.struct_size = sizeof r;
    r.n_tokens = n;
    r.n_experts = c.n_experts;
    r.top_k = picked;
    r.routing = c.moe_routing;
    r.logits = static_cast<const float *>(router_logits.get());
    r.expert_ids = static_cast<int32_t *>(expert_ids.get());
    r.weights = static_cast<float *>(expert_weights.get());
    stream.launch(PAGODA_OP_MOE_ROUTE, &r);

    auto experts = [&](const std::vector<DeviceTensor> &w, const void *const *addresses, const void *x,
                       bool per_slot, const float *routing_weights, void *y) {
        pagoda_op_moe_matmul_t e = moe_matmul_query(w.front(), c, shard, act);
        e.n_tokens = n;
        e.x = x;
        e.x_per_slot = per_slot ? 1 : 0;
        e.experts = addresses;
        e.expert_ids = static_cast<const int32_t *>(expert_ids.get());
        e.weights = routing_weights;
        e.y = y;
        stream.launch(PAGODA_OP_MOE_MATMUL, &e);
    };
    experts(l.expert_gate, l.expert_gate_ptrs, normed.get(), false, nullptr, gate.get());
    experts(l.expert_up, l.expert_up_ptrs, normed.get(), false, nullptr, up.get());
    pagoda_op_silu_mul_t m{};
    m.struct_size = sizeof m;
    m.rows = n * picked;
    m.dim = width;
    m.gate = gate.get();
    m.up = up.get();
    m.out = gate.get();
    m.act_dtype = act;
    stream.launch(PAGODA_OP_SILU_MUL, &m);
    experts(l.expert_down, l.expert_down_ptrs, gate.get(), true,
            static_cast<const float *>(expert_weights.get()), delta.get());
}

}  // namespace pagoda::exec
