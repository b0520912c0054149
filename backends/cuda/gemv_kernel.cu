// Each warp owns kRowsPerWarp rows of W and walks them along k eight weights a lane at a time
// (one 16-byte load of bf16/f16, or eight values decoded from a quantized block, block_decode.cuh,
// whose scale and min are applied once per eight), converting to f32 in registers. x is staged
// in shared memory, all m rows of it, as many columns at a time as 48 KiB holds (a whole k for
// one row at Llama's sizes), so every x value loaded from global memory serves the block's
// kRowsPerBlock W rows; it cannot always be held whole, since m·k floats outgrow shared memory
// at the k of a Llama FFN. Each lane keeps m × kRowsPerWarp partial sums in f32 registers; a
// warp-shuffle butterfly adds them up at the end of the row group. x of any activation type is
// widened to f32 as it is staged (a small share of the traffic next to W's), and each output is
// rounded once to y's type, so one instantiation per W type and row count serves every x and y.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "block_decode.cuh"
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
// Shared memory for the x tile: the 48 KiB a block gets without opting in. An instantiation for
// M rows of x stages kSharedFloats / M columns at a time (12288 for one row: a whole Llama
// projection's k, so one synchronisation per row group), rounded down to whole warp-wide
// vector steps.
constexpr int kSharedFloats = 48 * 1024 / int(sizeof(float));
constexpr int kTileStep = 256;  // kVec · kWarpSize
constexpr int kVec = 8;  // 16-bit weights per 16-byte load
constexpr int64_t kMaxBlocks = 65535;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

static_assert(kTileStep == kVec * kWarpSize, "a tile is whole warp-wide vector steps");

// Columns of x one tile holds in an instantiation for M rows.
template <int M>
inline constexpr int kTileColumns = kSharedFloats / M / kTileStep * kTileStep;
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

// How the kernel reads W: row(j) is where row j starts; below vector_end(tile), load8 gives the
// 8 weights from column c (a multiple of 8); load1 one weight, for the rest of a tile.
// bf16/f16 W: 16-byte streaming loads when W's base is 16-byte aligned and ldw a multiple of 8
// (W is read once per launch, so it is kept out of x's way in the caches), else element loads.
template <bool BF16>
struct HalfRows {
    static constexpr bool kFactored = false;
    const uint16_t *w;
    int64_t ldw;
    bool vectors;
    __device__ const uint16_t *row(int64_t j) const { return w + j * ldw; }
    __device__ int vector_end(int tile) const { return vectors ? tile / kVec * kVec : 0; }
    __device__ void load8(const uint16_t *r, int64_t c, float (&out)[kVec]) const {
        widen8<BF16>(__ldcs(reinterpret_cast<const uint4 *>(r + c)), out);
    }
    __device__ float load1(const uint16_t *r, int64_t c) const { return to_f32<BF16>(r[c]); }
};

// Quantized W: rows of whole blocks, so every tile (a multiple of 32 columns) is whole groups
// of 8, and the launcher checked the alignment the decoder needs. The kernel takes each group
// factored (load_group: integers, a scale and a min), multiplying x by the integers and applying
// the scale, and the min times the sum of x, once per group.
template <pagoda_dtype_t DT>
struct BlockRows {
    static constexpr bool kFactored = true;
    static constexpr bool kHasMin = block_has_min(DT);
    const unsigned char *w;
    int64_t row_bytes;
    __device__ const unsigned char *row(int64_t j) const { return w + j * row_bytes; }
    __device__ int vector_end(int tile) const { return tile; }
    __device__ Group8 load_group(const unsigned char *r, int64_t c) const {
        return decode_group8<DT>(r, c);
    }
    __device__ float load1(const unsigned char *r, int64_t c) const {  // never reached
        float v[kVec];
        decode8<DT>(r, c / kVec * kVec, v);
        return v[c % kVec];
    }
};

// The 8 staged x values at `x` (16-byte aligned).
__device__ __forceinline__ void x_at(const float *x, float (&out)[kVec]) {
    const float4 lo = *reinterpret_cast<const float4 *>(x);
    const float4 hi = *reinterpret_cast<const float4 *>(x + 4);
    out[0] = lo.x, out[1] = lo.y, out[2] = lo.z, out[3] = lo.w;
    out[4] = hi.x, out[5] = hi.y, out[6] = hi.z, out[7] = hi.w;
}

