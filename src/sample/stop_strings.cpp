#include "sample/stop_strings.hpp"

#include <algorithm>
#include <utility>

#include "common/error.hpp"

namespace pagoda::sample {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings,
                                     bool include_stop_string)
    : stops_(std::move(stop_strings)), include_stop_string_(include_stop_string) {
    for (size_t i = 0; i < stops_.size(); ++i) {
        if (stops_[i].empty())
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "stop string " + std::to_string(i) + " of " +
                            std::to_string(stops_.size()) + " is empty");
        longest_stop_ = std::max(longest_stop_, stops_[i].size());
    }
}

StopStringMatcher::Step StopStringMatcher::feed(std::string_view new_text) {
    Step step;
    if (stopped_) {
        step.stopped = true;
        return step;
    }
    const size_t old_size = pending_.size();
    pending_.append(new_text);

    // Earlier feeds found no complete match in the old text, so a match must end in the new
    // part: searching from old_size - (len - 1) sees every such match once.
    size_t best_start = std::string::npos;
    size_t best_end = std::string::npos;
    size_t best_index = kNoStop;
    for (size_t i = 0; i < stops_.size(); ++i) {
        const std::string &stop = stops_[i];
        const size_t from = old_size >= stop.size() ? old_size - stop.size() + 1 : 0;
        const size_t at = pending_.find(stop, from);
        if (at == std::string::npos) continue;
        const size_t end = at + stop.size();
        if (end < best_end || (end == best_end && at < best_start)) {
            best_start = at;
            best_end = end;
            best_index = i;
        }
    }

    if (best_index != kNoStop) {
        step.text = pending_.substr(0, include_stop_string_ ? best_end : best_start);
        step.stopped = true;
        step.stop_index = best_index;
        stopped_ = true;
        pending_.clear();
        return step;
    }

    const size_t hold = partial_match_length();
    step.text = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return step;
}

std::string StopStringMatcher::feed_unchecked(std::string_view new_text) {
    if (stopped_) return {};
    pending_.append(new_text);
    // A later feed() searches only from the held suffix on, so a stop string wholly inside
    // this text is never matched.
    const size_t hold = partial_match_length();
    std::string out = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return out;
}

size_t StopStringMatcher::partial_match_length() const {
    if (stops_.empty()) return 0;
    const std::string_view text = pending_;
    // Longest first: the first hit is the answer. A full-length match cannot be here (feed
    // would have stopped), so proper prefixes suffice.
    for (size_t len = std::min(text.size(), longest_stop_ - 1); len > 0; --len) {
        const std::string_view suffix = text.substr(text.size() - len);
        for (const std::string &stop : stops_)
            if (stop.size() > len && std::string_view(stop).starts_with(suffix)) return len;
    }
    return 0;
}

std::string StopStringMatcher::flush() {
    std::string out = std::move(pending_);
    pending_.clear();
    return out;
}

}  // namespace pagoda::sample
