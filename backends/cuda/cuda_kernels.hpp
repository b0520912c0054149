// The CUDA kernels, one `run_*` per op. Descriptors are checked first by the checks every backend
// shares (op_checks.hpp, through cuda_kernels.cpp), so `run_*` receives a descriptor whose
// types, shapes and strides are valid; it checks pointers and what it can see on the host, and
// leaves data held in device memory (ids, slots, block tables) to its kernels, which report
// through the stream's DeviceError (device_error.hpp). Each kernel family lives in its own .cu
// file with a plain C++ launch header; these functions are the glue.
#pragma once

#include "cuda_backend.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

// cuda_matmul.cpp: cuBLAS(Lt) GEMMs and, for decode-sized m with half-precision weights, our
// GEMV (gemv_kernel.cu). check_matmul_limits adds what cuBLAS cannot take (32-bit sizes) and
// the pinned variants that cannot run the descriptor; the variants are named by
// matmul_variant_name (NULL outside 1..matmul_variants()).
pagoda_status_t check_matmul_limits(CudaBackend &cuda, const pagoda_op_matmul_t &a);
const char *matmul_variant_name(int32_t variant);
int32_t matmul_variants();
// The kernels table's variant_name slot (ABI 1.6), shared by both kernel tables.
const char *variant_name(void *self, int32_t device, pagoda_op_t op, int32_t variant);
pagoda_status_t run_matmul(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                           const pagoda_op_matmul_t &a);

// cuda_dense.cpp over embedding_kernel.cu, rmsnorm_kernel.cu, rope_kernel.cu,
// elementwise_kernel.cu (silu_mul, add, softcap) and rowwise_kernel.cu (argmax, softmax).
pagoda_status_t run_embedding(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                              const pagoda_op_embedding_t &a);
pagoda_status_t run_rmsnorm(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                            const pagoda_op_rmsnorm_t &a);
pagoda_status_t run_rope(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                         const pagoda_op_rope_t &a);
pagoda_status_t run_silu_mul(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                             const pagoda_op_silu_mul_t &a);
pagoda_status_t run_add(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                        const pagoda_op_add_t &a);
pagoda_status_t run_softcap(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                            const pagoda_op_softcap_t &a);
pagoda_status_t run_argmax(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                           const pagoda_op_argmax_t &a);
pagoda_status_t run_softmax(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                            const pagoda_op_softmax_t &a);

// cuda_sample.cpp over sample_kernel.cu: SAMPLE, one block per row.
pagoda_status_t run_sample(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                           const pagoda_op_sample_t &a);

// cuda_paged.cpp over kv_write_kernel.cu, paged_attention_prefill.cu (FlashAttention-2 style
// tiles read straight from blocks), paged_attention_decode.cu (split-K over the context) and
// attention_merge.cu (the log-sum-exp merge of partial results, its own kernel because cache
// parallelism merges across devices with it).
pagoda_status_t run_kv_write(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                             const pagoda_op_kv_write_t &a);
pagoda_status_t run_paged_attention(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                    const pagoda_op_paged_attention_t &a);
// What the attention kernels cannot take (head_dim past their register tiles, grid limits).
pagoda_status_t check_paged_attention_limits(CudaBackend &cuda,
                                             const pagoda_op_paged_attention_t &a);

// cuda_moe.cpp over moe_route_kernel.cu (one block per token) and moe_matmul_kernel.cu (slots
// bucketed by expert on the device, a tiled product per expert over its gathered rows). Every
// w_dtype MATMUL takes runs; check_moe_matmul_limits adds the bucketing's int32 bounds.
pagoda_status_t check_moe_matmul_limits(CudaBackend &cuda, const pagoda_op_moe_matmul_t &a);
pagoda_status_t run_moe_route(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                              const pagoda_op_moe_route_t &a);
pagoda_status_t run_moe_matmul(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                               const pagoda_op_moe_matmul_t &a);

// cuda_copy_blocks.cpp: COPY_BLOCKS within the device, SWAP_BLOCKS to and from pinned host
// memory, all pairs of all caches in one launch where it can.
pagoda_status_t run_copy_blocks(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                const pagoda_op_copy_blocks_t &a);
pagoda_status_t run_swap_blocks(CudaBackend &cuda, pagoda_backend_stream_t &stream,
                                const pagoda_op_copy_blocks_t &a);

}  // namespace pagoda::cuda
