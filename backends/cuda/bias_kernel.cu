#include "bias_kernel.hpp"

namespace pagoda::cuda {

namespace {

// One thread per element in a grid-stride loop, so any m·n fits a bounded grid. Reading the
// bias per element is cheap: n floats stay in L1/L2 while every row streams past.
__global__ void add_bias_kernel(float *y, int64_t ldy, const float *bias, int64_t m, int64_t n) {
    const int64_t total = m * n;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
        const int64_t i = e / n, j = e % n;
        y[i * ldy + j] += bias[j];
    }
}

}  // namespace

cudaError_t add_bias(float *y, int64_t ldy, const float *bias, int64_t m, int64_t n,
                     cudaStream_t stream) {
    if (m <= 0 || n <= 0) return cudaSuccess;
    constexpr int kThreads = 256;
    const int64_t wanted = (m * n + kThreads - 1) / kThreads;
    const unsigned blocks = unsigned(wanted < 65535 ? wanted : 65535);
    // A <<<>>> launch reports its error only through the thread's last-error slot: empty the
    // slot first so that what we read back belongs to this launch. Faults inside the kernel
    // surface later, on the stream.
    (void)cudaGetLastError();
    add_bias_kernel<<<blocks, kThreads, 0, stream>>>(y, ldy, bias, m, n);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
