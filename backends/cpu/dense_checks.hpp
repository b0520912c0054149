// Descriptor checks shared by the dense kernels (matmul, embedding, norms, RoPE, elementwise,
// rowwise). Each helper returns PAGODA_OK or the failure it recorded through `cpu.fail`, with a
// message "<op>: <field> = <value> <what is wrong>".
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "cpu_backend.hpp"
#include "names.hpp"

// Returns from the enclosing function when a check fails.
#define PAGODA_CPU_CHECK(expr)                                                  \
    do {                                                                        \
        if (pagoda_status_t check_status_ = (expr); check_status_ != PAGODA_OK) \
            return check_status_;                                               \
    } while (0)

namespace pagoda::cpu {

// The value a C caller stored in an enum field. Loading an out-of-range value through the C++
// enum type is undefined behaviour, and the ABI cannot stop a caller passing one, so checks read
// the raw int; after a check passes the field is safe to use as the enum.
template <typename E>
inline int raw_enum(const E &field) {
    static_assert(sizeof(E) == sizeof(int));
    int v;
    std::memcpy(&v, &field, sizeof v);
    return v;
}

// "bf16 (3)": the name alone hides which raw value a caller passed.
inline std::string dtype_text(int d) {
    const bool known = d >= PAGODA_DTYPE_INVALID && d <= PAGODA_DTYPE_U8;
    return std::string(known ? plugin::dtype_name(static_cast<pagoda_dtype_t>(d)) : "unknown") +
           " (" + std::to_string(d) + ")";
}

// INVALID (0) is a descriptor nobody filled in; any other value may be a type some other
// backend (or a later ABI) handles, so it is only unsupported here.
inline pagoda_status_t dtype_error(CpuBackend &cpu, const char *op, const char *field, int d,
                                   const char *allowed) {
    if (d == PAGODA_DTYPE_INVALID)
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string(op) + ": " + field + " is not set (must be " + allowed + ")");
    return cpu.fail(PAGODA_ERR_UNSUPPORTED, std::string(op) + ": " + field + " = " + dtype_text(d) +
                                                " is not supported (must be " + allowed + ")");
}

// `d` is raw_enum() of the field.
inline pagoda_status_t check_f32(CpuBackend &cpu, const char *op, const char *field, int d) {
    return d == PAGODA_DTYPE_F32 ? PAGODA_OK : dtype_error(cpu, op, field, d, "f32");
}

inline pagoda_status_t check_weight_dtype(CpuBackend &cpu, const char *op, const char *field,
                                          int d) {
    if (d == PAGODA_DTYPE_F32 || d == PAGODA_DTYPE_BF16 || d == PAGODA_DTYPE_F16) return PAGODA_OK;
    return dtype_error(cpu, op, field, d, "f32, bf16 or f16");
}

inline pagoda_status_t check_positive(CpuBackend &cpu, const char *op, const char *field,
                                      int64_t v) {
    if (v > 0) return PAGODA_OK;
    return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) + ": " + field + " = " +
                                                     std::to_string(v) + " must be positive");
}

// The row stride a descriptor means: 0 is "packed" (`row_len`).
inline int64_t packed_or(int64_t ld, int64_t row_len) { return ld == 0 ? row_len : ld; }

inline pagoda_status_t check_stride(CpuBackend &cpu, const char *op, const char *field, int64_t ld,
                                    int64_t row_len) {
    if (ld == 0 || ld >= row_len) return PAGODA_OK;
    return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                    std::string(op) + ": " + field + " = " + std::to_string(ld) +
                        " is smaller than the row length " + std::to_string(row_len));
}

// A `rows` × `row_len` array with row stride `ld` of `elem_bytes` elements must be addressable,
// so that the kernels' index arithmetic cannot overflow. Call after the shape checks passed.
inline pagoda_status_t check_extent(CpuBackend &cpu, const char *op, const char *name, int64_t rows,
                                    int64_t ld, int64_t row_len, int64_t elem_bytes) {
    int64_t last = 0, elems = 0, bytes = 0;
    if (__builtin_mul_overflow(rows - 1, ld, &last) ||
        __builtin_add_overflow(last, row_len, &elems) ||
        __builtin_mul_overflow(elems, elem_bytes, &bytes))
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) + ": " + name + " of " +
                                                         std::to_string(rows) +
                                                         " rows with stride " + std::to_string(ld) +
                                                         " does not fit in the address space");
    return PAGODA_OK;
}

inline pagoda_status_t check_pointer(CpuBackend &cpu, const char *op, const char *field,
                                     const void *p) {
    if (p != nullptr) return PAGODA_OK;
    return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT, std::string(op) + ": " + field + " is NULL");
}

// A float for a message: std::to_string prints 1e-7 as "0.000000".
inline std::string float_text(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

inline pagoda_status_t check_finite(CpuBackend &cpu, const char *op, const char *field, double v) {
    if (std::isfinite(v)) return PAGODA_OK;
    return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                    std::string(op) + ": " + field + " = " + float_text(v) + " is not finite");
}

// Rows per parallel chunk so that a chunk touches at least `min_elems` elements: smaller chunks
// cost more in hand-off than they gain. A whole launch below that runs on the caller alone.
inline int64_t rows_per_chunk(int64_t row_len, int64_t min_elems = 16384) {
    return row_len >= min_elems ? 1 : (min_elems + row_len - 1) / row_len;
}

}  // namespace pagoda::cpu
