// Post-processing of one encoded sequence: the special tokens a template puts around it (BOS,
// EOS, CLS/SEP). Hugging Face's TemplateProcessing, Roberta/BertProcessing and ByteLevel (which
// changes offsets only) all reduce to this for a single sequence's ids.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda::tok {

class SequenceTemplate {
public:
    SequenceTemplate() = default;  // the ids as they are
    SequenceTemplate(std::vector<int32_t> before, std::vector<int32_t> after)
        : before_(std::move(before)), after_(std::move(after)) {}

    void apply(std::vector<int32_t> &ids) const {
        ids.insert(ids.begin(), before_.begin(), before_.end());
        ids.insert(ids.end(), after_.begin(), after_.end());
    }
    // The template applied after this one.
    void then(const SequenceTemplate &outer) {
        before_.insert(before_.begin(), outer.before_.begin(), outer.before_.end());
        after_.insert(after_.end(), outer.after_.begin(), outer.after_.end());
    }
    const std::vector<int32_t> &before() const { return before_; }
    const std::vector<int32_t> &after() const { return after_; }

private:
    std::vector<int32_t> before_, after_;
};

}  // namespace pagoda::tok
