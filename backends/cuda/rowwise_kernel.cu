// ARGMAX and SOFTMAX: one block per row (grid-stride over rows), each thread reducing a strided
// share of the row, then a warp-shuffle tree and one more across the block's warps. Rows of
// bf16/f16 are widened as they are loaded (16 bytes at a time where aligned) and softmax's
// results rounded once as they are stored.
#include <cmath>
#include <cstdint>

#include "half_load.cuh"
#include "launch_shape.hpp"
#include "pagoda/ops.h"
#include "rowwise_kernel.hpp"

namespace pagoda::cuda {

namespace {

constexpr unsigned kFullMask = 0xFFFFFFFFu;
// Vocabulary rows are long (32k–256k): a full block per row keeps enough loads in flight.
constexpr int kRowThreads = 1024;

// Calls f(i, float(x[i])) for this thread's share of row x[0..n): 16-byte loads (4 floats or 8
// halves) over the aligned body when kVec (the row starts on a 16-byte boundary), one by one
// for the rest.
template <bool kVec, typename T, typename F>
__device__ __forceinline__ void for_each_in_row(const T *x, int64_t n, F &&f) {
    constexpr int kN = kVec16Elems<T>;
    int64_t tail = 0;
    if constexpr (kVec) {
        const int64_t n_vec = n / kN;
        for (int64_t c = threadIdx.x; c < n_vec; c += blockDim.x) {
            float v[kN];
            load_vec_as_float<kN>(x + c * kN, v);
#pragma unroll
            for (int q = 0; q < kN; ++q) f(kN * c + q, v[q]);
        }
        tail = n_vec * kN;
    }
    for (int64_t i = tail + threadIdx.x; i < n; i += blockDim.x) f(i, load_as_float(x + i));
}

// ---- argmax ----

// A candidate maximum; index kNoIndex (past any int32 column) marks "none seen yet".
struct Best {
    float value;
    int32_t index;
};
constexpr int32_t kNoIndex = INT32_MAX;

// Whether `b` beats `a`: NaN beats numbers, a larger number beats a smaller one, and among
// equals (two NaNs included) the lower index wins. Order-free, so any reduction tree gives the
// CPU backend's sequential answer.
__device__ __forceinline__ bool beats(const Best &b, const Best &a) {
    const bool a_nan = isnan(a.value), b_nan = isnan(b.value);
    if (a_nan || b_nan) {
        if (a_nan && b_nan) return b.index < a.index;
        return b_nan;
    }
    if (b.value != a.value) return b.value > a.value;
    return b.index < a.index;
}

__device__ __forceinline__ Best warp_best(Best b) {
    for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) {
        const Best other{__shfl_xor_sync(kFullMask, b.value, offset),
                         __shfl_xor_sync(kFullMask, b.index, offset)};
        if (beats(other, b)) b = other;
    }
    return b;
}

template <bool kVec, typename T>
__global__ void __launch_bounds__(kRowThreads)
    argmax_kernel(const T *x, int64_t ldx, int64_t rows, int64_t cols, int32_t *out,
                  const DeviceError *error) {
    if (failed(error)) return;
    __shared__ Best warp_results[kMaxBlockThreads / kWarpThreads];
    const int lane = int(threadIdx.x) % kWarpThreads, warp = int(threadIdx.x) / kWarpThreads;
    const int n_warps = int(blockDim.x) / kWarpThreads;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        // -inf with no index loses to every element, -inf ones included (lower index).
        Best best{-INFINITY, kNoIndex};
        for_each_in_row<kVec>(x + r * ldx, cols, [&](int64_t i, float v) {
            const Best candidate{v, int32_t(i)};
            if (beats(candidate, best)) best = candidate;
        });
        best = warp_best(best);
        if (lane == 0) warp_results[warp] = best;
        __syncthreads();
        if (warp == 0) {
            Best b = lane < n_warps ? warp_results[lane] : Best{-INFINITY, kNoIndex};
            b = warp_best(b);
            if (lane == 0) out[r] = b.index;
        }
        // warp_results is rewritten by the next row.
        __syncthreads();
    }
}

// ---- softmax ----

// A running (max, Σ e^(v − max)) over the values seen; max = -inf with sum 0 is "none seen".
struct MaxSum {
    float max;
    float sum;
};

