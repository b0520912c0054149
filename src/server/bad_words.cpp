#include "server/bad_words.hpp"

#include "server/api_error.hpp"

namespace pagoda::server {

void tokenize_bad_words(const tok::Tokenizer *tokenizer, int64_t vocab_size, GenerationRequest &r) {
    if (r.bad_words.empty()) return;
    if (tokenizer == nullptr)
        invalid_field("bad_words",
                      "bad_words needs the model's tokenizer, and this model has none");
    std::vector<std::vector<int32_t>> words;
    for (size_t i = 0; i < r.bad_words.size(); ++i) {
        const std::string &word = r.bad_words[i];
        const std::string bare = word.substr(word.find_first_not_of(" \t\n\r\f\v"));
        const std::vector<int32_t> plain = tokenizer->encode(bare, 0);
        const std::vector<int32_t> spaced = tokenizer->encode(" " + bare, 0);
        for (const std::vector<int32_t> *ids : {&plain, &spaced}) {
            if (ids == &spaced && (spaced.empty() || plain.empty() || spaced[0] == plain[0] ||
                                   spaced.size() != plain.size()))
                continue;
            const std::string where = "bad_words[" + std::to_string(i) + "]";
            if (ids->empty()) invalid_field("bad_words", where + " encodes to no tokens");
            for (int32_t id : *ids)
                if (id < 0 || (vocab_size > 0 && id >= vocab_size))
                    invalid_field("bad_words", where + " encodes to token " + std::to_string(id) +
                                                   ", outside the vocabulary [0, " +
                                                   std::to_string(vocab_size) + ")");
            words.push_back(*ids);
        }
    }
    r.bad_words_token_ids.clear();
    r.bad_words_lengths.clear();
    for (const std::vector<int32_t> &ids : words) {
        r.bad_words_token_ids.insert(r.bad_words_token_ids.end(), ids.begin(), ids.end());
        r.bad_words_lengths.push_back(ids.size());
    }
}

}  // namespace pagoda::server
