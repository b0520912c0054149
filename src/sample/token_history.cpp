#include <string>

#include "common/error.hpp"
#include "sample/sampler.hpp"

namespace pagoda::sample {

namespace {

void check_token_id(int32_t id, const char *where) {
    if (id < 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    std::string("TokenHistory: ") + where + " token id " + std::to_string(id) +
                        " is negative");
}

}  // namespace

void TokenHistory::note_seen(int32_t id) {
    if (seen_index_.emplace(id, seen_.size()).second) seen_.push_back(id);
}

void TokenHistory::add_prompt(std::span<const int32_t> ids) {
    // Check everything first so a bad id leaves the history as it was.
    for (const int32_t id : ids) check_token_id(id, "prompt");
    prompt_.insert(prompt_.end(), ids.begin(), ids.end());
    for (const int32_t id : ids) note_seen(id);
}

void TokenHistory::add_output(int32_t id) {
    check_token_id(id, "output");
    output_.push_back(id);
    note_seen(id);
    const auto [it, inserted] = output_index_.emplace(id, output_counts_.size());
    if (inserted)
        output_counts_.push_back({id, 1});
    else
        ++output_counts_[it->second].count;
}

void TokenHistory::clear() {
    prompt_.clear();
    output_.clear();
    seen_.clear();
    seen_index_.clear();
    output_counts_.clear();
    output_index_.clear();
}

uint32_t TokenHistory::output_count(int32_t id) const {
    const auto it = output_index_.find(id);
    return it == output_index_.end() ? 0 : output_counts_[it->second].count;
}

int64_t TokenHistory::seen_position(int32_t id) const {
    const auto it = seen_index_.find(id);
    return it == seen_index_.end() ? -1 : int64_t(it->second);
}

}  // namespace pagoda::sample
