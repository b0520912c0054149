// Tokenizer::from_file: Hugging Face's tokenizer.json (and tokenizer_config.json beside it) read
// into a PipelineTokenizer. Every message names the file and the field at fault.
#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "common/log.hpp"
#include "tokenizer/bpe_model.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/pipeline_tokenizer.hpp"

namespace pagoda::tok {

namespace {

using nlohmann::json;

// A JSON value and where it sits ("tokenizer.json: model.merges[3]"), for messages.
struct Field {
    const json &value;
    std::string where;

    [[noreturn]] void fail(pagoda_status_t status, const std::string &what) const {
        throw Error(status, where + " " + what);
    }
    [[noreturn]] void wrong_type(const char *expected) const {
        fail(PAGODA_ERR_FORMAT, std::string("must be ") + expected + ", found " + json_type_phrase(value));
    }
    bool has(const char *key) const { return value.is_object() && value.contains(key) && !value[key].is_null(); }
    Field at(const char *key) const {
        if (!value.is_object()) wrong_type("an object");
        const auto it = value.find(key);
        if (it == value.end()) throw Error(PAGODA_ERR_FORMAT, where + "." + key + " is missing");
        return {*it, where + "." + key};
    }
    Field at(size_t index) const { return {value[index], where + "[" + std::to_string(index) + "]"}; }
    std::string string() const {
        if (!value.is_string()) wrong_type("a string");
        return value.get<std::string>();
    }
    bool boolean() const {
        if (!value.is_boolean()) wrong_type("a boolean");
        return value.get<bool>();
    }
    int64_t integer() const {
        if (!value.is_number_integer()) wrong_type("an integer");
        return value.get<int64_t>();
    }
    const json &array() const {
        if (!value.is_array()) wrong_type("an array");
        return value;
    }
    // Optional members with their defaults (absent or null gives the default).
    std::string string_or(const char *key, const std::string &fallback) const {
        return has(key) ? at(key).string() : fallback;
    }
    bool boolean_or(const char *key, bool fallback) const { return has(key) ? at(key).boolean() : fallback; }
    std::string type() const { return at("type").string(); }
};

int32_t token_id_value(const Field &f, int64_t limit = INT32_MAX) {
    const int64_t id = f.integer();
    if (id < 0 || id >= limit) f.fail(PAGODA_ERR_FORMAT, "= " + std::to_string(id) + " is not a valid token id");
    return int32_t(id);
}

[[noreturn]] void unsupported(const Field &f, const char *kind, const std::string &type) {
    throw Error(PAGODA_ERR_UNSUPPORTED, f.where + ": " + kind + " '" + type + "' is not supported");
}

TextPattern pattern_of(const Field &f) {
    if (f.has("String")) return TextPattern::literal(f.at("String").string());
    if (f.has("Regex")) return TextPattern::regex(f.at("Regex").string(), f.where + ".Regex");
    f.fail(PAGODA_ERR_FORMAT, "must hold \"String\" or \"Regex\"");
}

// What the components tell about the tokenizer as a whole.
struct Traits {
    bool byte_level = false;
};

std::unique_ptr<Normalizer> normalizer_of(const Field &f) {
    const std::string type = f.type();
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Normalizer>> steps;
        const Field list = f.at("normalizers");
        for (size_t i = 0; i < list.array().size(); ++i) steps.push_back(normalizer_of(list.at(i)));
        return std::make_unique<SequenceNormalizer>(std::move(steps));
    }
    if (type == "Prepend") return std::make_unique<PrependNormalizer>(f.at("prepend").string());
    if (type == "Replace")
        return std::make_unique<ReplaceNormalizer>(pattern_of(f.at("pattern")), f.at("content").string());
    if (type == "NFC") return std::make_unique<UnicodeNormalizer>(UnicodeNormalizer::Form::NFC);
    if (type == "NFD") return std::make_unique<UnicodeNormalizer>(UnicodeNormalizer::Form::NFD);
    if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(UnicodeNormalizer::Form::NFKC);
    if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(UnicodeNormalizer::Form::NFKD);
    if (type == "Lowercase") return std::make_unique<UnicodeNormalizer>(UnicodeNormalizer::Form::Lowercase);
    unsupported(f, "normalizer", type);
}

SplitBehavior behavior_of(const Field &f) {
    const std::string b = f.string();
    if (b == "Removed") return SplitBehavior::Removed;
    if (b == "Isolated") return SplitBehavior::Isolated;
    if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (b == "Contiguous") return SplitBehavior::Contiguous;
    f.fail(PAGODA_ERR_FORMAT, "= '" + b + "' is not a split behavior");
}

// Metaspace's prepend_scheme, or the older add_prefix_space it replaced.
MetaspacePreTokenizer::Prepend prepend_scheme_of(const Field &f) {
    if (f.has("prepend_scheme")) {
        const Field s = f.at("prepend_scheme");
        const std::string v = s.string();
        if (v == "always") return MetaspacePreTokenizer::Prepend::Always;
        if (v == "first") return MetaspacePreTokenizer::Prepend::First;
        if (v == "never") return MetaspacePreTokenizer::Prepend::Never;
        s.fail(PAGODA_ERR_FORMAT, "= '" + v + "' is not one of always, first, never");
    }
    return f.boolean_or("add_prefix_space", true) ? MetaspacePreTokenizer::Prepend::Always
                                                  : MetaspacePreTokenizer::Prepend::Never;
}

std::unique_ptr<PreTokenizer> pre_tokenizer_of(const Field &f, Traits &traits) {
    const std::string type = f.type();
    if (type == "Sequence") {
        std::vector<std::unique_ptr<PreTokenizer>> steps;
        const Field list = f.at("pretokenizers");
        for (size_t i = 0; i < list.array().size(); ++i) steps.push_back(pre_tokenizer_of(list.at(i), traits));
        return std::make_unique<SequencePreTokenizer>(std::move(steps));
    }
    if (type == "ByteLevel") {
        traits.byte_level = true;
        return std::make_unique<ByteLevelPreTokenizer>(f.boolean_or("add_prefix_space", true),
                                                       f.boolean_or("use_regex", true));
    }
    if (type == "Split")
        return std::make_unique<SplitPreTokenizer>(pattern_of(f.at("pattern")), behavior_of(f.at("behavior")),
                                                   f.boolean_or("invert", false));
    if (type == "Metaspace")
        return std::make_unique<MetaspacePreTokenizer>(f.string_or("replacement", "\xE2\x96\x81"),
                                                       prepend_scheme_of(f), f.boolean_or("split", true));
    if (type == "Digits") return std::make_unique<DigitsPreTokenizer>(f.boolean_or("individual_digits", false));
    if (type == "Whitespace")  // words and runs of punctuation; the whitespace between goes
        return std::make_unique<SplitPreTokenizer>(TextPattern::regex(R"(\w+|[^\w\s]+)", f.where),
                                                   SplitBehavior::Removed, true);
    if (type == "WhitespaceSplit")
        return std::make_unique<SplitPreTokenizer>(TextPattern::regex(R"(\s+)", f.where),
                                                   SplitBehavior::Removed, false);
    unsupported(f, "pre-tokenizer", type);
}

std::unique_ptr<Decoder> decoder_of(const Field &f, Traits &traits) {
    const std::string type = f.type();
    if (type == "Sequence") {
        std::vector<std::unique_ptr<Decoder>> steps;
        const Field list = f.at("decoders");
        for (size_t i = 0; i < list.array().size(); ++i) steps.push_back(decoder_of(list.at(i), traits));
        return std::make_unique<SequenceDecoder>(std::move(steps));
    }
    if (type == "ByteLevel") {
        traits.byte_level = true;
        return std::make_unique<ByteLevelDecoder>();
    }
    if (type == "Replace") return std::make_unique<ReplaceDecoder>(pattern_of(f.at("pattern")), f.at("content").string());
    if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
    if (type == "Fuse") return std::make_unique<FuseDecoder>();
    if (type == "Strip") {
        const int64_t start = f.at("start").integer(), stop = f.at("stop").integer();
        if (start < 0 || stop < 0) f.fail(PAGODA_ERR_FORMAT, "has a negative start or stop");
        return std::make_unique<StripDecoder>(f.at("content").string(), size_t(start), size_t(stop));
    }
    if (type == "Metaspace")
        return std::make_unique<MetaspaceDecoder>(f.string_or("replacement", "\xE2\x96\x81"),
                                                  prepend_scheme_of(f) != MetaspacePreTokenizer::Prepend::Never);
    unsupported(f, "decoder", type);
}

// A token's id from its text: added tokens first, then the vocabulary; -1 when neither has it.
struct TokenLookup {
    const Vocabulary &vocab;
    const std::vector<AddedToken> &added;
    int32_t find(const std::string &content) const {
        for (const AddedToken &t : added)
            if (t.content == content) return t.id;
        const auto it = vocab.find(content);
        return it == vocab.end() ? -1 : it->second;
    }
};

SequenceTemplate post_processor_of(const Field &f, const TokenLookup &lookup) {
    const std::string type = f.type();
    if (type == "ByteLevel") return {};  // changes offsets only
    if (type == "Sequence") {
        SequenceTemplate all;
        const Field list = f.at("processors");
        for (size_t i = 0; i < list.array().size(); ++i) all.then(post_processor_of(list.at(i), lookup));
        return all;
    }
    if (type == "TemplateProcessing") {
        const Field single = f.at("single");
        const Field specials = f.at("special_tokens");
        std::vector<int32_t> before, after;
        bool seen_sequence = false;
        for (size_t i = 0; i < single.array().size(); ++i) {
            const Field item = single.at(i);
            if (item.has("Sequence")) {
                const std::string which = item.at("Sequence").at("id").string();
                if (which != "A") item.fail(PAGODA_ERR_FORMAT, "names sequence '" + which + "' in a single template");
                seen_sequence = true;
                continue;
            }
            const std::string name = item.at("SpecialToken").at("id").string();
            if (!specials.value.is_object() || !specials.value.contains(name))
                specials.fail(PAGODA_ERR_FORMAT, "has no entry for \"" + name + "\", which the template uses");
            const Field ids = specials.at(name.c_str()).at("ids");
            for (size_t k = 0; k < ids.array().size(); ++k)
                (seen_sequence ? after : before).push_back(token_id_value(ids.at(k)));
        }
        if (!seen_sequence) single.fail(PAGODA_ERR_FORMAT, "has no {\"Sequence\": {\"id\": \"A\"}} item");
        return {std::move(before), std::move(after)};
    }
    if (type == "RobertaProcessing" || type == "BertProcessing") {
        // "cls": ["<s>", 0], "sep": ["</s>", 2]: CLS $A SEP.
        const Field cls = f.at("cls"), sep = f.at("sep");
        if (cls.array().size() != 2) cls.fail(PAGODA_ERR_FORMAT, "must be [token, id]");
        if (sep.array().size() != 2) sep.fail(PAGODA_ERR_FORMAT, "must be [token, id]");
        return {{token_id_value(cls.at(1))}, {token_id_value(sep.at(1))}};
    }
    unsupported(f, "post-processor", type);
}

std::vector<std::pair<std::string, std::string>> merges_of(const Field &f) {
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(f.array().size());
    for (size_t i = 0; i < f.value.size(); ++i) {
        const Field m = f.at(i);
        if (m.value.is_array()) {  // ["a", "b"] (tokenizers 0.20 and later)
            if (m.value.size() != 2) m.fail(PAGODA_ERR_FORMAT, "must hold 2 tokens");
            merges.emplace_back(m.at(size_t(0)).string(), m.at(size_t(1)).string());
        } else {  // "a b"
            const std::string s = m.string();
            const size_t space = s.find(' ');
            if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
                m.fail(PAGODA_ERR_FORMAT, "= \"" + s + "\" is not two tokens separated by one space");
            merges.emplace_back(s.substr(0, space), s.substr(space + 1));
        }
    }
    return merges;
}

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

