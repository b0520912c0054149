// RMSNorm (Zhang & Sennrich 2019, Eq. 4), fused with the residual add: one block per row
// (grid-stride over rows). Pass 1 adds the residual and sums squares in f32 (per-thread partial
// sums, then a warp-shuffle tree: the pairwise order keeps the error far below the CPU tests'
// tolerance); pass 2 scales. Each thread reads and writes only its own indices in both passes,
// so `out` may alias `x` or `residual`.
#include <cmath>
#include <cstdint>

#include "half_load.cuh"
#include "launch_shape.hpp"
#include "rmsnorm_kernel.hpp"

namespace pagoda::cuda {

namespace {

constexpr unsigned kFullMask = 0xFFFFFFFFu;

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = kWarpThreads / 2; offset > 0; offset /= 2)
        v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

// The sum of `v` over the block (a whole number of warps), returned to every thread. Safe to
// call once per loop iteration: the second barrier orders this call's reads of `total` before
// the next call's writes.
__device__ float block_sum(float v) {
    __shared__ float warp_sums[kMaxBlockThreads / kWarpThreads];
    __shared__ float total;
    const int lane = int(threadIdx.x) % kWarpThreads, warp = int(threadIdx.x) / kWarpThreads;
    v = warp_sum(v);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        const int n_warps = int(blockDim.x) / kWarpThreads;
        float s = lane < n_warps ? warp_sums[lane] : 0.0f;
        s = warp_sum(s);
        if (lane == 0) total = s;
    }
    __syncthreads();
    return total;
}

// kVec4: every row of x and out starts on a boundary of 4 of their elements, every row of the
// residual on a 16-byte one, and `weight` on a 4-element one, so the body moves four elements
// per access; the row's tail goes one by one. A is the activations' type, W the weight's.
template <typename A, typename W, bool kVec4>
__global__ void __launch_bounds__(kMaxBlockThreads)
    rmsnorm_kernel(RmsNormRows a, const DeviceError *error) {
    if (failed(error)) return;
    const W *weight = static_cast<const W *>(a.weight);
    const int64_t tail = kVec4 ? a.dim / 4 * 4 : 0;
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        const A *x = static_cast<const A *>(a.x) + r * a.ldx;
        float *res = a.residual != nullptr ? a.residual + r * a.ld_residual : nullptr;
        A *out = static_cast<A *>(a.out) + r * a.ldo;

        float sum_sq = 0.0f;
        if constexpr (kVec4) {
            for (int64_t i = 4 * int64_t(threadIdx.x); i < tail; i += 4 * int64_t(blockDim.x)) {
                float v[4];
                load_vec_as_float<4>(x + i, v);
                if (res != nullptr) {
                    const float4 rv = *reinterpret_cast<const float4 *>(res + i);
                    v[0] += rv.x;
                    v[1] += rv.y;
                    v[2] += rv.z;
                    v[3] += rv.w;
                    *reinterpret_cast<float4 *>(res + i) = make_float4(v[0], v[1], v[2], v[3]);
                }
                sum_sq += v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3];
            }
        }
        for (int64_t i = tail + threadIdx.x; i < a.dim; i += blockDim.x) {
            float v = load_as_float(x + i);
            if (res != nullptr) {
                v = res[i] + v;
                res[i] = v;
            }
            sum_sq += v * v;
        }

        // One double step per row, as the CPU backend computes it.
        const float total = block_sum(sum_sq);
        const float inv_rms = float(1.0 / sqrt(double(total) / double(a.dim) + double(a.eps)));

        // What gets normalised: the updated residual, or x itself (read again, widened again).
        if constexpr (kVec4) {
            for (int64_t i = 4 * int64_t(threadIdx.x); i < tail; i += 4 * int64_t(blockDim.x)) {
                float v[4], w[4];
                if (res != nullptr) {
                    const float4 rv = *reinterpret_cast<const float4 *>(res + i);
                    v[0] = rv.x;
                    v[1] = rv.y;
                    v[2] = rv.z;
                    v[3] = rv.w;
                } else {
                    load_vec_as_float<4>(x + i, v);
                }
                load_vec_as_float<4>(weight + i, w);
#pragma unroll
                for (int j = 0; j < 4; ++j) v[j] = v[j] * inv_rms * w[j];
                store_vec_from_float<4>(out + i, v);
            }
        }
        for (int64_t i = tail + threadIdx.x; i < a.dim; i += blockDim.x) {
            const float v = res != nullptr ? res[i] : load_as_float(x + i);
            store_from_float(out + i, v * inv_rms * load_as_float(weight + i));
        }
        // block_sum's second barrier already separates this row's reads of the shared total from
        // the next row's writes; nothing else is shared.
    }
}

}  // namespace

cudaError_t launch_rmsnorm(const RmsNormRows &a, const DeviceError *error, cudaStream_t stream) {
    return with_storage_type(a.act_dtype, [&](auto act_tag) {
        using A = typename decltype(act_tag)::type;
        return with_storage_type(a.weight_dtype, [&](auto weight_tag) {
            using W = typename decltype(weight_tag)::type;
            // Rows of x and out start on a 4-element boundary of A when the base does and the
            // stride is a multiple of 4.
            const bool vec4 = is_aligned(a.x, 4 * sizeof(A)) && a.ldx % 4 == 0 &&
                              is_aligned(a.out, 4 * sizeof(A)) && a.ldo % 4 == 0 &&
                              (a.residual == nullptr ||
                               rows_allow_float4(a.residual, a.ld_residual)) &&
                              is_aligned(a.weight, 4 * sizeof(W));
            const int threads = row_block_threads(vec4 ? (a.dim + 3) / 4 : a.dim);
            const unsigned blocks = grid_blocks(a.rows, 1);
            // Empty the thread's last-error slot so that what we read back belongs to this
            // launch.
            (void)cudaGetLastError();
            if (vec4)
                rmsnorm_kernel<A, W, true><<<blocks, threads, 0, stream>>>(a, error);
            else
                rmsnorm_kernel<A, W, false><<<blocks, threads, 0, stream>>>(a, error);
            return cudaGetLastError();
        });
    });
}

}  // namespace pagoda::cuda
