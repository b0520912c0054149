#include "tokenizer/tokenizer_json_models.hpp"

#include <algorithm>

#include "tokenizer/unigram_model.hpp"
#include "tokenizer/wordpiece_model.hpp"

namespace pagoda::tok {

namespace {

// {"token": id, ...}; spec.ids_end is set.
Vocabulary vocab_map_of(const Field &v, ModelSpec &spec) {
    if (!v.value.is_object()) v.wrong_type("an object");
    Vocabulary vocab;
    vocab.reserve(v.value.size());
    for (const auto &[token, id_value] : v.value.items()) {
        const int32_t id = token_id_value({id_value, v.where + "[\"" + token + "\"]"});
        vocab.emplace(token, id);
        spec.ids_end = std::max(spec.ids_end, id + 1);
    }
    return vocab;
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

ModelSpec bpe_of(const Field &model) {
    if (model.has("dropout") && (!model.at("dropout").value.is_number() || model.at("dropout").value.get<double>() > 0.0))
        model.fail(PAGODA_ERR_UNSUPPORTED, "has BPE dropout, which inference does not use");
    ModelSpec spec;
    Vocabulary vocab = vocab_map_of(model.at("vocab"), spec);
    BpeOptions options;
    options.unk_token = model.string_or("unk_token", "");
    options.fuse_unk = model.boolean_or("fuse_unk", false);
    options.byte_fallback = model.boolean_or("byte_fallback", false);
    options.ignore_merges = model.boolean_or("ignore_merges", false);
    options.continuing_subword_prefix = model.string_or("continuing_subword_prefix", "");
    options.end_of_word_suffix = model.string_or("end_of_word_suffix", "");
    const auto merges = model.has("merges") ? merges_of(model.at("merges"))
                                            : std::vector<std::pair<std::string, std::string>>{};
    spec.unk_token = options.unk_token;
    spec.byte_fallback = options.byte_fallback;
    spec.piece_style_from_components = true;
    auto bpe = std::make_unique<BpeModel>(std::move(vocab), merges, std::move(options), model.where);
    spec.vocab = &bpe->vocabulary();
    spec.model = std::move(bpe);
    return spec;
}

// "vocab": [["piece", log-probability], ...], the index being the id.
ModelSpec unigram_of(const Field &model) {
    ModelSpec spec;
    const Field v = model.at("vocab");
    std::vector<double> scores;
    scores.reserve(v.array().size());
    spec.pieces.reserve(v.value.size());
    for (size_t i = 0; i < v.value.size(); ++i) {
        const Field entry = v.at(i);
        if (!entry.value.is_array() || entry.value.size() != 2) entry.fail(PAGODA_ERR_FORMAT, "must be [piece, score]");
        spec.pieces.push_back(entry.at(size_t(0)).string());
        scores.push_back(entry.at(size_t(1)).number());
    }
    if (spec.pieces.size() > size_t(INT32_MAX)) v.fail(PAGODA_ERR_FORMAT, "has more pieces than ids can number");
    spec.ids_end = int32_t(spec.pieces.size());
    const int32_t unk_id = model.has("unk_id") ? token_id_value(model.at("unk_id")) : -1;
    spec.byte_fallback = model.boolean_or("byte_fallback", false);
    if (unk_id >= 0 && size_t(unk_id) < spec.pieces.size()) spec.unk_token = spec.pieces[size_t(unk_id)];
    auto unigram = std::make_unique<UnigramModel>(spec.pieces, std::move(scores), unk_id, spec.byte_fallback, model.where);
    spec.vocab = &unigram->vocabulary();
    spec.model = std::move(unigram);
    spec.piece_style = PieceStyle::Metaspace;
    spec.name = "unigram";
    return spec;
}

ModelSpec wordpiece_of(const Field &model) {
    ModelSpec spec;
    Vocabulary vocab = vocab_map_of(model.at("vocab"), spec);
    WordPieceOptions options;
    options.unk_token = model.string_or("unk_token", options.unk_token);
    options.continuing_subword_prefix = model.string_or("continuing_subword_prefix", options.continuing_subword_prefix);
    if (model.has("max_input_chars_per_word")) {
        const Field m = model.at("max_input_chars_per_word");
        if (m.integer() < 0) m.fail(PAGODA_ERR_FORMAT, "is negative");
        options.max_input_chars_per_word = size_t(m.integer());
    }
    spec.unk_token = options.unk_token;
    spec.subword_prefix = options.continuing_subword_prefix;
    spec.piece_style = PieceStyle::WordPiece;
    spec.name = "wordpiece";
    auto wordpiece = std::make_unique<WordPieceModel>(std::move(vocab), std::move(options), model.where);
    spec.vocab = &wordpiece->vocabulary();
    spec.model = std::move(wordpiece);
    return spec;
}

}  // namespace

ModelSpec model_of(const Field &model) {
    // Files from before tokenizers wrote "type" are BPE.
    const std::string type = model.string_or("type", "BPE");
    if (type == "BPE") return bpe_of(model);
    if (type == "Unigram") return unigram_of(model);
    if (type == "WordPiece") return wordpiece_of(model);
    unsupported(model.at("type"), "model type", type);
}

}  // namespace pagoda::tok
