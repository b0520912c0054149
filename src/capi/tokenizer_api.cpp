// The functions of tokenizer.h (but pagoda_tokenizer_from_model, which model_api.cpp has):
// argument checks, copies into memory the caller frees with pagoda_free, and the guard.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "capi/guard.hpp"
#include "capi/owned_text.hpp"
#include "capi/tokenizer_handle.hpp"

using pagoda::checked_tokenizer;
using pagoda::require_tokenizer;
using pagoda::fail;
using pagoda::guarded;

namespace {

// malloc'd so that pagoda_free (std::free) releases it.
void *allocate(size_t bytes) {
    void *p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

}  // namespace

extern "C" {

PAGODA_API pagoda_status_t pagoda_tokenizer_open(const char *path, pagoda_tokenizer_t **out) {
    return guarded("pagoda_tokenizer_open", [&] {
        if (path == nullptr || *path == '\0') fail(PAGODA_ERR_INVALID_ARGUMENT, "path is NULL or empty");
        if (out == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "out is NULL");
        *out = pagoda::make_tokenizer_handle(pagoda::tok::Tokenizer::from_file(path));
        return PAGODA_OK;
    });
}

PAGODA_API void pagoda_tokenizer_destroy(pagoda_tokenizer_t *tokenizer) {
    if (checked_tokenizer(tokenizer) == nullptr) return;
    delete tokenizer;
}

PAGODA_API pagoda_status_t pagoda_tokenizer_get_info(const pagoda_tokenizer_t *tokenizer,
                                                     pagoda_tokenizer_info_t *info) {
    return guarded("pagoda_tokenizer_get_info", [&] {
        const auto &t = require_tokenizer(tokenizer);
        if (info == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "info is NULL");
        if (info->struct_size < sizeof(uint32_t))
            fail(PAGODA_ERR_INVALID_ARGUMENT, "info->struct_size is " + std::to_string(info->struct_size) +
                                                  " (set it to sizeof(pagoda_tokenizer_info_t))");
        pagoda_tokenizer_info_t full{};
        full.struct_size = info->struct_size;
        full.vocab_size = t.vocab_size();
        full.bos_token_id = t.bos_token_id();
        full.eos_token_id = t.eos_token_id();
        full.unk_token_id = t.unk_token_id();
        full.pad_token_id = t.pad_token_id();
        std::strncpy(full.model, t.model_name(), sizeof full.model - 1);
        // An older caller's smaller struct gets the fields it knows.
        std::memcpy(info, &full, std::min<size_t>(info->struct_size, sizeof full));
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_tokenizer_encode(const pagoda_tokenizer_t *tokenizer,
                                                   const char *text, size_t text_len,
                                                   uint32_t flags, int32_t **ids, size_t *n_ids) {
    return guarded("pagoda_tokenizer_encode", [&] {
        const auto &t = require_tokenizer(tokenizer);
        if (text == nullptr && text_len > 0) fail(PAGODA_ERR_INVALID_ARGUMENT, "text is NULL");
        if (ids == nullptr || n_ids == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "ids or n_ids is NULL");
        const uint32_t known = PAGODA_TOKENIZE_ADD_SPECIAL | PAGODA_TOKENIZE_PARSE_SPECIAL;
        if (flags & ~known) fail(PAGODA_ERR_INVALID_ARGUMENT, "unknown flags " + std::to_string(flags & ~known));
        const std::vector<int32_t> result = t.encode(std::string_view(text ? text : "", text_len), flags);
        int32_t *copy = nullptr;
        if (!result.empty()) {
            copy = static_cast<int32_t *>(allocate(result.size() * sizeof(int32_t)));
            std::memcpy(copy, result.data(), result.size() * sizeof(int32_t));
        }
        *ids = copy;
        *n_ids = result.size();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_tokenizer_decode(const pagoda_tokenizer_t *tokenizer,
                                                   const int32_t *ids, size_t n_ids,
                                                   uint32_t flags, char **text, size_t *text_len) {
    return guarded("pagoda_tokenizer_decode", [&] {
        const auto &t = require_tokenizer(tokenizer);
        if (ids == nullptr && n_ids > 0) fail(PAGODA_ERR_INVALID_ARGUMENT, "ids is NULL");
        if (text == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "text is NULL");
        if (flags & ~PAGODA_DETOKENIZE_SKIP_SPECIAL)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "unknown flags " + std::to_string(flags & ~PAGODA_DETOKENIZE_SKIP_SPECIAL));
        const std::string result = t.decode(std::span<const int32_t>(ids, n_ids), flags);
        *text = pagoda::owned_text(result);
        if (text_len != nullptr) *text_len = result.size();
        return PAGODA_OK;
    });
}

PAGODA_API pagoda_status_t pagoda_tokenizer_token_to_piece(const pagoda_tokenizer_t *tokenizer,
                                                           int32_t id, char *buffer,
                                                           size_t capacity, size_t *length) {
    return guarded("pagoda_tokenizer_token_to_piece", [&] {
        const auto &t = require_tokenizer(tokenizer);
        if (length == nullptr) fail(PAGODA_ERR_INVALID_ARGUMENT, "length is NULL");
        if (buffer == nullptr && capacity > 0) fail(PAGODA_ERR_INVALID_ARGUMENT, "buffer is NULL");
        const std::string piece = t.token_to_piece(id);
        *length = piece.size();
        if (piece.size() > capacity)
            fail(PAGODA_ERR_INVALID_ARGUMENT, "the piece of token " + std::to_string(id) + " needs " +
                                                  std::to_string(piece.size()) + " bytes; the buffer has " +
                                                  std::to_string(capacity));
        if (!piece.empty()) std::memcpy(buffer, piece.data(), piece.size());
        return PAGODA_OK;
    });
}

}  // extern "C"
