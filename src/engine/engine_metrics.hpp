// The engine's serving metrics beside its counters: latency histograms (time to first token,
// inter-token latency, end-to-end, queue time) with vLLM's fixed bucket bounds, finished
// requests by reason, whole-prompt tokens and prefix-cache lookups in tokens. The stepping
// thread records; any thread reads a snapshot. Recording takes one short lock and allocates
// nothing, and happens once per request per step, never per token.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>

#include "pagoda/engine.h"

namespace pagoda::engine {

using MetricsClock = std::chrono::steady_clock;

// Seconds between two instants of the steady clock.
inline double seconds_between(MetricsClock::time_point from, MetricsClock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// vLLM's bounds (vllm/v1/metrics/loggers.py), so dashboards built for vLLM read ours alike.
inline constexpr std::array<double, 22> kTimeToFirstTokenBounds{
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
inline constexpr std::array<double, 19> kInterTokenLatencyBounds{
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
inline constexpr std::array<double, 21> kRequestLatencyBounds{
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// Counts per bucket (not cumulative, so an observation touches one slot); the last slot holds
// what exceeds every bound.
class LatencyHistogram {
public:
    explicit LatencyHistogram(std::span<const double> bounds);
    void observe(double seconds) noexcept;
    // Prometheus' form: cumulative counts per bound, the +Inf bucket as `count`.
    void fill(pagoda_histogram_t &out) const noexcept;

private:
    std::span<const double> bounds_;
    std::array<uint64_t, PAGODA_HISTOGRAM_MAX_BOUNDS + 1> counts_{};
    double sum_ = 0.0;
};

class EngineMetrics {
public:
    EngineMetrics();

    // A request's first tokens: its time to first token, and its whole prompt counted.
    void first_token(double seconds, int64_t prompt_tokens);
    // A later step that gave a request tokens, `seconds` after its previous one.
    void token_gap(double seconds);
    // The first step that scheduled a request, `seconds` after its submission.
    void scheduled(double seconds);
    void finished(pagoda_finish_reason_t reason, double e2e_seconds);
    void prefix_lookup(int64_t queried_tokens, int64_t hit_tokens);

    // Fills the histograms and the counts kept here; the engine fills the rest.
    void fill(pagoda_engine_metrics_t &out) const;

private:
    mutable std::mutex mutex_;  // the stepping thread writes, any thread reads
    LatencyHistogram ttft_, itl_, e2e_, queue_;
    int64_t prompt_tokens_ = 0;
    int64_t finished_stop_ = 0, finished_length_ = 0, finished_aborted_ = 0, finished_error_ = 0;
    int64_t prefix_queries_ = 0, prefix_hits_ = 0;
};

}  // namespace pagoda::engine
