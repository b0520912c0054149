// A request's options checked before it is queued: ranges, the combinations that cannot work
// together (beam search with controls or a constraint, n above best_of), and what an embedding
// request refuses. Each failure is an Error(PAGODA_ERR_INVALID_ARGUMENT) naming the field.
#pragma once

#include "engine/request.hpp"

namespace pagoda::engine {

void check_request(const RequestConfig &c);

}  // namespace pagoda::engine
