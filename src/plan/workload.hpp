// Request streams for the serving simulator: per-model Gamma arrival processes (AlpaServe §3.2 and
// §6: rate λ and coefficient of variation CV of the inter-arrival times; CV = 1 is Poisson, a larger
// CV is burstier), and recorded traces. A source yields requests in time order, one at a time, so
// that a day of traffic at 1 000 req/s never has to sit in memory.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "plan/workload_random.hpp"

namespace pagoda::plan {

// One request: when it arrives (seconds from the start) and which model it asks for.
struct Arrival {
    double time = 0.0;
    uint32_t model = 0;
};

// Inter-arrival times ~ Gamma(shape 1/CV², scale CV²/λ): mean 1/λ, standard deviation CV/λ.
// CV = 0 gives evenly spaced requests.
struct ArrivalProcess {
    double rate = 0.0;  // requests per second; 0 = the model gets no requests
    double cv = 1.0;
};

// Throws Error(INVALID_ARGUMENT) naming `what` for a negative or non-finite rate or CV.
void validate(const ArrivalProcess &process, const char *what);

// The arrival times of one Gamma process, deterministic for a seed.
class GammaArrivals {
public:
    GammaArrivals(const ArrivalProcess &process, uint64_t seed);

    // The time of the next arrival (the first is one inter-arrival time after 0); +inf when the
    // rate is 0.
    double next() noexcept;

private:
    double mean_gap_;
    double shape_;
    double scale_;
    double clock_ = 0.0;
    RandomStream random_;
};

// A time-ordered stream of requests.
class ArrivalSource {
public:
    virtual ~ArrivalSource() = default;
    // Fills `out` with the next request and returns true, or returns false at the end.
    virtual bool next(Arrival &out) = 0;
};

// Several models' Gamma processes merged in time order, up to `duration` seconds. Model m's
// stream is seeded from (seed, m) alone, so adding a model does not change the others' requests.
// Ties go to the lower model id.
class GammaWorkload final : public ArrivalSource {
public:
    GammaWorkload(std::span<const ArrivalProcess> per_model, double duration, uint64_t seed);
    bool next(Arrival &out) override;

private:
    void sift_down(size_t slot) noexcept;

    double duration_;
    std::vector<GammaArrivals> streams_;
    // A binary min-heap of (next time, model), one entry per model with requests left.
    std::vector<Arrival> heap_;
};

// A recorded trace: arrival times (non-decreasing) and the model of each request.
class TraceWorkload final : public ArrivalSource {
public:
    // Throws Error(INVALID_ARGUMENT) when the arrays differ in length, a time is negative, NaN
    // or smaller than the one before it (naming the index), or a model id is ≥ model_count.
    TraceWorkload(std::span<const double> times, std::span<const uint32_t> models,
                  uint32_t model_count);
    bool next(Arrival &out) override;
    // Starts again from the first request.
    void rewind() noexcept { position_ = 0; }

private:
    std::span<const double> times_;
    std::span<const uint32_t> models_;
    size_t position_ = 0;
};

// A materialised trace, for workloads that are replayed many times (the placement search scores
// every candidate on the same requests).
struct Trace {
    std::vector<double> times;
    std::vector<uint32_t> models;
    size_t size() const noexcept { return times.size(); }
    TraceWorkload source(uint32_t model_count) const {
        return TraceWorkload(times, models, model_count);
    }
};

// Reads `source` to its end.
Trace record(ArrivalSource &source);

}  // namespace pagoda::plan
