#include "model/hf_config.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "model/quant_blocks.hpp"
#include "model/quantize_blocks.hpp"

namespace pagoda::model {

namespace {

using nlohmann::json;

constexpr const char *kSupported =
    "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, "
    "Gemma3ForCausalLM, Phi3ForCausalLM, MixtralForCausalLM, Qwen3MoeForCausalLM";

[[noreturn]] void fail(pagoda_status_t status, const std::string &source, const std::string &what) {
    throw Error(status, source + ": " + what);
}

json parse_object(std::string_view text, const std::string &source) {
    json doc = parse_json_text(text, source);
    if (!doc.is_object())
        fail(PAGODA_ERR_FORMAT, source,
             "holds " + json_type_phrase(doc) + ", expected a JSON object");
    return doc;
}

// Reads keys of one JSON object (config.json or one of its nested objects, `where` naming it in
// messages). A key holding null counts as absent, as transformers writes absent options as null.
class Keys {
public:
    Keys(const json &object, std::string source, std::string where = "")
        : object_(object), source_(std::move(source)), where_(std::move(where)) {}

    const json *find(const char *key) const {
        auto it = object_.find(key);
        return it == object_.end() || it->is_null() ? nullptr : &*it;
    }

    std::optional<int64_t> integer(const char *key) const {
        const json *v = find(key);
        if (v == nullptr) return std::nullopt;
        if (v->is_number_integer() && !v->is_number_unsigned()) return v->get<int64_t>();
        if (v->is_number_unsigned() &&
            v->get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()))
            return int64_t(v->get<uint64_t>());
        wrong_type(key, *v, "an integer");
    }
    int64_t integer(const char *key, int64_t fallback) const {
        return integer(key).value_or(fallback);
    }
    int64_t required_integer(const char *key) const {
        auto v = integer(key);
        if (!v) missing(key);
        return *v;
    }

    std::optional<double> number(const char *key) const {
        const json *v = find(key);
        if (v == nullptr) return std::nullopt;
        if (!v->is_number()) wrong_type(key, *v, "a number");
        return v->get<double>();
    }
    double number(const char *key, double fallback) const { return number(key).value_or(fallback); }
    double required_number(const char *key) const {
        auto v = number(key);
        if (!v) missing(key);
        return *v;
    }

    bool boolean(const char *key, bool fallback) const {
        const json *v = find(key);
        if (v == nullptr) return fallback;
        if (!v->is_boolean()) wrong_type(key, *v, "a boolean");
        return v->get<bool>();
    }

    std::optional<std::string> string(const char *key) const {
        const json *v = find(key);
        if (v == nullptr) return std::nullopt;
        if (!v->is_string()) wrong_type(key, *v, "a string");
        return v->get<std::string>();
    }

    // A token id: an integer that fits int32 (vocabularies are indexed by int32_t).
    int32_t token(const char *key, const json &v) const {
        if (!v.is_number_integer()) wrong_type(key, v, "an integer token id");
        if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(INT32_MAX)
                                   : (v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX))
            fail(PAGODA_ERR_FORMAT, source_,
                 "\"" + name(key) + "\" holds " + v.dump() + ", not a token id");
        return int32_t(v.get<int64_t>());
    }

    [[noreturn]] void missing(const char *key) const {
        fail(PAGODA_ERR_FORMAT, source_, "the required key \"" + name(key) + "\" is missing");
    }
    [[noreturn]] void wrong_type(const char *key, const json &v, const char *expected) const {
        fail(PAGODA_ERR_FORMAT, source_,
             "\"" + name(key) + "\" is " + json_type_phrase(v) + ", expected " + expected);
    }

    std::string name(const char *key) const { return where_.empty() ? key : where_ + "." + key; }

private:
    const json &object_;
    std::string source_;
    std::string where_;
};

