// Tokenizer::from_gguf: the vocabularies GGUF files carry, assembled like Hugging Face
// pipelines. "llama" is SentencePiece BPE (scores, byte tokens, a "▁" for each space and one in
// front); "gpt2" is byte-level BPE with merges and a split regex named by tokenizer.ggml.pre.
#include "common/error.hpp"
#include "tokenizer/gguf_vocabulary.hpp"
#include "tokenizer/bpe_model.hpp"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/pipeline_tokenizer.hpp"
#include "tokenizer/spm_model.hpp"

namespace pagoda::tok {

namespace {

// GGUF token types (llama.cpp's llama_token_type).
enum TokenType : int32_t {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6,
};

int32_t type_of(const GgufVocabulary &v, size_t id) {
    return v.token_types.empty() ? kNormal : v.token_types[id];
}

// Control and unknown tokens are special (parsed only on request); user-defined ones are
// always found in the text, as llama.cpp does.
std::vector<AddedToken> added_tokens_of(const GgufVocabulary &v) {
    std::vector<AddedToken> added;
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        const int32_t type = type_of(v, id);
        if ((type != kControl && type != kUnknown && type != kUserDefined) || v.tokens[id].empty()) continue;
        AddedToken t;
        t.id = int32_t(id);
        t.content = v.tokens[id];
        t.special = type != kUserDefined;
        added.push_back(std::move(t));
    }
    return added;
}

SequenceTemplate special_template(const GgufVocabulary &v, bool default_bos) {
    std::vector<int32_t> before, after;
    const bool add_bos = v.add_bos_token < 0 ? default_bos : v.add_bos_token == 1;
    const bool add_eos = v.add_eos_token == 1;
    if (add_bos && v.bos_token_id >= 0) before.push_back(v.bos_token_id);
    if (add_eos && v.eos_token_id >= 0) after.push_back(v.eos_token_id);
    return {std::move(before), std::move(after)};
}

void fill_common(PipelineParts &parts, const GgufVocabulary &v) {
    parts.tokens = v.tokens;
    parts.defined.assign(v.tokens.size(), true);
    parts.bos = v.bos_token_id;
    parts.eos = v.eos_token_id;
    parts.unk = v.unknown_token_id;
    parts.pad = v.padding_token_id;
    parts.added_tokens = AddedTokens(added_tokens_of(v));
}

std::shared_ptr<Tokenizer> spm_from_gguf(const GgufVocabulary &v) {
    const std::string metaspace = "\xE2\x96\x81";
    PipelineParts parts;
    fill_common(parts, v);
    const bool space_prefix = v.add_space_prefix != 0;  // llama.cpp's default is on
    std::vector<std::unique_ptr<Normalizer>> normalize;
    if (space_prefix) normalize.push_back(std::make_unique<PrependNormalizer>(" "));
    normalize.push_back(std::make_unique<ReplaceNormalizer>(TextPattern::literal(" "), metaspace));
    parts.normalizer = std::make_unique<SequenceNormalizer>(std::move(normalize));

    std::vector<bool> mergeable(v.tokens.size());
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        const int32_t type = type_of(v, id);
        mergeable[id] = type == kNormal || type == kUserDefined;
    }
    parts.model = std::make_unique<SpmModel>(v.tokens, v.scores, mergeable, v.unknown_token_id);
    parts.post_template = special_template(v, true);

    // Hugging Face's Llama decoder: "▁" to spaces, byte tokens to bytes, one leading space off.
    std::vector<std::unique_ptr<Decoder>> decode;
    decode.push_back(std::make_unique<ReplaceDecoder>(TextPattern::literal(metaspace), " "));
    decode.push_back(std::make_unique<ByteFallbackDecoder>());
    decode.push_back(std::make_unique<FuseDecoder>());
    if (space_prefix) decode.push_back(std::make_unique<StripDecoder>(" ", 1, 0));
    parts.decoder = std::make_unique<SequenceDecoder>(std::move(decode));
    parts.piece_style = PieceStyle::Metaspace;
    parts.byte_fallback = true;
    return std::make_shared<PipelineTokenizer>(std::move(parts));
}

