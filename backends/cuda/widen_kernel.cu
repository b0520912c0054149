#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "block_decode.cuh"
#include "half_load.cuh"
#include "widen_kernel.hpp"

namespace pagoda::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;
constexpr int kVec = 8;  // 16-bit elements per 16-byte load

__device__ inline float to_f32(uint16_t bits, bool bf16) {
    return bf16 ? __uint_as_float(uint32_t(bits) << 16) : __half2float(__ushort_as_half(bits));
}

// One 16-byte load of 8 elements, two 16-byte stores of 8 floats per step of a grid-stride loop
// over rows × cols/8 vectors. Needs cols and ld_src multiples of 8 and `src` 16-byte aligned;
// `dst` rows are then 32-byte multiples of a cudaMalloc'd (256-byte aligned) base.
__global__ void widen_vectors(const uint16_t *__restrict__ src, bool bf16, int64_t ld_src,
                              int64_t rows, int64_t cols, float *__restrict__ dst) {
    const int64_t per_row = cols / kVec;
    const int64_t total = rows * per_row;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
        const int64_t r = e / per_row, c = (e - r * per_row) * kVec;
        // Streaming load: each weight is read once, so keep it out of the caches' way.
        const uint4 bits = __ldcs(reinterpret_cast<const uint4 *>(src + r * ld_src + c));
        const uint32_t words[4] = {bits.x, bits.y, bits.z, bits.w};
        float out[kVec];
#pragma unroll
        for (int q = 0; q < 4; ++q) {  // little-endian: the lower half is the earlier element
            out[2 * q] = to_f32(uint16_t(words[q] & 0xFFFFu), bf16);
            out[2 * q + 1] = to_f32(uint16_t(words[q] >> 16), bf16);
        }
        float4 *d = reinterpret_cast<float4 *>(dst + r * cols + c);
        d[0] = make_float4(out[0], out[1], out[2], out[3]);
        d[1] = make_float4(out[4], out[5], out[6], out[7]);
    }
}

// Any alignment: one element per step.
__global__ void widen_elements(const uint16_t *__restrict__ src, bool bf16, int64_t ld_src,
                               int64_t rows, int64_t cols, float *__restrict__ dst) {
    const int64_t total = rows * cols;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
        const int64_t r = e / cols, c = e - r * cols;
        dst[e] = to_f32(src[r * ld_src + c], bf16);
    }
}

// Quantized blocks: 8 values decoded (block_decode.cuh) per step of a grid-stride loop over
// rows × cols/8 groups (cols is a whole number of blocks, so of groups), stored as T: f32 in
// two 16-byte stores, or rounded to nearest even to bf16/f16 in one.
template <pagoda_dtype_t DT, typename T>
__global__ void decode_blocks(const unsigned char *__restrict__ src, int64_t row_bytes,
                              int64_t rows, int64_t cols, T *__restrict__ dst) {
    const int64_t per_row = cols / kVec;
    const int64_t total = rows * per_row;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
        const int64_t r = e / per_row, c = (e - r * per_row) * kVec;
        float out[kVec];
        decode8<DT>(src + r * row_bytes, c, out);
        store_floats<kVec>(dst + r * cols + c, out);
    }
}

// One element per step, like widen_elements; the f32 rows are packed, so reads coalesce.
template <typename T>
__global__ void narrow_elements(const float *__restrict__ src, int64_t rows, int64_t cols,
                                T *__restrict__ dst, int64_t ld_dst) {
    const int64_t total = rows * cols;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
        const int64_t r = e / cols, c = e - r * cols;
        store_from_float(dst + r * ld_dst + c, src[e]);
    }
}

unsigned blocks_for(int64_t items) {
    const int64_t wanted = (items + kThreads - 1) / kThreads;
    return unsigned(wanted < kMaxBlocks ? wanted : kMaxBlocks);
}

}  // namespace

