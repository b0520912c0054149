#include "tokenizer/hf_gguf_vocabulary.hpp"

#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/json_text.hpp"
#include "common/log.hpp"
#include "pagoda/tokenizer.h"
#include "tokenizer/chat_template.hpp"
#include "tokenizer/pre_tokenizers.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

namespace {

using nlohmann::json;

const std::string kMetaspace = "\xE2\x96\x81";  // "▁"

// llama.cpp's token types (llama_token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

[[noreturn]] void unsupported(const std::string &where, const std::string &what) {
    throw Error(PAGODA_ERR_UNSUPPORTED, where + " " + what + "; a GGUF vocabulary cannot carry it faithfully");
}

bool is_file(const std::string &path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string read_text(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(PAGODA_ERR_NOT_FOUND, path + ": cannot open the file");
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A member of an object, or null when absent (or when `j` is not an object).
const json &member(const json &j, const char *key) {
    static const json null;
    if (!j.is_object()) return null;
    const auto it = j.find(key);
    return it == j.end() ? null : *it;
}

std::string type_of(const json &j) {
    const json &t = member(j, "type");
    return t.is_string() ? t.get<std::string>() : std::string();
}

bool flag(const json &j, const char *key, bool fallback) {
    const json &v = member(j, key);
    return v.is_boolean() ? v.get<bool>() : fallback;
}

bool literal_pattern(const json &pattern, const std::string &text) {
    const json &s = member(pattern, "String");
    return s.is_string() && s.get<std::string>() == text;
}

// The steps of a Sequence component (or the component alone).
std::vector<json> steps_of(const json &j, const char *list) {
    if (type_of(j) != "Sequence") return {j};
    const json &l = member(j, list);
    return l.is_array() ? std::vector<json>(l.begin(), l.end()) : std::vector<json>{};
}

// What the tokenizer is, as llama.cpp names it.
struct Kind {
    std::string model;     // "llama" or "gpt2"
    std::string pre;       // gpt2 only
    int8_t space_prefix = -1;  // llama only
};

// SentencePiece-style: byte fallback, spaces as "▁", a "▁" in front of the text or not. Hugging
// Face writes it two ways: a Prepend + Replace normalizer (legacy), or a Metaspace pre-tokenizer.
void spm_kind(const json &root, const std::string &where, Kind &kind) {
    const json &normalizer = member(root, "normalizer");
    const json &pre = member(root, "pre_tokenizer");
    if (!normalizer.is_null() && pre.is_null()) {
        const std::vector<json> steps = steps_of(normalizer, "normalizers");
        bool prepend = false;
        size_t i = 0;
        if (i < steps.size() && type_of(steps[i]) == "Prepend" && member(steps[i], "prepend") == kMetaspace) {
            prepend = true;
            ++i;
        }
        if (i + 1 == steps.size() && type_of(steps[i]) == "Replace" && literal_pattern(member(steps[i], "pattern"), " ") &&
            member(steps[i], "content") == kMetaspace) {
            kind.space_prefix = prepend ? 1 : 0;
            return;
        }
        unsupported(where + ": normalizer", "is not SentencePiece's (Prepend \"\xE2\x96\x81\", then Replace \" \" by "
                                            "\"\xE2\x96\x81\")");
    }
    if (normalizer.is_null() && type_of(pre) == "Metaspace") {
        if (flag(pre, "split", true)) unsupported(where + ": pre_tokenizer", "is a Metaspace that splits words");
        const json &replacement = member(pre, "replacement");
        if (!replacement.is_null() && replacement != kMetaspace)
            unsupported(where + ": pre_tokenizer.replacement", "is not \"\xE2\x96\x81\"");
        const json &scheme = member(pre, "prepend_scheme");
        if (scheme.is_string())
            kind.space_prefix = scheme.get<std::string>() == "never" ? 0 : 1;
        else
            kind.space_prefix = flag(pre, "add_prefix_space", true) ? 1 : 0;
        return;
    }
    unsupported(where + ": normalizer and pre_tokenizer", "are not SentencePiece-style");
}

// Byte-level BPE: one Split by a regex llama.cpp names, then ByteLevel without its own regex; or
// GPT-2's ByteLevel with its built-in regex.
void bpe_kind(const json &root, const std::string &where, Kind &kind) {
    const json &normalizer = member(root, "normalizer");
    if (type_of(normalizer) == "NFC") {
        // llama.cpp's converter drops it too; text already in NFC (most text) is unaffected.
        log(PAGODA_LOG_WARN, where + ": normalizer NFC is not carried into GGUF (as llama.cpp converts it): "
                                     "text not in NFC may tokenize differently");
    } else if (!normalizer.is_null()) {
        unsupported(where + ": normalizer '" + type_of(normalizer) + "'", "is not supported with byte-level BPE");
    }
    const json &pre = member(root, "pre_tokenizer");
    const std::vector<json> steps = steps_of(pre, "pretokenizers");
    if (steps.size() == 1 && type_of(steps[0]) == "ByteLevel" && !flag(steps[0], "add_prefix_space", true) &&
        flag(steps[0], "use_regex", true)) {
        kind.pre = "gpt2";
    } else if (steps.size() == 2 && type_of(steps[0]) == "Split" && type_of(steps[1]) == "ByteLevel" &&
               !flag(steps[1], "add_prefix_space", true) && !flag(steps[1], "use_regex", true)) {
        const json &split = steps[0];
        const json &regex = member(member(split, "pattern"), "Regex");
        if (member(split, "behavior") != "Isolated" || flag(split, "invert", false) || !regex.is_string())
            unsupported(where + ": pre_tokenizer's Split", "is not an isolating regex split");
        const std::string r = regex.get<std::string>();
        if (r == kLlama3SplitRegex) kind.pre = "llama-bpe";
        else if (r == kQwen2SplitRegex) kind.pre = "qwen2";
        else if (r == kGpt2SplitRegex) kind.pre = "gpt2";
        else
            unsupported(where + ": pre_tokenizer's Split regex", "is none llama.cpp names (llama-bpe, qwen2, gpt2)");
    } else {
        unsupported(where + ": pre_tokenizer", "is not a byte-level split llama.cpp names (llama-bpe, qwen2, gpt2)");
    }
    const json &decoder = member(root, "decoder");
    if (type_of(decoder) != "ByteLevel") unsupported(where + ": decoder", "is not ByteLevel");
    kind.model = "gpt2";
}

bool is_byte_token(const std::string &t) {
    static const std::regex byte("<0x[0-9A-Fa-f]{2}>");
    return t.size() == 6 && std::regex_match(t, byte);
}

struct Merges {
    std::vector<std::pair<std::string, std::string>> pairs;
};

Merges read_merges(const json &model, const std::string &where) {
    Merges m;
    const json &list = member(model, "merges");
    if (list.is_null()) return m;
    if (!list.is_array()) throw Error(PAGODA_ERR_FORMAT, where + ": model.merges must be an array");
    for (size_t i = 0; i < list.size(); ++i) {
        const json &e = list[i];
        const std::string at = where + ": model.merges[" + std::to_string(i) + "]";
        if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
            const std::string a = e[0], b = e[1];
            if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos)
                unsupported(at, "holds a token with a space, which GGUF's \"a b\" merges cannot spell");
            m.pairs.emplace_back(a, b);
        } else if (e.is_string()) {
            const std::string s = e;
            const size_t space = s.find(' ');
            if (space == std::string::npos) throw Error(PAGODA_ERR_FORMAT, at + " is not two tokens separated by a space");
            m.pairs.emplace_back(s.substr(0, space), s.substr(space + 1));
        } else {
            throw Error(PAGODA_ERR_FORMAT, at + " must be \"a b\" or [\"a\", \"b\"]");
        }
    }
    return m;
}

// SentencePiece merges the adjacent pair whose joined piece scores highest; Hugging Face's BPE the
// pair of lowest merge rank. Both agree when each piece scores minus the rank of the first merge
// that makes it, and when every split of a mergeable piece into two mergeable pieces is a merge
// (transformers' converter lists all of them), since SentencePiece would join those too.
std::vector<float> spm_scores(const GgufVocabulary &v, const Merges &merges,
                              const std::unordered_map<std::string, int32_t> &ids, const std::string &where) {
    std::vector<float> scores(v.tokens.size(), 0.0f);
    std::vector<bool> made(v.tokens.size(), false);
    std::unordered_set<std::string> listed;
    for (size_t rank = 0; rank < merges.pairs.size(); ++rank) {
        const auto &[a, b] = merges.pairs[rank];
        const auto it = ids.find(a + b);
        if (it == ids.end())
            throw Error(PAGODA_ERR_FORMAT, where + ": model.merges[" + std::to_string(rank) + "] makes \"" + a + b +
                                               "\", which is not in the vocabulary");
        if (!made[size_t(it->second)]) scores[size_t(it->second)] = -float(rank);
        made[size_t(it->second)] = true;
        listed.insert(a + " " + b);
    }
    auto mergeable = [&](const std::string &piece) {
        const auto it = ids.find(piece);
        if (it == ids.end()) return false;
        const int32_t type = v.token_types[size_t(it->second)];
        return type == kNormal || type == kUserDefined;
    };
    for (size_t id = 0; id < v.tokens.size(); ++id) {
        const std::string &t = v.tokens[id];
        if (v.token_types[id] != kNormal) continue;
        for (size_t cut = utf8_step(t, 0); cut < t.size(); cut += utf8_step(t, cut)) {
            const std::string a = t.substr(0, cut), b = t.substr(cut);
            if (mergeable(a) && mergeable(b) && listed.count(a + " " + b) == 0)
                unsupported(where + ": model.merges", "lacks \"" + a + " " + b + "\", which SentencePiece would merge into \"" +
                                                          t + "\"");
        }
    }
    return scores;
}

// The special tokens the tokenizer puts around a text: [] or [BOS] before, [] or [EOS] after.
void special_template(const Tokenizer &hf, GgufVocabulary &v, const std::string &where) {
    for (const char *probe : {"a", "Hello", "0", " "}) {
        const std::vector<int32_t> plain = hf.encode(probe, 0);
        if (plain.empty()) continue;
        const std::vector<int32_t> full = hf.encode(probe, PAGODA_TOKENIZE_ADD_SPECIAL);
        size_t at = 0;
        while (at + plain.size() <= full.size() && !std::equal(plain.begin(), plain.end(), full.begin() + long(at))) ++at;
        if (at + plain.size() > full.size()) break;
        const std::vector<int32_t> before(full.begin(), full.begin() + long(at));
        const std::vector<int32_t> after(full.begin() + long(at + plain.size()), full.end());
        if (!before.empty() && (before.size() > 1 || before[0] != v.bos_token_id))
            unsupported(where + ": post_processor", "puts tokens other than the BOS token before the text");
        if (!after.empty() && (after.size() > 1 || after[0] != v.eos_token_id))
            unsupported(where + ": post_processor", "puts tokens other than the EOS token after the text");
        v.add_bos_token = before.empty() ? 0 : 1;
        v.add_eos_token = after.empty() ? 0 : 1;
        return;
    }
    unsupported(where, "encodes no sample text, so which special tokens it adds is unknown");
}

std::string ids_text(const std::vector<int32_t> &ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size() && i < 16; ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + (ids.size() > 16 ? ", ...]" : "]");
}

// Encodes sample texts with both tokenizers; any difference refuses the conversion.
void check_same_ids(const Tokenizer &hf, const GgufVocabulary &v, const std::vector<std::string> &added,
                    const std::string &where) {
    const auto gguf = Tokenizer::from_gguf(v, where + " (as GGUF)");
    std::vector<std::string> texts = {
        "Hello world", " Hello", "Once upon a time, there was a little girl.", "  two  spaces\tand a tab\nnew line\n\n",
        "don't stop: 1234567 + 3.14 = 1,234.5", "Gr\xC3\xBC\xC3\x9F" "e, \xE4\xB8\x96\xE7\x95\x8C! \xF0\x9F\x9A\x80",
        "a", "", "   ", "x\r\ny",
    };
    for (size_t i = 0; i < added.size() && i < 64; ++i) texts.push_back("Hi" + added[i] + " there" + added[i]);
    for (const std::string &text : texts)
        for (uint32_t flags : {0u, PAGODA_TOKENIZE_ADD_SPECIAL | PAGODA_TOKENIZE_PARSE_SPECIAL}) {
            const std::vector<int32_t> want = hf.encode(text, flags), got = gguf->encode(text, flags);
            if (want != got)
                unsupported(where, "encodes \"" + text + "\" as " + ids_text(want) + " but the GGUF vocabulary made from it as " +
                                       ids_text(got));
            if (hf.decode(want, 0) != gguf->decode(got, 0))
                unsupported(where, "decodes the ids of \"" + text + "\" differently from the GGUF vocabulary made from it");
        }
}

}  // namespace