// Milakov & Gimelshein, "Online normalizer calculation for softmax" (2018), Eq. 2: rescale the
// smaller side's sum to the larger max. A side with max = -inf contributes e^(-inf) = 0; both
// -inf stay empty rather than producing (-inf) − (-inf) = NaN.
__device__ __forceinline__ MaxSum merge(const MaxSum &a, const MaxSum &b) {
    const float m = fmaxf(a.max, b.max);
    if (m == -INFINITY) return MaxSum{m, 0.0f};
    return MaxSum{m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

__device__ __forceinline__ MaxSum warp_max_sum(MaxSum s) {
    for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) {
        const MaxSum other{__shfl_xor_sync(kFullMask, s.max, offset),
                           __shfl_xor_sync(kFullMask, s.sum, offset)};
        s = merge(s, other);
    }
    return s;
}

template <bool kVec, typename T>
__global__ void __launch_bounds__(kRowThreads)
    softmax_kernel(const T *x, int64_t ldx, T *out, int64_t ldo, int64_t rows, int64_t cols,
                   float scale, const DeviceError *error) {
    constexpr int kN = kVec16Elems<T>;
    if (failed(error)) return;
    __shared__ MaxSum warp_results[kMaxBlockThreads / kWarpThreads];
    __shared__ MaxSum row_total;
    const int lane = int(threadIdx.x) % kWarpThreads, warp = int(threadIdx.x) / kWarpThreads;
    const int n_warps = int(blockDim.x) / kWarpThreads;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * ldx;
        T *outr = out + r * ldo;
        // Pass 1: online max and sum, one exponential per element.
        MaxSum acc{-INFINITY, 0.0f};
        for_each_in_row<kVec>(xr, cols, [&](int64_t, float v) {
            const float s = scale * v;
            if (s > acc.max) {
                acc.sum = acc.sum * expf(acc.max - s) + 1.0f;
                acc.max = s;
            } else if (s != -INFINITY) {
                // (-inf adds e^-inf = 0; skipping it avoids (-inf) − (-inf) = NaN on a row that
                // starts with -inf. A NaN still gets here and, as on the CPU, spoils the row.)
                acc.sum += expf(s - acc.max);
            }
        });
        acc = warp_max_sum(acc);
        if (lane == 0) warp_results[warp] = acc;
        __syncthreads();
        if (warp == 0) {
            MaxSum s = lane < n_warps ? warp_results[lane] : MaxSum{-INFINITY, 0.0f};
            s = warp_max_sum(s);
            if (lane == 0) row_total = s;
        }
        __syncthreads();
        // Pass 2: every read of x happened before the barrier above, and each thread writes
        // only indices it reads itself, so `out` may alias `x`.
        const float m = row_total.max, inv_sum = 1.0f / row_total.sum;
        int64_t tail = 0;
        if constexpr (kVec) {
            const int64_t n_vec = cols / kN;
            for (int64_t c = threadIdx.x; c < n_vec; c += blockDim.x) {
                float v[kN];
                load_vec_as_float<kN>(xr + c * kN, v);
#pragma unroll
                for (int q = 0; q < kN; ++q) v[q] = expf(scale * v[q] - m) * inv_sum;
                store_vec_from_float<kN>(outr + c * kN, v);
            }
            tail = n_vec * kN;
        }
        for (int64_t i = tail + threadIdx.x; i < cols; i += blockDim.x)
            store_from_float(outr + i, expf(scale * load_as_float(xr + i) - m) * inv_sum);
        // row_total and warp_results are rewritten by the next row.
        __syncthreads();
    }
}

// Whether rows of T at `p`, `ld` elements apart, all start on 16-byte boundaries.
template <typename T>
bool rows_allow_vec16(const void *p, int64_t ld) {
    return is_aligned(p, 16) && (ld * int64_t(sizeof(T))) % 16 == 0;
}

template <typename T>
int row_threads(int64_t cols, bool vec) {
    constexpr int64_t n = kVec16Elems<T>;
    return row_block_threads(vec ? (cols + n - 1) / n : cols, kRowThreads);
}

template <typename T>
cudaError_t argmax_typed(const void *x_raw, int64_t ldx, int64_t rows, int64_t cols,
                         int32_t *out, const DeviceError *error, cudaStream_t stream) {
    const auto *x = static_cast<const T *>(x_raw);
    const bool vec = rows_allow_vec16<T>(x, ldx);
    const int threads = row_threads<T>(cols, vec);
    const unsigned blocks = grid_blocks(rows, 1);
    // Empty the thread's last-error slot so that what we read back belongs to this launch.
    (void)cudaGetLastError();
    if (vec)
        argmax_kernel<true, T><<<blocks, threads, 0, stream>>>(x, ldx, rows, cols, out, error);
    else
        argmax_kernel<false, T><<<blocks, threads, 0, stream>>>(x, ldx, rows, cols, out, error);
    return cudaGetLastError();
}

template <typename T>
cudaError_t softmax_typed(const void *x_raw, int64_t ldx, void *out_raw, int64_t ldo,
                          int64_t rows, int64_t cols, float scale, const DeviceError *error,
                          cudaStream_t stream) {
    const auto *x = static_cast<const T *>(x_raw);
    auto *out = static_cast<T *>(out_raw);
    const bool vec = rows_allow_vec16<T>(x, ldx) && rows_allow_vec16<T>(out, ldo);
    const int threads = row_threads<T>(cols, vec);
    const unsigned blocks = grid_blocks(rows, 1);
    (void)cudaGetLastError();
    if (vec)
        softmax_kernel<true, T>
            <<<blocks, threads, 0, stream>>>(x, ldx, out, ldo, rows, cols, scale, error);
    else
        softmax_kernel<false, T>
            <<<blocks, threads, 0, stream>>>(x, ldx, out, ldo, rows, cols, scale, error);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_argmax(pagoda_dtype_t dtype, const void *x, int64_t ldx, int64_t rows,
                          int64_t cols, int32_t *out, const DeviceError *error,
                          cudaStream_t stream) {
    return with_storage_type(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return argmax_typed<T>(x, ldx, rows, cols, out, error, stream);
    });
}

cudaError_t launch_softmax(pagoda_dtype_t dtype, const void *x, int64_t ldx, void *out,
                           int64_t ldo, int64_t rows, int64_t cols, float scale,
                           const DeviceError *error, cudaStream_t stream) {
    return with_storage_type(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return softmax_typed<T>(x, ldx, out, ldo, rows, cols, scale, error, stream);
    });
}

}  // namespace pagoda::cuda
