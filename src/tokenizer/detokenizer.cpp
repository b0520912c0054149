// Incremental detokenization with a sliding window of ids, as vLLM does it: the text a new id
// adds is decode(window + id) minus decode(window). Decoding a window rather than one id keeps
// what depends on neighbours right (SentencePiece drops the first token's leading space, a
// UTF-8 character may span byte tokens).
#include "tokenizer/tokenizer.hpp"

#include <algorithm>

#include "pagoda/tokenizer.h"
#include "tokenizer/utf8.hpp"

namespace pagoda::tok {

namespace {
// Prompt ids kept as context for the first generated id: enough for any leading-space or
// multi-byte character to be decoded as in the whole text.
constexpr size_t kPromptContext = 6;
}  // namespace

struct Detokenizer::State {
    std::shared_ptr<const Tokenizer> tokenizer;
    uint32_t flags;
    std::vector<int32_t> ids;  // context, then generated ids (trimmed from the front as it grows)
    size_t prefix_offset = 0;  // the window decoded as context starts here
    size_t read_offset = 0;    // text up to here has been emitted

    std::string decode_range(size_t begin, size_t end) const {
        return tokenizer->decode(std::span<const int32_t>(ids).subspan(begin, end - begin), flags);
    }

    // Whether the last id that decodes to anything is a byte-fallback token (skipped special
    // tokens are invisible: the byte runs on either side of one join).
    bool ends_in_byte_run() const {
        const bool skip_special = (flags & PAGODA_DETOKENIZE_SKIP_SPECIAL) != 0;
        for (auto it = ids.rbegin(); it != ids.rend(); ++it)
            if (!(skip_special && tokenizer->is_special(*it))) return tokenizer->is_byte_fallback(*it);
        return false;
    }

    // The text from read_offset on, when it is final (or `force`d at the end).
    std::string advance(bool force) {
        if (!force && ends_in_byte_run()) return {};
        const std::string prefix_text = decode_range(prefix_offset, read_offset);
        const std::string new_text = decode_range(prefix_offset, ids.size());
        if (new_text.size() <= prefix_text.size()) return {};
        // A U+FFFD at the end may be a character still being spelled out.
        if (!force && new_text.size() >= kReplacementCharacter.size() &&
            new_text.compare(new_text.size() - kReplacementCharacter.size(), kReplacementCharacter.size(),
                             kReplacementCharacter) == 0)
            return {};
        std::string delta = new_text.substr(prefix_text.size());
        prefix_offset = read_offset;
        read_offset = ids.size();
        // Ids before the window are never decoded again.
        if (prefix_offset > 64) {
            ids.erase(ids.begin(), ids.begin() + std::ptrdiff_t(prefix_offset));
            read_offset -= prefix_offset;
            prefix_offset = 0;
        }
        return delta;
    }
};

Detokenizer::Detokenizer(std::shared_ptr<const Tokenizer> tokenizer, std::span<const int32_t> prompt,
                         uint32_t flags)
    : state_(std::make_unique<State>()) {
    state_->tokenizer = std::move(tokenizer);
    state_->flags = flags;
    for (size_t i = prompt.size(); i-- > 0 && state_->ids.size() < kPromptContext;)
        if (state_->tokenizer->has_token(prompt[i])) state_->ids.insert(state_->ids.begin(), prompt[i]);
    state_->read_offset = state_->ids.size();
}

Detokenizer::~Detokenizer() = default;
Detokenizer::Detokenizer(Detokenizer &&) noexcept = default;
Detokenizer &Detokenizer::operator=(Detokenizer &&) noexcept = default;
Detokenizer::Detokenizer(const Detokenizer &other) : state_(std::make_unique<State>(*other.state_)) {}
Detokenizer &Detokenizer::operator=(const Detokenizer &other) {
    if (this != &other) state_ = std::make_unique<State>(*other.state_);
    return *this;
}

std::string Detokenizer::push(int32_t id) {
    if (!state_->tokenizer->has_token(id)) return {};
    state_->ids.push_back(id);
    try {
        return state_->advance(false);
    } catch (...) {  // leave the state as it was
        state_->ids.pop_back();
        throw;
    }
}

std::string Detokenizer::flush() { return state_->advance(true); }

}  // namespace pagoda::tok
