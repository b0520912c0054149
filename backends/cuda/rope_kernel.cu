// RoPE (Su et al., RoFormer, arXiv:2104.09864, Eq. 34) in place: one block per token
// (grid-stride over tokens). The block builds its inv_freq table once, in double, in shared
// memory; per token it computes each pair's cos/sin once (double angle: at position 128k an f32
// angle is off by ~0.004 rad) and every head of the token reuses them.
#include <climits>
#include <cmath>
#include <cstdint>

#include "launch_shape.hpp"
#include "rope_kernel.hpp"

namespace pagoda::cuda {

namespace {

constexpr int kMaxThreads = 256;
// Frequencies held in shared memory at a time (2 KiB of double, 2 KiB of cos/sin); longer
// rotations go chunk by chunk.
constexpr int kPairsPerChunk = 256;
constexpr double kPi = 3.14159265358979323846;

struct RopeParams {
    float *x;
    const int32_t *positions;
    const float *freq_factors;  // or nullptr
    int64_t n_tokens, n_heads, head_dim, token_stride;
    int64_t rot_dim, pairs;  // pairs = rot_dim / 2
    bool interleaved;
    pagoda_rope_scaling_t scaling;
    double theta, factor, low_freq_factor, high_freq_factor, original_max_position;
};

// inv_freq[i] = theta^(-2i/rot_dim), scaled, then divided by freq_factors[i]: rope.cpp's
// inverse_frequencies, operation for operation. LINEAR's division of positions by `factor` is
// folded in as a division of the frequencies.
__device__ double inverse_frequency(const RopeParams &p, int64_t i) {
    double f = pow(p.theta, -2.0 * double(i) / double(p.rot_dim));
    if (p.scaling == PAGODA_ROPE_SCALING_LINEAR) {
        f /= p.factor;
    } else if (p.scaling == PAGODA_ROPE_SCALING_LLAMA3) {
        // Meta's llama3 apply_scaling: keep short wavelengths, divide long ones by `factor`,
        // blend in between.
        const double omp = p.original_max_position;
        const double lo = p.low_freq_factor, hi = p.high_freq_factor;
        const double low_wavelen = omp / lo, high_wavelen = omp / hi;
        const double wavelen = 2.0 * kPi / f;
        if (wavelen >= high_wavelen) {
            if (wavelen > low_wavelen) {
                f /= p.factor;
            } else {
                const double s = (omp / wavelen - lo) / (hi - lo);
                f = (1.0 - s) * f / p.factor + s * f;
            }
        }
    }
    if (p.freq_factors != nullptr) f /= double(p.freq_factors[i]);
    return f;
}

__device__ __forceinline__ bool positive_finite(float v) { return isfinite(v) && v > 0.0f; }

__global__ void __launch_bounds__(kMaxThreads) rope_kernel(RopeParams p, DeviceError *error) {
    if (failed(error)) return;
    __shared__ double inv_freq[kPairsPerChunk];
    __shared__ float cos_t[kPairsPerChunk], sin_t[kPairsPerChunk];
    __shared__ unsigned long long first_bad;

    // Every block checks every factor before writing anything, so a bad one leaves x untouched
    // whichever block sees it first. The lowest bad index is reported, as the CPU backend does.
    if (p.freq_factors != nullptr) {
        if (threadIdx.x == 0) first_bad = ULLONG_MAX;
        __syncthreads();
        for (int64_t i = threadIdx.x; i < p.pairs; i += blockDim.x)
            if (!positive_finite(p.freq_factors[i])) atomicMin(&first_bad, (unsigned long long)i);
        __syncthreads();
        if (first_bad != ULLONG_MAX) {
            if (threadIdx.x == 0) {
                const int64_t i = int64_t(first_bad);
                report(error, int32_t(PAGODA_OP_ROPE), DeviceErrorField::RopeFreqFactor, i,
                       int64_t(__float_as_uint(p.freq_factors[i])), p.pairs);
            }
            return;  // the whole block: first_bad is the same for every thread
        }
    }

    for (int64_t p0 = 0; p0 < p.pairs; p0 += kPairsPerChunk) {
        const int n = int(p.pairs - p0 < kPairsPerChunk ? p.pairs - p0 : kPairsPerChunk);
        // The previous chunk's last token is done with inv_freq before it is replaced.
        __syncthreads();
        for (int i = int(threadIdx.x); i < n; i += int(blockDim.x))
            inv_freq[i] = inverse_frequency(p, p0 + i);
        for (int64_t t = blockIdx.x; t < p.n_tokens; t += gridDim.x) {
            // inv_freq is written, and the previous token's rotation is done with cos/sin.
            __syncthreads();
            const double position = double(p.positions[t]);
            for (int i = int(threadIdx.x); i < n; i += int(blockDim.x)) {
                double s, c;
                sincos(position * inv_freq[i], &s, &c);
                cos_t[i] = float(c);
                sin_t[i] = float(s);
            }
            __syncthreads();
            float *token = p.x + t * p.token_stride;
            const int64_t work = p.n_heads * n;
            for (int64_t e = threadIdx.x; e < work; e += blockDim.x) {
                const int64_t h = e / n;
                const int i = int(e - h * n);
                float *head = token + h * p.head_dim;
                // Half-split pairs i with i + rot_dim/2; interleaved pairs 2i with 2i + 1.
                const int64_t j0 = p.interleaved ? 2 * (p0 + i) : p0 + i;
                const int64_t j1 = p.interleaved ? j0 + 1 : j0 + p.pairs;
                const float x0 = head[j0], x1 = head[j1];
                head[j0] = x0 * cos_t[i] - x1 * sin_t[i];
                head[j1] = x1 * cos_t[i] + x0 * sin_t[i];
            }
        }
    }
}

}  // namespace

cudaError_t launch_rope(const pagoda_op_rope_t &a, DeviceError *error, cudaStream_t stream) {
    RopeParams p{};
    p.x = static_cast<float *>(a.x);
    p.positions = a.positions;
    p.freq_factors = a.freq_factors;
    p.n_tokens = a.n_tokens;
    p.n_heads = a.n_heads;
    p.head_dim = a.head_dim;
    p.token_stride = a.token_stride == 0 ? a.n_heads * a.head_dim : a.token_stride;
    p.rot_dim = a.rot_dim == 0 ? a.head_dim : a.rot_dim;
    p.pairs = p.rot_dim / 2;
    p.interleaved = a.layout == PAGODA_ROPE_INTERLEAVED;
    p.scaling = a.scaling;
    p.theta = double(a.theta);
    p.factor = double(a.factor);
    p.low_freq_factor = double(a.low_freq_factor);
    p.high_freq_factor = double(a.high_freq_factor);
    p.original_max_position = double(a.original_max_position);

    const int64_t chunk = p.pairs < kPairsPerChunk ? p.pairs : kPairsPerChunk;
    const int threads = row_block_threads(p.n_heads * chunk, kMaxThreads);
    const unsigned blocks = grid_blocks(p.n_tokens, 1);
    // Empty the thread's last-error slot so that what we read back belongs to this launch.
    (void)cudaGetLastError();
    rope_kernel<<<blocks, threads, 0, stream>>>(p, error);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
