#include "plan/workload.hpp"

#include <cmath>
#include <string>

#include "common/error.hpp"

namespace pagoda::plan {

namespace {

bool earlier(const Arrival &a, const Arrival &b) noexcept {
    return a.time < b.time || (a.time == b.time && a.model < b.model);
}

}  // namespace

void validate(const ArrivalProcess &process, const char *what) {
    if (!(process.rate >= 0.0) || !std::isfinite(process.rate))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) + ": rate " +
                                                     std::to_string(process.rate) +
                                                     " is not a finite number ≥ 0");
    if (!(process.cv >= 0.0) || !std::isfinite(process.cv))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, std::string(what) + ": cv " +
                                                     std::to_string(process.cv) +
                                                     " is not a finite number ≥ 0");
}

GammaArrivals::GammaArrivals(const ArrivalProcess &process, uint64_t seed)
    : mean_gap_(process.rate > 0.0 ? 1.0 / process.rate : 0.0),
      shape_(process.cv > 0.0 ? 1.0 / (process.cv * process.cv) : 0.0),
      scale_(process.cv > 0.0 && process.rate > 0.0 ? process.cv * process.cv / process.rate : 0.0),
      random_(seed) {
    validate(process, "arrival process");
    if (process.rate == 0.0) clock_ = std::numeric_limits<double>::infinity();
}

double GammaArrivals::next() noexcept {
    if (std::isinf(clock_)) return clock_;
    if (shape_ == 0.0)
        clock_ += mean_gap_;
    else if (shape_ == 1.0)  // Poisson: the exponential needs one log instead of a rejection loop
        clock_ += -std::log(random_.uniform_open()) * scale_;
    else
        clock_ += random_.gamma(shape_) * scale_;
    return clock_;
}

GammaWorkload::GammaWorkload(std::span<const ArrivalProcess> per_model, double duration,
                             uint64_t seed)
    : duration_(duration) {
    if (!(duration >= 0.0) || !std::isfinite(duration))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "workload duration " + std::to_string(duration) +
                                                     " s is not a finite number ≥ 0");
    streams_.reserve(per_model.size());
    for (size_t m = 0; m < per_model.size(); ++m) {
        validate(per_model[m], ("model " + std::to_string(m) + "'s arrival process").c_str());
        // One splitmix step per model: neighbouring models get unrelated xoshiro states.
        uint64_t mix = seed ^ (0x632be59bd9b4e019ULL * (m + 1));
        streams_.emplace_back(per_model[m], splitmix64(mix));
    }
    for (uint32_t m = 0; m < streams_.size(); ++m) {
        const double first = streams_[m].next();
        if (first <= duration_) heap_.push_back({first, m});
    }
    // Heapify (a min-heap under `earlier`).
    for (size_t slot = heap_.size() / 2; slot-- > 0;) sift_down(slot);
}

void GammaWorkload::sift_down(size_t slot) noexcept {
    const size_t n = heap_.size();
    const Arrival moving = heap_[slot];
    for (;;) {
        size_t child = 2 * slot + 1;
        if (child >= n) break;
        if (child + 1 < n && earlier(heap_[child + 1], heap_[child])) ++child;
        if (!earlier(heap_[child], moving)) break;
        heap_[slot] = heap_[child];
        slot = child;
    }
    heap_[slot] = moving;
}

bool GammaWorkload::next(Arrival &out) {
    if (heap_.empty()) return false;
    out = heap_.front();
    const double following = streams_[out.model].next();
    if (following <= duration_) {
        heap_.front() = {following, out.model};
    } else {
        heap_.front() = heap_.back();
        heap_.pop_back();
    }
    if (!heap_.empty()) sift_down(0);
    return true;
}

TraceWorkload::TraceWorkload(std::span<const double> times, std::span<const uint32_t> models,
                             uint32_t model_count)
    : times_(times), models_(models) {
    if (times.size() != models.size())
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "trace: " + std::to_string(times.size()) + " arrival times but " +
                        std::to_string(models.size()) + " model ids");
    double previous = 0.0;
    for (size_t i = 0; i < times.size(); ++i) {
        if (!(times[i] >= previous) || !std::isfinite(times[i]))
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "trace: arrival time [" + std::to_string(i) + "] = " +
                            std::to_string(times[i]) +
                            (i == 0 ? " is negative or not finite"
                                    : " is before the previous one or not finite"));
        if (models[i] >= model_count)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "trace: model id [" + std::to_string(i) + "] = " +
                            std::to_string(models[i]) + " but there are " +
                            std::to_string(model_count) + " models");
        previous = times[i];
    }
}

bool TraceWorkload::next(Arrival &out) {
    if (position_ == times_.size()) return false;
    out = {times_[position_], models_[position_]};
    ++position_;
    return true;
}

Trace record(ArrivalSource &source) {
    Trace trace;
    Arrival arrival;
    while (source.next(arrival)) {
        trace.times.push_back(arrival.time);
        trace.models.push_back(arrival.model);
    }
    return trace;
}

}  // namespace pagoda::plan