// One group of 8 columns from `col` of each of the warp's rows, factored (BlockRows), against
// the staged x at `x` (row i at x + i·x_stride): acc += scale·Σ q·x - min·Σ x.
template <int M, typename Rows, typename RowPtr>
__device__ __forceinline__ void accumulate_groups(const Rows &rows,
                                                  const RowPtr (&w_row)[kRowsPerWarp],
                                                  const bool (&row_ok)[kRowsPerWarp], int64_t col,
                                                  const float *x, int x_stride, int m,
                                                  float (&acc)[M][kRowsPerWarp]) {
    Group8 g[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
        if (row_ok[r]) {
            g[r] = rows.load_group(w_row[r], col);
        } else {
            g[r].scale = g[r].min = 0.0f;
#pragma unroll
            for (int q = 0; q < kVec; ++q) g[r].q[q] = 0.0f;
        }
    }
#pragma unroll
    for (int i = 0; i < M; ++i) {
        if (i >= m) break;
        float xv[kVec];
        x_at(x + i * x_stride, xv);
        float x_sum = 0.0f;
        if constexpr (Rows::kHasMin) {
#pragma unroll
            for (int q = 0; q < kVec; ++q) x_sum += xv[q];
        }
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
            float s = 0.0f;
#pragma unroll
            for (int q = 0; q < kVec; ++q) s = fmaf(g[r].q[q], xv[q], s);
            acc[i][r] = fmaf(g[r].scale, s, acc[i][r]);
            if constexpr (Rows::kHasMin) acc[i][r] = fmaf(-g[r].min, x_sum, acc[i][r]);
        }
    }
}

