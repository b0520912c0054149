// PAGODA_OP_SAMPLE on the CPU: the reference every backend's sampler is compared with, so it is
// plain and exact rather than fast. Per row, in double precision, with std::nth_element and
// std::sort over the one canonical ranking (higher logit first, ties to the lower id): the same
// rules as the engine's host sampler (src/sample/sampler.cpp), which keeps f32 weights. bf16/f16
// logits are widened a row at a time (exactly), so every type follows the same path.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>
#include <vector>

#include "check_helpers.hpp"
#include "kernels.hpp"
#include "sample_rules.hpp"
#include "scratch.hpp"
#include "widen.hpp"

namespace pagoda::cpu {

namespace {

constexpr const char *kOp = "sample";
using plugin::SampleFault;

struct Candidate {
    float logit;
    int32_t token;
    double weight;
};

bool ranks_before(const Candidate &a, const Candidate &b) {
    return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

struct RowParams {
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
    float uniform;
};

// Row-sized buffers of one thread, kept from launch to launch.
struct RowScratch {
    std::vector<Candidate> candidates;
    std::vector<Candidate> ranked;  // the candidates in rank order, for top-p without top-k
};

RowScratch &row_scratch() {
    thread_local RowScratch scratch;
    return scratch;
}

// A NaN (at `*column`, the first one) or a row of nothing but -inf; None otherwise.
SampleFault logit_fault(const float *x, int64_t cols, int64_t *column) {
    bool any_pickable = false;
    for (int64_t i = 0; i < cols; ++i) {
        if (std::isnan(x[i])) {
            *column = i;
            return SampleFault::NanLogit;
        }
        any_pickable |= x[i] > -INFINITY;
    }
    return any_pickable ? SampleFault::None : SampleFault::AllNegInf;
}

// The lowest id among the largest logits (the row holds no NaN).
int32_t greedy(const float *x, int64_t cols) {
    int64_t best = 0;
    for (int64_t i = 1; i < cols; ++i)
        if (x[i] > x[best]) best = i;
    return int32_t(best);
}

// ops.h's w = exp((logit − max) / T), taken as exactly 1 at the maximum so that a +inf maximum
// weighs 1 (and every finite logit beside it 0) instead of exp(NaN).
double weight_of(float logit, float max, double temperature) {
    if (logit == max) return 1.0;
    return std::exp((double(logit) - double(max)) / temperature);
}

// One row with T > 0, whose logits hold no NaN and at least one value above -inf.
int32_t draw_row(const float *x, int64_t cols, const RowParams &p, RowScratch &s) {
    std::vector<Candidate> &cands = s.candidates;
    cands.clear();
    for (int64_t i = 0; i < cols; ++i)
        if (x[i] > -INFINITY) cands.push_back({x[i], int32_t(i), 0.0});

    // Top-k: the k best in rank order, then walked in rank order. -inf logits rank last, so
    // leaving them out first and keeping min(k, rest) is the same set.
    const bool top_k = p.top_k > 0 && int64_t(p.top_k) < cols;
    if (top_k) {
        if (size_t(p.top_k) < cands.size()) {
            std::nth_element(cands.begin(), cands.begin() + (p.top_k - 1), cands.end(),
                             ranks_before);
            cands.resize(size_t(p.top_k));
        }
        std::sort(cands.begin(), cands.end(), ranks_before);
    }

    float max = -INFINITY;
    for (const Candidate &c : cands) max = std::max(max, c.logit);
    double total = 0.0;
    for (Candidate &c : cands) {
        c.weight = weight_of(c.logit, max, double(p.temperature));
        total += c.weight;
    }

    // Top-p: the shortest rank-order prefix whose weight reaches top_p · Σw (at least one).
    if (p.top_p < 1.0f) {
        const double target = double(p.top_p) * total;
        const std::vector<Candidate> *in_rank_order = &cands;
        if (!top_k) {
            s.ranked = cands;
            std::sort(s.ranked.begin(), s.ranked.end(), ranks_before);
            in_rank_order = &s.ranked;
        }
        double mass = 0.0;
        size_t keep = 0;
        while (keep < in_rank_order->size() && mass < target)
            mass += (*in_rank_order)[keep++].weight;
        const Candidate last = (*in_rank_order)[std::max<size_t>(keep, 1) - 1];
        std::erase_if(cands, [&](const Candidate &c) { return ranks_before(last, c); });
    }

    // Min-p: w is p / p_max, so "p < min_p · p_max" is "w < min_p"; w = 0 can never be drawn.
    const double min_weight = double(p.min_p);
    std::erase_if(cands,
                  [&](const Candidate &c) { return c.weight < min_weight || c.weight <= 0.0; });

    // Inverse CDF over the survivors in their order (rank order after top-k, else id order).
    double survivors = 0.0;
    for (const Candidate &c : cands) survivors += c.weight;
    const double target = double(p.uniform) * survivors;
    double mass = 0.0;
    for (const Candidate &c : cands) {
        mass += c.weight;
        if (target < mass) return c.token;
    }
    return cands.back().token;  // rounding put the target at the very top
}

// log_softmax(x)[token] at temperature 1, in double; NaN when the row holds +inf.
float raw_logprob(const float *x, int64_t cols, int32_t token) {
    float max = -INFINITY;
    for (int64_t i = 0; i < cols; ++i) max = std::max(max, x[i]);
    if (max == INFINITY) return NAN;
    double sum = 0.0;
    for (int64_t i = 0; i < cols; ++i) sum += std::exp(double(x[i]) - double(max));
    return float(double(x[token]) - double(max) - std::log(sum));
}

// Row `r` of the logits as f32: in place for f32, else widened into this thread's scratch
// (valid until its next call on this thread). Throws bad_alloc.
const float *logit_row(const CpuBackend &cpu, const pagoda_op_sample_t &a, int64_t ldx,
                       int64_t r) {
    const pagoda_dtype_t dtype = plugin::act_dtype_of(a.logits_dtype);
    if (dtype == PAGODA_DTYPE_F32) return static_cast<const float *>(a.logits) + r * ldx;
    float *row = thread_scratch<struct SampleRowScratch>(size_t(a.cols));
    widen_to_f32(cpu.features(), static_cast<const uint16_t *>(a.logits) + r * ldx, dtype, a.cols,
                 row);
    return row;
}

RowParams row_params(const pagoda_op_sample_t &a, int64_t r) {
    return {a.temperature[r], a.top_k[r], a.top_p[r], a.min_p[r], a.uniform[r]};
}

// The value a parameter fault is about, for its message.
float faulty_value(SampleFault fault, const RowParams &p) {
    switch (fault) {
        case SampleFault::Temperature: return p.temperature;
        case SampleFault::TopP: return p.top_p;
        case SampleFault::MinP: return p.min_p;
        case SampleFault::Uniform: return p.uniform;
        default: return 0.0f;
    }
}

}  // namespace

pagoda_status_t run_sample(CpuBackend &cpu, const pagoda_op_sample_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_sample_pointers(cpu, a));
    // Every row is checked before any out[r] is written, so a failed launch changes nothing.
    // Parameters first, on the calling thread (messages are recorded per thread).
    for (int64_t r = 0; r < a.rows; ++r) {
        const RowParams p = row_params(a, r);
        const SampleFault fault =
            plugin::sample_param_fault(p.temperature, p.top_p, p.min_p, p.uniform);
        if (fault != SampleFault::None)
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            std::string(kOp) + ": " +
                                plugin::sample_fault_text(fault, r, faulty_value(fault, p), 0));
    }
    const int64_t ldx = plugin::packed_or(a.ldx, a.cols);
    const int64_t grain = rows_per_chunk(a.cols);
    const std::string no_memory = std::string(kOp) + ": no memory for a row of " +
                                  std::to_string(a.cols) + " candidates";

