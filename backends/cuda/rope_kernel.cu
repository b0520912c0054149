// RoPE (Su et al., RoFormer, arXiv:2104.09864, Eq. 34) in place: one block per token
// (grid-stride over tokens). The block builds its inv_freq table once, in double, in shared
// memory; per token it computes each pair's cos/sin once (double angle: at position 128k an f32
// angle is off by ~0.004 rad) and every head of the token reuses them. The arithmetic is
// rope_math.cuh's, shared with KV_WRITE's fused key rotation. BF16/F16 elements are widened,
// rotated in f32 and rounded once.
#include <cstdint>

#include "half_load.cuh"
#include "launch_shape.hpp"
#include "rope_kernel.hpp"
#include "rope_math.cuh"

namespace pagoda::cuda {

namespace {

constexpr int kMaxThreads = 256;

struct RopeParams {
    void *x;  // of the kernel's type A
    const int32_t *positions;
    int64_t n_tokens, n_heads, head_dim, token_stride;
    bool interleaved;
    RopeFrequencies freq;
};

template <typename A>
__global__ void __launch_bounds__(kMaxThreads) rope_kernel(RopeParams p, DeviceError *error) {
    // Uniform over the block, as every barrier below needs: another block of this launch may
    // record a bad factor while this one starts.
    if (__syncthreads_or(threadIdx.x == 0 && failed(error))) return;
    __shared__ double inv_freq[kRopePairsPerChunk];
    __shared__ float cos_t[kRopePairsPerChunk], sin_t[kRopePairsPerChunk];
    __shared__ unsigned long long first_bad;

    if (!rope_freq_factors_valid(p.freq, error, int32_t(PAGODA_OP_ROPE), first_bad)) return;

    const int64_t pairs = p.freq.pairs;
    for (int64_t p0 = 0; p0 < pairs; p0 += kRopePairsPerChunk) {
        const int n = int(pairs - p0 < kRopePairsPerChunk ? pairs - p0 : kRopePairsPerChunk);
        // The previous chunk's last token is done with inv_freq before it is replaced.
        __syncthreads();
        for (int i = int(threadIdx.x); i < n; i += int(blockDim.x))
            inv_freq[i] = inverse_frequency(p.freq, p0 + i);
        for (int64_t t = blockIdx.x; t < p.n_tokens; t += gridDim.x) {
            // inv_freq is written, and the previous token's rotation is done with cos/sin.
            __syncthreads();
            const int32_t position = p.positions[t];
            for (int i = int(threadIdx.x); i < n; i += int(blockDim.x))
                rope_angle(position, inv_freq[i], cos_t[i], sin_t[i]);
            __syncthreads();
            A *token = static_cast<A *>(p.x) + t * p.token_stride;
            const int64_t work = p.n_heads * n;
            for (int64_t e = threadIdx.x; e < work; e += blockDim.x) {
                const int64_t h = e / n;
                const int i = int(e - h * n);
                A *head = token + h * p.head_dim;
                // Half-split pairs i with i + rot_dim/2; interleaved pairs 2i with 2i + 1.
                const int64_t j0 = p.interleaved ? 2 * (p0 + i) : p0 + i;
                const int64_t j1 = p.interleaved ? j0 + 1 : j0 + pairs;
                float y0, y1;
                rotate_pair(load_as_float(head + j0), load_as_float(head + j1), cos_t[i],
                            sin_t[i], y0, y1);
                store_from_float(head + j0, y0);
                store_from_float(head + j1, y1);
            }
        }
    }
}

}  // namespace

cudaError_t launch_rope(const pagoda_op_rope_t &a, DeviceError *error, cudaStream_t stream) {
    RopeParams p{};
    p.x = a.x;
    p.positions = a.positions;
    p.n_tokens = a.n_tokens;
    p.n_heads = a.n_heads;
    p.head_dim = a.head_dim;
    p.token_stride = a.token_stride == 0 ? a.n_heads * a.head_dim : a.token_stride;
    p.interleaved = a.layout == PAGODA_ROPE_INTERLEAVED;
    p.freq = rope_frequencies_of(a);

    const int64_t chunk = p.freq.pairs < kRopePairsPerChunk ? p.freq.pairs : kRopePairsPerChunk;
    const int threads = row_block_threads(p.n_heads * chunk, kMaxThreads);
    const unsigned blocks = grid_blocks(p.n_tokens, 1);
    // ops.h: an act_dtype of 0 means f32.
    const pagoda_dtype_t act = a.act_dtype == PAGODA_DTYPE_INVALID ? PAGODA_DTYPE_F32 : a.act_dtype;
    return with_storage_type(act, [&](auto tag) {
        using A = typename decltype(tag)::type;
        // Empty the thread's last-error slot so that what we read back belongs to this launch.
        (void)cudaGetLastError();
        rope_kernel<A><<<blocks, threads, 0, stream>>>(p, error);
        return cudaGetLastError();
    });
}

}  // namespace pagoda::cuda