Architecture parse_architecture(const Keys &keys, const std::string &source, std::string *name) {
    const json *list = keys.find("architectures");
    if (list == nullptr) keys.missing("architectures");
    if (!list->is_array() || list->empty() || !(*list)[0].is_string())
        keys.wrong_type("architectures", *list, "a non-empty array of strings");
    *name = (*list)[0].get<std::string>();
    if (*name == "LlamaForCausalLM") return Architecture::Llama;
    if (*name == "MistralForCausalLM") return Architecture::Mistral;
    if (*name == "Qwen2ForCausalLM") return Architecture::Qwen2;
    if (*name == "Qwen3ForCausalLM") return Architecture::Qwen3;
    if (*name == "Gemma2ForCausalLM") return Architecture::Gemma2;
    if (*name == "Gemma3ForCausalLM") return Architecture::Gemma3;
    if (*name == "Phi3ForCausalLM") return Architecture::Phi3;
    if (*name == "MixtralForCausalLM") return Architecture::Mixtral;
    if (*name == "Qwen3MoeForCausalLM") return Architecture::Qwen3Moe;
    if (*name == "Gemma3ForConditionalGeneration")
        fail(PAGODA_ERR_UNSUPPORTED, source,
             "architecture \"Gemma3ForConditionalGeneration\" (Gemma 3 with its vision tower) is not "
             "supported; text models only (Gemma3ForCausalLM)");
    fail(PAGODA_ERR_UNSUPPORTED, source,
         "architecture \"" + *name + "\" is not supported (supported: " + kSupported + ")");
}

// A list of positive factors, one per rotated pair.
std::vector<float> read_factors(const Keys &s, const char *key) {
    const json *v = s.find(key);
    if (v == nullptr) s.missing(key);
    if (!v->is_array()) s.wrong_type(key, *v, "an array of numbers");
    std::vector<float> out;
    for (const json &f : *v) {
        if (!f.is_number()) s.wrong_type(key, *v, "an array of numbers");
        out.push_back(f.get<float>());
    }
    return out;
}

// LongRoPE as transformers computes it (_compute_longrope_parameters): the factor is the ratio of
// max_position_embeddings to original_max_position_embeddings where the config has the latter
// (Phi-3), else rope_scaling's; attention_factor defaults to √(1 + ln factor / ln original).
// Which factors apply goes by the model's context, not per sequence
// (ModelConfig::longrope_divisors).
void parse_longrope(const Keys &keys, const Keys &s, RopeConfig &rope, int64_t max_position) {
    rope.long_factors = read_factors(s, "long_factor");
    rope.short_factors = read_factors(s, "short_factor");
    double factor = 0.0;
    if (auto original = keys.integer("original_max_position_embeddings")) {
        rope.original_max_position = *original;
        factor = *original > 0 ? double(max_position) / double(*original) : 0.0;
    } else {
        rope.original_max_position = max_position;
        factor = s.required_number("factor");
    }
    if (auto af = s.number("attention_factor")) rope.attention_factor = *af;
    else if (factor > 1.0 && rope.original_max_position > 1)
        rope.attention_factor = std::sqrt(1.0 + std::log(factor) / std::log(double(rope.original_max_position)));
}

void parse_rope_scaling(const Keys &keys, const std::string &source, RopeConfig &rope, int64_t max_position) {
    const json *scaling = keys.find("rope_scaling");
    if (scaling == nullptr) return;
    if (!scaling->is_object()) keys.wrong_type("rope_scaling", *scaling, "an object");
    const Keys s(*scaling, source, "rope_scaling");
    // transformers renamed "type" to "rope_type"; files carry either.
    auto type = s.string("rope_type");
    if (!type) type = s.string("type");
    if (!type) s.missing("rope_type");
    if (*type == "default") return;
    if (*type == "linear") {
        rope.scaling = PAGODA_ROPE_SCALING_LINEAR;
        rope.factor = s.required_number("factor");
    } else if (*type == "llama3") {
        rope.scaling = PAGODA_ROPE_SCALING_LLAMA3;
        rope.factor = s.required_number("factor");
        rope.low_freq_factor = s.required_number("low_freq_factor");
        rope.high_freq_factor = s.required_number("high_freq_factor");
        rope.original_max_position = s.required_integer("original_max_position_embeddings");
    } else if (*type == "longrope" || *type == "su") {  // "su": Phi-3's first name for it
        parse_longrope(keys, s, rope, max_position);
    } else {
        fail(PAGODA_ERR_UNSUPPORTED, source,
             "rope_scaling type \"" + *type + "\" is not supported (supported: linear, llama3, longrope)");
    }
}

