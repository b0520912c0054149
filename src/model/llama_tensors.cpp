#include "model/llama_tensors.hpp"

namespace pagoda::model {

std::vector<ExpectedTensor> llama_expected_tensors(const ModelConfig &c, ExpertLayout experts) {
    const int64_t hidden = c.hidden_size;
    const int64_t q_rows = c.n_heads * c.head_dim;
    const int64_t kv_rows = c.n_kv_heads * c.head_dim;

    std::vector<ExpectedTensor> out;
    out.push_back({"model.embed_tokens.weight", {c.vocab_size, hidden}});
    for (int64_t layer = 0; layer < c.n_layers; ++layer) {
        const std::string p = "model.layers." + std::to_string(layer) + ".";
        out.push_back({p + "input_layernorm.weight", {hidden}});
        if (c.fused_projections) {
            out.push_back({p + "self_attn.qkv_proj.weight", {q_rows + 2 * kv_rows, hidden}});
        } else {
            out.push_back({p + "self_attn.q_proj.weight", {q_rows, hidden}});
            out.push_back({p + "self_attn.k_proj.weight", {kv_rows, hidden}});
            out.push_back({p + "self_attn.v_proj.weight", {kv_rows, hidden}});
        }
        if (c.attention_bias) {
            out.push_back({p + "self_attn.q_proj.bias", {q_rows}});
            out.push_back({p + "self_attn.k_proj.bias", {kv_rows}});
            out.push_back({p + "self_attn.v_proj.bias", {kv_rows}});
        }
        if (c.qk_norm) {
            out.push_back({p + "self_attn.q_norm.weight", {c.head_dim}});
            out.push_back({p + "self_attn.k_norm.weight", {c.head_dim}});
        }
        out.push_back({p + "self_attn.o_proj.weight", {hidden, q_rows}});
        out.push_back({p + "post_attention_layernorm.weight", {hidden}});
        if (c.sandwich_norms) {
            out.push_back({p + "pre_feedforward_layernorm.weight", {hidden}});
            out.push_back({p + "post_feedforward_layernorm.weight", {hidden}});
        }
        if (c.is_sparse(layer)) {
            const int64_t e = c.n_experts, ei = c.expert_intermediate_size;
            out.push_back({p + "mlp.gate.weight", {e, hidden}});
            if (experts == ExpertLayout::Stacked) {
                out.push_back({p + "mlp.experts.gate_proj.weight", {e, ei, hidden}});
                out.push_back({p + "mlp.experts.up_proj.weight", {e, ei, hidden}});
                out.push_back({p + "mlp.experts.down_proj.weight", {e, hidden, ei}});
            } else {
                for (int64_t j = 0; j < e; ++j) {
                    const std::string x = p + "mlp.experts." + std::to_string(j) + ".";
                    out.push_back({x + "gate_proj.weight", {ei, hidden}});
                    out.push_back({x + "up_proj.weight", {ei, hidden}});
                    out.push_back({x + "down_proj.weight", {hidden, ei}});
                }
            }
            continue;
        }
        if (c.fused_projections) {
            out.push_back({p + "mlp.gate_up_proj.weight", {2 * c.intermediate_size, hidden}});
        } else {
            out.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, hidden}});
            out.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, hidden}});
        }
        out.push_back({p + "mlp.down_proj.weight", {hidden, c.intermediate_size}});
    }
    out.push_back({"model.norm.weight", {hidden}});
    if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {c.vocab_size, hidden}});
    return out;
}

std::string shape_string(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

}  // namespace pagoda::model
