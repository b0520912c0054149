// SILU_MUL and ADD: streaming passes, four floats per thread per step where the rows are 16-byte
// aligned. Each output element depends only on the inputs at its own index, so outputs may alias
// inputs (no __restrict__).
#include <cstdint>

#include "elementwise_kernel.hpp"
#include "launch_shape.hpp"

namespace pagoda::cuda {

namespace {

constexpr int kThreads = 256;

// silu(z) = z / (1 + e^-z), as the CPU backend computes it: for z → -∞, e^-z overflows to inf
// and the quotient is the right -0.
__device__ __forceinline__ float silu(float z) { return z / (1.0f + expf(-z)); }

// Rows go along grid.y (grid-stride) and each row's units along grid.x, so no thread divides
// a flat index. A unit is 4 elements when kVec4 (the row starts are 16-byte aligned), else 1.
template <bool kVec4>
__global__ void __launch_bounds__(kThreads)
    silu_mul_kernel(const float *gate, const float *up, int64_t ld_in, float *out, int64_t ldo,
                    int64_t rows, int64_t dim, const DeviceError *error) {
    if (failed(error)) return;
    constexpr int kUnit = kVec4 ? 4 : 1;
    const int64_t units = (dim + kUnit - 1) / kUnit;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const float *g = gate + r * ld_in, *u = up + r * ld_in;
        float *o = out + r * ldo;
        for (int64_t unit = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; unit < units;
             unit += step) {
            const int64_t i = unit * kUnit;
            if (kVec4 && i + 4 <= dim) {
                const float4 gv = *reinterpret_cast<const float4 *>(g + i);
                const float4 uv = *reinterpret_cast<const float4 *>(u + i);
                *reinterpret_cast<float4 *>(o + i) = make_float4(
                    silu(gv.x) * uv.x, silu(gv.y) * uv.y, silu(gv.z) * uv.z, silu(gv.w) * uv.w);
            } else {
                // A whole scalar unit, or the last partial vector of a row.
                const int64_t end = i + kUnit < dim ? i + kUnit : dim;
                for (int64_t j = i; j < end; ++j) o[j] = silu(g[j]) * u[j];
            }
        }
    }
}

template <bool kVec4>
__global__ void __launch_bounds__(kThreads)
    add_kernel(const float *a, const float *b, float *out, int64_t n, const DeviceError *error) {
    if (failed(error)) return;
    const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    int64_t tail = 0;
    if constexpr (kVec4) {
        const int64_t n4 = n / 4;
        const float4 *a4 = reinterpret_cast<const float4 *>(a);
        const float4 *b4 = reinterpret_cast<const float4 *>(b);
        float4 *o4 = reinterpret_cast<float4 *>(out);
        for (int64_t c = first; c < n4; c += step) {
            const float4 x = a4[c], y = b4[c];
            o4[c] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
        }
        tail = n4 * 4;
    }
    for (int64_t i = tail + first; i < n; i += step) out[i] = a[i] + b[i];
}

}  // namespace

cudaError_t launch_silu_mul(const float *gate, const float *up, int64_t ld_in, float *out,
                            int64_t ldo, int64_t rows, int64_t dim, const DeviceError *error,
                            cudaStream_t stream) {
    const bool vec4 = rows_allow_float4(gate, ld_in) && rows_allow_float4(up, ld_in) &&
                      rows_allow_float4(out, ldo);
    const int64_t units = vec4 ? (dim + 3) / 4 : dim;
    const dim3 grid(grid_blocks(units, kThreads), grid_blocks(rows, 1));
    // Empty the thread's last-error slot so that what we read back belongs to this launch.
    (void)cudaGetLastError();
    if (vec4)
        silu_mul_kernel<true>
            <<<grid, kThreads, 0, stream>>>(gate, up, ld_in, out, ldo, rows, dim, error);
    else
        silu_mul_kernel<false>
            <<<grid, kThreads, 0, stream>>>(gate, up, ld_in, out, ldo, rows, dim, error);
    return cudaGetLastError();
}

cudaError_t launch_add(const float *a, const float *b, float *out, int64_t n,
                       const DeviceError *error, cudaStream_t stream) {
    const bool vec4 = is_aligned(a, 16) && is_aligned(b, 16) && is_aligned(out, 16);
    const unsigned blocks = grid_blocks(vec4 ? (n + 3) / 4 : n, kThreads);
    (void)cudaGetLastError();
    if (vec4)
        add_kernel<true><<<blocks, kThreads, 0, stream>>>(a, b, out, n, error);
    else
        add_kernel<false><<<blocks, kThreads, 0, stream>>>(a, b, out, n, error);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