GgufVocabulary gguf_vocabulary_from_hf(const std::string &folder, int64_t vocab_size, int32_t config_bos,
                                       int32_t config_eos) {
    const std::string where = folder + "/tokenizer.json";
    if (!is_file(where))
        throw Error(PAGODA_ERR_NOT_FOUND, where + ": no such file (quantizing a Hugging Face folder writes its "
                                                  "tokenizer into the GGUF file)");
    const json root = parse_json_text(read_text(where), where);
    const json &model = member(root, "model");
    if (!model.is_object()) throw Error(PAGODA_ERR_FORMAT, where + ": model is missing or not an object");
    const std::string model_type = type_of(model).empty() ? "BPE" : type_of(model);
    // llama.cpp's "t5" (Unigram) and "bert" (WordPiece) vocabularies are not written: refused, not
    // approximated as BPE.
    if (model_type != "BPE")
        unsupported(where + ": model.type '" + model_type + "'",
                    "is not BPE (conversion writes only llama.cpp's \"llama\" and \"gpt2\" vocabularies, not " +
                        std::string(model_type == "Unigram" ? "\"t5\"" : model_type == "WordPiece" ? "\"bert\"" : "others") +
                        ")");
    for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const json &affix = member(model, key);
        if (affix.is_string() && !affix.get<std::string>().empty()) unsupported(where + ": model." + key, "is set");
    }

    Kind kind;
    const bool byte_fallback = flag(model, "byte_fallback", false);
    if (byte_fallback) {
        kind.model = "llama";
        spm_kind(root, where, kind);
        if (flag(model, "ignore_merges", false)) unsupported(where + ": model.ignore_merges", "is true with byte fallback");
    } else {
        bpe_kind(root, where, kind);
        if (flag(model, "ignore_merges", false) != (kind.pre == "llama-bpe"))
            unsupported(where + ": model.ignore_merges",
                        std::string("is ") + (kind.pre == "llama-bpe" ? "false" : "true") + " with the " + kind.pre +
                            " split, which llama.cpp runs the other way");
    }

    // The pieces by id: the model's vocabulary, then the added tokens over it.
    GgufVocabulary v;
    v.model = kind.model;
    v.pre = kind.pre;
    v.add_space_prefix = kind.model == "llama" && kind.space_prefix == 0 ? 0 : -1;  // 1 is llama's default
    std::vector<bool> defined(size_t(std::max<int64_t>(vocab_size, 0)), false);
    v.tokens.resize(defined.size());
    v.token_types.assign(defined.size(), kNormal);
    auto place = [&](int64_t id, const std::string &piece, const std::string &at) {
        if (id < 0 || id >= vocab_size)
            throw Error(PAGODA_ERR_FORMAT, at + " has id " + std::to_string(id) + ", outside the model's vocab_size of " +
                                               std::to_string(vocab_size) + " (config.json)");
        v.tokens[size_t(id)] = piece;
        defined[size_t(id)] = true;
    };
    const json &vocab = member(model, "vocab");
    if (!vocab.is_object()) throw Error(PAGODA_ERR_FORMAT, where + ": model.vocab is missing or not an object");
    for (const auto &[piece, id] : vocab.items()) {
        if (!id.is_number_integer()) throw Error(PAGODA_ERR_FORMAT, where + ": model.vocab[\"" + piece + "\"] is not an id");
        place(id.get<int64_t>(), piece, where + ": model.vocab[\"" + piece + "\"]");
        if (kind.model == "llama" && is_byte_token(piece)) v.token_types[size_t(id.get<int64_t>())] = kByte;
    }
    const json &unk = member(model, "unk_token");
    std::vector<std::string> added_texts;
    const json &added = member(root, "added_tokens");
    for (size_t i = 0; added.is_array() && i < added.size(); ++i) {
        const json &a = added[i];
        const std::string at = where + ": added_tokens[" + std::to_string(i) + "]";
        if (!member(a, "id").is_number_integer() || !member(a, "content").is_string())
            throw Error(PAGODA_ERR_FORMAT, at + " needs an integer \"id\" and a string \"content\"");
        const int64_t id = member(a, "id").get<int64_t>();
        const std::string content = member(a, "content").get<std::string>();
        for (const char *key : {"lstrip", "rstrip", "single_word"})
            if (flag(a, key, false)) unsupported(at + " (\"" + content + "\")", std::string("has ") + key + " true");
        place(id, content, at);
        const bool special = flag(a, "special", false);
        v.token_types[size_t(id)] = special ? (unk.is_string() && unk == content ? kUnknown : kControl) : kUserDefined;
        added_texts.push_back(content);
    }
    for (size_t id = 0; id < defined.size(); ++id)
        if (!defined[id]) {
            v.tokens[id] = "[PAD" + std::to_string(id) + "]";
            v.token_types[id] = kUnused;
        } else if (kind.model == "llama" && unk.is_string() && v.tokens[id] == unk && v.token_types[id] == kNormal) {
            v.token_types[id] = kUnknown;
        }

    const Merges merges = read_merges(model, where);
    if (kind.model == "llama") {
        std::unordered_map<std::string, int32_t> ids;
        for (size_t id = 0; id < v.tokens.size(); ++id) ids.emplace(v.tokens[id], int32_t(id));
        v.scores = spm_scores(v, merges, ids, where);
    } else {
        v.merges.reserve(merges.pairs.size());
        for (const auto &[a, b] : merges.pairs) v.merges.push_back(a + " " + b);
    }

    // Special tokens, switches and chat templates as Pagoda's own reading of the folder has them.
    const auto hf = Tokenizer::from_file(folder);
    v.bos_token_id = hf->bos_token_id();
    v.eos_token_id = hf->eos_token_id();
    v.unknown_token_id = hf->unk_token_id();
    v.padding_token_id = hf->pad_token_id();
    special_template(*hf, v, where);
    if (hf->chat_templates()) v.chat_templates = hf->chat_templates()->sources();
    check_same_ids(*hf, v, added_texts, where);
    // config.json's ids where the tokenizer names none (they add nothing: the switches are set).
    auto in_vocab = [&](int32_t id) { return id >= 0 && id < vocab_size; };
    if (v.bos_token_id < 0 && in_vocab(config_bos)) v.bos_token_id = config_bos;
    if (v.eos_token_id < 0 && in_vocab(config_eos)) v.eos_token_id = config_eos;
    return v;
}

}  // namespace pagoda::tok
