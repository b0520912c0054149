// SAMPLE: one thread block per row, every step a pass over the row with block reductions, so a
// row costs O(passes · cols / threads) and no scratch memory:
//   1. max, argmax, NaN and -inf checks (greedy rows stop here);
//   2. top-k: the k-th token in rank order, found by a radix descent over the logits' order-
//      preserving bit patterns (counts per 4-bit digit), ties inside the last digit resolved by
//      id, so exactly k survive;
//   3. Σw over the candidates; top-p: the same descent with weight sums instead of counts finds
//      the rank-order token where the running weight reaches top_p · Σw;
//   4. min-p needs no pass of its own (a weight test applied in the later passes);
//   5. the draw: in id order, a block-wide prefix sum of the survivors' weights over contiguous
//      chunks, then a walk of the chunks up to uniform · Σ; in rank order (top-k applied), the
//      descent again with target uniform · Σ.
// Rounding: weights are computed in double, w = exp((double(x) − double(max)) / double(T)), as
// the CPU reference computes them, and summed in double, so the two differ only in summation
// order (relative ~1e-16 · log2(cols)). A draw can only differ where uniform · Σ lies that close
// to a boundary of the CDF; min-p and top-p cuts flip as rarely. bf16/f16 logits are widened
// as each pass reads them (LogitRow), exactly, so they take the same path.
#include <climits>
#include <cmath>
#include <cstdint>

#include "half_load.cuh"
#include "launch_shape.hpp"
#include "pagoda/ops.h"
#include "sample_kernel.hpp"
#include "sample_rules.hpp"