// M: the x rows this instantiation holds sums for (a.m ≤ M; rows past a.m are skipped).
template <typename Rows, int M>
__global__ void __launch_bounds__(kThreads) gemv_kernel(GemvArgs a, Rows rows) {
    extern __shared__ float4 x_tile_storage[];
    // [M][x_stride]: a tile's columns, or k rounded up to a vector step when that is less (the
    // launcher allocates exactly this).
    float *x_tile = reinterpret_cast<float *>(x_tile_storage);
    constexpr int tile_k = kTileColumns<M>;
    const int64_t k_steps = (a.k + kTileStep - 1) / kTileStep * kTileStep;
    const int x_stride = int(k_steps < tile_k ? k_steps : tile_k);

    // The record only changes between launches on this stream, so every thread agrees; the
    // block-wide vote makes that explicit before any __syncthreads below.
    if (__syncthreads_or(a.error != nullptr && failed(a.error))) return;

    const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
    const int m = int(a.m);
    using RowPtr = decltype(rows.row(0));

    // Grid-stride over groups of kRowsPerBlock W rows; the bound is the same for the whole
    // block, so all its threads reach the same __syncthreads.
    for (int64_t block_row = int64_t(blockIdx.x) * kRowsPerBlock; block_row < a.n;
         block_row += int64_t(gridDim.x) * kRowsPerBlock) {
        const int64_t row0 = block_row + int64_t(warp) * kRowsPerWarp;
        const bool warp_has_rows = row0 < a.n;
        RowPtr w_row[kRowsPerWarp];
        bool row_ok[kRowsPerWarp];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
            row_ok[r] = row0 + r < a.n;
            w_row[r] = rows.row(row_ok[r] ? row0 + r : 0);  // rows past n are never read
        }
        float acc[M][kRowsPerWarp];
#pragma unroll
        for (int i = 0; i < M; ++i)
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; ++r) acc[i][r] = 0.0f;

        for (int64_t c0 = 0; c0 < a.k; c0 += tile_k) {
            const int tile = int(a.k - c0 < tile_k ? a.k - c0 : tile_k);
            __syncthreads();  // every warp is done with the previous tile
            for (int e = int(threadIdx.x); e < m * tile; e += kThreads) {
                const int i = e / tile, c = e - i * tile;
                x_tile[i * x_stride + c] = load_as_float(a.x, a.x_dtype, int64_t(i) * a.ldx + c0 + c);
            }
            __syncthreads();
            if (!warp_has_rows) continue;

            const int vec_end = rows.vector_end(tile);
#pragma unroll 2
            for (int c = lane * kVec; c < vec_end; c += kWarpSize * kVec) {
                if constexpr (Rows::kFactored) {
                    accumulate_groups<M>(rows, w_row, row_ok, c0 + c, x_tile + c, x_stride, m, acc);
                } else {
                    float wv[kRowsPerWarp][kVec];
#pragma unroll
                    for (int r = 0; r < kRowsPerWarp; ++r) {
                        if (row_ok[r]) {
                            rows.load8(w_row[r], c0 + c, wv[r]);
                        } else {
#pragma unroll
                            for (int q = 0; q < kVec; ++q) wv[r][q] = 0.0f;
                        }
                    }
#pragma unroll
                    for (int i = 0; i < M; ++i) {
                        if (i >= m) break;
                        float xv[kVec];
                        x_at(x_tile + i * x_stride + c, xv);
#pragma unroll
                        for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
                            for (int q = 0; q < kVec; ++q)
                                acc[i][r] = fmaf(wv[r][q], xv[q], acc[i][r]);
                    }
                }
            }
            // The tile's tail past the last whole vector, or all of it when W is not aligned.
            for (int c = vec_end + lane; c < tile; c += kWarpSize) {
                float wv[kRowsPerWarp];
#pragma unroll
                for (int r = 0; r < kRowsPerWarp; ++r)
                    wv[r] = row_ok[r] ? rows.load1(w_row[r], c0 + c) : 0.0f;
#pragma unroll
                for (int i = 0; i < M; ++i) {
                    if (i >= m) break;
                    const float xv = x_tile[i * x_stride + c];
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

template <typename Rows>
cudaError_t launch_pass(const GemvArgs &a, const Rows &rows, unsigned blocks, cudaStream_t stream) {
    // The smallest instantiation that holds a.m rows of sums.
    // A tile's floats, unless k is shorter: small products stage no more than they use.
    const auto shared = [&](int m, int columns) {
        const int64_t used = (a.k + kTileStep - 1) / kTileStep * kTileStep;
        return size_t(m) * size_t(used < columns ? used : columns) * sizeof(float);
    };
    if (a.m <= 1)
        gemv_kernel<Rows, 1><<<blocks, kThreads, shared(1, kTileColumns<1>), stream>>>(a, rows);
    else if (a.m <= 2)
        gemv_kernel<Rows, 2><<<blocks, kThreads, shared(2, kTileColumns<2>), stream>>>(a, rows);
    else if (a.m <= 4)
        gemv_kernel<Rows, 4><<<blocks, kThreads, shared(4, kTileColumns<4>), stream>>>(a, rows);
    else
        gemv_kernel<Rows, 8><<<blocks, kThreads, shared(8, kTileColumns<8>), stream>>>(a, rows);
    return cudaGetLastError();
}

// Runs `pass` (a GemvArgs → cudaError_t) over every kGemvRowsPerPass rows of x.
template <typename Pass>
cudaError_t in_passes(const GemvArgs &args, Pass &&pass) {
    const int64_t x_bytes = activation_bytes(args.x_dtype), y_bytes = activation_bytes(args.y_dtype);
    for (int64_t i0 = 0; i0 < args.m; i0 += kGemvRowsPerPass) {
        GemvArgs p = args;
        p.m = args.m - i0 < kGemvRowsPerPass ? args.m - i0 : kGemvRowsPerPass;
        p.x = static_cast<const char *>(args.x) + i0 * args.ldx * x_bytes;
        p.y = static_cast<char *>(args.y) + i0 * args.ldy * y_bytes;
        if (const cudaError_t e = pass(p); e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

}  // namespace

bool gemv_takes(pagoda_dtype_t w_dtype, const void *w) {
    if (w_dtype == PAGODA_DTYPE_BF16 || w_dtype == PAGODA_DTYPE_F16) return true;
    return block_layout(w_dtype).elements != 0 &&
           reinterpret_cast<uintptr_t>(w) % block_alignment(w_dtype) == 0;
}

cudaError_t launch_gemv(const GemvArgs &args, cudaStream_t stream) {
    if (!gemv_takes(args.w_dtype, args.w)) return cudaErrorInvalidValue;
    if (activation_bytes(args.x_dtype) == 0 || activation_bytes(args.y_dtype) == 0)
        return cudaErrorInvalidValue;
    if (args.m <= 0 || args.n <= 0) return cudaSuccess;
    const int64_t wanted = (args.n + kRowsPerBlock - 1) / kRowsPerBlock;
    const unsigned blocks = unsigned(wanted < kMaxBlocks ? wanted : kMaxBlocks);
    // A <<<>>> launch reports its error only through the thread's last-error slot: empty the
    // slot first so that what we read back belongs to this launch.
    (void)cudaGetLastError();
    if (args.w_dtype == PAGODA_DTYPE_BF16 || args.w_dtype == PAGODA_DTYPE_F16) {
        const bool vectors = reinterpret_cast<uintptr_t>(args.w) % 16 == 0 && args.ldw % kVec == 0;
        const auto *w = static_cast<const uint16_t *>(args.w);
        if (args.w_dtype == PAGODA_DTYPE_BF16)
            return in_passes(args, [&](const GemvArgs &p) {
                return launch_pass(p, HalfRows<true>{w, args.ldw, vectors}, blocks, stream);
            });
        return in_passes(args, [&](const GemvArgs &p) {
            return launch_pass(p, HalfRows<false>{w, args.ldw, vectors}, blocks, stream);
        });
    }
    return with_block_type(args.w_dtype, [&](auto tag) {
        constexpr pagoda_dtype_t DT = decltype(tag)::value;
        const BlockRows<DT> rows{static_cast<const unsigned char *>(args.w),
                                 block_row_bytes(DT, args.ldw)};
        return in_passes(args, [&](const GemvArgs &p) { return launch_pass(p, rows, blocks, stream); });
    });
}

}  // namespace pagoda::cuda
