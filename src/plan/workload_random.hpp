// The random numbers behind synthetic workloads. Our own generators rather than <random>'s
// distributions: the standard fixes the engines' sequences but not how std::gamma_distribution
// or std::normal_distribution consume them, so a seed would give different traces with libstdc++
// and libc++. These give the same trace everywhere (up to the last bit of libm's log and sqrt).
#pragma once

#include <cmath>
#include <cstdint>

namespace pagoda::plan {

// SplitMix64 (Steele, Lea, Flood 2014): spreads one seed into the 256 bits of state that
// xoshiro needs, and derives independent seeds for the models of a workload.
inline uint64_t splitmix64(uint64_t &state) noexcept {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// xoshiro256** (Blackman, Vigna 2018) with the samplers a workload needs.
class RandomStream {
public:
    explicit RandomStream(uint64_t seed) noexcept {
        for (uint64_t &word : state_) word = splitmix64(seed);
    }

    uint64_t next_u64() noexcept {
        const uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in the open interval (0, 1): the top 53 bits, shifted by half a step, so that
    // log(u) is always finite.
    double uniform_open() noexcept {
        return (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1.0p-53;
    }

    // Standard normal by Marsaglia's polar method (needs only log and sqrt). The second value of
    // each pair is kept for the next call.
    double normal() noexcept {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        double u, v, s;
        do {
            u = 2.0 * uniform_open() - 1.0;
            v = 2.0 * uniform_open() - 1.0;
            s = u * u + v * v;
        } while (s >= 1.0 || s == 0.0);
        const double factor = std::sqrt(-2.0 * std::log(s) / s);
        spare_ = v * factor;
        has_spare_ = true;
        return u * factor;
    }

    // Gamma(shape, 1) by Marsaglia and Tsang (2000), "A simple method for generating gamma
    // variables"; for shape < 1, Gamma(shape + 1)·U^(1/shape) (their §6). shape must be > 0.
    double gamma(double shape) noexcept {
        if (shape < 1.0) {
            const double boosted = gamma(shape + 1.0);
            return boosted * std::pow(uniform_open(), 1.0 / shape);
        }
        const double d = shape - 1.0 / 3.0;
        const double c = 1.0 / std::sqrt(9.0 * d);
        for (;;) {
            double x, v;
            do {
                x = normal();
                v = 1.0 + c * x;
            } while (v <= 0.0);
            v = v * v * v;
            const double u = uniform_open();
            // The squeeze accepts ~98% of draws without a log.
            if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return d * v;
            if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
        }
    }

private:
    static uint64_t rotl(uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

    uint64_t state_[4];
    double spare_ = 0.0;
    bool has_spare_ = false;
};

}  // namespace pagoda::plan
