#include "engine/engine_metrics.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace pagoda::engine {

LatencyHistogram::LatencyHistogram(std::span<const double> bounds) : bounds_(bounds) {
    if (bounds.size() > PAGODA_HISTOGRAM_MAX_BOUNDS || !std::is_sorted(bounds.begin(), bounds.end()))
        throw Error(PAGODA_ERR_INTERNAL, "histogram bounds must be ascending and at most PAGODA_HISTOGRAM_MAX_BOUNDS");
}

void LatencyHistogram::observe(double seconds) noexcept {
    // Prometheus' `le`: a value equal to a bound belongs to that bound's bucket.
    const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), seconds) - bounds_.begin());
    ++counts_[i];
    sum_ += seconds;
}

void LatencyHistogram::fill(pagoda_histogram_t &out) const noexcept {
    out = pagoda_histogram_t{};
    out.n_bounds = static_cast<uint32_t>(bounds_.size());
    uint64_t running = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        running += counts_[i];
        out.upper_bounds[i] = bounds_[i];
        out.cumulative_counts[i] = running;
    }
    out.count = running + counts_[bounds_.size()];
    out.sum = sum_;
}

EngineMetrics::EngineMetrics()
    : ttft_(kTimeToFirstTokenBounds), itl_(kInterTokenLatencyBounds), e2e_(kRequestLatencyBounds),
      queue_(kRequestLatencyBounds) {}

void EngineMetrics::first_token(double seconds, int64_t prompt_tokens) {
    std::lock_guard lock(mutex_);
    ttft_.observe(seconds);
    prompt_tokens_ += prompt_tokens;
}

void EngineMetrics::token_gap(double seconds) {
    std::lock_guard lock(mutex_);
    itl_.observe(seconds);
}

void EngineMetrics::scheduled(double seconds) {
    std::lock_guard lock(mutex_);
    queue_.observe(seconds);
}

void EngineMetrics::finished(pagoda_finish_reason_t reason, double e2e_seconds) {
    std::lock_guard lock(mutex_);
    e2e_.observe(e2e_seconds);
    switch (reason) {
    case PAGODA_FINISH_STOP_TOKEN:
    case PAGODA_FINISH_STOP_STRING: ++finished_stop_; break;
    case PAGODA_FINISH_LENGTH: ++finished_length_; break;
    case PAGODA_FINISH_ABORTED: ++finished_aborted_; break;
    default: ++finished_error_; break;  // ERROR, and NONE, which would be a bug: never lost
    }
}

void EngineMetrics::prefix_lookup(int64_t queried_tokens, int64_t hit_tokens) {
    std::lock_guard lock(mutex_);
    prefix_queries_ += queried_tokens;
    prefix_hits_ += hit_tokens;
}

void EngineMetrics::fill(pagoda_engine_metrics_t &out) const {
    std::lock_guard lock(mutex_);
    ttft_.fill(out.time_to_first_token);
    itl_.fill(out.inter_token_latency);
    e2e_.fill(out.e2e_request_latency);
    queue_.fill(out.request_queue_time);
    out.prompt_tokens = prompt_tokens_;
    out.requests_finished_stop = finished_stop_;
    out.requests_finished_length = finished_length_;
    out.requests_finished_aborted = finished_aborted_;
    out.requests_finished_error = finished_error_;
    out.prefix_cache_queries = prefix_queries_;
    out.prefix_cache_hits = prefix_hits_;
}

}  // namespace pagoda::engine
