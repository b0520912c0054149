// The C progress callback (pagoda_progress_fn, returning nonzero to go on) as the core's
// ProgressFn; empty for a NULL callback. Opening and quantizing a model take it alike.
#pragma once

#include "model/model.hpp"
#include "pagoda/model.h"

namespace pagoda {

inline model::ProgressFn progress_of(pagoda_progress_fn fn, void *user) {
    if (fn == nullptr) return {};
    return [fn, user](double fraction, const char *stage) {
        return fn(user, static_cast<float>(fraction), stage) != 0;
    };
}

}  // namespace pagoda
