// Stop strings over streamed text: decides, piece by piece, which text is safe to show the
// caller and where generation must stop, even when a stop string spans several pieces.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::sample {

class StopStringMatcher {
public:
    static constexpr size_t kNoStop = size_t(-1);

    // What one feed() lets through.
    struct Step {
        std::string text;             // safe to emit now
        bool stopped = false;         // a stop string matched; generation should end
        size_t stop_index = kNoStop;  // which stop string (index into the constructor's list)
    };

    // Throws Error(PAGODA_ERR_INVALID_ARGUMENT) for an empty stop string (it would match
    // everywhere). With include_stop_string the matched stop string is emitted too; by default
    // it is cut, as vLLM does.
    explicit StopStringMatcher(std::vector<std::string> stop_strings,
                               bool include_stop_string = false);

    // Takes the next piece of generated text. Returns the text now known not to belong to a
    // stop string; a suffix that could still grow into one is held back. On a match it returns
    // the text before the stop string (plus the stop string if included) and stopped = true;
    // text after it is dropped, and later calls return nothing. When several stop strings
    // match, the one that ends first wins (ties: the one that starts first), which is the one
    // a token-by-token stream would meet first, so the result does not depend on how the text
    // was cut into pieces.
    Step feed(std::string_view new_text);

    // Takes text that may not end generation (vLLM's min_tokens: the first min_tokens tokens'
    // text is not searched) but may begin a stop string that a later feed() completes. Returns
    // the text now safe to emit; holds back a suffix as feed() does. Nothing after a stop.
    std::string feed_unchecked(std::string_view new_text);

    // The held-back text, at the end of generation for another reason (EOS, length); empty
    // after a stop. Clears it.
    std::string flush();

    bool stopped() const { return stopped_; }
    // Bytes held back now, waiting to see whether they begin a stop string.
    size_t held_back() const { return pending_.size(); }

private:
    // Length of the longest suffix of pending_ that is a proper prefix of some stop string.
    size_t partial_match_length() const;

    std::vector<std::string> stops_;
    bool include_stop_string_;
    size_t longest_stop_ = 0;
    std::string pending_;
    bool stopped_ = false;
};

}  // namespace pagoda::sample
