// The wording of SAMPLE's per-row failures (sample_rules.hpp), one text for both backends; its
// own file so that the CUDA backend's host-side error decoding links it without the checks.
#include "check_helpers.hpp"
#include "sample_rules.hpp"

namespace pagoda::plugin {

std::string sample_fault_text(SampleFault fault, int64_t row, float value, int64_t column) {
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "[" + std::to_string(…).
    std::string at = "[";
    at += std::to_string(row);
    at += "] = ";
    at += float_text(value);
    switch (fault) {
        case SampleFault::Temperature:
            return "temperature" + at + " must be finite and >= 0 (0 = greedy)";
        case SampleFault::TopP: return "top_p" + at + " must be in (0, 1]";
        case SampleFault::MinP: return "min_p" + at + " must be in [0, 1]";
        case SampleFault::Uniform: return "uniform" + at + " must be in [0, 1)";
        case SampleFault::NanLogit: {
            std::string text = "logits row ";
            text += std::to_string(row);
            text += " has a NaN at column ";
            text += std::to_string(column);
            return text;
        }
        case SampleFault::AllNegInf: {
            std::string text = "logits row ";
            text += std::to_string(row);
            text += " is -inf everywhere, so no token can be picked";
            return text;
        }
        case SampleFault::None: break;
    }
    std::string text = "row ";
    text += std::to_string(row);
    text += " has an unknown fault ";
    text += std::to_string(int(fault));
    return text;
}

}  // namespace pagoda::plugin
