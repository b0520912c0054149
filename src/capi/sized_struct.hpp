// Versioned structs across the ABI: a caller's struct may be shorter (older headers) than ours.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.hpp"

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

// Copies `full` into the caller's struct, no further than the caller's struct_size, so a host
// built against an older, shorter struct is never written past its end.
template <typename Struct>
void write_sized(Struct *dst, const Struct &full, const char *what) {
    if (dst == nullptr) throw Error(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
    uint32_t size = dst->struct_size;
    if (size < 2 * sizeof(uint32_t))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    std::string(what) + "->struct_size is " + std::to_string(size) + ": set it to sizeof");
    if (size > sizeof(Struct)) size = sizeof(Struct);
    std::memcpy(static_cast<void *>(dst), &full, size);
    dst->struct_size = size;
}

// The caller's options over `defaults`: fields past the caller's struct_size keep their default.
// NULL gives the defaults.
template <typename Struct>
Struct read_sized(const Struct *src, Struct defaults, const char *what) {
    if (src == nullptr) return defaults;
    uint32_t size = src->struct_size;
    if (size < sizeof(uint32_t))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    std::string(what) + "->struct_size is " + std::to_string(size) +
                        ": initialise it with its _default() function");
    if (size > sizeof(Struct)) size = sizeof(Struct);
    std::memcpy(static_cast<void *>(&defaults), src, size);
    defaults.struct_size = sizeof(Struct);
    return defaults;
}

}  // namespace pagoda
