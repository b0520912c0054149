// Reading an op's argument struct across ABI minor versions: a caller built against an older
// header passes a smaller struct_size; the fields it does not know read as zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace pagoda::plugin {

// The struct as this backend knows it, or nothing when `args` is NULL or too small to hold even
// the fields that version 1 of the ABI had (`min_size`).
template <typename T>
std::optional<T> read_op_args(const void *args, size_t min_size) {
    if (args == nullptr) return std::nullopt;
    uint32_t declared = 0;
    std::memcpy(&declared, args, sizeof declared);
    if (declared < min_size) return std::nullopt;
    T out{};
    std::memcpy(&out, args, declared < sizeof(T) ? declared : sizeof(T));
    return out;
}

}  // namespace pagoda::plugin
