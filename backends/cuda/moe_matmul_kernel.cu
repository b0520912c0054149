// MOE_MATMUL's three kernels for one chunk of tokens (moe_kernel.hpp).
//
// 1. Bucketing, one block: each held expert's slots counted (atomics), the counts scanned into
//    starts, and each slot placed in its expert's run of `order`. The order within a run varies
//    by run, but every output below is computed from its own row alone, so results do not.
// 2. The products, a tiled GEMM per held expert over its gathered rows: a block owns kTileOut
//    rows of the expert's matrix and kTileRows of its slots, and walks k in steps of kTileK,
//    staging both tiles in shared memory as f32 (x widened; W widened, or decoded exactly by
//    block_decode.cuh, 8 values a thread), so the matrix is read once per kTileRows rows.
//    Blocks of experts nobody picked return before reading anything of theirs. The f32
//    products go to the slot's scratch row.
// 3. y: per slot its product (zeros for an expert not held here), or per token the weighted
//    sum of its held slots' products in slot order; f32, rounded once.
#include <cstdint>

#include "block_decode.cuh"
#include "half_load.cuh"
#include "launch_shape.hpp"
#include "moe_kernel.hpp"
#include "pagoda/ops.h"

namespace pagoda::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kTileRows = 32;  // gathered x rows per tile: 16 thread rows × 2
constexpr int kTileOut = 64;   // outputs (W rows) per tile: 16 thread columns × 4
constexpr int kTileK = 32;     // a Q8_0/Q4_0 block; a K type's 256 in eight steps
constexpr int kRowsPerThread = 2, kOutsPerThread = 4;
static_assert(kTileRows * kTileOut == kThreads * kRowsPerThread * kOutsPerThread,
              "each thread owns 2 × 4 outputs of the tile");
static_assert(kTileOut * kTileK / 8 == kThreads, "a block W tile is one group of 8 per thread");
// Row tiles of one expert taken by separate blocks (the rest loop): enough to spread a
// prefill's busy experts, few enough that a decode's idle blocks cost little.
constexpr unsigned kMaxRowBlocks = 4;
constexpr int kBucketThreads = 1024;

// The chunk slot's x row: its token's, or its own with x_per_slot.
__device__ __forceinline__ int64_t x_row_of(const MoeChunkArgs &a, int64_t slot) {
    return a.x_per_slot ? slot : slot / a.top_k;
}

// The index in `experts` of the expert id `e` (known non-negative), or -1 when not held here.
__device__ __forceinline__ int64_t held_index(const MoeChunkArgs &a, int64_t e) {
    const int64_t h = e - a.expert_offset;
    return h >= 0 && h < a.n_experts ? h : -1;
}

__global__ void __launch_bounds__(kBucketThreads) moe_bucket_kernel(MoeChunkArgs a, MoeScratch s) {
    __shared__ int32_t partial[kBucketThreads];
    if (__syncthreads_or(failed(a.error))) return;
    const int tid = int(threadIdx.x);
    const int64_t slots = a.n_tokens * a.top_k;
    for (int64_t h = tid; h < a.n_experts; h += kBucketThreads) s.cursor[h] = 0;
    __syncthreads();
    for (int64_t i = tid; i < slots; i += kBucketThreads) {
        const int32_t e = a.expert_ids[i];
        if (e < 0) {
            report(a.error, int32_t(PAGODA_OP_MOE_MATMUL), DeviceErrorField::MoeExpertId,
                   a.first_slot + i, e, 0);
            continue;
        }
        if (const int64_t h = held_index(a, e); h >= 0) atomicAdd(&s.cursor[h], 1);
    }
    __syncthreads();
    // Exclusive scan of the counts: each thread sums a contiguous share of the experts, thread
    // 0 scans the shares, each thread then writes its share's starts.
    const int64_t share = (a.n_experts + kBucketThreads - 1) / kBucketThreads;
    const int64_t h0 = tid * share, h1 = h0 + share < a.n_experts ? h0 + share : a.n_experts;
    int32_t mine = 0;
    for (int64_t h = h0; h < h1; ++h) mine += s.cursor[h];
    partial[tid] = mine;
    __syncthreads();
    if (tid == 0) {
        int32_t run = 0;
        for (int i = 0; i < kBucketThreads; ++i) {
            const int32_t count = partial[i];
            partial[i] = run;
            run += count;
        }
        s.starts[a.n_experts] = run;
    }
    __syncthreads();
    int32_t run = partial[tid];
    for (int64_t h = h0; h < h1; ++h) {
        const int32_t count = s.cursor[h];
        s.starts[h] = run;
        s.cursor[h] = run;
        run += count;
    }
    __syncthreads();
    for (int64_t i = tid; i < slots; i += kBucketThreads) {
        const int32_t e = a.expert_ids[i];
        if (e < 0) continue;
        if (const int64_t h = held_index(a, e); h >= 0)
            s.order[atomicAdd(&s.cursor[h], 1)] = int32_t(i);
    }
}