    // Then the logits, in parallel; the lowest bad row is the one reported. The pool's workers
    // must not throw: a row that cannot get its scratch is reported after the loop.
    std::atomic<int64_t> first_bad_row{a.rows};
    std::atomic<bool> out_of_memory{false};
    cpu.pool().parallel_for(a.rows, grain, [&](int64_t begin, int64_t end) {
        try {
            for (int64_t r = begin; r < end; ++r) {
                int64_t column = 0;
                if (logit_fault(logit_row(cpu, a, ldx, r), a.cols, &column) == SampleFault::None)
                    continue;
                int64_t seen = first_bad_row.load();
                while (r < seen && !first_bad_row.compare_exchange_weak(seen, r)) {
                }
                return;  // later rows of this chunk cannot be lower
            }
        } catch (const std::bad_alloc &) {
            out_of_memory = true;
        }
    });
    if (out_of_memory) return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, no_memory);
    if (const int64_t r = first_bad_row.load(); r < a.rows) {
        int64_t column = 0;
        const SampleFault fault = logit_fault(logit_row(cpu, a, ldx, r), a.cols, &column);
        return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                        std::string(kOp) + ": " +
                            plugin::sample_fault_text(fault, r, 0.0f, column));
    }

    cpu.pool().parallel_for(a.rows, grain, [&](int64_t begin, int64_t end) {
        try {
            for (int64_t r = begin; r < end; ++r) {
                const float *x = logit_row(cpu, a, ldx, r);
                const RowParams p = row_params(a, r);
                a.out[r] = p.temperature == 0.0f ? greedy(x, a.cols)
                                                 : draw_row(x, a.cols, p, row_scratch());
                if (a.logprobs != nullptr) a.logprobs[r] = raw_logprob(x, a.cols, a.out[r]);
            }
        } catch (const std::bad_alloc &) {
            out_of_memory = true;
        }
    });
    if (out_of_memory) return cpu.fail(PAGODA_ERR_OUT_OF_MEMORY, no_memory);
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
