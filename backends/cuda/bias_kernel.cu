#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "bias_kernel.hpp"
#include "half_load.cuh"

namespace pagoda::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

// Threads run along a row (coalesced), blocks down the rows; both dimensions grid-stride so any
// m·n fits a bounded grid. The n bias values stay in L1/L2 while the rows stream past.
template <typename T>
__global__ void add_bias_kernel(T *y, int64_t ldy, const float *bias, int64_t m, int64_t n) {
    for (int64_t i = blockIdx.y; i < m; i += gridDim.y)
        for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
             j += int64_t(gridDim.x) * blockDim.x) {
            T *p = y + i * ldy + j;
            store_from_float(p, load_as_float(p) + bias[j]);
        }
}

template <typename T>
cudaError_t launch(void *y, int64_t ldy, const float *bias, int64_t m, int64_t n,
                   cudaStream_t stream) {
    const int64_t col_blocks = (n + kThreads - 1) / kThreads;
    const dim3 grid(unsigned(col_blocks < kMaxBlocks ? col_blocks : kMaxBlocks),
                    unsigned(m < kMaxBlocks ? m : kMaxBlocks));
    // A <<<>>> launch reports its error only through the thread's last-error slot: empty the
    // slot first so that what we read back belongs to this launch. Faults inside the kernel
    // surface later, on the stream.
    (void)cudaGetLastError();
    add_bias_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T *>(y), ldy, bias, m, n);
    return cudaGetLastError();
}

}  // namespace

cudaError_t add_bias(void *y, pagoda_dtype_t dtype, int64_t ldy, const float *bias, int64_t m,
                     int64_t n, cudaStream_t stream) {
    if (m <= 0 || n <= 0) return cudaSuccess;
    switch (dtype) {
        case PAGODA_DTYPE_F32: return launch<float>(y, ldy, bias, m, n, stream);
        case PAGODA_DTYPE_BF16: return launch<__nv_bfloat16>(y, ldy, bias, m, n, stream);
        case PAGODA_DTYPE_F16: return launch<__half>(y, ldy, bias, m, n, stream);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace pagoda::cuda