// One kTileK step of W rows [j0, j0 + kTileOut) into `tile` as f32, zeros past n and k.
template <pagoda_dtype_t WT>
__device__ __forceinline__ void load_w_tile(const void *w, const MoeChunkArgs &a, int64_t j0,
                                            int64_t k0, float (*tile)[kTileK + 1]) {
    constexpr BlockLayout kLayout = block_layout(WT);
    if constexpr (kLayout.elements != 0) {
        // k is whole blocks of at least 32 values, so a step never passes it.
        const int o = int(threadIdx.x) / 4, g = int(threadIdx.x) % 4;
        float v[8];
        if (j0 + o < a.n) {
            const auto *rows = static_cast<const unsigned char *>(w);
            decode8<WT>(rows + (j0 + o) * block_row_bytes(WT, a.ldw), k0 + 8 * g, v);
        } else {
#pragma unroll
            for (int q = 0; q < 8; ++q) v[q] = 0.0f;
        }
#pragma unroll
        for (int q = 0; q < 8; ++q) tile[o][8 * g + q] = v[q];
    } else {
        for (int e = int(threadIdx.x); e < kTileOut * kTileK; e += kThreads) {
            const int o = e / kTileK, c = e % kTileK;
            const int64_t j = j0 + o, col = k0 + c;
            tile[o][c] = j < a.n && col < a.k ? load_as_float(w, WT, j * a.ldw + col) : 0.0f;
        }
    }
}

// Bytes an expert's matrix must be aligned to: the widest load its reader makes.
template <pagoda_dtype_t WT>
__device__ __forceinline__ uintptr_t matrix_alignment() {
    if constexpr (block_layout(WT).elements != 0)
        return block_alignment(WT);
    else
        return WT == PAGODA_DTYPE_F32 ? 4 : 2;
}

template <pagoda_dtype_t WT>
__global__ void __launch_bounds__(kThreads) moe_product_kernel(MoeChunkArgs a, MoeScratch s) {
    __shared__ float x_tile[kTileRows][kTileK + 1];  // +1: no bank conflicts on column reads
    __shared__ float w_tile[kTileOut][kTileK + 1];
    __shared__ int64_t x_row[kTileRows];  // -1 past the expert's rows
    __shared__ int32_t slot_of[kTileRows];
    if (__syncthreads_or(failed(a.error))) return;
    const int tid = int(threadIdx.x), ty = tid / 16, tx = tid % 16;
    // Every bound below is the same in the whole block, so all threads meet each barrier.
    for (int64_t h = blockIdx.y; h < a.n_experts; h += gridDim.y) {
        const int32_t start = s.starts[h], count = s.starts[h + 1] - start;
        if (count == 0) continue;  // nobody picked it: its matrix is not read
        const void *w = a.experts[h];
        if (w == nullptr || reinterpret_cast<uintptr_t>(w) % matrix_alignment<WT>() != 0) {
            if (tid == 0)
                report(a.error, int32_t(PAGODA_OP_MOE_MATMUL), DeviceErrorField::MoeExpert, h,
                       int64_t(reinterpret_cast<uintptr_t>(w)), a.first_slot + s.order[start]);
            continue;
        }
        for (int64_t j0 = int64_t(blockIdx.x) * kTileOut; j0 < a.n;
             j0 += int64_t(gridDim.x) * kTileOut) {
            for (int64_t r0 = int64_t(blockIdx.z) * kTileRows; r0 < count;
                 r0 += int64_t(gridDim.z) * kTileRows) {
                __syncthreads();  // the previous tile's rows are no longer read
                if (tid < kTileRows) {
                    const bool real = r0 + tid < count;
                    const int32_t slot = real ? s.order[start + r0 + tid] : -1;
                    slot_of[tid] = slot;
                    x_row[tid] = real ? x_row_of(a, slot) : -1;
                }
                float acc[kRowsPerThread][kOutsPerThread] = {};
                for (int64_t k0 = 0; k0 < a.k; k0 += kTileK) {
                    __syncthreads();  // every thread is done with the previous step's tiles
                    for (int e = tid; e < kTileRows * kTileK; e += kThreads) {
                        const int r = e / kTileK, c = e % kTileK;
                        const int64_t row = x_row[r], col = k0 + c;
                        x_tile[r][c] = row >= 0 && col < a.k
                                           ? load_as_float(a.x, a.x_dtype, row * a.ldx + col)
                                           : 0.0f;
                    }
                    load_w_tile<WT>(w, a, j0, k0, w_tile);
                    __syncthreads();
#pragma unroll 8
                    for (int c = 0; c < kTileK; ++c) {
                        float xv[kRowsPerThread], wv[kOutsPerThread];
#pragma unroll
                        for (int i = 0; i < kRowsPerThread; ++i)
                            xv[i] = x_tile[ty * kRowsPerThread + i][c];
#pragma unroll
                        for (int o = 0; o < kOutsPerThread; ++o) wv[o] = w_tile[tx + 16 * o][c];
#pragma unroll
                        for (int i = 0; i < kRowsPerThread; ++i)
#pragma unroll
                            for (int o = 0; o < kOutsPerThread; ++o)
                                acc[i][o] = fmaf(xv[i], wv[o], acc[i][o]);
                    }
                }
#pragma unroll
                for (int i = 0; i < kRowsPerThread; ++i) {
                    const int32_t slot = slot_of[ty * kRowsPerThread + i];
                    if (slot < 0) continue;
#pragma unroll
                    for (int o = 0; o < kOutsPerThread; ++o) {
                        const int64_t j = j0 + tx + 16 * o;
                        if (j < a.n) s.products[int64_t(slot) * a.n + j] = acc[i][o];
                    }
                }
            }
        }
    }
}