namespace pagoda::cuda {

namespace {

using plugin::SampleFault;

constexpr unsigned kFullMask = 0xFFFFFFFFu;
// Each thread keeps a 16-bin histogram (doubles and counts) in registers during a descent, so
// blocks have 512 threads, which leaves each up to 128 registers.
constexpr int kThreads = 512;
constexpr int kWarps = kThreads / kWarpThreads;
constexpr int kDigitBits = 4;
constexpr int kBins = 1 << kDigitBits;
constexpr int kKeyBits = 32;

// ---- ranking ----

// The logit's bit pattern made to order as the value does (larger logit, larger key), with -0
// taken as +0 since the two are equal logits. NaN never gets here.
__device__ __forceinline__ uint32_t rank_key(float x) {
    const uint32_t bits = __float_as_uint(x == 0.0f ? 0.0f : x);
    return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

__device__ __forceinline__ float logit_of_key(uint32_t key) {
    return __uint_as_float((key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key);
}

// Rank order as one integer: larger means ranked earlier (higher logit, then lower id).
__device__ __forceinline__ unsigned long long rank_word(uint32_t key, int64_t id) {
    return (static_cast<unsigned long long>(key) << 32) | (0xFFFFFFFFu - uint32_t(id));
}

__device__ __forceinline__ int32_t id_of_rank_word(unsigned long long word) {
    return int32_t(0xFFFFFFFFu - uint32_t(word & 0xFFFFFFFFull));
}

// A rank-order cut: keeps the tokens ranked at or before the boundary token `last_id`, whose key
// begins with `prefix` (the key's bits from `shift` up). Tokens sharing that prefix go by id:
// a descent stops at a prefix only when the boundary is alone under it or the whole key is
// known, and among equal keys the ranking is by id.
struct RankCut {
    bool active;
    uint32_t prefix;
    int shift;  // 0..28: never 32, so `key >> shift` is defined
    int32_t last_id;

    __device__ bool keeps(uint32_t key, int64_t id) const {
        if (!active) return true;
        const uint32_t head = key >> shift;
        return head > prefix || (head == prefix && id <= last_id);
    }
};

// Which tokens a pass looks at. Candidates: above -inf and inside the top-k cut. Survivors:
// candidates inside the top-p cut whose weight passes min-p and is not 0.
enum class TokenSet { Candidates, Survivors };

// One row of logits of any activation type, read as f32. A run-time type rather than a template
// parameter: the switch is uniform across the block and cheap next to each pass's double exp,
// and it keeps one instantiation of every pass.
struct LogitRow {
    const void *base;
    pagoda_dtype_t dtype;
    __device__ float operator[](int64_t i) const { return load_as_float(base, dtype, i); }
};

// What the passes know about the row being sampled.
struct RowView {
    LogitRow x;
    int64_t cols;
    float max;           // the largest logit: the first candidate in rank order
    double temperature;  // > 0
    double min_weight;   // min_p
    RankCut top_k;
    RankCut top_p;

    // ops.h's weight, exactly 1 at the maximum so that a +inf maximum weighs 1 (and the finite
    // logits beside it 0) rather than exp(NaN).
    __device__ double weight(float logit) const {
        if (logit == max) return 1.0;
        return exp((double(logit) - double(max)) / temperature);
    }

    // Whether token `id` (logit `x`, key `key`) is in `set`; `w` gets its weight when it is
    // and `with_weight` (top-k's counting needs none).
    __device__ bool member(TokenSet set, float logit, uint32_t key, int64_t id, bool with_weight,
                           double &w) const {
        if (!(logit > -INFINITY) || !top_k.keeps(key, id)) return false;
        if (set == TokenSet::Candidates) {
            if (with_weight) w = weight(logit);
            return true;
        }
        if (!top_p.keeps(key, id)) return false;
        w = weight(logit);
        return w >= min_weight && w > 0.0;
    }
};

// ---- block-wide reductions and scans (blockDim.x == kThreads) ----

// Shared memory of one block: the row's parameters and the reductions' staging areas.
struct BlockShared {
    float temperature, top_p, min_p, uniform;
    int32_t top_k;
    int32_t fault;  // SampleFault
    double warp_double[kWarps];
    long long warp_count[kWarps];
    unsigned long long warp_word[kWarps];
    double bin_mass_by_warp[kWarps][kBins];
    long long bin_count_by_warp[kWarps][kBins];
    double bin_mass[kBins];
    long long bin_count[kBins];
    int32_t selected;
};

__device__ __forceinline__ int lane_id() { return int(threadIdx.x) % kWarpThreads; }
__device__ __forceinline__ int warp_id() { return int(threadIdx.x) / kWarpThreads; }

struct Sum {
    template <typename T>
    __device__ T operator()(T a, T b) const { return a + b; }
};
struct Min {
    template <typename T>
    __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Max {
    template <typename T>
    __device__ T operator()(T a, T b) const { return b > a ? b : a; }
};

// `op` over every thread's `v`, returned to all threads. The warps' results are combined in warp
// order by every thread alike, so a double sum is the same on every run.
template <typename T, typename Op>
__device__ T block_reduce(T v, T *staging, Op op) {
    for (int offset = kWarpThreads / 2; offset > 0; offset /= 2)
        v = op(v, __shfl_xor_sync(kFullMask, v, offset));
    if (lane_id() == 0) staging[warp_id()] = v;
    __syncthreads();
    T result = staging[0];
    for (int w = 1; w < kWarps; ++w) result = op(result, staging[w]);
    __syncthreads();  // staging is free again
    return result;
}

// The sum of `v` over the threads before this one (in thread order) and, in `*total`, over all.
template <typename T>
__device__ T block_exclusive_sum(T v, T *staging, T *total) {
    T inclusive = v;
    for (int offset = 1; offset < kWarpThreads; offset *= 2) {
        const T other = __shfl_up_sync(kFullMask, inclusive, offset);
        if (lane_id() >= offset) inclusive += other;
    }
    T exclusive = __shfl_up_sync(kFullMask, inclusive, 1);
    if (lane_id() == 0) exclusive = T(0);
    if (lane_id() == kWarpThreads - 1) staging[warp_id()] = inclusive;
    __syncthreads();
    T before = T(0), all = T(0);
    for (int w = 0; w < kWarps; ++w) {
        if (w == warp_id()) before = all;
        all += staging[w];
    }
    __syncthreads();
    *total = all;
    return before + exclusive;
}

// This thread's contiguous share [begin, end) of a row of `cols`, for the passes that need id
// order across threads.
__device__ __forceinline__ void chunk_of_thread(int64_t cols, int64_t &begin, int64_t &end) {
    const int64_t chunk = (cols + kThreads - 1) / kThreads;
    begin = min(cols, int64_t(threadIdx.x) * chunk);
    end = min(cols, begin + chunk);
}

// ---- selection ----

// The id of the m-th (from 1) token in id order among the members of `set` whose key begins
// with `prefix` (bits from `shift` up); the caller knows there are at least m.
__device__ int32_t select_by_id(const RowView &v, TokenSet set, uint32_t prefix, int shift,
                                long long m, BlockShared &sh) {
    int64_t begin, end;
    chunk_of_thread(v.cols, begin, end);
    long long count = 0;
    for (int64_t i = begin; i < end; ++i) {
        const float x = v.x[i];
        const uint32_t key = rank_key(x);
        double w = 0.0;
        if ((key >> shift) == prefix && v.member(set, x, key, i, false, w)) ++count;
    }
    long long total = 0;
    const long long before = block_exclusive_sum(count, sh.warp_count, &total);
    if (before < m && m <= before + count) {
        long long seen = before;
        for (int64_t i = begin; i < end; ++i) {
            const float x = v.x[i];
            const uint32_t key = rank_key(x);
            double w = 0.0;
            if ((key >> shift) == prefix && v.member(set, x, key, i, false, w) && ++seen == m) {
                sh.selected = int32_t(i);
                break;
            }
        }
    }
    __syncthreads();
    const int32_t id = sh.selected;
    __syncthreads();  // sh.selected is free again
    return id;
}

// What a descent looks for: the first token in rank order at which the running count reaches
// the target (top-k), the running weight reaches it (top-p) or exceeds it (the draw).
enum class Crossing { CountReaches, WeightReaches, WeightExceeds };

__device__ __forceinline__ bool crosses(Crossing mode, double target, double weight,
                                        long long count) {
    switch (mode) {
        case Crossing::CountReaches: return double(count) >= target;
        case Crossing::WeightReaches: return weight >= target;
        case Crossing::WeightExceeds: return weight > target;
    }
    return false;
}

// Finds the token of `set` where the running count or weight, in rank order, crosses `target`,
// and returns the cut that keeps it and everything ranked before it; inactive when the whole
// set falls short (only rounding makes a weight target do so).
//
// A radix descent over the keys, 4 bits a pass from the top: each pass histograms the set's
// tokens under the current prefix by their next digit (counts and weight sums), and the digits
// are walked from the highest (best ranked) down to the one where the running total crosses.
// It stops once the chosen digit holds one token or the key is complete; the tokens then
// sharing the key have equal weights, so how many of them (in id order) the crossing takes is
// a division, and select_by_id names the last of them.
__device__ RankCut find_crossing(const RowView &v, TokenSet set, Crossing mode, double target,
                                 BlockShared &sh) {
    const bool with_weight = mode != Crossing::CountReaches;
    uint32_t prefix = 0;
    int shift = kKeyBits;
    double weight_above = 0.0;  // of the tokens ranked before every token under the prefix
    long long count_above = 0;
    long long tied = 0;
    for (int pass = 0; shift > 0; ++pass) {
        const int next = shift - kDigitBits;
        double bin_weight[kBins];
        long long bin_count[kBins];
#pragma unroll
        for (int b = 0; b < kBins; ++b) {
            bin_weight[b] = 0.0;
            bin_count[b] = 0;
        }
        for (int64_t i = threadIdx.x; i < v.cols; i += kThreads) {
            const float x = v.x[i];
            const uint32_t key = rank_key(x);
            if (pass > 0 && (key >> shift) != prefix) continue;
            double w = 0.0;
            if (!v.member(set, x, key, i, with_weight, w)) continue;
            const uint32_t digit = (key >> next) & (kBins - 1);
#pragma unroll
            for (int b = 0; b < kBins; ++b) {
                const bool hit = digit == uint32_t(b);
                bin_weight[b] += hit ? w : 0.0;
                bin_count[b] += hit ? 1 : 0;
            }
        }
        // Warp sums, then the warps' sums in warp order.
#pragma unroll
        for (int b = 0; b < kBins; ++b) {
            for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) {
                bin_weight[b] += __shfl_xor_sync(kFullMask, bin_weight[b], offset);
                bin_count[b] += __shfl_xor_sync(kFullMask, bin_count[b], offset);
            }
            if (lane_id() == 0) {
                sh.bin_mass_by_warp[warp_id()][b] = bin_weight[b];
                sh.bin_count_by_warp[warp_id()][b] = bin_count[b];
            }
        }
        __syncthreads();
        if (threadIdx.x < kBins) {
            double mass = 0.0;
            long long count = 0;
            for (int w = 0; w < kWarps; ++w) {
                mass += sh.bin_mass_by_warp[w][threadIdx.x];
                count += sh.bin_count_by_warp[w][threadIdx.x];
            }
            sh.bin_mass[threadIdx.x] = mass;
            sh.bin_count[threadIdx.x] = count;
        }
        __syncthreads();
        // Every thread walks the same shared bins, so every thread decides alike.
        int chosen = -1;
        double above_w = weight_above;
        long long above_c = count_above;
        for (int b = kBins - 1; b >= 0; --b) {
            if (sh.bin_count[b] == 0) continue;
            if (crosses(mode, target, above_w + sh.bin_mass[b], above_c + sh.bin_count[b])) {
                chosen = b;
                break;
            }
            above_w += sh.bin_mass[b];
            above_c += sh.bin_count[b];
        }
        if (chosen < 0) {
            if (pass == 0) {
                __syncthreads();  // the bins are read; the caller may reuse shared memory
                return RankCut{false, 0u, 0, 0};
            }
            // The parent digit's total crossed, its parts added in another order fall a hair
            // short: the crossing is the parent's last token, in its lowest nonempty digit.
            for (int b = 0; b < kBins; ++b)
                if (sh.bin_count[b] > 0) {
                    chosen = b;
                    break;
                }
            above_w -= sh.bin_mass[chosen];
            above_c -= sh.bin_count[chosen];
        }
        weight_above = above_w;
        count_above = above_c;
        tied = sh.bin_count[chosen];
        prefix = (prefix << kDigitBits) | uint32_t(chosen);
        shift = next;
        __syncthreads();  // the bins are rewritten by the next pass
        if (tied == 1) break;
    }

    // How many of the `tied` tokens under the prefix (in id order) the crossing takes.
    long long take = 1;
    if (tied > 1) {  // then shift == 0: one logit, one weight
        if (mode == Crossing::CountReaches) {
            take = static_cast<long long>(target) - count_above;
        } else {
            const double w = v.weight(logit_of_key(prefix));
            const double need = (target - weight_above) / w;
            const double n = mode == Crossing::WeightReaches ? ceil(need) : floor(need) + 1.0;
            // (written so that a NaN, which the weights cannot produce, still gives 1)
            take = n >= 1.0 ? (n < double(tied) ? static_cast<long long>(n) : tied) : 1;
        }
        take = take < 1 ? 1 : (take > tied ? tied : take);
    }
    return RankCut{true, prefix, shift, select_by_id(v, set, prefix, shift, take, sh)};
}

// Σ weight over `set`, strided.
__device__ double set_weight(const RowView &v, TokenSet set, BlockShared &sh) {
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < v.cols; i += kThreads) {
        const float x = v.x[i];
        double w = 0.0;
        if (v.member(set, x, rank_key(x), i, true, w)) sum += w;
    }
    return block_reduce(sum, sh.warp_double, Sum{});
}

// The draw over the survivors in id order: the first whose running weight exceeds
// uniform · Σ, the last survivor if rounding leaves none.
__device__ int32_t draw_in_id_order(const RowView &v, float uniform, BlockShared &sh) {
    int64_t begin, end;
    chunk_of_thread(v.cols, begin, end);
    double chunk_weight = 0.0;
    for (int64_t i = begin; i < end; ++i) {
        const float x = v.x[i];
        double w = 0.0;
        if (v.member(TokenSet::Survivors, x, rank_key(x), i, true, w)) chunk_weight += w;
    }
    double total = 0.0;
    const double before = block_exclusive_sum(chunk_weight, sh.warp_double, &total);
    const double target = double(uniform) * total;
    // Every chunk walks from its own start, so the lowest crossing found is the first one.
    long long first = LLONG_MAX, last = -1;
    double running = before;
    for (int64_t i = begin; i < end; ++i) {
        const float x = v.x[i];
        double w = 0.0;
        if (!v.member(TokenSet::Survivors, x, rank_key(x), i, true, w)) continue;
        running += w;
        last = i;
        if (target < running) {
            first = i;
            break;
        }
    }
    first = block_reduce(first, sh.warp_count, Min{});
    last = block_reduce(last, sh.warp_count, Max{});
    return int32_t(first != LLONG_MAX ? first : last);
}

// The draw over the survivors in rank order (top-k applied).
__device__ int32_t draw_in_rank_order(const RowView &v, float uniform, BlockShared &sh) {
    const double total = set_weight(v, TokenSet::Survivors, sh);
    const RankCut pick =
        find_crossing(v, TokenSet::Survivors, Crossing::WeightExceeds, double(uniform) * total, sh);
    if (pick.active) return pick.last_id;
    // Rounding put the target past the last survivor: that one, the lowest ranked.
    unsigned long long lowest = ~0ull;
    for (int64_t i = threadIdx.x; i < v.cols; i += kThreads) {
        const float x = v.x[i];
        const uint32_t key = rank_key(x);
        double w = 0.0;
        if (v.member(TokenSet::Survivors, x, key, i, true, w))
            lowest = min(lowest, rank_word(key, i));
    }
    return id_of_rank_word(block_reduce(lowest, sh.warp_word, Min{}));
}

__device__ void report_row(DeviceError *error, int64_t row, SampleFault fault, int64_t value) {
    report(error, int32_t(PAGODA_OP_SAMPLE), DeviceErrorField::SampleRow, row, value,
           int64_t(fault));
}

// The f32 bit pattern of a bad parameter, for its message.
__device__ int64_t fault_bits(SampleFault fault, const BlockShared &sh) {
    float value = 0.0f;
    switch (fault) {
        case SampleFault::Temperature: value = sh.temperature; break;
        case SampleFault::TopP: value = sh.top_p; break;
        case SampleFault::MinP: value = sh.min_p; break;
        case SampleFault::Uniform: value = sh.uniform; break;
        default: break;
    }
    return int64_t(__float_as_uint(value));
}

// out[r] = token and, when asked, logprobs[r] = log_softmax(x)[token] at temperature 1 (NaN for
// a row holding +inf), with Σ exp(x − max) in double as the CPU reference sums it. `max` is the
// row's largest logit. Called by the whole block.
__device__ void write_token(const SampleRows &a, int64_t r, const LogitRow &x, float max,
                            int32_t token, BlockShared &sh) {
    if (a.logprobs == nullptr || max == INFINITY) {
        if (threadIdx.x == 0) {
            a.out[r] = token;
            if (a.logprobs != nullptr) a.logprobs[r] = NAN;
        }
        return;
    }
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < a.cols; i += kThreads) sum += exp(double(x[i]) - double(max));
    sum = block_reduce(sum, sh.warp_double, Sum{});
    if (threadIdx.x == 0) {
        a.out[r] = token;
        a.logprobs[r] = float(double(x[token]) - double(max) - log(sum));
    }
}

// One row, by the whole block; every branch depends only on shared or block-reduced values,
// so the block takes each one together.
__device__ void sample_row(const SampleRows &a, int64_t r, DeviceError *error, BlockShared &sh) {
    if (threadIdx.x == 0) {
        sh.temperature = a.temperature[r];
        sh.top_k = a.top_k[r];
        sh.top_p = a.top_p[r];
        sh.min_p = a.min_p[r];
        sh.uniform = a.uniform[r];
        sh.fault = int32_t(plugin::sample_param_fault(sh.temperature, sh.top_p, sh.min_p,
                                                      sh.uniform));
    }
    __syncthreads();
    if (sh.fault != int32_t(SampleFault::None)) {
        const SampleFault fault = SampleFault(sh.fault);
        if (threadIdx.x == 0) report_row(error, r, fault, fault_bits(fault, sh));
        return;
    }

    // Pass 1: the best token in rank order, the first NaN, and whether anything is above -inf.
    const LogitRow x{static_cast<const char *>(a.logits) +
                         r * a.ldx * activation_bytes(a.logits_dtype),
                     a.logits_dtype};
    long long first_nan = LLONG_MAX, live = 0;
    unsigned long long best = 0;
    for (int64_t i = threadIdx.x; i < a.cols; i += kThreads) {
        const float value = x[i];
        if (isnan(value)) {
            first_nan = min(first_nan, static_cast<long long>(i));
            continue;
        }
        live += value > -INFINITY ? 1 : 0;
        best = max(best, rank_word(rank_key(value), i));
    }
    first_nan = block_reduce(first_nan, sh.warp_count, Min{});
    live = block_reduce(live, sh.warp_count, Sum{});
    best = block_reduce(best, sh.warp_word, Max{});
    if (first_nan != LLONG_MAX) {
        if (threadIdx.x == 0) report_row(error, r, SampleFault::NanLogit, first_nan);
        return;
    }
    if (live == 0) {
        if (threadIdx.x == 0) report_row(error, r, SampleFault::AllNegInf, 0);
        return;
    }
    const int32_t best_id = id_of_rank_word(best);
    if (sh.temperature == 0.0f) {
        write_token(a, r, x, x[best_id], best_id, sh);
        return;
    }

    RowView v{};
    v.x = x;
    v.cols = a.cols;
    v.max = x[best_id];
    v.temperature = double(sh.temperature);
    v.min_weight = double(sh.min_p);
    v.top_k = RankCut{false, 0u, 0, 0};
    v.top_p = RankCut{false, 0u, 0, 0};

    // Top-k: only a cut when it leaves some live token out.
    const int32_t k = sh.top_k;
    const bool rank_order = k > 0 && int64_t(k) < a.cols;
    if (rank_order && live > k)
        v.top_k = find_crossing(v, TokenSet::Candidates, Crossing::CountReaches, double(k), sh);

    // Top-p (Holtzman et al. 2020, §3.1): the shortest rank-order prefix reaching top_p · Σw.
    if (sh.top_p < 1.0f) {
        const double total = set_weight(v, TokenSet::Candidates, sh);
        v.top_p = find_crossing(v, TokenSet::Candidates, Crossing::WeightReaches,
                                double(sh.top_p) * total, sh);
    }

    const int32_t token =
        rank_order ? draw_in_rank_order(v, sh.uniform, sh) : draw_in_id_order(v, sh.uniform, sh);
    write_token(a, r, x, v.max, token, sh);
}

__global__ void __launch_bounds__(kThreads) sample_kernel(SampleRows a, DeviceError *error) {
    // Other blocks of this very launch may record an error at any moment, so one thread reads
    // the record for the block: threads that read it apart could split around a barrier.
    __shared__ bool skip;
    if (threadIdx.x == 0) skip = failed(error);
    __syncthreads();
    if (skip) return;
    __shared__ BlockShared sh;
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        sample_row(a, r, error, sh);
        __syncthreads();  // the next row rewrites the shared parameters
    }
}

}  // namespace

cudaError_t launch_sample(const SampleRows &rows, DeviceError *error, cudaStream_t stream) {
    // Empty the thread's last-error slot so that what we read back belongs to this launch.
    (void)cudaGetLastError();
    sample_kernel<<<grid_blocks(rows.rows, 1), kThreads, 0, stream>>>(rows, error);
    return cudaGetLastError();
}

}  // namespace pagoda::cuda
