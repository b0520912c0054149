// The messages of errors that kernels found in device memory (device_error.hpp), worded like the
// CPU backend's messages for the same mistakes so a caller reads the same thing on either
// backend, plus where it was found.
#include "device_error.hpp"

#include <cstdio>
#include <cstring>

#include "check_helpers.hpp"
#include "names.hpp"
#include "op_checks.hpp"
#include "pagoda/ops.h"
#include "sample_rules.hpp"

namespace pagoda::cuda {

namespace {

std::string text(int64_t v) { return std::to_string(v); }

// The op-specific part of the message, after "<op>: ".
std::string what_was_wrong(const DeviceError &e) {
    switch (DeviceErrorField(e.field)) {
        case DeviceErrorField::EmbeddingId:
            return "ids[" + text(e.index) + "] = " + text(e.value) + " is outside [0, vocab_size = " +
                   text(e.limit) + ")";
        case DeviceErrorField::KvWriteSlot:
            return "slot_mapping[" + text(e.index) + "] = " + text(e.value) +
                   " is past the cache's " + text(e.limit) + " slots (num_blocks × block_size)";
        case DeviceErrorField::AttentionQueryStart:
            if (e.index == 0) return "query_start[0] = " + text(e.value) + " must be 0";
            return "query_start[" + text(e.index) + "] = " + text(e.value) +
                   " is below query_start[" + text(e.index - 1) + "] = " + text(e.limit) +
                   " (offsets must not decrease)";
        case DeviceErrorField::AttentionContext:
            // The kernel records q_len as the limit of a context that is too short, and the
            // smaller of the capacity and max_context_len for one that is too long.
            if (e.value < e.limit)
                return "context_lens[" + text(e.index) + "] = " + text(e.value) +
                       " is smaller than sequence " + text(e.index) + "'s q_len " + text(e.limit) +
                       " (the context includes the new tokens)";
            return "context_lens[" + text(e.index) + "] = " + text(e.value) + " exceeds " +
                   text(e.limit) + " (max_blocks_per_seq × block_size, or max_context_len if smaller)";
        case DeviceErrorField::AttentionBlock:
            return "block_tables entry " + text(e.index) +
                   " (sequence × max_blocks_per_seq + block index) = " + text(e.value) +
                   " is outside [0, num_blocks " + text(e.limit) + ")";
        case DeviceErrorField::RopeFreqFactor: {
            // The kernel records the factor's f32 bit pattern.
            const uint32_t bits = uint32_t(e.value);
            float factor;
            std::memcpy(&factor, &bits, sizeof factor);
            // KV_WRITE's factors are those of its k_rope.
            const char *field =
                e.op == PAGODA_OP_KV_WRITE ? "k_rope.freq_factors[" : "freq_factors[";
            return field + text(e.index) + "] = " + plugin::float_text(factor) +
                   " must be finite and positive";
        }
        case DeviceErrorField::SampleRow: {
            const uint32_t bits = uint32_t(e.value);
            float value;
            std::memcpy(&value, &bits, sizeof value);
            return plugin::sample_fault_text(plugin::SampleFault(e.limit), e.index, value,
                                             e.value);
        }
        case DeviceErrorField::MoeRouteLogit: return plugin::moe_nan_logit_text(e.index, e.value);
        case DeviceErrorField::MoeExpertId: return plugin::moe_negative_id_text(e.index, e.value);
        case DeviceErrorField::MoeExpert: {
            if (e.value == 0)
                return plugin::moe_null_expert_text(e.index, e.limit);
            char address[32];
            std::snprintf(address, sizeof address, "%#llx",
                          static_cast<unsigned long long>(e.value));
            // The kernels load an f32 matrix 4 bytes at a time, Q4_K and Q5_K blocks 8, the
            // others 2 (block_decode.cuh).
            return "experts[" + text(e.index) + "] = " + address +
                   " is misaligned for its type (f32 needs 4 bytes, Q4_K and Q5_K 8, the others "
                   "2)";
        }
        case DeviceErrorField::None: break;
    }
    return "an argument error of unknown kind " + text(e.field) + " (index " + text(e.index) +
           ", value " + text(e.value) + ", limit " + text(e.limit) + ")";
}

}  // namespace

std::string describe(const DeviceError &e) {
    return std::string(formats::op_name(pagoda_op_t(e.op))) + ": " + what_was_wrong(e) +
           " (found on the device)";
}

}  // namespace pagoda::cuda
