// EMBEDDING: a check of the ids, then the gather. The ids live in device memory, so only a kernel
// can see a bad one; checking them all in a kernel of their own before any row is written is
// what makes a failed launch change nothing (ops.h), without every gather block rereading every
// id.
#include <cstdint>
#include <type_traits>

#include "block_decode.cuh"
#include "embedding_kernel.hpp"
#include "half_load.cuh"
#include "launch_shape.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    check_ids_kernel(const int32_t *ids, int64_t n_tokens, int64_t vocab_size,
                     DeviceError *error) {
    if (failed(error)) return;  // an earlier launch's error stands; this one is skipped anyway
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_tokens; i += step) {
        const int32_t id = ids[i];
        if (id < 0 || id >= vocab_size)
            report(error, int32_t(PAGODA_OP_EMBEDDING), DeviceErrorField::EmbeddingId, i, id,
                   vocab_size);
    }
}

// Tokens go along grid.y (grid-stride) and each row's units along grid.x. A unit is one 16-byte
// load of the table (4 f32 or 8 bf16/f16) when kVec, else 1 element; unscaled, a table of the
// output's own type is copied unconverted, bit for bit.
template <typename T, typename O, bool kVec>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const T *table, int64_t dim, const int32_t *ids, int64_t n_tokens, O *out,
                  int64_t ldo, float scale, const DeviceError *error) {
    if (failed(error)) return;
    constexpr int kUnit = kVec ? kVec16Elems<T> : 1;
    constexpr bool kSameType = std::is_same_v<T, O>;
    const int64_t units = dim / kUnit;  // kVec only when kUnit divides dim
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t t = blockIdx.y; t < n_tokens; t += gridDim.y) {
        const T *row = table + int64_t(ids[t]) * dim;
        O *o = out + t * ldo;
        for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < units; u += step) {
            const int64_t i = u * kUnit;
            if constexpr (kSameType) {
                if (scale == 1.0f) {  // the same for every thread: no divergence
                    using Unit = AlignedVec<T, kUnit>;
                    *reinterpret_cast<Unit *>(o + i) = *reinterpret_cast<const Unit *>(row + i);
                    continue;
                }
            }
            if constexpr (kVec) {
                float v[kUnit];
                load_vec_as_float<kUnit>(row + i, v);
#pragma unroll
                for (int j = 0; j < kUnit; ++j) v[j] *= scale;
                store_floats<kUnit>(o + i, v);
            } else {
                store_from_float(o + i, load_as_float(row + i) * scale);
            }
        }
    }
}

// A table of quantized blocks: as gather_kernel, a unit being 8 values decoded from a row of
// blocks (block_decode.cuh), each scaled and rounded once to O.
template <pagoda_dtype_t DT, typename O>
__global__ void __launch_bounds__(kThreads)
    gather_blocks_kernel(const unsigned char *table, int64_t dim, const int32_t *ids,
                         int64_t n_tokens, O *out, int64_t ldo, float scale,
                         const DeviceError *error) {
    if (failed(error)) return;
    const int64_t units = dim / 8, row_bytes = block_row_bytes(DT, dim);
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t t = blockIdx.y; t < n_tokens; t += gridDim.y) {
        const unsigned char *row = table + int64_t(ids[t]) * row_bytes;
        O *o = out + t * ldo;
        for (int64_t u = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < units; u += step) {
            float v[8];
            decode8<DT>(row, u * 8, v);
#pragma unroll
            for (int i = 0; i < 8; ++i) store_from_float(o + u * 8 + i, v[i] * scale);
        }
    }
}

// Queues the id check, then `gather(grid)`: what every table type shares.
template <typename Gather>
cudaError_t check_then_gather(const int32_t *ids, int64_t n_tokens, int64_t vocab_size,
                              int64_t units, DeviceError *error, cudaStream_t stream,
                              Gather &&gather) {
    // Empty the thread's last-error slot so that what we read back belongs to these launches.
    (void)cudaGetLastError();
    check_ids_kernel<<<grid_blocks(n_tokens, kThreads), kThreads, 0, stream>>>(ids, n_tokens,
                                                                               vocab_size, error);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    gather(dim3(grid_blocks(units, kThreads), grid_blocks(n_tokens, 1)));
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_embedding(const void *table, pagoda_dtype_t table_dtype, int64_t vocab_size,
                             int64_t dim, const int32_t *ids, int64_t n_tokens, void *out,
                             pagoda_dtype_t out_dtype, int64_t ldo, float scale,
                             DeviceError *error, cudaStream_t stream) {
    if (block_layout(table_dtype).elements != 0) {
        if (reinterpret_cast<uintptr_t>(table) % block_alignment(table_dtype) != 0)
            return cudaErrorInvalidValue;
        return with_block_type(table_dtype, [&](auto table_tag) {
            constexpr pagoda_dtype_t DT = decltype(table_tag)::value;
            return with_storage_type(out_dtype, [&](auto out_tag) {
                using O = typename decltype(out_tag)::type;
                auto *typed_out = static_cast<O *>(out);
                const auto *blocks = static_cast<const unsigned char *>(table);
                return check_then_gather(
                    ids, n_tokens, vocab_size, dim / 8, error, stream, [&](dim3 grid) {
                        gather_blocks_kernel<DT, O><<<grid, kThreads, 0, stream>>>(
                            blocks, dim, ids, n_tokens, typed_out, ldo, scale, error);
                    });
            });
        });
    }
    return with_storage_type(table_dtype, [&](auto table_tag) {
        using T = typename decltype(table_tag)::type;
        return with_storage_type(out_dtype, [&](auto out_tag) {
            using O = typename decltype(out_tag)::type;
            constexpr int kVecElems = kVec16Elems<T>;
            // store_floats's accesses: a whole unit of O, or 16 bytes when that is larger.
            constexpr int64_t kOutBytes =
                kVecElems * int64_t(sizeof(O)) < 16 ? kVecElems * int64_t(sizeof(O)) : 16;
            // Every table row starts on a 16-byte boundary when the base does and dim is a
            // whole number of vectors; out's rows start on a boundary of kOutBytes likewise.
            const bool vec = is_aligned(table, 16) && dim % kVecElems == 0 &&
                             is_aligned(out, size_t(kOutBytes)) &&
                             (ldo * int64_t(sizeof(O))) % kOutBytes == 0;
            const int64_t units = vec ? dim / kVecElems : dim;
            const auto *typed = static_cast<const T *>(table);
            auto *typed_out = static_cast<O *>(out);
            return check_then_gather(ids, n_tokens, vocab_size, units, error, stream, [&](dim3 grid) {
                if (vec)
                    gather_kernel<T, O, true><<<grid, kThreads, 0, stream>>>(
                        typed, dim, ids, n_tokens, typed_out, ldo, scale, error);
                else
                    gather_kernel<T, O, false><<<grid, kThreads, 0, stream>>>(
                        typed, dim, ids, n_tokens, typed_out, ldo, scale, error);
            });
        });
    });
}

}  // namespace pagoda::cuda
