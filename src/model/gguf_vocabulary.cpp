#include "model/gguf_vocabulary.hpp"

#include "common/error.hpp"

namespace pagoda::model {

namespace {

template <typename T>
void check_length(const GgufFile &file, const char *key, const std::vector<T> &v, size_t n) {
    if (v.size() != n)
        throw Error(PAGODA_ERR_FORMAT, file.path() + ": key '" + key + "' has " +
                                           std::to_string(v.size()) + " entries for " +
                                           std::to_string(n) + " tokens");
}

}  // namespace

int32_t gguf_special_token_id(const GgufFile &file, const char *key, size_t vocab_size) {
    if (!file.has(key)) return -1;
    const uint32_t id = file.get_u32(key);
    if (id == UINT32_MAX) return -1;
    if (id >= vocab_size)
        throw Error(PAGODA_ERR_FORMAT, file.path() + ": key '" + key + "' = " + std::to_string(id) +
                                           " is outside the vocabulary of " +
                                           std::to_string(vocab_size) + " tokens");
    return int32_t(id);
}

GgufVocabulary read_gguf_vocabulary(const GgufFile &file) {
    GgufVocabulary v;
    if (!file.has("tokenizer.ggml.tokens")) return v;
    v.tokens = file.get_string_array("tokenizer.ggml.tokens");
    const size_t n = v.tokens.size();
    if (file.has("tokenizer.ggml.model")) v.model = file.get_string("tokenizer.ggml.model");
    if (file.has("tokenizer.ggml.pre")) v.pre = file.get_string("tokenizer.ggml.pre");
    if (file.has("tokenizer.ggml.scores")) {
        v.scores = file.get_f32_array("tokenizer.ggml.scores");
        check_length(file, "tokenizer.ggml.scores", v.scores, n);
    }
    if (file.has("tokenizer.ggml.token_type")) {
        v.token_types = file.get_i32_array("tokenizer.ggml.token_type");
        check_length(file, "tokenizer.ggml.token_type", v.token_types, n);
    }
    if (file.has("tokenizer.ggml.merges")) v.merges = file.get_string_array("tokenizer.ggml.merges");
    v.bos_token_id = gguf_special_token_id(file, "tokenizer.ggml.bos_token_id", n);
    v.eos_token_id = gguf_special_token_id(file, "tokenizer.ggml.eos_token_id", n);
    v.unknown_token_id = gguf_special_token_id(file, "tokenizer.ggml.unknown_token_id", n);
    v.padding_token_id = gguf_special_token_id(file, "tokenizer.ggml.padding_token_id", n);
    auto flag = [&](const char *key) -> int8_t {
        return file.has(key) ? int8_t(file.get_bool(key) ? 1 : 0) : int8_t(-1);
    };
    v.add_bos_token = flag("tokenizer.ggml.add_bos_token");
    v.add_eos_token = flag("tokenizer.ggml.add_eos_token");
    v.add_space_prefix = flag("tokenizer.ggml.add_space_prefix");
    // Chat templates: the default one, then llama.cpp's named ones (tokenizer.chat_template.tool_use).
    const std::string prefix = "tokenizer.chat_template";
    if (file.has(prefix)) v.chat_templates.emplace_back("default", file.get_string(prefix));
    for (const auto &[key, value] : file.metadata())
        if (key.size() > prefix.size() + 1 && key.compare(0, prefix.size() + 1, prefix + ".") == 0)
            v.chat_templates.emplace_back(key.substr(prefix.size() + 1), file.get_string(key));
    return v;
}

void write_gguf_vocabulary(const GgufVocabulary &v, GgufMetadata &m) {
    m.set_string("tokenizer.ggml.model", v.model);
    if (!v.pre.empty()) m.set_string("tokenizer.ggml.pre", v.pre);
    m.set_string_array("tokenizer.ggml.tokens", v.tokens);
    if (!v.scores.empty()) m.set_f32_array("tokenizer.ggml.scores", v.scores);
    if (!v.token_types.empty()) m.set_i32_array("tokenizer.ggml.token_type", v.token_types);
    if (!v.merges.empty()) m.set_string_array("tokenizer.ggml.merges", v.merges);
    auto id = [&](const char *key, int32_t value) {
        if (value >= 0) m.set_u32(key, uint32_t(value));
    };
    id("tokenizer.ggml.bos_token_id", v.bos_token_id);
    id("tokenizer.ggml.eos_token_id", v.eos_token_id);
    id("tokenizer.ggml.unknown_token_id", v.unknown_token_id);
    id("tokenizer.ggml.padding_token_id", v.padding_token_id);
    auto flag = [&](const char *key, int8_t value) {
        if (value >= 0) m.set_bool(key, value == 1);
    };
    flag("tokenizer.ggml.add_bos_token", v.add_bos_token);
    flag("tokenizer.ggml.add_eos_token", v.add_eos_token);
    flag("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
    for (const auto &[name, source] : v.chat_templates)
        m.set_string(name == "default" ? std::string("tokenizer.chat_template") : "tokenizer.chat_template." + name,
                     source);
}

}  // namespace pagoda::model
