// tokenizer.json's normalizer, pre_tokenizer, decoder and post_processor, each type mapped to the
// Pagoda component that does what Hugging Face's does; any other type is refused by name.
#include "tokenizer/tokenizer_json_components.hpp"

namespace pagoda::tok {

namespace {

TextPattern pattern_of(const Field &f) {
    if (f.has("String")) return TextPattern::literal(f.at("String").string());
    if (f.has("Regex")) return TextPattern::regex(f.at("Regex").string(), f.where + ".Regex");
    f.fail(PAGODA_ERR_FORMAT, "must hold \"String\" or \"Regex\"");
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

}  // namespace

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
    if (type == "BertNormalizer") {
        // strip_accents null: strip them when lowercasing (Hugging Face's default).
        const bool lowercase = f.boolean_or("lowercase", true);
        return std::make_unique<BertNormalizer>(f.boolean_or("clean_text", true), f.boolean_or("handle_chinese_chars", true),
                                                f.boolean_or("strip_accents", lowercase), lowercase);
    }
    if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
    if (type == "Strip")
        return std::make_unique<StripNormalizer>(f.boolean_or("strip_left", true), f.boolean_or("strip_right", true));
    if (type == "Precompiled")  // refused by name, never stood in for by NFKC
        throw Error(PAGODA_ERR_UNSUPPORTED, f.where + ": normalizer 'Precompiled' (SentencePiece's compiled "
                                                      "normalization rules, as in T5, XLM-R and ALBERT) is not supported");
    unsupported(f, "normalizer", type);
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
    if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
    if (type == "Punctuation")
        return std::make_unique<PunctuationPreTokenizer>(f.has("behavior") ? behavior_of(f.at("behavior"))
                                                                           : SplitBehavior::Isolated);
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
    if (type == "WordPiece")
        return std::make_unique<WordPieceDecoder>(f.string_or("prefix", "##"), f.boolean_or("cleanup", true));
    if (type == "Metaspace")
        return std::make_unique<MetaspaceDecoder>(f.string_or("replacement", "\xE2\x96\x81"),
                                                  prepend_scheme_of(f) != MetaspacePreTokenizer::Prepend::Never);
    unsupported(f, "decoder", type);
}


int32_t TokenLookup::find(const std::string &content) const {
    for (const AddedToken &t : added)
        if (t.content == content) return t.id;
    const auto it = vocab.find(content);
    return it == vocab.end() ? -1 : it->second;
}

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


}  // namespace pagoda::tok
