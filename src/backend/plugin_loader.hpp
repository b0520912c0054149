// Opens one plugin file and negotiates its ABI: the checks that turn a broken or foreign file
// into a clear error.
#pragma once

#include <memory>
#include <string>

#include "backend/loaded_backend.hpp"

namespace pagoda {

// Loads the plugin at `canonical_path`. Throws Error with NOT_A_PLUGIN, ABI_MISMATCH, or the
// entry's own status; messages name the file and the reason.
std::unique_ptr<pagoda_backend> load_plugin(const std::string &canonical_path,
                                            const char *config);

}  // namespace pagoda
