// f32/bf16/f16 storage read as f32 and written from f32, for every kernel that takes weights,
// caches or activations in any of the three types (ops.h: compute and accumulate in f32, round
// results once to nearest even). CUDA-only (.cu files).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "pagoda/dtype.h"

namespace pagoda::cuda {

__device__ __forceinline__ float load_as_float(const float *p) { return *p; }
__device__ __forceinline__ float load_as_float(const __nv_bfloat16 *p) {
    return __bfloat162float(*p);
}
__device__ __forceinline__ float load_as_float(const __half *p) { return __half2float(*p); }

__device__ __forceinline__ void store_from_float(float *p, float v) { *p = v; }
__device__ __forceinline__ void store_from_float(__nv_bfloat16 *p, float v) {
    *p = __float2bfloat16_rn(v);
}
__device__ __forceinline__ void store_from_float(__half *p, float v) { *p = __float2half_rn(v); }

// Element `i` of an array whose type is only known at run time (F32, BF16 or F16), for
// kernels that touch few elements of it, where a switch costs less than more instantiations.
__device__ __forceinline__ float load_as_float(const void *base, pagoda_dtype_t dtype, int64_t i) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16: return load_as_float(static_cast<const __nv_bfloat16 *>(base) + i);
        case PAGODA_DTYPE_F16: return load_as_float(static_cast<const __half *>(base) + i);
        default: return static_cast<const float *>(base)[i];
    }
}
__device__ __forceinline__ void store_from_float(void *base, pagoda_dtype_t dtype, int64_t i,
                                                 float v) {
    switch (dtype) {
        case PAGODA_DTYPE_BF16: store_from_float(static_cast<__nv_bfloat16 *>(base) + i, v); break;
        case PAGODA_DTYPE_F16: store_from_float(static_cast<__half *>(base) + i, v); break;
        default: static_cast<float *>(base)[i] = v; break;
    }
}

// Bytes of an activation type (F32, BF16, F16); 0 for any other.
__host__ __device__ inline int64_t activation_bytes(pagoda_dtype_t dtype) {
    return dtype == PAGODA_DTYPE_F32 ? 4
           : dtype == PAGODA_DTYPE_BF16 || dtype == PAGODA_DTYPE_F16 ? 2
                                                                     : 0;
}

// N elements of T aligned to their total size, so that one access of it compiles to one vector
// load or store (ld.global.v4 for 16 bytes) instead of N scalar ones.
template <typename T, int N>
struct alignas(sizeof(T) * N) AlignedVec {
    T v[N];
};

// Elements of T in one 16-byte access: 4 floats or 8 halves.
template <typename T>
inline constexpr int kVec16Elems = int(16 / sizeof(T));

// Reads N elements at `p` in one access and widens them to f32. `p` must be aligned to
// N·sizeof(T) bytes (16 for N = kVec16Elems<T>).
template <int N, typename T>
__device__ __forceinline__ void load_vec_as_float(const T *p, float (&out)[N]) {
    const AlignedVec<T, N> raw = *reinterpret_cast<const AlignedVec<T, N> *>(p);
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = load_as_float(&raw.v[i]);
}

// Rounds N f32 values to T and writes them at `p` in one access; `p` aligned as for
// load_vec_as_float.
template <int N, typename T>
__device__ __forceinline__ void store_vec_from_float(T *p, const float (&in)[N]) {
    AlignedVec<T, N> raw;
#pragma unroll
    for (int i = 0; i < N; ++i) store_from_float(&raw.v[i], in[i]);
    *reinterpret_cast<AlignedVec<T, N> *>(p) = raw;
}

// Stores the N f32 values at `v` as T at `p`, in accesses of at most 16 bytes (each aligned to
// its size, which the caller's alignment of `p` to N·sizeof(T) or 16 bytes ensures).
template <int N, typename T>
__device__ __forceinline__ void store_floats(T *p, const float *v) {
    constexpr int kPiece = N < kVec16Elems<T> ? N : kVec16Elems<T>;
#pragma unroll
    for (int j = 0; j < N; j += kPiece) {
        float piece[kPiece];
#pragma unroll
        for (int k = 0; k < kPiece; ++k) piece[k] = v[j + k];
        store_vec_from_float<kPiece>(p + j, piece);
    }
}

// Names a storage type as a value, so a generic lambda can recover it:
// `[&](auto tag) { using T = typename decltype(tag)::type; ... }`.
template <typename T>
struct StorageTag {
    using type = T;
};

// Calls `body(StorageTag<T>{})` with T the C++ type of `dtype` (float, __nv_bfloat16, __half)
// and returns what it returns; cudaErrorInvalidValue for any other dtype (the shared op checks
// have rejected those already, so this is a guard, not a path).
template <typename Body>
cudaError_t with_storage_type(pagoda_dtype_t dtype, Body &&body) {
    switch (dtype) {
        case PAGODA_DTYPE_F32: return body(StorageTag<float>{});
        case PAGODA_DTYPE_BF16: return body(StorageTag<__nv_bfloat16>{});
        case PAGODA_DTYPE_F16: return body(StorageTag<__half>{});
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace pagoda::cuda