bool is_gemma(Architecture a) { return a == Architecture::Gemma2 || a == Architecture::Gemma3; }

// A soft-cap as transformers reads it: absent = the class's default, null = none.
double softcap(const json &doc, const Keys &keys, const char *key, double fallback) {
    if (!doc.contains(key)) return fallback;
    return keys.number(key).value_or(0.0);
}

// √hidden as Gemma multiplies its embeddings: a tensor of the hidden states' type, so rounded
// to bf16 or f16 when the checkpoint is (torch_dtype, or dtype in newer files).
double gemma_embedding_scale(const Keys &keys, int64_t hidden) {
    const float exact = float(std::sqrt(double(hidden)));
    auto type = keys.string("torch_dtype");
    if (!type) type = keys.string("dtype");
    if (type == "bfloat16") {
        uint32_t bits;
        std::memcpy(&bits, &exact, 4);
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000u;  // to nearest, ties to even
        float rounded;
        std::memcpy(&rounded, &bits, 4);
        return rounded;
    }
    if (type == "float16") return half_to_float(float_to_half(exact));
    return exact;
}

// Which layers slide: config.json's layer_types where it has them, else Gemma 2's every other
// layer from the first, Gemma 3's all but each sliding_window_pattern-th.
void parse_gemma_layers(const Keys &keys, const std::string &source, ModelConfig &c) {
    if (c.n_layers <= 0 || c.n_layers > kMaxLayers) return;  // validate() names it
    c.sliding_layers.assign(size_t(c.n_layers), 0);
    if (const json *types = keys.find("layer_types")) {
        if (!types->is_array() || types->size() != size_t(c.n_layers))
            keys.wrong_type("layer_types", *types, "an array with one entry per layer");
        for (size_t i = 0; i < types->size(); ++i) {
            const json &t = (*types)[i];
            if (t == "sliding_attention") c.sliding_layers[i] = 1;
            else if (t != "full_attention")
                fail(PAGODA_ERR_UNSUPPORTED, source,
                     "layer_types[" + std::to_string(i) + "] is " + t.dump() +
                         " (supported: sliding_attention, full_attention)");
        }
        return;
    }
    const int64_t pattern = c.architecture == Architecture::Gemma2 ? 2 : keys.integer("sliding_window_pattern", 6);
    if (pattern < 1) fail(PAGODA_ERR_FORMAT, source, "sliding_window_pattern " + std::to_string(pattern) + " is below 1");
    for (int64_t i = 0; i < c.n_layers; ++i) c.sliding_layers[size_t(i)] = (i + 1) % pattern != 0;
}

// Gemma 2 and Gemma 3 (text): transformers' Gemma2Config and Gemma3TextConfig, defaults included.
void parse_gemma(const json &doc, const Keys &keys, const std::string &source, ModelConfig &c) {
    const bool gemma2 = c.architecture == Architecture::Gemma2;
    c.sandwich_norms = true;
    c.norm_weight_offset = 1.0;
    c.mlp_activation = PAGODA_GLU_GELU_TANH;
    c.embedding_scale = gemma_embedding_scale(keys, c.hidden_size);
    c.query_pre_attn_scalar = keys.number("query_pre_attn_scalar", 256.0);
    c.attn_logit_softcap = softcap(doc, keys, "attn_logit_softcapping", gemma2 ? 50.0 : 0.0);
    c.final_logit_softcap = softcap(doc, keys, "final_logit_softcapping", gemma2 ? 30.0 : 0.0);
    c.sliding_window = keys.integer("sliding_window", 4096);
    parse_gemma_layers(keys, source, c);
    if (!gemma2) {  // windowed layers rotate with their own base, unscaled
        c.has_sliding_rope = true;
        c.sliding_rope = RopeConfig{};
        c.sliding_rope.layout = PAGODA_ROPE_HALF_SPLIT;
        c.sliding_rope.theta = keys.number("rope_local_base_freq", 10000.0);
    }
}

