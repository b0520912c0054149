// Tokenizer::from_file: Hugging Face's tokenizer.json (and tokenizer_config.json beside it) read
// into a PipelineTokenizer. Every message names the file and the field at fault.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "common/log.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/pipeline_tokenizer.hpp"
#include "tokenizer/tokenizer_json_components.hpp"
#include "tokenizer/tokenizer_json_field.hpp"
#include "tokenizer/tokenizer_json_models.hpp"

namespace pagoda::tok {

namespace {

using nlohmann::json;

std::string read_text_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(PAGODA_ERR_NOT_FOUND, path + ": cannot open the file");
    return std::string(std::istreambuf_iterator<char>(in), {});
}

bool is_directory(const std::string &path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string &path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// tokenizer_config.json's bos_token etc.: a string, or an object with "content", or null.
std::string config_token(const Field &config, const char *key) {
    if (!config.has(key)) return {};
    const Field f = config.at(key);
    if (f.value.is_string()) return f.string();
    if (f.value.is_object()) return f.at("content").string();
    f.wrong_type("a string or an object with \"content\"");
}

}  // namespace

std::shared_ptr<const Tokenizer> Tokenizer::from_file(const std::string &path) {
    std::string json_path = path;
    std::string config_path;
    if (is_directory(path)) {
        json_path = path + "/tokenizer.json";
        if (is_file(path + "/tokenizer_config.json")) config_path = path + "/tokenizer_config.json";
    }
    if (!is_file(json_path)) throw Error(PAGODA_ERR_NOT_FOUND, json_path + ": no such file");
    const std::string config_text = config_path.empty() ? std::string() : read_text_file(config_path);
    return from_json_text(read_text_file(json_path), json_path,
                          config_path.empty() ? nullptr : &config_text, config_path);
}

std::shared_ptr<const Tokenizer> Tokenizer::from_json_text(std::string_view tokenizer_json,
                                                           const std::string &json_path,
                                                           const std::string *config_json,
                                                           const std::string &config_path) {
    const json root = parse_json_text(tokenizer_json, json_path);
    const Field top{root, json_path + ":"};
    if (!root.is_object()) top.wrong_type("an object");

    // The model, and the token table its vocabulary defines.
    ModelSpec spec = model_of(top.at("model"));
    int32_t vocab_end = spec.ids_end;
    const size_t model_entries = spec.pieces.empty() ? spec.vocab->size() : spec.pieces.size();

    PipelineParts parts;
    // Added tokens.
    std::vector<AddedToken> added;
    if (top.has("added_tokens")) {
        const Field list = top.at("added_tokens");
        for (size_t i = 0; i < list.array().size(); ++i) {
            const Field a = list.at(i);
            AddedToken t;
            t.id = token_id_value(a.at("id"));
            t.content = a.at("content").string();
            if (t.content.empty()) a.fail(PAGODA_ERR_FORMAT, "has an empty content");
            t.special = a.boolean_or("special", false);
            t.lstrip = a.boolean_or("lstrip", false);
            t.rstrip = a.boolean_or("rstrip", false);
            t.single_word = a.boolean_or("single_word", false);
            t.normalized = a.boolean_or("normalized", !t.special);
            vocab_end = std::max(vocab_end, t.id + 1);
            added.push_back(std::move(t));
        }
    }
    // Ids index a table: gaps are allowed, but one far past the entries would make it huge
    // for nothing (a corrupt file, not a vocabulary).
    const size_t entries = model_entries + added.size();
    if (static_cast<size_t>(vocab_end) > 2 * entries + 1024)
        top.fail(PAGODA_ERR_FORMAT, "has token id " + std::to_string(vocab_end - 1) + " but only " +
                                        std::to_string(entries) +
                                        " tokens: ids must number the vocabulary from 0");
    parts.tokens.resize(size_t(vocab_end));
    parts.defined.resize(size_t(vocab_end), false);
    if (!spec.pieces.empty()) {  // Unigram: by index, so a piece spelled twice names both ids
        for (size_t id = 0; id < spec.pieces.size(); ++id) parts.tokens[id] = std::move(spec.pieces[id]);
        std::fill(parts.defined.begin(), parts.defined.begin() + std::ptrdiff_t(spec.pieces.size()), true);
    } else {
        for (const auto &[token, id] : *spec.vocab) {
            parts.tokens[size_t(id)] = token;
            parts.defined[size_t(id)] = true;
        }
    }
    for (const AddedToken &t : added) {
        parts.tokens[t.id] = t.content;
        parts.defined[t.id] = true;
    }

    Traits traits;
    if (top.has("normalizer")) parts.normalizer = normalizer_of(top.at("normalizer"));
    if (top.has("pre_tokenizer")) parts.pre_tokenizer = pre_tokenizer_of(top.at("pre_tokenizer"), traits);
    if (top.has("decoder")) parts.decoder = decoder_of(top.at("decoder"), traits);
    const TokenLookup lookup{*spec.vocab, added};
    if (top.has("post_processor")) {
        parts.post_template = post_processor_of(top.at("post_processor"), lookup);
        // Its ids are written as numbers: each must be a token the vocabulary defines.
        for (const auto *ids : {&parts.post_template.before(), &parts.post_template.after()})
            for (int32_t id : *ids)
                if (id < 0 || id >= vocab_end || !parts.defined[size_t(id)])
                    top.at("post_processor").fail(PAGODA_ERR_FORMAT,
                                                  "adds token id " + std::to_string(id) +
                                                      ", which is not in the vocabulary");
    }

    // The special tokens: tokenizer_config.json names them; without it, the template's first.
    if (!parts.post_template.before().empty()) parts.bos = parts.post_template.before().front();
    if (!spec.unk_token.empty()) parts.unk = lookup.find(spec.unk_token);
    if (config_json != nullptr) {
        const json config_root = parse_json_text(*config_json, config_path);
        const Field config{config_root, config_path + ":"};
        if (!config_root.is_object()) config.wrong_type("an object");
        auto id_of = [&](const char *key) {
            const std::string name = config_token(config, key);
            if (name.empty()) return int32_t(-1);
            const int32_t id = lookup.find(name);
            if (id < 0) config.at(key).fail(PAGODA_ERR_FORMAT, "= \"" + name + "\" is not a token");
            return id;
        };
        parts.bos = id_of("bos_token");
        parts.eos = id_of("eos_token");
        if (config.has("unk_token")) parts.unk = id_of("unk_token");
        parts.pad = id_of("pad_token");
        // LlamaTokenizerFast's rule: either switch present rebuilds the template as
        // [BOS] $A [EOS], each part where its switch is on and its token exists.
        if (config.has("add_bos_token") || config.has("add_eos_token")) {
            std::vector<int32_t> before, after;
            if (config.boolean_or("add_bos_token", false) && parts.bos >= 0) before.push_back(parts.bos);
            if (config.boolean_or("add_eos_token", false) && parts.eos >= 0) after.push_back(parts.eos);
            parts.post_template = SequenceTemplate(std::move(before), std::move(after));
        }
    }

    parts.piece_style = !spec.piece_style_from_components ? spec.piece_style
                        : traits.byte_level                 ? PieceStyle::ByteLevel
                                                            : PieceStyle::Metaspace;
    parts.byte_fallback = spec.byte_fallback;
    parts.subword_prefix = spec.subword_prefix;
    parts.model_name = spec.name;
    parts.model = std::move(spec.model);
    parts.added_tokens = AddedTokens(std::move(added));
    auto tokenizer = std::make_shared<PipelineTokenizer>(std::move(parts));
    if (config_json != nullptr) {
        // Key order matters to templates (tojson prints dicts in order), so the chat template's
        // view of the config is read ordered. A malformed chat_template costs the templates only.
        try {
            tokenizer->set_chat_templates(
                chat_templates_from_config(nlohmann::ordered_json::parse(*config_json), config_path));
        } catch (const ChatTemplateError &e) {
            log(PAGODA_LOG_WARN, std::string(e.what()) + " (the tokenizer has no chat template)");
        }
    }
    return tokenizer;
}

}  // namespace pagoda::tok