std::shared_ptr<Tokenizer> bpe_from_gguf(const GgufVocabulary &v, const std::string &source) {
    // llama.cpp's names for the split rules (tokenizer.ggml.pre).
    const char *regex = nullptr;
    bool ignore_merges = false;
    const std::string &pre = v.pre;
    if (pre.empty() || pre == "default" || pre == "gpt2" || pre == "gpt-2") {
        regex = kGpt2SplitRegex;
    } else if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
        regex = kLlama3SplitRegex;
        ignore_merges = true;  // as llama.cpp does for Llama 3
    } else if (pre == "qwen2") {
        regex = kQwen2SplitRegex;
    } else {
        throw Error(PAGODA_ERR_UNSUPPORTED, source + ": tokenizer.ggml.pre '" + pre +
                                                "' is not supported (supported: default, gpt2, "
                                                "llama-bpe, qwen2)");
    }
    PipelineParts parts;
    fill_common(parts, v);
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(std::make_unique<SplitPreTokenizer>(TextPattern::regex(regex, source + ": tokenizer.ggml.pre"),
                                                        SplitBehavior::Isolated, false));
    steps.push_back(std::make_unique<ByteLevelPreTokenizer>(false, false));
    parts.pre_tokenizer = std::make_unique<SequencePreTokenizer>(std::move(steps));

    Vocabulary vocab;
    vocab.reserve(v.tokens.size());
    for (size_t id = 0; id < v.tokens.size(); ++id) vocab.emplace(v.tokens[id], int32_t(id));
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(v.merges.size());
    for (size_t i = 0; i < v.merges.size(); ++i) {
        const std::string &m = v.merges[i];
        const size_t space = m.find(' ');
        if (space == std::string::npos)
            throw Error(PAGODA_ERR_FORMAT, source + ": tokenizer.ggml.merges[" + std::to_string(i) +
                                               "] = \"" + m + "\" is not two tokens separated by a space");
        merges.emplace_back(m.substr(0, space), m.substr(space + 1));
    }
    BpeOptions options;
    options.ignore_merges = ignore_merges;
    parts.model = std::make_unique<BpeModel>(std::move(vocab), merges, std::move(options),
                                             source + ": tokenizer.ggml.merges");
    parts.post_template = special_template(v, false);
    parts.decoder = std::make_unique<ByteLevelDecoder>();
    parts.piece_style = PieceStyle::ByteLevel;
    return std::make_shared<PipelineTokenizer>(std::move(parts));
}

// The special tokens a chat template sees, named as tokenizer_config.json names them, spelled
// as the vocabulary spells them (what llama.cpp passes its templates too).
nlohmann::ordered_json gguf_special_tokens(const GgufVocabulary &v) {
    nlohmann::ordered_json specials = nlohmann::ordered_json::object();
    auto add = [&](const char *name, int32_t id) {
        if (id >= 0 && size_t(id) < v.tokens.size() && !v.tokens[size_t(id)].empty()) specials[name] = v.tokens[size_t(id)];
    };
    add("bos_token", v.bos_token_id);
    add("eos_token", v.eos_token_id);
    add("unk_token", v.unknown_token_id);
    add("pad_token", v.padding_token_id);
    return specials;
}

}  // namespace

std::shared_ptr<const Tokenizer> Tokenizer::from_gguf(const GgufVocabulary &vocabulary,
                                                      const std::string &source) {
    if (vocabulary.tokens.empty())
        throw Error(PAGODA_ERR_NOT_FOUND, source + ": the file has no tokenizer (no tokenizer.ggml.tokens)");
    std::shared_ptr<Tokenizer> tokenizer;
    if (vocabulary.model == "llama") tokenizer = spm_from_gguf(vocabulary);
    else if (vocabulary.model == "gpt2") tokenizer = bpe_from_gguf(vocabulary, source);
    else
        throw Error(PAGODA_ERR_UNSUPPORTED, source + ": tokenizer.ggml.model '" + vocabulary.model +
                                                "' is not supported (supported: llama, gpt2)");
    // A set even without templates: its special tokens serve a template the caller supplies.
    tokenizer->set_chat_templates(std::make_shared<ChatTemplateSet>(
        vocabulary.chat_templates, gguf_special_tokens(vocabulary), source + ": tokenizer.chat_template"));
    return tokenizer;
}

}  // namespace pagoda::tok