// Mixtral (MixtralConfig): num_local_experts experts as wide as intermediate_size on every
// layer, the picked ones' softmax renormalised.
void parse_mixtral(const Keys &keys, ModelConfig &c) {
    c.n_experts = keys.integer("num_local_experts", 8);
    c.experts_per_token = keys.integer("num_experts_per_tok", 2);
    c.expert_intermediate_size = c.intermediate_size;
    c.moe_routing = PAGODA_MOE_SOFTMAX_TOPK_NORM;
}

// Qwen3-MoE (Qwen3MoeConfig): experts of moe_intermediate_size on every decoder_sparse_step-th
// layer but those in mlp_only_layers (dense, of intermediate_size); the picked probabilities
// renormalised only with norm_topk_prob.
void parse_qwen3_moe(const Keys &keys, const std::string &source, ModelConfig &c) {
    c.n_experts = keys.integer("num_experts", 128);
    c.experts_per_token = keys.integer("num_experts_per_tok", 8);
    c.expert_intermediate_size = keys.integer("moe_intermediate_size", 768);
    c.moe_routing = keys.boolean("norm_topk_prob", false) ? PAGODA_MOE_SOFTMAX_TOPK_NORM : PAGODA_MOE_SOFTMAX_TOPK;
    const int64_t step = keys.integer("decoder_sparse_step", 1);
    if (step < 1) fail(PAGODA_ERR_FORMAT, source, "decoder_sparse_step " + std::to_string(step) + " is below 1");
    if (c.n_layers <= 0 || c.n_layers > kMaxLayers) return;  // validate() names it
    c.sparse_layers.assign(size_t(c.n_layers), 0);
    for (int64_t i = 0; i < c.n_layers; ++i) c.sparse_layers[size_t(i)] = (i + 1) % step == 0;
    if (const json *dense = keys.find("mlp_only_layers")) {
        if (!dense->is_array()) keys.wrong_type("mlp_only_layers", *dense, "an array of layer indices");
        for (const json &i : *dense) {
            if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= c.n_layers)
                keys.wrong_type("mlp_only_layers", *dense, "an array of layer indices below num_hidden_layers");
            c.sparse_layers[size_t(i.get<int64_t>())] = 0;
        }
    }
}

std::vector<int32_t> parse_eos(const Keys &keys, const json &v) {
    std::vector<int32_t> ids;
    if (v.is_array()) {
        for (const json &id : v) ids.push_back(keys.token("eos_token_id", id));
    } else if (v.is_number_integer()) {
        ids.push_back(keys.token("eos_token_id", v));
    } else {
        keys.wrong_type("eos_token_id", v, "an integer or an array of integers");
    }
    return ids;
}

void parse_special_tokens(const Keys &keys, ModelConfig &c) {
    if (const json *bos = keys.find("bos_token_id"))
        c.bos_token_id = keys.token("bos_token_id", *bos);
    if (const json *eos = keys.find("eos_token_id")) c.eos_token_ids = parse_eos(keys, *eos);
}

}  // namespace

