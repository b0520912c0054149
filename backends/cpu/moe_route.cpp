// PAGODA_OP_MOE_ROUTE (ABI 1.8): per token, the top_k experts of largest logit and their
// softmax weights. A token's row holds at most 1024 logits (ops.h), so each row is a plain loop
// (a partial sort of its expert ids) on one thread, the rows split over the pool. Weights are
// computed in double and rounded once to f32.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>

#include "check_helpers.hpp"
#include "kernels.hpp"
#include "op_checks.hpp"

namespace pagoda::cpu {

namespace {

constexpr const char *kOp = "moe_route";

// The softmax numerator of logit `x` in a row whose largest logit is `max`: exp(x − max), and
// 1 for every logit equal to the maximum, which is the same for a finite one and the limit
// where exp(x − max) is NaN: a +inf maximum takes all the weight (shared by equal ones, as
// SAMPLE weighs +inf), and a row of nothing but −inf weighs its experts alike.
double numerator(float x, float max) {
    return x == max ? 1.0 : std::exp(double(x) - double(max));
}

void route_row(const pagoda_op_moe_route_t &a, int64_t t) {
    const float *logits = a.logits + t * a.n_experts;
    const auto n = size_t(a.n_experts), k = size_t(a.top_k);
    const float max = *std::max_element(logits, logits + n);
    double total = 0.0;
    for (size_t j = 0; j < n; ++j) total += numerator(logits[j], max);

    // Larger logit first, equal logits by lower id (ops.h); the row holds no NaN, so this is a
    // strict weak order.
    std::array<int32_t, plugin::kMoeMaxExperts> order;
    std::iota(order.begin(), order.begin() + n, 0);
    std::partial_sort(order.begin(), order.begin() + k, order.begin() + n,
                      [logits](int32_t i, int32_t j) {
                          return logits[i] > logits[j] || (logits[i] == logits[j] && i < j);
                      });
    double picked = 0.0;
    for (size_t s = 0; s < k; ++s) picked += numerator(logits[order[s]], max);
    // SOFTMAX_TOPK_NORM divides by the picked ones' sum: a softmax over the picked logits.
    const double denominator = a.routing == PAGODA_MOE_SOFTMAX_TOPK_NORM ? picked : total;
    for (size_t s = 0; s < k; ++s) {
        a.expert_ids[t * a.top_k + int64_t(s)] = order[s];
        a.weights[t * a.top_k + int64_t(s)] = float(numerator(logits[order[s]], max) / denominator);
    }
}

}  // namespace

pagoda_status_t run_moe_route(CpuBackend &cpu, const pagoda_op_moe_route_t &a) {
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "logits", a.logits));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "expert_ids", a.expert_ids));
    PAGODA_PLUGIN_CHECK(plugin::check_pointer(cpu, kOp, "weights", a.weights));
    // Every logit is looked at before anything is written, so a failed launch changes nothing.
    // A router's output is small (tokens × at most 1024), so one thread reads it.
    for (int64_t i = 0; i < a.n_tokens * a.n_experts; ++i)
        if (std::isnan(a.logits[i]))
            return cpu.fail(PAGODA_ERR_INVALID_ARGUMENT,
                            std::string(kOp) + ": " +
                                plugin::moe_nan_logit_text(i / a.n_experts, i % a.n_experts));
    cpu.pool().parallel_for(a.n_tokens, rows_per_chunk(a.n_experts, 4096),
                            [&](int64_t begin, int64_t end) {
                                for (int64_t t = begin; t < end; ++t) route_row(a, t);
                            });
    return PAGODA_OK;
}

}  // namespace pagoda::cpu