cudaError_t widen_to_f32(const void *src, pagoda_dtype_t dtype, int64_t ld_src, int64_t rows,
                         int64_t cols, float *dst, cudaStream_t stream) {
    const int64_t block = block_layout(dtype).elements;
    if (block != 0) {
        if (reinterpret_cast<uintptr_t>(src) % block_alignment(dtype) != 0 ||
            reinterpret_cast<uintptr_t>(dst) % 16 != 0 || cols % block != 0 || ld_src % block != 0)
            return cudaErrorInvalidValue;
        if (rows <= 0 || cols <= 0) return cudaSuccess;
        (void)cudaGetLastError();  // as below
        return with_block_type(dtype, [&](auto tag) {
            constexpr pagoda_dtype_t DT = decltype(tag)::value;
            decode_blocks<DT, float><<<blocks_for(rows * (cols / kVec)), kThreads, 0, stream>>>(
                static_cast<const unsigned char *>(src), block_row_bytes(DT, ld_src), rows, cols,
                dst);
            return cudaGetLastError();
        });
    }
    if (dtype != PAGODA_DTYPE_BF16 && dtype != PAGODA_DTYPE_F16) return cudaErrorInvalidValue;
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    const bool bf16 = dtype == PAGODA_DTYPE_BF16;
    const auto *s = static_cast<const uint16_t *>(src);
    const bool vectors = reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(dst) % 16 == 0 && cols % kVec == 0 &&
                         ld_src % kVec == 0;
    // A <<<>>> launch reports its error only through the thread's last-error slot: empty the
    // slot first so that what we read back belongs to this launch.
    (void)cudaGetLastError();
    if (vectors)
        widen_vectors<<<blocks_for(rows * (cols / kVec)), kThreads, 0, stream>>>(s, bf16, ld_src,
                                                                                 rows, cols, dst);
    else
        widen_elements<<<blocks_for(rows * cols), kThreads, 0, stream>>>(s, bf16, ld_src, rows,
                                                                         cols, dst);
    return cudaGetLastError();
}

cudaError_t round_blocks_to_half(const void *src, pagoda_dtype_t dtype, int64_t ld_src,
                                 int64_t rows, int64_t cols, void *dst, pagoda_dtype_t dst_dtype,
                                 cudaStream_t stream) {
    const int64_t block = block_layout(dtype).elements;
    if (block == 0 || (dst_dtype != PAGODA_DTYPE_BF16 && dst_dtype != PAGODA_DTYPE_F16) ||
        reinterpret_cast<uintptr_t>(src) % block_alignment(dtype) != 0 ||
        reinterpret_cast<uintptr_t>(dst) % 16 != 0 || cols % block != 0 || ld_src % block != 0)
        return cudaErrorInvalidValue;
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    (void)cudaGetLastError();  // as in widen_to_f32
    return with_block_type(dtype, [&](auto tag) {
        constexpr pagoda_dtype_t DT = decltype(tag)::value;
        const auto *blocks = static_cast<const unsigned char *>(src);
        const int64_t row_bytes = block_row_bytes(DT, ld_src);
        const unsigned grid = blocks_for(rows * (cols / kVec));
        if (dst_dtype == PAGODA_DTYPE_BF16)
            decode_blocks<DT><<<grid, kThreads, 0, stream>>>(blocks, row_bytes, rows, cols,
                                                             static_cast<__nv_bfloat16 *>(dst));
        else
            decode_blocks<DT><<<grid, kThreads, 0, stream>>>(blocks, row_bytes, rows, cols,
                                                             static_cast<__half *>(dst));
        return cudaGetLastError();
    });
}

cudaError_t narrow_from_f32(const float *src, int64_t rows, int64_t cols, void *dst,
                            pagoda_dtype_t dtype, int64_t ld_dst, cudaStream_t stream) {
    if (dtype != PAGODA_DTYPE_BF16 && dtype != PAGODA_DTYPE_F16) return cudaErrorInvalidValue;
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    (void)cudaGetLastError();  // as in widen_to_f32
    if (dtype == PAGODA_DTYPE_BF16)
        narrow_elements<<<blocks_for(rows * cols), kThreads, 0, stream>>>(
            src, rows, cols, static_cast<__nv_bfloat16 *>(dst), ld_dst);
    else
        narrow_elements<<<blocks_for(rows * cols), kThreads, 0, stream>>>(
            src, rows, cols, static_cast<__half *>(dst), ld_dst);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
