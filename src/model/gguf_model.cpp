#include "model/gguf_model.hpp"

#include <cmath>
#include <cstring>
#include <set>

#include "common/error.hpp"
#include "model/gguf_tensor_names.hpp"
#include "model/llama_tensors.hpp"

namespace pagoda::model {

namespace {

struct SupportedArchitecture {
    const char *name;  // general.architecture, and the prefix of its keys
    Architecture architecture;
    // llama.cpp's converter permutes llama's Q/K rows so that RoPE rotates adjacent pairs; it
    // leaves qwen2's alone, which keep Hugging Face's half-split rotation.
    pagoda_rope_layout_t rope_layout;
    bool attention_bias;
    bool qk_norm;  // blk.N.attn_q_norm / attn_k_norm, one weight per head dimension
};

constexpr SupportedArchitecture kSupported[] = {
    {"llama", Architecture::Llama, PAGODA_ROPE_INTERLEAVED, false, false},
    {"qwen2", Architecture::Qwen2, PAGODA_ROPE_HALF_SPLIT, true, false},
    {"qwen3", Architecture::Qwen3, PAGODA_ROPE_HALF_SPLIT, false, true},
    {"gemma2", Architecture::Gemma2, PAGODA_ROPE_HALF_SPLIT, false, false},
    {"gemma3", Architecture::Gemma3, PAGODA_ROPE_HALF_SPLIT, false, true},
    {"phi3", Architecture::Phi3, PAGODA_ROPE_HALF_SPLIT, false, false},
    {"qwen3moe", Architecture::Qwen3Moe, PAGODA_ROPE_HALF_SPLIT, false, true},
};

std::string supported_list() {
    std::string s;
    for (const auto &a : kSupported) s += std::string(s.empty() ? "" : ", ") + a.name;
    return s;
}

const SupportedArchitecture &find_architecture(const GgufFile &file, std::string *name) {
    *name = file.get_string("general.architecture");
    for (const auto &a : kSupported)
        if (*name == a.name) return a;
    throw Error(PAGODA_ERR_UNSUPPORTED, file.path() + ": architecture '" + *name +
                                            "' is not supported (supported: " + supported_list() +
                                            ")");
}

// Sizes and counts: u32 in the file; bounded to int32 so that products of two stay in int64.
int64_t read_count(const GgufFile &file, const std::string &key) {
    const uint32_t v = file.get_u32(key);
    if (v > uint32_t(INT32_MAX))
        throw Error(PAGODA_ERR_FORMAT, file.path() + ": key '" + key + "' = " + std::to_string(v) +
                                           " is out of range (at most " +
                                           std::to_string(INT32_MAX) + ")");
    return v;
}

float read_positive(const GgufFile &file, const std::string &key) {
    const float v = file.get_f32(key);
    if (!(v > 0.0f) || !std::isfinite(v))
        throw Error(PAGODA_ERR_FORMAT, file.path() + ": key '" + key + "' = " + std::to_string(v) +
                                           " is not positive and finite");
    return v;
}

// What llama.cpp's gemma2 and gemma3 graphs do beyond the keys: sandwich norms (the file's norm
// weights already hold Gemma's 1 + w), GELU with the tanh approximation, embeddings scaled by
// √hidden, every other layer (Gemma 2) or five of each six (Gemma 3) attending within the
// window, Gemma 3's windowed layers rotating with base 10000 unscaled. Scores scale by
// `attention.scale` where the file has it, else as llama.cpp does: by hidden/heads for the 27B
// models (46 and 62 layers), by head_dim otherwise.
void read_gemma_keys(const GgufFile &file, const std::string &k, ModelConfig &c) {
    c.sandwich_norms = true;
    c.mlp_activation = PAGODA_GLU_GELU_TANH;
    c.embedding_scale = std::sqrt(double(c.hidden_size));
    const bool gemma2 = c.architecture == Architecture::Gemma2;
    const int64_t layers_27b = gemma2 ? 46 : 62;
    if (file.has(k + "attention.scale")) {
        const double scale = read_positive(file, k + "attention.scale");
        c.query_pre_attn_scalar = 1.0 / (scale * scale);
    } else if (c.n_layers == layers_27b && c.n_heads > 0) {
        c.query_pre_attn_scalar = double(c.hidden_size / c.n_heads);
    }
    if (gemma2 && file.has(k + "attn_logit_softcapping"))
        c.attn_logit_softcap = read_positive(file, k + "attn_logit_softcapping");
    if (gemma2 && file.has(k + "final_logit_softcapping"))
        c.final_logit_softcap = read_positive(file, k + "final_logit_softcapping");
    if (c.sliding_window > 0 && c.n_layers > 0 && c.n_layers <= kMaxLayers) {
        c.sliding_layers.assign(size_t(c.n_layers), 0);
        for (int64_t i = 0; i < c.n_layers; ++i)
            c.sliding_layers[size_t(i)] = gemma2 ? i % 2 == 0 : i % 6 < 5;
    }
    if (!gemma2) {
        c.has_sliding_rope = true;
        c.sliding_rope = RopeConfig{};
        c.sliding_rope.layout = c.rope.layout;
        c.sliding_rope.theta = 10000.0;
    }
}

// Phi-3's LongRoPE as llama.cpp's converter writes it: rope_factors_long and _short tensors,
// rope.scaling.original_context_length, rope.scaling.attn_factor. The long factors apply when
// the model's context passes the original one (what llama.cpp does for a context that long).
void read_longrope(const GgufFile &file, const std::string &k, ModelConfig &c) {
    const GgufTensor *long_factors = file.find_tensor("rope_factors_long.weight");
    const GgufTensor *short_factors = file.find_tensor("rope_factors_short.weight");
    if (long_factors == nullptr && short_factors == nullptr) return;
    if (long_factors == nullptr || short_factors == nullptr)
        throw Error(PAGODA_ERR_FORMAT, file.path() + ": tensor '" +
                                           std::string(long_factors ? "rope_factors_short" : "rope_factors_long") +
                                           ".weight' is missing beside its LongRoPE twin");
    c.rope.original_max_position = read_count(file, k + "rope.scaling.original_context_length");
    for (const GgufTensor *t : {long_factors, short_factors}) {
        const uint64_t n = t->dims.empty() ? 0 : t->dims[0];
        if (t->type != TensorType::F32 || t->dims.size() != 1 || int64_t(n) != c.head_dim / 2)
            throw Error(PAGODA_ERR_FORMAT, file.path() + ": tensor '" + t->name + "' must be F32 [head_dim / 2] = [" +
                                               std::to_string(c.head_dim / 2) + "]");
        std::vector<float> &factors = t == long_factors ? c.rope.long_factors : c.rope.short_factors;
        factors.resize(size_t(n));
        std::memcpy(factors.data(), t->data, size_t(n) * sizeof(float));
    }
    const double factor = double(c.max_position) / double(c.rope.original_max_position);
    c.rope.attention_factor = file.has(k + "rope.scaling.attn_factor")
                                  ? read_positive(file, k + "rope.scaling.attn_factor")
                              : factor <= 1.0 ? 1.0
                                              : std::sqrt(1.0 + std::log(factor) / std::log(double(c.rope.original_max_position)));
}

// A mixture of experts as llama.cpp writes one: expert_count and expert_used_count (Mixtral
// converts as "llama" with them), qwen3moe's expert_feed_forward_length (llama's experts are
// feed_forward_length wide). Both weigh the picked experts' softmax renormalised, as llama.cpp
// runs them (Mixtral; Qwen3-MoE's norm_topk_prob).
void read_experts(const GgufFile &file, const std::string &k, ModelConfig &c) {
    if (!file.has(k + "expert_count")) return;
    c.n_experts = read_count(file, k + "expert_count");
    if (c.n_experts == 0) return;
    c.experts_per_token = read_count(file, k + "expert_used_count");
    c.expert_intermediate_size = file.has(k + "expert_feed_forward_length")
                                     ? read_count(file, k + "expert_feed_forward_length")
                                     : c.intermediate_size;
    c.moe_routing = PAGODA_MOE_SOFTMAX_TOPK_NORM;
    if (c.architecture == Architecture::Llama) c.architecture = Architecture::Mixtral;
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile &file) {
    std::string arch_name;
    const SupportedArchitecture &arch = find_architecture(file, &arch_name);
    const std::string k = arch_name + ".";
    const std::string &path = file.path();

    ModelConfig c;
    c.architecture = arch.architecture;
    c.architecture_name = arch_name;
    c.max_position = read_count(file, k + "context_length");
    c.hidden_size = read_count(file, k + "embedding_length");
    c.n_layers = read_count(file, k + "block_count");
    c.intermediate_size = read_count(file, k + "feed_forward_length");
    c.n_heads = read_count(file, k + "attention.head_count");
    c.n_kv_heads = file.has(k + "attention.head_count_kv")
                       ? read_count(file, k + "attention.head_count_kv")
                       : c.n_heads;
    c.rms_norm_eps = file.get_f32(k + "attention.layer_norm_rms_epsilon");
    if (file.has(k + "attention.key_length"))
        c.head_dim = read_count(file, k + "attention.key_length");
    else if (c.n_heads > 0) {
        if (c.hidden_size % c.n_heads != 0)
            throw Error(PAGODA_ERR_FORMAT,
                        path + ": key '" + k + "embedding_length' = " +
                            std::to_string(c.hidden_size) + " is not a multiple of '" + k +
                            "attention.head_count' = " + std::to_string(c.n_heads));
        c.head_dim = c.hidden_size / c.n_heads;
    }

    // llama.cpp's converter writes the pooling of sentence-transformers embedding models.
    if (file.has(k + "pooling_type"))
        c.pooling = gguf_pooling(file.get_u32(k + "pooling_type"),
                                 path + ": key '" + k + "pooling_type'");

    // Mistral-style local attention; absent or 0 means every earlier token is visible.
    if (file.has(k + "attention.sliding_window"))
        c.sliding_window = read_count(file, k + "attention.sliding_window");

    c.rope.layout = arch.rope_layout;
    if (file.has(k + "rope.freq_base")) c.rope.theta = file.get_f32(k + "rope.freq_base");
    if (file.has(k + "rope.dimension_count")) {
        const int64_t rot = read_count(file, k + "rope.dimension_count");
        if (rot != c.head_dim)
            throw Error(PAGODA_ERR_UNSUPPORTED,
                        path + ": key '" + k + "rope.dimension_count' = " + std::to_string(rot) +
                            " rotates part of each head (head_dim " + std::to_string(c.head_dim) +
                            "); partial rotary embeddings are not supported");
    }
    if (file.has(k + "rope.scaling.type")) {
        const std::string type = file.get_string(k + "rope.scaling.type");
        if (type == "linear") {
            c.rope.scaling = PAGODA_ROPE_SCALING_LINEAR;
            c.rope.factor = file.get_f32(k + "rope.scaling.factor");
        } else if (type != "none") {
            throw Error(PAGODA_ERR_UNSUPPORTED, path + ": key '" + k + "rope.scaling.type' = '" +
                                                    type + "' is not supported (supported: none, linear)");
        }
    }

    // The vocabulary's length is the vocab size; a stated vocab_size must agree with it.
    const bool has_tokens = file.has("tokenizer.ggml.tokens");
    if (has_tokens) {
        const uint64_t n = file.get_string_array_length("tokenizer.ggml.tokens");
        if (n > uint64_t(INT32_MAX))
            throw Error(PAGODA_ERR_FORMAT, path + ": key 'tokenizer.ggml.tokens' has too many tokens");
        c.vocab_size = int64_t(n);
    }
    if (file.has(k + "vocab_size")) {
        const int64_t stated = read_count(file, k + "vocab_size");
        if (has_tokens && stated != c.vocab_size)
            throw Error(PAGODA_ERR_FORMAT, path + ": key '" + k + "vocab_size' = " +
                                               std::to_string(stated) + " but tokenizer.ggml.tokens has " +
                                               std::to_string(c.vocab_size) + " tokens");
        c.vocab_size = stated;
    } else if (!has_tokens) {
        throw Error(PAGODA_ERR_FORMAT, path + ": missing required key '" + k +
                                           "vocab_size' (and no tokenizer.ggml.tokens to count)");
    }
    c.bos_token_id = gguf_special_token_id(file, "tokenizer.ggml.bos_token_id", size_t(c.vocab_size));
    const int32_t eos = gguf_special_token_id(file, "tokenizer.ggml.eos_token_id", size_t(c.vocab_size));
    if (eos >= 0) c.eos_token_ids = {eos};

    c.attention_bias = arch.attention_bias;
    c.qk_norm = arch.qk_norm;
    if (c.architecture == Architecture::Gemma2 || c.architecture == Architecture::Gemma3)
        read_gemma_keys(file, k, c);
    read_experts(file, k, c);
    if (c.architecture == Architecture::Phi3) {
        c.fused_projections = true;
        if (c.head_dim > 0) read_longrope(file, k, c);
    }
    c.tie_word_embeddings = file.find_tensor("output.weight") == nullptr;
    validate(c, path);
    return c;
}

TensorTable gguf_tensor_table(const GgufFile &file, const ModelConfig &config) {
    const std::string &path = file.path();
    // Each layer has at least 6 tensors (Phi-3's); checking first keeps a huge block_count from
    // making llama_expected_tensors build a huge list.
    constexpr int64_t kLayerTensors = 6;
    if (config.n_layers > int64_t(file.tensors().size()) / kLayerTensors)
        throw Error(PAGODA_ERR_FORMAT,
                    path + ": key '" + config.architecture_name + ".block_count' = " +
                        std::to_string(config.n_layers) + " layers need at least " +
                        std::to_string(config.n_layers * kLayerTensors) +
                        " tensors, but the file has " + std::to_string(file.tensors().size()));

    const std::vector<ExpectedTensor> expected = llama_expected_tensors(config, ExpertLayout::Stacked);
    const TensorNaming naming = tensor_naming(config);
    std::set<std::string> wanted;
    for (const auto &e : expected) wanted.insert(e.name);

    TensorTable table;
    for (const GgufTensor &t : file.tensors()) {
        TensorRef ref;
        ref.name = canonical_tensor_name(t.name, naming);
        if (ref.name.empty())
            throw Error(PAGODA_ERR_UNSUPPORTED, path + ": tensor '" + t.name + "' is not part of a " +
                                                    config.architecture_name +
                                                    " model as Pagoda knows it");
        const bool optional = ref.name == kRopeFreqsTensor ||
                              (config.fused_projections && (ref.name == kRopeFactorsLongTensor ||
                                                            ref.name == kRopeFactorsShortTensor));
        if (wanted.count(ref.name) == 0 && !optional)
            throw Error(PAGODA_ERR_FORMAT, path + ": tensor '" + t.name + "' (" + ref.name +
                                               ") does not belong in this model (" +
                                               std::to_string(config.n_layers) + " layers" +
                                               (config.attention_bias ? "" : ", no attention biases") +
                                               (config.qk_norm ? "" : ", no Q/K norms") +
                                               ")");
        ref.type = t.type;
        ref.shape.assign(t.dims.rbegin(), t.dims.rend());  // GGUF lists the innermost first
        ref.data = t.data;
        ref.bytes = t.bytes;
        ref.file = path;
        table.add(std::move(ref));
    }

    // Optional: one f32 divisor per rotated pair.
    if (const TensorRef *f = table.find(kRopeFreqsTensor)) {
        const std::vector<int64_t> want{config.head_dim / 2};
        if (f->type != TensorType::F32 || f->shape != want)
            throw Error(PAGODA_ERR_FORMAT, path + ": tensor 'rope_freqs.weight' is " +
                                               tensor_type_name(f->type) + " " + shape_string(f->shape) +
                                               "; RoPE frequency factors must be F32 " +
                                               shape_string(want) + " (head_dim / 2)");
    }
    for (const ExpectedTensor &e : expected) {
        const TensorRef *t = table.find(e.name);
        if (t == nullptr)
            throw Error(PAGODA_ERR_FORMAT, path + ": missing tensor '" + gguf_tensor_name(e.name, naming) + "' (" +
                                               e.name + ")");
        if (t->shape != e.shape)
            throw Error(PAGODA_ERR_FORMAT, path + ": tensor '" + gguf_tensor_name(e.name, naming) + "' (" + e.name +
                                               ") has shape " + shape_string(t->shape) +
                                               " but the config implies " + shape_string(e.shape) +
                                               " (outermost first)");
    }
    return table;
}

GgufModel open_gguf_model(const std::string &path) {
    GgufModel m{GgufFile(path), {}, {}, {}};
    m.config = gguf_model_config(m.file);
    m.tensors = gguf_tensor_table(m.file, m.config);
    m.vocabulary = read_gguf_vocabulary(m.file);
    return m;
}

}  // namespace pagoda::model
