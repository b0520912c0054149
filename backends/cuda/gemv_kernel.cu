// Each warp owns kRowsPerWarp rows of W and walks them along k with 16-byte loads (8 weights a
// lane), converting to f32 in registers. x is staged a tile of kTileK columns at a time in
// shared memory, all m rows of it, so every x value loaded from global memory serves the
// block's kRowsPerBlock W rows; it cannot be held whole, since m·k floats outgrow shared memory
// at the k of a Llama FFN. Each lane keeps m × kRowsPerWarp partial sums in f32 registers; a
// warp-shuffle butterfly adds them up at the end of the row group. x of any activation type is
// widened to f32 as it is staged (a small share of the traffic next to W's), and each output is
// rounded once to y's type, so one instantiation per W type and row count serves every x and y.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemv_kernel.hpp"
#include "half_load.cuh"

namespace pagoda::cuda {

namespace {

constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = kWarpsPerBlock * kWarpSize;
// Rows per warp: each x value read from shared memory feeds this many FMAs. Four keeps the
// shared-memory traffic at m = 8 within what an SM serves while W streams at full bandwidth.
constexpr int kRowsPerWarp = 4;
constexpr int64_t kRowsPerBlock = kWarpsPerBlock * kRowsPerWarp;
// Columns of x per shared-memory tile: 8 rows × 1024 floats = 32 KiB, under the 48 KiB a block
// gets without opting in. A multiple of kVec · kWarpSize so every tile but the last is whole
// vectors.
constexpr int kTileK = 1024;
constexpr int kVec = 8;  // 16-bit weights per 16-byte load
constexpr int64_t kMaxBlocks = 65535;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

static_assert(kTileK % (kVec * kWarpSize) == 0, "a tile must be whole warp-wide vector steps");
static_assert(kGemvRowsPerPass == 8, "the launch below instantiates 1, 2, 4 and 8 x rows");

template <bool BF16>
__device__ inline float to_f32(uint16_t bits) {
    if constexpr (BF16)
        return __uint_as_float(uint32_t(bits) << 16);
    else
        return __half2float(__ushort_as_half(bits));
}

// The 8 weights of one 16-byte load; the lower half of each word is the earlier element.
template <bool BF16>
__device__ inline void widen8(const uint4 &bits, float (&out)[kVec]) {
    const uint32_t words[4] = {bits.x, bits.y, bits.z, bits.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        out[2 * q] = to_f32<BF16>(uint16_t(words[q] & 0xFFFFu));
        out[2 * q + 1] = to_f32<BF16>(uint16_t(words[q] >> 16));
    }
}

// M: the x rows this instantiation holds sums for (a.m ≤ M; rows past a.m are skipped).
// `vectors`: W's base is 16-byte aligned and ldw a multiple of 8, so 16-byte loads line up.
template <bool BF16, int M>
__global__ void __launch_bounds__(kThreads) gemv_kernel(GemvArgs a, bool vectors) {
    extern __shared__ float4 x_tile_storage[];
    float *x_tile = reinterpret_cast<float *>(x_tile_storage);  // [M][kTileK]

    // The record only changes between launches on this stream, so every thread agrees; the
    // block-wide vote makes that explicit before any __syncthreads below.
    if (__syncthreads_or(a.error != nullptr && failed(a.error))) return;

    const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
    const int m = int(a.m);
    const auto *w = static_cast<const uint16_t *>(a.w);

    // Grid-stride over groups of kRowsPerBlock W rows; the bound is the same for the whole
    // block, so all its threads reach the same __syncthreads.
    for (int64_t block_row = int64_t(blockIdx.x) * kRowsPerBlock; block_row < a.n;
         block_row += int64_t(gridDim.x) * kRowsPerBlock) {
        const int64_t row0 = block_row + int64_t(warp) * kRowsPerWarp;
        const bool warp_has_rows = row0 < a.n;
        const uint16_t *w_row[kRowsPerWarp];
        bool row_ok[kRowsPerWarp];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
            row_ok[r] = row0 + r < a.n;
            w_row[r] = w + (row_ok[r] ? row0 + r : 0) * a.ldw;  // rows past n are never read
        }
        float acc[M][kRowsPerWarp];
#pragma unroll
        for (int i = 0; i < M; ++i)
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; ++r) acc[i][r] = 0.0f;

