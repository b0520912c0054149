// The pieces every backend's checks are built from: each returns PAGODA_OK or the failure it
// recorded through the Reporter, with a message "<op>: <field> = <value> <what is wrong>".
// Shared so that the CPU and CUDA backends word the same failure the same way.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "block_formats.hpp"
#include "dtypes.hpp"
#include "names.hpp"
#include "pagoda/ops.h"
#include "reporter.hpp"

// Returns from the enclosing function when a check fails.
#define PAGODA_PLUGIN_CHECK(expr)                                               \
    do {                                                                        \
        if (pagoda_status_t check_status_ = (expr); check_status_ != PAGODA_OK) \
            return check_status_;                                               \
    } while (0)

namespace pagoda::plugin {

// ops.h: "Tokens per block (1–128)".
inline constexpr int64_t kMaxBlockSize = 128;

// The value a C caller stored in an enum field. Loading an out-of-range value through the C++
// enum type is undefined behaviour, and the ABI cannot stop a caller passing one, so checks read
// the raw integer; after a check passes the field is safe to use as the enum.
// Read as a signed int, as C stores it, so a stray -1 prints as -1.
template <typename E>
inline int64_t raw_enum(const E &field) {
    static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int));
    int v;
    std::memcpy(&v, &field, sizeof v);
    return v;
}

// "bf16 (3)": the name alone hides which raw value a caller passed.
inline std::string dtype_text(int64_t d) {
    const bool known = d >= PAGODA_DTYPE_INVALID && d <= formats::kLastDtype;
    return std::string(known ? formats::dtype_name(static_cast<pagoda_dtype_t>(d)) : "unknown") + " (" +
           std::to_string(d) + ")";
}

// INVALID (0) is a descriptor nobody filled in; any other value may be a type some other
// backend (or a later ABI) handles, so it is only unsupported here. `allowed` completes
// "(must be ...)".
inline pagoda_status_t dtype_error(const Reporter &r, const char *op, const char *field, int64_t d,
                                   const std::string &allowed) {
    if (d == PAGODA_DTYPE_INVALID)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      std::string(op) + ": " + field + " is not set (must be " + allowed + ")");
    return r.fail(PAGODA_ERR_UNSUPPORTED, std::string(op) + ": " + field + " = " + dtype_text(d) +
                                              " is not supported (must be " + allowed + ")");
}

inline bool is_weight_dtype(int64_t d) {
    return d == PAGODA_DTYPE_F32 || d == PAGODA_DTYPE_BF16 || d == PAGODA_DTYPE_F16;
}

// `d` is raw_enum() of the field.
inline pagoda_status_t check_f32(const Reporter &r, const char *op, const char *field, int64_t d) {
    return d == PAGODA_DTYPE_F32 ? PAGODA_OK : dtype_error(r, op, field, d, "f32");
}

// The types weights (and the KV cache) may be stored in; computation is in f32.
inline pagoda_status_t check_weight_dtype(const Reporter &r, const char *op, const char *field,
                                          int64_t d) {
    return is_weight_dtype(d) ? PAGODA_OK : dtype_error(r, op, field, d, "f32, bf16 or f16");
}

// A weight that kernels read row by row (MATMUL's W, EMBEDDING's table): a plain weight type, or
// (ABI 1.3) a quantized block type when rows of `row_len` values at stride `ld` (0 = packed)
// hold whole blocks. A backend that does not decode blocks refuses them after this check.
inline pagoda_status_t check_row_weight_dtype(const Reporter &r, const char *op,
                                              const char *field, int64_t d, int64_t row_len,
                                              int64_t ld) {
    if (is_weight_dtype(d)) return PAGODA_OK;
    const auto dtype = static_cast<pagoda_dtype_t>(d);
    if (d <= PAGODA_DTYPE_INVALID || d > formats::kLastDtype || !formats::is_block_dtype(dtype))
        return dtype_error(r, op, field, d, "f32, bf16, f16 or a quantized block type");
    const int64_t block = formats::block_shape(dtype).elements;
    if (row_len % block == 0 && ld % block == 0) return PAGODA_OK;
    return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                  std::string(op) + ": rows of " + std::to_string(row_len) + " values at stride " +
                      std::to_string(ld) + " are not whole " + formats::dtype_name(dtype) + " blocks of " +
                      std::to_string(block));
}

// An activation type field of ABI 1.1 (an op's act_dtype, EMBEDDING's out_dtype, ...): F32, BF16,
// F16, or 0, which a caller of an older header leaves there and which means F32 (ops.h). Any
// other value is unsupported, as for weight types. `d` is raw_enum() of the field.
inline pagoda_status_t check_act_dtype(const Reporter &r, const char *op, const char *field,
                                       int64_t d) {
    if (d == PAGODA_DTYPE_INVALID || is_weight_dtype(d)) return PAGODA_OK;
    return dtype_error(r, op, field, d, "f32 (or 0), bf16 or f16");
}

// The type an activation field that passed check_act_dtype names: 0 resolved to F32.
inline pagoda_dtype_t act_dtype_of(const pagoda_dtype_t &field) {
    return raw_enum(field) == PAGODA_DTYPE_INVALID ? PAGODA_DTYPE_F32 : field;
}

inline pagoda_status_t check_positive(const Reporter &r, const char *op, const char *field,
                                      int64_t v) {
    if (v > 0) return PAGODA_OK;
    return r.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) + ": " + field + " = " +
                                                   std::to_string(v) + " must be positive");
}

