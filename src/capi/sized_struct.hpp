// Versioned structs across the ABI: a caller's struct may be shorter (older headers) than ours.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pagoda {

// What pagoda_X_init(options, size) does: copies the defaults into the caller's first `size`
// bytes (never more than the struct has here) and records how many in struct_size. A size too
// small to hold struct_size writes nothing, since there is no status to report it.
template <typename Struct>
void init_sized(Struct *dst, size_t size, const Struct &defaults) {
    if (dst == nullptr || size < sizeof(uint32_t)) return;
    if (size > sizeof(Struct)) size = sizeof(Struct);
    std::memcpy(static_cast<void *>(dst), &defaults, size);
    dst->struct_size = static_cast<uint32_t>(size);
}

}  // namespace pagoda