        for (int64_t c0 = 0; c0 < a.k; c0 += kTileK) {
            const int tile = int(a.k - c0 < kTileK ? a.k - c0 : kTileK);
            __syncthreads();  // every warp is done with the previous tile
            for (int e = int(threadIdx.x); e < m * tile; e += kThreads) {
                const int i = e / tile, c = e - i * tile;
                x_tile[i * kTileK + c] = load_as_float(a.x, a.x_dtype, int64_t(i) * a.ldx + c0 + c);
            }
            __syncthreads();
            if (!warp_has_rows) continue;

            const int vec_end = vectors ? tile / kVec * kVec : 0;
#pragma unroll 2
            for (int c = lane * kVec; c < vec_end; c += kWarpSize * kVec) {
                float wv[kRowsPerWarp][kVec];
#pragma unroll
                for (int r = 0; r < kRowsPerWarp; ++r) {
                    if (row_ok[r]) {
                        // Streaming load: W is read once per launch, so keep it out of x's way
                        // in the caches.
                        widen8<BF16>(__ldcs(reinterpret_cast<const uint4 *>(w_row[r] + c0 + c)),
                                     wv[r]);
                    } else {
#pragma unroll
                        for (int q = 0; q < kVec; ++q) wv[r][q] = 0.0f;
                    }
                }
#pragma unroll
                for (int i = 0; i < M; ++i) {
                    if (i >= m) break;
                    const float4 lo = *reinterpret_cast<const float4 *>(x_tile + i * kTileK + c);
                    const float4 hi =
                        *reinterpret_cast<const float4 *>(x_tile + i * kTileK + c + 4);
                    const float xv[kVec] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                    for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
                        for (int q = 0; q < kVec; ++q) acc[i][r] = fmaf(wv[r][q], xv[q], acc[i][r]);
                }
            }
            // The tile's tail past the last whole vector, or all of it when W is not aligned.
            for (int c = vec_end + lane; c < tile; c += kWarpSize) {
                float wv[kRowsPerWarp];
#pragma unroll
                for (int r = 0; r < kRowsPerWarp; ++r)
                    wv[r] = row_ok[r] ? to_f32<BF16>(w_row[r][c0 + c]) : 0.0f;
#pragma unroll
                for (int i = 0; i < M; ++i) {
                    if (i >= m) break;
                    const float xv = x_tile[i * kTileK + c];
#pragma unroll
                    for (int r = 0; r < kRowsPerWarp; ++r) acc[i][r] = fmaf(wv[r], xv, acc[i][r]);
                }
            }
        }
        if (!warp_has_rows) continue;

        // Butterfly: afterwards every lane holds every total.
#pragma unroll
        for (int i = 0; i < M; ++i)
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
                for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
                    acc[i][r] += __shfl_xor_sync(kFullMask, acc[i][r], offset);

        // Lane i·kRowsPerWarp + r writes y[i, row0 + r] (M·kRowsPerWarp ≤ 32 lanes).
#pragma unroll
        for (int i = 0; i < M; ++i)
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; ++r) {
                if (lane != i * kRowsPerWarp + r || i >= m || !row_ok[r]) continue;
                const int64_t j = row0 + r;
                float v = acc[i][r];
                if (a.bias != nullptr) v += a.bias[j];
                const int64_t out = int64_t(i) * a.ldy + j;
                if (a.accumulate) v += load_as_float(a.y, a.y_dtype, out);
                store_from_float(a.y, a.y_dtype, out, v);
            }
    }
}

static_assert(8 * kRowsPerWarp <= kWarpSize, "one lane per output of a warp's row group");

template <bool BF16>
cudaError_t launch_pass(const GemvArgs &a, bool vectors, unsigned blocks, cudaStream_t stream) {
    // The smallest instantiation that holds a.m rows of sums.
    const auto shared = [](int rows) { return size_t(rows) * kTileK * sizeof(float); };
    if (a.m <= 1)
        gemv_kernel<BF16, 1><<<blocks, kThreads, shared(1), stream>>>(a, vectors);
    else if (a.m <= 2)
        gemv_kernel<BF16, 2><<<blocks, kThreads, shared(2), stream>>>(a, vectors);
    else if (a.m <= 4)
        gemv_kernel<BF16, 4><<<blocks, kThreads, shared(4), stream>>>(a, vectors);
    else
        gemv_kernel<BF16, 8><<<blocks, kThreads, shared(8), stream>>>(a, vectors);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_gemv(const GemvArgs &args, cudaStream_t stream) {
    if (args.w_dtype != PAGODA_DTYPE_BF16 && args.w_dtype != PAGODA_DTYPE_F16)
        return cudaErrorInvalidValue;
    const int64_t x_bytes = activation_bytes(args.x_dtype), y_bytes = activation_bytes(args.y_dtype);
    if (x_bytes == 0 || y_bytes == 0) return cudaErrorInvalidValue;
    if (args.m <= 0 || args.n <= 0) return cudaSuccess;
    const bool vectors = reinterpret_cast<uintptr_t>(args.w) % 16 == 0 && args.ldw % kVec == 0;
    const int64_t wanted = (args.n + kRowsPerBlock - 1) / kRowsPerBlock;
    const unsigned blocks = unsigned(wanted < kMaxBlocks ? wanted : kMaxBlocks);
    // A <<<>>> launch reports its error only through the thread's last-error slot: empty the
    // slot first so that what we read back belongs to this launch.
    (void)cudaGetLastError();
    for (int64_t i0 = 0; i0 < args.m; i0 += kGemvRowsPerPass) {
        GemvArgs pass = args;
        pass.m = args.m - i0 < kGemvRowsPerPass ? args.m - i0 : kGemvRowsPerPass;
        pass.x = static_cast<const char *>(args.x) + i0 * args.ldx * x_bytes;
        pass.y = static_cast<char *>(args.y) + i0 * args.ldy * y_bytes;
        const cudaError_t e = args.w_dtype == PAGODA_DTYPE_BF16
                                  ? launch_pass<true>(pass, vectors, blocks, stream)
                                  : launch_pass<false>(pass, vectors, blocks, stream);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

}  // namespace pagoda::cuda
