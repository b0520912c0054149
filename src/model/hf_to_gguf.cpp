#include "model/hf_to_gguf.hpp"

#include <cmath>
#include <cstring>
#include <numbers>

#include "common/error.hpp"
#include "model/gguf_tensor_names.hpp"
#include "model/gguf_vocabulary.hpp"
#include "model/llama_tensors.hpp"

namespace pagoda::model {

namespace {

std::string folder_name(const std::string &folder) {
    const size_t slash = folder.find_last_of('/');
    return slash == std::string::npos ? folder : folder.substr(slash + 1);
}

// The `<arch>.*` keys llama.cpp's converter writes for the Llama family.
void set_model_keys(const ModelConfig &c, const std::string &folder, GgufMetadata &m) {
    const std::string arch = gguf_architecture(c.architecture);
    const std::string k = arch + ".";
    m.set_string("general.architecture", arch);
    if (const std::string name = folder_name(folder); !name.empty()) m.set_string("general.name", name);
    m.set_u32(k + "vocab_size", uint32_t(c.vocab_size));
    m.set_u32(k + "context_length", uint32_t(c.max_position));
    m.set_u32(k + "embedding_length", uint32_t(c.hidden_size));
    m.set_u32(k + "block_count", uint32_t(c.n_layers));
    m.set_u32(k + "feed_forward_length", uint32_t(c.intermediate_size));
    m.set_u32(k + "attention.head_count", uint32_t(c.n_heads));
    m.set_u32(k + "attention.head_count_kv", uint32_t(c.n_kv_heads));
    m.set_f32(k + "rope.freq_base", float(c.rope.theta));
    m.set_f32(k + "attention.layer_norm_rms_epsilon", float(c.rms_norm_eps));
    m.set_u32(k + "rope.dimension_count", uint32_t(c.head_dim));
    const bool gemma = c.sandwich_norms;
    // Written when config.json states a head_dim, as llama.cpp's converter does: Gemma's and
    // Qwen3's always do, others when it is not hidden / heads.
    const bool qwen3 = c.architecture == Architecture::Qwen3 || c.architecture == Architecture::Qwen3Moe;
    if (c.head_dim * c.n_heads != c.hidden_size || gemma || qwen3) {
        m.set_u32(k + "attention.key_length", uint32_t(c.head_dim));
        m.set_u32(k + "attention.value_length", uint32_t(c.head_dim));
    }
    if (c.rope.scaling == PAGODA_ROPE_SCALING_LINEAR) {
        m.set_string(k + "rope.scaling.type", "linear");
        m.set_f32(k + "rope.scaling.factor", float(c.rope.factor));
    }
    // llama.cpp's phi3 converter writes the window always, 0 for none (Phi-4).
    if (c.sliding_window > 0 || c.architecture == Architecture::Phi3)
        m.set_u32(k + "attention.sliding_window", uint32_t(c.sliding_window));
    if (!c.rope.long_factors.empty()) {  // LongRoPE (the factors go as tensors)
        m.set_u32(k + "rope.scaling.original_context_length", uint32_t(c.rope.original_max_position));
        m.set_f32(k + "rope.scaling.attn_factor", float(c.rope.attention_factor));
    }
    if (c.n_experts > 0) {  // Mixtral's experts are feed_forward_length wide; Qwen3-MoE's say so
        m.set_u32(k + "expert_count", uint32_t(c.n_experts));
        m.set_u32(k + "expert_used_count", uint32_t(c.experts_per_token));
        if (c.architecture == Architecture::Qwen3Moe)
            m.set_u32(k + "expert_feed_forward_length", uint32_t(c.expert_intermediate_size));
    }
    if (c.attn_logit_softcap > 0) m.set_f32(k + "attn_logit_softcapping", float(c.attn_logit_softcap));
    if (c.final_logit_softcap > 0) m.set_f32(k + "final_logit_softcapping", float(c.final_logit_softcap));
    // llama.cpp's rule for Gemma's query scale (gguf_model.cpp); another one goes in its
    // general key.
    const int64_t layers_27b = c.architecture == Architecture::Gemma2 ? 46 : 62;
    const double implied = c.n_layers == layers_27b ? double(c.hidden_size / c.n_heads) : double(c.head_dim);
    if (gemma && c.query_pre_attn_scalar != implied)
        m.set_f32(k + "attention.scale", float(1.0 / std::sqrt(c.query_pre_attn_scalar)));
}

// Whether GGUF's gemma2/gemma3 keys can say which layers slide and how they rotate: llama.cpp
// implies even layers (Gemma 2) or five of each six (Gemma 3), the latter rotating with base
// 10000 unscaled. Other architectures have no key for windows on some layers only.
void check_layer_pattern(const ModelConfig &c, const std::string &config_path) {
    if (c.sliding_layers.empty() && !c.has_sliding_rope) return;
    const bool gemma2 = c.architecture == Architecture::Gemma2, gemma3 = c.architecture == Architecture::Gemma3;
    bool implied = gemma2 || gemma3;
    for (size_t i = 0; implied && i < c.sliding_layers.size(); ++i)
        implied = c.sliding_layers[i] == (gemma2 ? i % 2 == 0 : i % 6 < 5);
    if (c.has_sliding_rope)
        implied = implied && c.sliding_rope.theta == 10000.0 && c.sliding_rope.scaling == PAGODA_ROPE_SCALING_NONE;
    if (!implied)
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    config_path + ": which layers attend within the sliding window (or how they rotate) " +
                        "has no GGUF key for " + gguf_architecture(c.architecture) +
                        ", and differs from what llama.cpp assumes for it");
}

// Llama 3's band-wise RoPE scaling as one divisor per rotated pair, as llama.cpp's converter
// writes it (rope_freqs.weight): 1 for high frequencies, `factor` for low ones, a blend between.
std::vector<float> llama3_rope_factors(const ModelConfig &c) {
    const RopeConfig &r = c.rope;
    const double old_context = double(r.original_max_position);
    const double low_wavelen = old_context / r.low_freq_factor;
    const double high_wavelen = old_context / r.high_freq_factor;
    std::vector<float> factors;
    for (int64_t i = 0; i < c.head_dim; i += 2) {
        const double freq = 1.0 / std::pow(r.theta, double(i) / double(c.head_dim));
        const double wavelen = 2 * std::numbers::pi / freq;
        if (wavelen < high_wavelen) {
            factors.push_back(1.0f);
        } else if (wavelen > low_wavelen) {
            factors.push_back(float(r.factor));
        } else {
            const double smooth = (old_context / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
            factors.push_back(float(1.0 / ((1 - smooth) / r.factor + smooth)));
        }
    }
    return factors;
}

// The values of a float tensor as F32 bytes (llama.cpp keeps 1-D tensors in F32).
std::vector<unsigned char> as_f32(const TensorRef &t, uint64_t elements) {
    std::vector<unsigned char> out(size_t(elements) * 4);
    widen_row(t.type, static_cast<const unsigned char *>(t.data), elements, reinterpret_cast<float *>(out.data()));
    return out;
}

// Hugging Face rotates half-split pairs (i, i + head_dim/2); llama.cpp rotates interleaved ones
// (2i, 2i+1). Its converter reorders each head's rows so that GGUF row h*d + 2i + a holds Hugging
// Face row h*d + a*d/2 + i (tests/fixtures/make_random_model.py derives why scores are unchanged).
std::vector<uint32_t> interleave_rows(int64_t heads, int64_t head_dim) {
    std::vector<uint32_t> order(size_t(heads * head_dim));
    const int64_t half = head_dim / 2;
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < half; ++i)
            for (int64_t a = 0; a < 2; ++a)
                order[size_t(h * head_dim + 2 * i + a)] = uint32_t(h * head_dim + a * half + i);
    return order;
}

// What GGUF's keys cannot say of a mixture of experts: llama.cpp renormalises the picked
// experts' weights (Mixtral; Qwen3-MoE with norm_topk_prob) and makes every layer sparse.
void check_experts(const ModelConfig &c, const std::string &config_path) {
    if (c.n_experts == 0) return;
    if (c.moe_routing != PAGODA_MOE_SOFTMAX_TOPK_NORM)
        throw Error(PAGODA_ERR_UNSUPPORTED, config_path + ": norm_topk_prob is false, and GGUF's " +
                                                gguf_architecture(c.architecture) +
                                                " keys imply the picked experts' weights renormalised");
    for (int64_t l = 0; l < c.n_layers; ++l)
        if (!c.is_sparse(l))
            throw Error(PAGODA_ERR_UNSUPPORTED, config_path + ": layer " + std::to_string(l) +
                                                    " has a dense MLP (mlp_only_layers, decoder_sparse_step), " +
                                                    "and GGUF has no key for layers without experts");
}

// The stacked tensor `stacked` ("model.layers.L.mlp.experts.gate_proj.weight") from the
// folder's one tensor per expert, rows expert after expert, as llama.cpp's converter stacks them.
SourceTensor stacked_experts(const HfCheckpoint &checkpoint, const ModelConfig &c, const std::string &stacked) {
    const size_t cut = stacked.find("experts.") + std::string("experts.").size();
    SourceTensor s;
    for (int64_t j = 0; j < c.n_experts; ++j) {
        const std::string name = stacked.substr(0, cut) + std::to_string(j) + "." + stacked.substr(cut);
        const TensorRef &t = checkpoint.tensors().require(name, checkpoint.folder());
        if (j == 0) {
            s.type = t.type;
            s.dims.assign(t.shape.rbegin(), t.shape.rend());
            s.dims.push_back(uint64_t(c.n_experts));
        } else if (t.type != s.type) {
            throw Error(PAGODA_ERR_UNSUPPORTED, checkpoint.folder() + ": expert tensor '" + name + "' is " +
                                                    tensor_type_name(t.type) + ", expert 0's " +
                                                    tensor_type_name(s.type) + "; GGUF stacks them in one type");
        }
        s.parts.push_back(static_cast<const unsigned char *>(t.data));
        s.bytes += t.bytes;
    }
    return s;
}

bool ends_with(const std::string &s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const char *gguf_architecture(Architecture a) {
    switch (a) {
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
    case Architecture::Gemma2: return "gemma2";
    case Architecture::Gemma3: return "gemma3";
    case Architecture::Phi3: return "phi3";
    case Architecture::Qwen3Moe: return "qwen3moe";
    case Architecture::Llama:
    case Architecture::Mixtral:
    case Architecture::Mistral: break;
    }
    return "llama";
}

QuantizeSource hf_quantize_source(std::shared_ptr<const HfCheckpoint> checkpoint,
                                  const GgufVocabulary &vocabulary) {
    const ModelConfig &c = checkpoint->config();
    const std::string config_path = checkpoint->folder() + "/config.json";
    // llama.cpp runs qwen2 and qwen3 half-split, llama (Mixtral's GGUF architecture too) interleaved.
    const bool permute = c.architecture == Architecture::Llama || c.architecture == Architecture::Mistral ||
                         c.architecture == Architecture::Mixtral;
    if (c.attention_bias != (c.architecture == Architecture::Qwen2))
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    config_path + ": attention_bias is " + (c.attention_bias ? "true" : "false") +
                        "; Pagoda's GGUF loader reads Q/K/V biases for qwen2 and only for qwen2, so " +
                        "the GGUF would not load");
    check_layer_pattern(c, config_path);
    check_experts(c, config_path);
    if (vocabulary.tokens.size() != size_t(c.vocab_size))
        throw Error(PAGODA_ERR_FORMAT, checkpoint->folder() + "/tokenizer.json: the vocabulary has " +
                                           std::to_string(vocabulary.tokens.size()) +
                                           " tokens but config.json's vocab_size is " +
                                           std::to_string(c.vocab_size) + " (the embedding's rows)");

    QuantizeSource source;
    source.path = checkpoint->folder();
    source.n_layers = c.n_layers;
    set_model_keys(c, checkpoint->folder(), source.metadata);
    write_gguf_vocabulary(vocabulary, source.metadata);

    auto add_f32 = [&](const char *name, const std::vector<float> &factors) {
        auto &bytes = source.converted.emplace_back(factors.size() * 4);
        std::memcpy(bytes.data(), factors.data(), bytes.size());
        source.tensors.push_back({name, TensorType::F32, {factors.size()}, bytes.data(), bytes.size(), {}, {}});
    };
    if (c.rope.scaling == PAGODA_ROPE_SCALING_LLAMA3) add_f32("rope_freqs.weight", llama3_rope_factors(c));
    if (!c.rope.long_factors.empty()) {
        add_f32("rope_factors_long.weight", c.rope.long_factors);
        add_f32("rope_factors_short.weight", c.rope.short_factors);
    }
    for (const ExpectedTensor &e : llama_expected_tensors(c, ExpertLayout::Stacked)) {
        const std::string gguf_name = gguf_tensor_name(e.name, tensor_naming(c));
        if (gguf_name.empty()) throw Error(PAGODA_ERR_INTERNAL, "quantize: no GGUF name for tensor '" + e.name + "'");
        if (e.shape.size() == 3) {
            source.tensors.push_back(stacked_experts(*checkpoint, c, e.name));
            source.tensors.back().name = gguf_name;
            continue;
        }
        const TensorRef &t = checkpoint->tensors().require(e.name, checkpoint->folder());
        SourceTensor s;
        s.name = gguf_name;
        s.dims.assign(t.shape.rbegin(), t.shape.rend());
        if (t.shape.size() == 1) {
            auto &bytes = source.converted.emplace_back(as_f32(t, uint64_t(t.shape[0])));
            if (c.norm_weight_offset != 0 && ends_with(e.name, "norm.weight")) {  // as llama.cpp: 1 + w
                auto *values = reinterpret_cast<float *>(bytes.data());
                for (size_t i = 0; i < bytes.size() / 4; ++i) values[i] = float(double(values[i]) + c.norm_weight_offset);
            }
            s.type = TensorType::F32;
            s.data = bytes.data();
            s.bytes = bytes.size();
        } else {
            s.type = t.type;
            s.data = static_cast<const unsigned char *>(t.data);
            s.bytes = t.bytes;
            if (permute && ends_with(e.name, "self_attn.q_proj.weight"))
                s.row_order = interleave_rows(c.n_heads, c.head_dim);
            else if (permute && ends_with(e.name, "self_attn.k_proj.weight"))
                s.row_order = interleave_rows(c.n_kv_heads, c.head_dim);
        }
        source.tensors.push_back(std::move(s));
    }
    source.backing = std::move(checkpoint);
    return source;
}

}  // namespace pagoda::model
