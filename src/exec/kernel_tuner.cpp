#include "exec/kernel_tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "common/error.hpp"
#include "formats/dtypes.hpp"
#include "model/quantize_blocks.hpp"
#include "pagoda/dtype.h"

namespace pagoda::exec {

namespace {

// Each timed batch of calls lasts about this long, so the clock's resolution and a launch's
// fixed cost do not decide between fast kernels.
constexpr double kBatchSeconds = 0.01;
constexpr int64_t kMaxCallsPerBatch = 200;
// Rounds over all candidates, each starting with the next one (so that none always follows
// the same neighbour's cache footprint); each candidate's time is its best round.
constexpr int kRounds = 5;
// A candidate slower than this many times the fastest in its warm-up is not timed further: it
// cannot win, and a GEMV at a prefill's rows would cost seconds.
constexpr double kPruneFactor = 3.0;
// A variant replaces the rules only when it is faster by more than this fraction; below it, the
// difference is within what repeated measurements of one kernel spread over here.
constexpr double kNoiseMargin = 0.03;

using Clock = std::chrono::steady_clock;

// `count` values uniform in [-1, 1] as `dtype` (F32, BF16 or F16) bytes.
std::vector<unsigned char> random_values(pagoda_dtype_t dtype, size_t count) {
    std::mt19937 rng(20261127u);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    const size_t size = formats::dtype_size(dtype);
    std::vector<unsigned char> bytes(count * size);
    for (size_t i = 0; i < count; ++i) {
        const float v = uniform(rng);
        if (dtype == PAGODA_DTYPE_F32) {
            std::memcpy(&bytes[i * 4], &v, 4);
            continue;
        }
        uint16_t h = 0;
        if (dtype == PAGODA_DTYPE_F16) {
            h = model::float_to_half(v);
        } else {
            uint32_t bits = 0;
            std::memcpy(&bits, &v, 4);
            h = uint16_t(bits >> 16);  // truncation is as good as rounding for random data
        }
        std::memcpy(&bytes[i * 2], &h, 2);
    }
    return bytes;
}

struct Candidate {
    int32_t variant;  // 0: the rules
    std::string name;
    double seconds = std::numeric_limits<double>::infinity();
    bool pruned = false;  // timed by its warm-up only
};

// Seconds per call of `calls` launches of `a`, synchronized at the end.
double time_calls(const runtime::Stream &stream, const pagoda_op_matmul_t &a, int64_t calls) {
    const Clock::time_point start = Clock::now();
    for (int64_t i = 0; i < calls; ++i) stream.launch(PAGODA_OP_MATMUL, &a);
    stream.synchronize();
    return std::chrono::duration<double>(Clock::now() - start).count() / double(calls);
}

}  // namespace

runtime::KernelChoice measure_matmul(const runtime::Stream &stream, pagoda_op_matmul_t a,
                                     const std::vector<std::string> &variants) {
    const runtime::Device &device = stream.device();
    const pagoda_backend_iface_t &f = device.iface();
    stream.synchronize();

    std::vector<Candidate> candidates{{0, runtime::KernelChoices::kRules}};
    for (size_t i = 0; i < variants.size(); ++i) {
        a.variant = int32_t(i + 1);
        if (f.kernels->supports(f.self, device.index(), PAGODA_OP_MATMUL, &a) == PAGODA_OK)
            candidates.push_back({a.variant, variants[i]});
    }

    const std::vector<unsigned char> x_host = random_values(a.x_dtype, size_t(a.m * a.k));
    const runtime::DeviceBuffer x(device, x_host.size(), "kernel timing activations");
    const runtime::DeviceBuffer y(device, size_t(a.m * a.n) * formats::dtype_size(a.y_dtype),
                                  "kernel timing outputs");
    stream.copy(x.get(), x_host.data(), x_host.size(), PAGODA_COPY_HOST_TO_DEVICE);
    a.x = x.get();
    a.ldx = 0;
    a.y = y.get();
    a.ldy = 0;

    // Warm-up: the second of two calls (the first pays for first touches and setup).
    double fastest = std::numeric_limits<double>::infinity();
    for (Candidate &c : candidates) {
        a.variant = c.variant;
        time_calls(stream, a, 1);
        c.seconds = time_calls(stream, a, 1);
        fastest = std::min(fastest, c.seconds);
    }
    for (Candidate &c : candidates) {
        c.pruned = c.variant != 0 && c.seconds > kPruneFactor * fastest;
        if (!c.pruned) c.seconds = std::numeric_limits<double>::infinity();
    }
    const auto calls =
        int64_t(std::clamp(std::ceil(kBatchSeconds / std::max(fastest, 1e-9)), 1.0,
                           double(kMaxCallsPerBatch)));
    for (size_t round = 0; round < size_t(kRounds); ++round)
        for (size_t i = 0; i < candidates.size(); ++i) {
            Candidate &c = candidates[(round + i) % candidates.size()];
            if (c.pruned) continue;
            a.variant = c.variant;
            c.seconds = std::min(c.seconds, time_calls(stream, a, calls));
        }

    runtime::KernelChoice choice;
    choice.variant = runtime::KernelChoices::kRules;
    choice.rules_seconds = candidates.front().seconds;
    choice.seconds = choice.rules_seconds;
    for (const Candidate &c : candidates) {
        if (c.variant == 0) continue;
        choice.measured.emplace_back(c.name, c.seconds);
        if (c.seconds < choice.seconds && c.seconds < choice.rules_seconds * (1.0 - kNoiseMargin)) {
            choice.variant = c.name;
            choice.seconds = c.seconds;
        }
    }
    return choice;
}

}  // namespace pagoda::exec
