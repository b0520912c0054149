// The model step of a tokenizer: one normalized, pre-tokenized piece to ids.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace pagoda::tok {

class TokenModel {
public:
    virtual ~TokenModel() = default;
    // Appends the ids of `piece`. Safe from any thread.
    virtual void encode(std::string_view piece, std::vector<int32_t> &out) const = 0;
};

}  // namespace pagoda::tok
