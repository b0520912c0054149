// SILU_MUL, ADD and SOFTCAP: streaming passes, one 16-byte vector (4 f32 or 8 bf16/f16) per
// thread per step where the rows are 16-byte aligned. Inputs are widened to f32 and each result
// rounded once to the activation type. Each output element depends only on the inputs at its own
// index, so outputs may alias inputs (no __restrict__).
#include <cstdint>

#include "elementwise_kernel.hpp"
#include "half_load.cuh"
#include "launch_shape.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

namespace {

constexpr int kThreads = 256;

// silu(z) = z / (1 + e^-z), as the CPU backend computes it: for z → -∞, e^-z overflows to inf
// and the quotient is the right -0.
__device__ __forceinline__ float silu(float z) { return z / (1.0f + expf(-z)); }

// gelu(z) ≈ z/2 · (1 + tanh u), u = √(2/π)·(z + 0.044715·z³), as the CPU backend computes it:
// z / (1 + e^(−2u)), the same value without 1 + tanh u cancelling for negative z.
__device__ __forceinline__ float gelu_tanh(float z) {
    const float u = 0.7978845608028654f * (z + 0.044715f * z * z * z);
    return z / (1.0f + expf(-2.0f * u));
}

// The gate's activation: `activation` is the same for every thread, so the branch never
// diverges.
__device__ __forceinline__ float glu(int32_t activation, float z) {
    return activation == PAGODA_GLU_GELU_TANH ? gelu_tanh(z) : silu(z);
}

// cap · tanh(x / cap); tanhf keeps NaN and sends ±inf to ±1.
__device__ __forceinline__ float softcap(float x, float cap) { return cap * tanhf(x / cap); }

// Whether every row of T, `ld` elements apart from `p`, starts on a 16-byte boundary.
template <typename T>
bool rows_allow_vec16(const void *p, int64_t ld) {
    return is_aligned(p, 16) && (ld * int64_t(sizeof(T))) % 16 == 0;
}

// Rows go along grid.y (grid-stride) and each row's units along grid.x, so no thread divides
// a flat index. A unit is one 16-byte vector when kVec (the row starts are aligned), else 1.
template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads)
    silu_mul_kernel(int32_t activation, const T *gate, const T *up, int64_t ld_in, T *out,
                    int64_t ldo, int64_t rows, int64_t dim, const DeviceError *error) {
    if (failed(error)) return;
    constexpr int kUnit = kVec ? kVec16Elems<T> : 1;
    const int64_t units = (dim + kUnit - 1) / kUnit;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const T *g = gate + r * ld_in, *u = up + r * ld_in;
        T *o = out + r * ldo;
        for (int64_t unit = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; unit < units;
             unit += step) {
            const int64_t i = unit * kUnit;
            if (kVec && i + kUnit <= dim) {
                float gv[kUnit], uv[kUnit], ov[kUnit];
                load_vec_as_float<kUnit>(g + i, gv);
                load_vec_as_float<kUnit>(u + i, uv);
#pragma unroll
                for (int j = 0; j < kUnit; ++j) ov[j] = glu(activation, gv[j]) * uv[j];
                store_vec_from_float<kUnit>(o + i, ov);
            } else {
                // A whole scalar unit, or the last partial vector of a row.
                const int64_t end = i + kUnit < dim ? i + kUnit : dim;
                for (int64_t j = i; j < end; ++j)
                    store_from_float(o + j, glu(activation, load_as_float(g + j)) *
                                                load_as_float(u + j));
            }
        }
    }
}

template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads)
    add_kernel(const T *a, const T *b, T *out, int64_t n, const DeviceError *error) {
    if (failed(error)) return;
    const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    int64_t tail = 0;
    if constexpr (kVec) {
        constexpr int kUnit = kVec16Elems<T>;
        const int64_t vectors = n / kUnit;
        for (int64_t c = first; c < vectors; c += step) {
            float x[kUnit], y[kUnit];
            load_vec_as_float<kUnit>(a + c * kUnit, x);
            load_vec_as_float<kUnit>(b + c * kUnit, y);
#pragma unroll
            for (int j = 0; j < kUnit; ++j) x[j] += y[j];
            store_vec_from_float<kUnit>(out + c * kUnit, x);
        }
        tail = vectors * kUnit;
    }
    for (int64_t i = tail + first; i < n; i += step)
        store_from_float(out + i, load_as_float(a + i) + load_as_float(b + i));
}

