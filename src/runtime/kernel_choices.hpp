// Kernel choice by measurement (Collage: time the candidate kernels of an op on its real shapes,
// then keep the fastest). A backend names its variants of an op (ops.h's `variant`); this table
// says, per kind of device and product shape, which one to pin, and remembers the times it was
// chosen on. The engine fills it by measuring (exec/kernel_tuner.hpp) and keeps it in a JSON
// file, so that a machine is tuned once and later engines, and tests given a file, choose the
// same kernels every time. A shape the table lacks runs on the backend's own rules.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pagoda/ops.h"
#include "runtime/device.hpp"

namespace pagoda::runtime {

// One product a choice applies to. Rows go by bucket: a choice holds for every m in
// (m_bucket / 2, m_bucket] and is measured at m_bucket.
struct MatmulShape {
    std::string device;  // device_kind(): which devices are alike
    pagoda_dtype_t w_dtype = PAGODA_DTYPE_F32;
    pagoda_dtype_t x_dtype = PAGODA_DTYPE_F32;
    pagoda_dtype_t y_dtype = PAGODA_DTYPE_F32;
    uint32_t flags = 0;  // the descriptor's PAGODA_MATMUL_* leave (it changes what may run)
    int64_t n = 0, k = 0;
    int64_t m_bucket = 1;

    auto operator<=>(const MatmulShape &) const = default;
};

// What was chosen, and the measurement it came from (seconds per call).
struct KernelChoice {
    // kRules, or a name of the backend's variants.
    std::string variant;
    double seconds = 0.0;        // the chosen one's
    double rules_seconds = 0.0;  // the backend's own rules' (variant 0)
    std::vector<std::pair<std::string, double>> measured;  // every candidate timed, in order
};

class KernelChoices {
public:
    // The choice that leaves the backend's own rules in place.
    static constexpr const char *kRules = "rules";

    // The smallest power of two ≥ m (m ≥ 1).
    static int64_t bucket(int64_t m);
    // Devices whose timings carry over to each other: the backend, the device's model and
    // architecture, and its compute units (a CPU device's threads).
    static std::string device_kind(const Device &device);
    static MatmulShape shape_of(const std::string &device_kind, const pagoda_op_matmul_t &a);

    const KernelChoice *find(const MatmulShape &shape) const;
    void set(const MatmulShape &shape, KernelChoice choice) { entries_[shape] = std::move(choice); }
    const std::map<MatmulShape, KernelChoice> &entries() const noexcept { return entries_; }

    // Reads a file written by save(). Throws NOT_FOUND when it does not exist and FORMAT
    // naming the file, the entry and the fault when it is not such a file.
    static KernelChoices load(const std::string &path);
    // Parses the text of such a file; `source` names it in messages.
    static KernelChoices parse(const std::string &text, const std::string &source);
    std::string to_json() const;
    // Writes the table to `path` whole or not at all (a temporary file renamed over it).
    void save(const std::string &path) const;

private:
    std::map<MatmulShape, KernelChoice> entries_;
};

}  // namespace pagoda::runtime