// The row stride a descriptor means: 0 is "packed" (`row_len`).
inline int64_t packed_or(int64_t ld, int64_t row_len) { return ld == 0 ? row_len : ld; }

inline pagoda_status_t check_stride(const Reporter &r, const char *op, const char *field,
                                    int64_t ld, int64_t row_len) {
    if (ld == 0 || ld >= row_len) return PAGODA_OK;
    return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                  std::string(op) + ": " + field + " = " + std::to_string(ld) +
                      " is smaller than the row length " + std::to_string(row_len));
}

// A `rows` × `row_len` array with row stride `ld` of `elem_bytes` elements must be addressable,
// so that the kernels' index arithmetic cannot overflow. Call after the shape checks passed.
inline pagoda_status_t check_extent(const Reporter &r, const char *op, const char *name,
                                    int64_t rows, int64_t ld, int64_t row_len,
                                    int64_t elem_bytes) {
    int64_t last = 0, elems = 0, bytes = 0;
    if (__builtin_mul_overflow(rows - 1, ld, &last) ||
        __builtin_add_overflow(last, row_len, &elems) ||
        __builtin_mul_overflow(elems, elem_bytes, &bytes))
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) + ": " + name + " of " +
                                                       std::to_string(rows) + " rows with stride " +
                                                       std::to_string(ld) +
                                                       " does not fit in the address space");
    return PAGODA_OK;
}

// check_extent for a weight of `dtype` (plain or block: check_row_weight_dtype passed), counting
// its rows in blocks.
inline pagoda_status_t check_weight_extent(const Reporter &r, const char *op, const char *name,
                                           pagoda_dtype_t dtype, int64_t rows, int64_t ld,
                                           int64_t row_len) {
    const formats::BlockShape b = formats::block_shape(dtype);
    return check_extent(r, op, name, rows, ld / b.elements, row_len / b.elements, b.bytes);
}

inline pagoda_status_t check_pointer(const Reporter &r, const char *op, const char *field,
                                     const void *p) {
    if (p != nullptr) return PAGODA_OK;
    return r.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) + ": " + field + " is NULL");
}

// A float for a message: std::to_string prints 1e-7 as "0.000000".
inline std::string float_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

inline pagoda_status_t check_finite(const Reporter &r, const char *op, const char *field,
                                    double v) {
    if (std::isfinite(v)) return PAGODA_OK;
    return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                  std::string(op) + ": " + field + " = " + float_text(v) + " is not finite");
}

// The fields that describe a paged KV cache, as KV_WRITE and PAGED_ATTENTION both carry them.
// Only PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN exists so far; the byte size of the whole cache must be
// addressable so that no kernel's offset arithmetic overflows. `op` prefixes messages.
inline pagoda_status_t check_kv_cache(const Reporter &r, const char *op,
                                      const pagoda_kv_layout_t &layout_field,
                                      const pagoda_dtype_t &dtype_field, int64_t n_kv_heads,
                                      int64_t head_dim, int64_t block_size, int64_t num_blocks) {
    const std::string p = std::string(op) + ": ";
    const int64_t layout = raw_enum(layout_field), dtype = raw_enum(dtype_field);
    if (layout != PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN)
        return r.fail(PAGODA_ERR_UNSUPPORTED,
                      p + "layout " + std::to_string(layout) +
                          " is not supported (only PAGODA_KV_LAYOUT_BLOCK_HEAD_TOKEN)");
    if (!is_weight_dtype(dtype)) {
        const bool known = dtype >= PAGODA_DTYPE_INVALID && dtype <= formats::kLastDtype;
        return r.fail(PAGODA_ERR_UNSUPPORTED,
                      p + "cache_dtype " +
                          (known ? formats::dtype_name(pagoda_dtype_t(dtype)) : std::to_string(dtype)) +
                          " is not supported (f32, bf16 or f16)");
    }
    if (n_kv_heads <= 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p + "n_kv_heads " + std::to_string(n_kv_heads) + " must be positive");
    if (head_dim <= 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p + "head_dim " + std::to_string(head_dim) + " must be positive");
    if (block_size < 1 || block_size > kMaxBlockSize)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p + "block_size " + std::to_string(block_size) + " is outside 1..128");
    if (num_blocks < 0)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p + "num_blocks " + std::to_string(num_blocks) + " is negative");
    const int64_t elem = int64_t(formats::dtype_size(pagoda_dtype_t(dtype)));  // known: checked above
    int64_t bytes = 0;
    if (__builtin_mul_overflow(n_kv_heads, head_dim, &bytes) ||
        __builtin_mul_overflow(bytes, block_size * elem, &bytes) ||
        __builtin_mul_overflow(bytes, num_blocks, &bytes))
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      p + "the cache of num_blocks " + std::to_string(num_blocks) +
                          " × n_kv_heads × block_size × head_dim is too large to address");
    return PAGODA_OK;
}

// An optional token stride (0 = packed) against the row length it must cover.
inline pagoda_status_t check_token_stride(const Reporter &r, const char *op, const char *field,
                                          int64_t stride, int64_t row) {
    if (stride == 0 || stride >= row) return PAGODA_OK;
    return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                  std::string(op) + ": " + field + " " + std::to_string(stride) +
                      " is smaller than a token's " + std::to_string(row) + " elements");
}

}  // namespace pagoda::plugin
