// A loaded plugin: the handle hosts hold as pagoda_backend_t.
#pragma once

#include <cstdint>
#include <string>

#include "backend/shared_library.hpp"
#include "pagoda/backend.h"

// Defined here, opaque to hosts. The magic word lets entry points reject stray pointers.
struct pagoda_backend {
    static constexpr uint32_t kMagic = 0x42445050u;  // "PPDB"
    uint32_t magic = kMagic;
    std::string path;  // canonical path of the file
    std::string name;  // the plugin's own name
    std::string description;
    // Points at `table` once the plugin's table has been negotiated (at the plugin's own table
    // only while loading, so that a failed load can still call its destroy).
    const pagoda_backend_iface_t *iface = nullptr;
    // The plugin's table copied into one of this library's size: slots of a newer minor ABI than
    // the plugin knows read as NULL, so the rest of the core never looks at struct_size.
    pagoda_backend_iface_t table{};
    pagoda::SharedLibrary library;

    pagoda_backend() = default;
    pagoda_backend(const pagoda_backend &) = delete;
    pagoda_backend &operator=(const pagoda_backend &) = delete;
    // Destroys the plugin's state before its code is unmapped.
    ~pagoda_backend() {
        if (iface != nullptr && iface->destroy != nullptr) iface->destroy(iface->self);
        magic = 0;
    }
};

namespace pagoda {

// The handle behind `b`, or NULL when `b` is NULL or not a live backend.
inline const pagoda_backend *checked_backend(const pagoda_backend *b) noexcept {
    return (b != nullptr && b->magic == pagoda_backend::kMagic) ? b : nullptr;
}

}  // namespace pagoda