ModelConfig parse_hf_config(std::string_view json_text, const std::string &source) {
    const json doc = parse_object(json_text, source);
    const Keys keys(doc, source);

    ModelConfig c;
    c.architecture = parse_architecture(keys, source, &c.architecture_name);

    // Gemma names it hidden_activation (hidden_act is older and ignored by transformers).
    const bool gemma = is_gemma(c.architecture);
    const char *act_key = gemma ? "hidden_activation" : "hidden_act";
    const char *act_supported = gemma ? "gelu_pytorch_tanh" : "silu";
    auto act = keys.string(act_key);
    if (gemma && !act) act = keys.string("hidden_act");
    if (act && *act != act_supported)
        fail(PAGODA_ERR_UNSUPPORTED, source,
             std::string(act_key) + " \"" + *act + "\" is not supported (supported: " + act_supported + ")");
    if (keys.boolean("mlp_bias", false))
        fail(PAGODA_ERR_UNSUPPORTED, source, "mlp_bias true is not supported");

    c.vocab_size = keys.required_integer("vocab_size");
    c.hidden_size = keys.required_integer("hidden_size");
    c.intermediate_size = keys.required_integer("intermediate_size");
    c.n_layers = keys.required_integer("num_hidden_layers");
    c.n_heads = keys.required_integer("num_attention_heads");
    c.n_kv_heads = keys.integer("num_key_value_heads", c.n_heads);
    c.max_position = keys.required_integer("max_position_embeddings");
    // transformers' own default for all three architectures.
    c.rms_norm_eps = keys.number("rms_norm_eps", 1e-6);

    std::optional<int64_t> head_dim = keys.integer("head_dim");
    if (!head_dim && gemma) head_dim = 256;  // Gemma's configs default it
    if (head_dim) {
        c.head_dim = *head_dim;  // may differ from hidden_size / heads (validate allows it)
    } else {
        // Non-positive head counts are left for validate() to name.
        if (c.n_heads > 0 && c.hidden_size % c.n_heads != 0)
            fail(PAGODA_ERR_FORMAT, source,
                 "hidden_size " + std::to_string(c.hidden_size) +
                     " is not a multiple of num_attention_heads " + std::to_string(c.n_heads) +
                     " and head_dim is not given");
        c.head_dim = c.n_heads > 0 ? c.hidden_size / c.n_heads : 0;
    }

    c.rope.theta = keys.number("rope_theta", c.architecture == Architecture::Gemma3 ? 1e6 : 10000.0);
    c.rope.layout = PAGODA_ROPE_HALF_SPLIT;  // transformers' rotate_half
    parse_rope_scaling(keys, source, c.rope, c.max_position);
    if (auto partial = keys.number("partial_rotary_factor"); partial && *partial != 1.0)
        fail(PAGODA_ERR_UNSUPPORTED, source,
             "partial_rotary_factor " + std::to_string(*partial) + " rotates part of each head; "
             "partial rotary embeddings are not supported");

    c.tie_word_embeddings = keys.boolean("tie_word_embeddings", gemma);
    // Qwen2's Q, K, V projections always carry biases; the others may say so explicitly.
    c.attention_bias =
        c.architecture == Architecture::Qwen2 || keys.boolean("attention_bias", false);
    c.qk_norm = c.architecture == Architecture::Qwen3 || c.architecture == Architecture::Qwen3Moe ||
                c.architecture == Architecture::Gemma3;

    switch (c.architecture) {
    case Architecture::Mixtral: parse_mixtral(keys, c); [[fallthrough]];
    case Architecture::Mistral: c.sliding_window = keys.integer("sliding_window", 0); break;
    case Architecture::Phi3:  // one qkv_proj and one gate_up_proj; a window on every layer
        c.fused_projections = true;
        c.sliding_window = keys.integer("sliding_window", 0);
        break;
    case Architecture::Qwen3Moe: parse_qwen3_moe(keys, source, c); [[fallthrough]];
    case Architecture::Qwen2:
    case Architecture::Qwen3:
        // Qwen configs carry a sliding_window that only applies when use_sliding_window is on,
        // and then only from layer max_window_layers on (transformers' default: 28).
        if (keys.boolean("use_sliding_window", false)) {
            c.sliding_window = keys.integer("sliding_window", 0);
            const int64_t full_layers = keys.integer("max_window_layers", 28);
            if (full_layers < 0) fail(PAGODA_ERR_FORMAT, source, "max_window_layers is negative");
            if (c.n_layers > 0 && c.n_layers <= kMaxLayers) {
                c.sliding_layers.assign(size_t(c.n_layers), 0);
                for (int64_t i = full_layers; i < c.n_layers; ++i) c.sliding_layers[size_t(i)] = 1;
            }
            if (full_layers >= c.n_layers) c.sliding_window = 0, c.sliding_layers.clear();
        }
        break;
    case Architecture::Gemma2:
    case Architecture::Gemma3: parse_gemma(doc, keys, source, c); break;
    case Architecture::Llama: break;
    }

    parse_special_tokens(keys, c);
    validate(c, source);
    return c;
}

void apply_hf_generation_config(ModelConfig &config, std::string_view json_text,
                                const std::string &source) {
    const json doc = parse_object(json_text, source);
    ModelConfig updated = config;
    parse_special_tokens(Keys(doc, source), updated);
    validate(updated, source);
    config = std::move(updated);
}

}  // namespace pagoda::model