__global__ void moe_output_kernel(MoeChunkArgs a, MoeScratch s) {
    if (failed(a.error)) return;
    const bool weighted = a.weights != nullptr;
    const int64_t rows = weighted ? a.n_tokens : a.n_tokens * a.top_k;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < rows * a.n;
         e += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = e / a.n, j = e % a.n;
        float v = 0.0f;
        if (weighted) {
            for (int64_t q = 0; q < a.top_k; ++q) {
                const int64_t slot = r * a.top_k + q;
                if (held_index(a, a.expert_ids[slot]) >= 0)
                    v += a.weights[slot] * s.products[slot * a.n + j];
            }
        } else if (held_index(a, a.expert_ids[r]) >= 0) {
            v = s.products[r * a.n + j];
        }
        store_from_float(a.y, a.y_dtype, r * a.ldy + j, v);
    }
}

template <pagoda_dtype_t WT>
void launch_products(const MoeChunkArgs &a, const MoeScratch &s, cudaStream_t stream) {
    const int64_t slots = a.n_tokens * a.top_k;
    const unsigned row_blocks = grid_blocks(slots, kTileRows);
    const dim3 grid(grid_blocks(a.n, kTileOut), grid_blocks(a.n_experts, 1),
                    row_blocks < kMaxRowBlocks ? row_blocks : kMaxRowBlocks);
    moe_product_kernel<WT><<<grid, kThreads, 0, stream>>>(a, s);
}

int64_t align_up(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// The int32 areas (starts, cursor, order) first, the products after them, 256-byte aligned.
int64_t int_area_bytes(int64_t n_experts, int64_t slots) {
    return align_up((2 * n_experts + 1 + slots) * int64_t(sizeof(int32_t)));
}

}  // namespace

size_t moe_scratch_bytes(int64_t n_experts, int64_t slots, int64_t n) {
    return size_t(int_area_bytes(n_experts, slots) + slots * n * int64_t(sizeof(float)));
}

MoeScratch moe_scratch_at(void *base, int64_t n_experts, int64_t slots) {
    auto *ints = static_cast<int32_t *>(base);
    MoeScratch s{};
    s.starts = ints;
    s.cursor = ints + n_experts + 1;
    s.order = s.cursor + n_experts;
    s.products = reinterpret_cast<float *>(static_cast<char *>(base) +
                                           int_area_bytes(n_experts, slots));
    return s;
}

cudaError_t launch_moe_chunk(const MoeChunkArgs &a, const MoeScratch &s, cudaStream_t stream) {
    if (activation_bytes(a.x_dtype) == 0 || activation_bytes(a.y_dtype) == 0)
        return cudaErrorInvalidValue;
    (void)cudaGetLastError();  // empty the slot so what we read back belongs to these launches
    moe_bucket_kernel<<<1, kBucketThreads, 0, stream>>>(a, s);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    switch (a.w_dtype) {
        case PAGODA_DTYPE_F32: launch_products<PAGODA_DTYPE_F32>(a, s, stream); break;
        case PAGODA_DTYPE_BF16: launch_products<PAGODA_DTYPE_BF16>(a, s, stream); break;
        case PAGODA_DTYPE_F16: launch_products<PAGODA_DTYPE_F16>(a, s, stream); break;
        default: {
            const cudaError_t e = with_block_type(a.w_dtype, [&](auto tag) {
                launch_products<decltype(tag)::value>(a, s, stream);
                return cudaSuccess;
            });
            if (e != cudaSuccess) return e;
        }
    }
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    const int64_t rows = a.weights != nullptr ? a.n_tokens : a.n_tokens * a.top_k;
    moe_output_kernel<<<grid_blocks(rows * a.n, kThreads), kThreads, 0, stream>>>(a, s);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