    // The model.
    const Field model = top.at("model");
    const std::string model_type = model.string_or("type", "BPE");
    if (model_type != "BPE") unsupported(model.at("type"), "model type", model_type);
    if (model.has("dropout") && (!model.at("dropout").value.is_number() || model.at("dropout").value.get<double>() > 0.0))
        model.fail(PAGODA_ERR_UNSUPPORTED, "has BPE dropout, which inference does not use");
    Vocabulary vocab;
    int32_t vocab_end = 0;
    {
        const Field v = model.at("vocab");
        if (!v.value.is_object()) v.wrong_type("an object");
        vocab.reserve(v.value.size());
        for (const auto &[token, id_value] : v.value.items()) {
            const int32_t id = token_id_value({id_value, v.where + "[\"" + token + "\"]"});
            vocab.emplace(token, id);
            vocab_end = std::max(vocab_end, id + 1);
        }
    }
    BpeOptions options;
    options.unk_token = model.string_or("unk_token", "");
    options.fuse_unk = model.boolean_or("fuse_unk", false);
    options.byte_fallback = model.boolean_or("byte_fallback", false);
    options.ignore_merges = model.boolean_or("ignore_merges", false);
    options.continuing_subword_prefix = model.string_or("continuing_subword_prefix", "");
    options.end_of_word_suffix = model.string_or("end_of_word_suffix", "");
    const auto merges = model.has("merges") ? merges_of(model.at("merges"))
                                            : std::vector<std::pair<std::string, std::string>>{};

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
    const size_t entries = vocab.size() + added.size();
    if (static_cast<size_t>(vocab_end) > 2 * entries + 1024)
        top.fail(PAGODA_ERR_FORMAT, "has token id " + std::to_string(vocab_end - 1) + " but only " +
                                        std::to_string(entries) +
                                        " tokens: ids must number the vocabulary from 0");
    parts.tokens.resize(vocab_end);
    parts.defined.resize(vocab_end, false);
    for (const auto &[token, id] : vocab) {
        parts.tokens[id] = token;
        parts.defined[id] = true;
    }
    for (const AddedToken &t : added) {
        parts.tokens[t.id] = t.content;
        parts.defined[t.id] = true;
    }

    Traits traits;
    if (top.has("normalizer")) parts.normalizer = normalizer_of(top.at("normalizer"));
    if (top.has("pre_tokenizer")) parts.pre_tokenizer = pre_tokenizer_of(top.at("pre_tokenizer"), traits);
    if (top.has("decoder")) parts.decoder = decoder_of(top.at("decoder"), traits);
    const TokenLookup lookup{vocab, added};
    if (top.has("post_processor")) parts.post_template = post_processor_of(top.at("post_processor"), lookup);

    // The special tokens: tokenizer_config.json names them; without it, the template's first.
    if (!parts.post_template.before().empty()) parts.bos = parts.post_template.before().front();
    if (!options.unk_token.empty()) parts.unk = lookup.find(options.unk_token);
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

    parts.piece_style = traits.byte_level ? PieceStyle::ByteLevel : PieceStyle::Metaspace;
    parts.byte_fallback = options.byte_fallback;
    parts.model = std::make_unique<BpeModel>(std::move(vocab), merges, std::move(options), model.where);
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
