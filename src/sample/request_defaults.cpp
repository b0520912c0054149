#include "sample/request_defaults.hpp"

#include "pagoda/tokenizer.h"

namespace pagoda::sample {

pagoda_request_options_t default_request_options() {
    pagoda_request_options_t o{};
    o.struct_size = sizeof(o);
    o.max_tokens = 256;
    o.temperature = 1.0f;
    o.top_p = 1.0f;
    o.repetition_penalty = 1.0f;
    o.logprobs = -1;
    o.prompt_logprobs = -1;
    o.n = 1;
    o.length_penalty = 1.0f;
    return o;
}

uint32_t prompt_tokenize_flags(uint32_t request_flags) {
    uint32_t flags = PAGODA_TOKENIZE_PARSE_SPECIAL;
    if ((request_flags & PAGODA_REQUEST_NO_SPECIAL_TOKENS) == 0) flags |= PAGODA_TOKENIZE_ADD_SPECIAL;
    return flags;
}

}  // namespace pagoda::sample
