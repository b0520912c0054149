// Text handed to the caller, who releases it with pagoda_free (std::free): a malloc'd,
// NUL-terminated copy. Throws std::bad_alloc, which guarded() turns into OUT_OF_MEMORY.
#pragma once

#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

namespace pagoda {

inline char *owned_text(std::string_view text) {
    char *copy = static_cast<char *>(std::malloc(text.size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, text.data(), text.size());
    copy[text.size()] = '\0';
    return copy;
}

}  // namespace pagoda
