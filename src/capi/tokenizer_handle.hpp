// The tokenizer handle of tokenizer.h: defined here, opaque to hosts. Whoever makes a tokenizer
// (pagoda_tokenizer_open, pagoda_tokenizer_from_model) creates one with make_tokenizer_handle.
#pragma once

#include <cstdint>
#include <memory>

#include "capi/guard.hpp"
#include "pagoda/tokenizer.h"
#include "tokenizer/tokenizer.hpp"

struct pagoda_tokenizer {
    static constexpr uint32_t kMagic = 0x4B4F5450u;  // "PTOK"
    uint32_t magic = kMagic;
    std::shared_ptr<const pagoda::tok::Tokenizer> impl;

    ~pagoda_tokenizer() { magic = 0; }  // a stale pointer then fails the check
};

namespace pagoda {

inline pagoda_tokenizer *make_tokenizer_handle(std::shared_ptr<const tok::Tokenizer> impl) {
    auto handle = std::make_unique<pagoda_tokenizer>();
    handle->impl = std::move(impl);
    return handle.release();
}

// The tokenizer behind a handle; nullptr for NULL or a pointer that is not a live handle.
inline const tok::Tokenizer *checked_tokenizer(const pagoda_tokenizer *t) {
    return (t != nullptr && t->magic == pagoda_tokenizer::kMagic) ? t->impl.get() : nullptr;
}

// The tokenizer behind a handle, or INVALID_HANDLE from inside a guarded body.
inline const tok::Tokenizer &require_tokenizer(const pagoda_tokenizer *t) {
    const tok::Tokenizer *impl = checked_tokenizer(t);
    if (t == nullptr) fail(PAGODA_ERR_INVALID_HANDLE, "tokenizer is NULL");
    if (impl == nullptr) fail(PAGODA_ERR_INVALID_HANDLE, "tokenizer is not a live tokenizer handle");
    return *impl;
}

}  // namespace pagoda
