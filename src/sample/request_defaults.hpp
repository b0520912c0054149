// The defaults of a request's public options (pagoda_request_options_init fills them), most of
// them the sampler's and the stop rules': one copy, for the C API and for the server, which
// builds options from JSON bodies.
#pragma once

#include <cstdint>

#include "pagoda/request.h"

namespace pagoda::sample {

// max_tokens 256, temperature, top_p, penalties' factors and n at 1, logprobs off; all else 0.
pagoda_request_options_t default_request_options();

// How a text prompt is tokenized for a request with these PAGODA_REQUEST_* flags: special
// tokens spelled in the text are those tokens, and the tokenizer's own (BOS) are added unless
// PAGODA_REQUEST_NO_SPECIAL_TOKENS. The engine's rule, which the server follows when it needs
// the prompt's ids itself.
uint32_t prompt_tokenize_flags(uint32_t request_flags);

}  // namespace pagoda::sample
