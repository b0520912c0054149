// The defaults of a request's public options (pagoda_request_options_init fills them), most of
// them the sampler's and the stop rules': one copy, for the C API and for the server, which
// builds options from JSON bodies.
#pragma once

#include "pagoda/request.h"

namespace pagoda::sample {

// max_tokens 256, temperature, top_p, penalties' factors and n at 1, logprobs off; all else 0.
pagoda_request_options_t default_request_options();

}  // namespace pagoda::sample