// In place over n elements, as add_kernel walks them.
template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads)
    softcap_kernel(T *x, int64_t n, float cap, const DeviceError *error) {
    if (failed(error)) return;
    const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    int64_t tail = 0;
    if constexpr (kVec) {
        constexpr int kUnit = kVec16Elems<T>;
        const int64_t vectors = n / kUnit;
        for (int64_t c = first; c < vectors; c += step) {
            float v[kUnit];
            load_vec_as_float<kUnit>(x + c * kUnit, v);
#pragma unroll
            for (int j = 0; j < kUnit; ++j) v[j] = softcap(v[j], cap);
            store_vec_from_float<kUnit>(x + c * kUnit, v);
        }
        tail = vectors * kUnit;
    }
    for (int64_t i = tail + first; i < n; i += step)
        store_from_float(x + i, softcap(load_as_float(x + i), cap));
}

}  // namespace

cudaError_t launch_silu_mul(pagoda_dtype_t act, int32_t activation, const void *gate,
                            const void *up, int64_t ld_in, void *out, int64_t ldo, int64_t rows,
                            int64_t dim, const DeviceError *error, cudaStream_t stream) {
    return with_storage_type(act, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const bool vec = rows_allow_vec16<T>(gate, ld_in) && rows_allow_vec16<T>(up, ld_in) &&
                         rows_allow_vec16<T>(out, ldo);
        const int64_t units = vec ? (dim + kVec16Elems<T> - 1) / kVec16Elems<T> : dim;
        const dim3 grid(grid_blocks(units, kThreads), grid_blocks(rows, 1));
        const auto *g = static_cast<const T *>(gate);
        const auto *u = static_cast<const T *>(up);
        auto *o = static_cast<T *>(out);
        // Empty the thread's last-error slot so that what we read back belongs to this launch.
        (void)cudaGetLastError();
        if (vec)
            silu_mul_kernel<T, true><<<grid, kThreads, 0, stream>>>(activation, g, u, ld_in, o,
                                                                    ldo, rows, dim, error);
        else
            silu_mul_kernel<T, false><<<grid, kThreads, 0, stream>>>(activation, g, u, ld_in, o,
                                                                     ldo, rows, dim, error);
        return cudaGetLastError();
    });
}

cudaError_t launch_add(pagoda_dtype_t act, const void *a, const void *b, void *out, int64_t n,
                       const DeviceError *error, cudaStream_t stream) {
    return with_storage_type(act, [&](auto tag) {
        using T = typename decltype(tag)::type;
        constexpr int kUnit = kVec16Elems<T>;
        const bool vec = is_aligned(a, 16) && is_aligned(b, 16) && is_aligned(out, 16);
        const unsigned blocks = grid_blocks(vec ? (n + kUnit - 1) / kUnit : n, kThreads);
        const auto *x = static_cast<const T *>(a);
        const auto *y = static_cast<const T *>(b);
        auto *o = static_cast<T *>(out);
        (void)cudaGetLastError();
        if (vec)
            add_kernel<T, true><<<blocks, kThreads, 0, stream>>>(x, y, o, n, error);
        else
            add_kernel<T, false><<<blocks, kThreads, 0, stream>>>(x, y, o, n, error);
        return cudaGetLastError();
    });
}

cudaError_t launch_softcap(pagoda_dtype_t dtype, void *x, int64_t n, float cap,
                           const DeviceError *error, cudaStream_t stream) {
    return with_storage_type(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        constexpr int kUnit = kVec16Elems<T>;
        const bool vec = is_aligned(x, 16);
        const unsigned blocks = grid_blocks(vec ? (n + kUnit - 1) / kUnit : n, kThreads);
        auto *typed = static_cast<T *>(x);
        (void)cudaGetLastError();
        if (vec)
            softcap_kernel<T, true><<<blocks, kThreads, 0, stream>>>(typed, n, cap, error);
        else
            softcap_kernel<T, false><<<blocks, kThreads, 0, stream>>>(typed, n, cap, error);
        return cudaGetLastError();
    });
}

}  // namespace pagoda::cuda
