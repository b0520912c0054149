// Reading an op's argument struct across ABI minor versions (ops.h's conventions). A caller built
// against an older header passes a smaller struct_size: the fields it does not know read as zero.
// A caller built against a newer header passes a larger one: the fields this backend does not
// know must then be zero, and a descriptor that sets any of them is refused as unsupported, so
// that an older backend never silently misreads a request it does not understand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "pagoda/ops.h"
#include "reporter.hpp"

namespace pagoda::plugin {

// The smallest struct_size accepted for T: the size of T in ABI 1.0, whose fields every kernel
// needs. Fields appended since then read as zero when a 1.0 caller leaves them out.
template <typename T>
inline constexpr size_t kOpArgsMinSize = sizeof(T);
// ABI 1.1 appended k_rope.
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_kv_write_t> =
    offsetof(pagoda_op_kv_write_t, k_rope);
// ABI 1.1 appended act_dtype (0 = F32), ABI 1.2 kv_shards, kv_shard and lse (0 = unsharded),
// ABI 1.8 softcap (0 = off).
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_paged_attention_t> =
    offsetof(pagoda_op_paged_attention_t, act_dtype);
// ABI 1.6 appended MATMUL's variant (0 = the backend's own rules).
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_matmul_t> = offsetof(pagoda_op_matmul_t, variant);
// ABI 1.1 appended the activation types of the dense ops (0 = F32); ABI 1.8 EMBEDDING's scale
// (0 = 1) and SILU_MUL's activation (0 = SiLU), 8 bytes each so that they lie past the older
// structs' tail padding: an older caller's struct_size stops before them, and an older backend
// sees them set past its sizeof and refuses.
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_embedding_t> =
    offsetof(pagoda_op_embedding_t, out_dtype);
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_rmsnorm_t> =
    offsetof(pagoda_op_rmsnorm_t, act_dtype);
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_rope_t> = offsetof(pagoda_op_rope_t, act_dtype);
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_silu_mul_t> =
    offsetof(pagoda_op_silu_mul_t, act_dtype);
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_add_t> = offsetof(pagoda_op_add_t, act_dtype);
// ABI 1.1 appended the row-wise ops' activation types (0 = F32).
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_argmax_t> =
    offsetof(pagoda_op_argmax_t, act_dtype);
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_softmax_t> =
    offsetof(pagoda_op_softmax_t, act_dtype);
template <>
inline constexpr size_t kOpArgsMinSize<pagoda_op_sample_t> =
    offsetof(pagoda_op_sample_t, logits_dtype);

// Copies the struct at `args` into `out` as this backend knows it. Fails, naming `what` (the op,
// or the field holding a nested struct, such as "kv_write: k_rope") in the message, with
// PAGODA_ERR_INVALID_ARGUMENT when `args` is NULL or its struct_size is below kOpArgsMinSize<T>,
// and with PAGODA_ERR_UNSUPPORTED when struct_size is larger than sizeof(T) and a byte past
// sizeof(T) is nonzero: a field from a newer header that this backend would ignore.
// Bytes [sizeof(T), struct_size) of the caller's struct are read, as its struct_size promises.
template <typename T>
pagoda_status_t read_op_args(const Reporter &r, const std::string &what, const void *args,
                             T &out) {
    if (args == nullptr)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT, what + ": the argument struct is NULL");
    uint32_t declared = 0;
    std::memcpy(&declared, args, sizeof declared);
    if (declared < kOpArgsMinSize<T>)
        return r.fail(PAGODA_ERR_INVALID_ARGUMENT,
                      what + ": struct_size " + std::to_string(declared) +
                          " is too small (at least " + std::to_string(kOpArgsMinSize<T>) + ")");
    const auto *bytes = static_cast<const unsigned char *>(args);
    for (size_t i = sizeof(T); i < declared; ++i)
        if (bytes[i] != 0)
            return r.fail(PAGODA_ERR_UNSUPPORTED,
                          what + ": the descriptor sets fields this backend does not know "
                                 "(struct_size " + std::to_string(declared) + " > " +
                              std::to_string(sizeof(T)) + ", byte " + std::to_string(i) +
                              " is nonzero)");
    out = T{};
    std::memcpy(&out, args, declared < sizeof(T) ? declared : sizeof(T));
    return PAGODA_OK;
}

}  // namespace pagoda::plugin
