// EMBEDDING: rows of a f32/bf16/f16 or quantized block table gathered by token id into f32,
// bf16 or f16; embedding_kernel.cu.
// Plain C++ so both nvcc and the host compiler read it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "device_error.hpp"
#include "pagoda/dtype.h"

namespace pagoda::cuda {

// out[i, :] = scale · table[ids[i], :] for i < n_tokens; `table` is [vocab_size, dim] of
// `table_dtype` (F32, BF16, F16, or a block type aligned as block_decode.cuh needs), `out` rows
// of `out_dtype` (F32, BF16 or F16) are `ldo` apart: with `scale` 1 (ops.h's 0 already turned
// into 1) a row of the table's own type is copied as it is; others are widened, multiplied by
// `scale` in f32 and rounded once. Two kernels on `stream`: the
// first checks every id and records the first one outside [0, vocab_size) in `error`
// (DeviceErrorField::EmbeddingId); the second gathers unless `error` holds a record, so a bad
// batch writes nothing. Returns the launches' error.
cudaError_t launch_embedding(const void *table, pagoda_dtype_t table_dtype, int64_t vocab_size,
                             int64_t dim, const int32_t *ids, int64_t n_tokens, void *out,
                             pagoda_dtype_t out_dtype, int64_t ldo, float scale,
                             DeviceError *error, cudaStream_t stream);

}  // namespace pagoda::cuda
