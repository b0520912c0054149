#include "model/hf_config.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/json_text.hpp"

namespace pagoda::model {

namespace {

using nlohmann::json;

constexpr const char *kSupported =
    "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM";

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
    fail(PAGODA_ERR_UNSUPPORTED, source,
         "architecture \"" + *name + "\" is not supported (supported: " + kSupported + ")");
}

void parse_rope_scaling(const Keys &keys, const std::string &source, RopeConfig &rope) {
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
    } else {
        fail(PAGODA_ERR_UNSUPPORTED, source,
             "rope_scaling type \"" + *type + "\" is not supported (supported: linear, llama3)");
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

    if (auto act = keys.string("hidden_act"); act && *act != "silu")
        fail(PAGODA_ERR_UNSUPPORTED, source,
             "hidden_act \"" + *act + "\" is not supported (supported: silu)");
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

    if (auto head_dim = keys.integer("head_dim")) {
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

    c.rope.theta = keys.number("rope_theta", 10000.0);
    c.rope.layout = PAGODA_ROPE_HALF_SPLIT;  // transformers' rotate_half
    parse_rope_scaling(keys, source, c.rope);

    c.tie_word_embeddings = keys.boolean("tie_word_embeddings", false);
    // Qwen2's Q, K, V projections always carry biases; the others may say so explicitly.
    c.attention_bias =
        c.architecture == Architecture::Qwen2 || keys.boolean("attention_bias", false);
    c.qk_norm = c.architecture == Architecture::Qwen3;

    switch (c.architecture) {
    case Architecture::Mistral: c.sliding_window = keys.integer("sliding_window", 0); break;
    case Architecture::Qwen2:
    case Architecture::Qwen3:
        // Qwen configs carry a sliding_window that only applies when use_sliding_window is on,
        // and then only from layer max_window_layers on (transformers' default: 28).
        if (keys.boolean("use_sliding_window", false)) {
            c.sliding_window = keys.integer("sliding_window", 0);
            const int64_t full_layers = keys.integer("max_window_layers", 28);
            if (full_layers < 0) fail(PAGODA_ERR_FORMAT, source, "max_window_layers is negative");
            if (c.n_layers > 0 && c.n_layers <= 4096) {
                c.sliding_layers.assign(size_t(c.n_layers), 0);
                for (int64_t i = full_layers; i < c.n_layers; ++i) c.sliding_layers[size_t(i)] = 1;
            }
            if (full_layers >= c.n_layers) c.sliding_window = 0, c.sliding_layers.clear();
        }
        break;
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
