// One engine step's intake as bytes: what rank 0 broadcasts to the other ranks of a mesh that
// spans processes, so that every rank admits and aborts the same requests in the same order.
// The transport is someone else's; this is only the encoding, exact (floats bit for bit) and the
// same on every host (little-endian, fixed widths).
//
// Layout, version 3 (all integers little-endian; a count or length is a u32):
//   "PGIW" magic, u32 version, u64 step, u8 stop (0 or 1),
//   u32 n, then n requests: u64 id, u32 len + len i32 prompt ids, the config in
//     RequestConfig's declaration order (SamplingParams inline in its own order; a vector is a
//     u32 count then its items; a stop string is a u32 byte length then its bytes), then
//     LogitControls in its order (logit_bias: u32 count of (i32 token, f32 bias); min_tokens;
//     bad_words: u32 count of i32 vectors; allowed_token_ids); the processor never travels;
//     the constraint as i32 kind and u32 length + its text's bytes (each rank compiles it),
//   u32 n, then n u64 aborted ids. Nothing may follow.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/request.hpp"

namespace pagoda::engine {

inline constexpr uint32_t kIntakeWireVersion = 3;

// One request as submitted: its engine id, its prompt's token ids (already tokenized on rank 0),
// and its options.
struct SubmittedRequest {
    uint64_t id = 0;
    std::vector<int32_t> prompt;
    RequestConfig config;
};

// What reached the engine between two steps, in the order it arrived.
struct StepIntake {
    uint64_t step = 0;    // the step this intake opens (a check that ranks are in step)
    bool stop = false;    // rank 0's engine is shutting down: followers leave
    std::vector<SubmittedRequest> submitted;
    std::vector<uint64_t> aborted;  // request ids aborted by the host
};

// Throws Error(PAGODA_ERR_INVALID_ARGUMENT) if a vector or string is too long for a u32 length.
std::vector<unsigned char> encode_intake(const StepIntake &intake);

// The intake `bytes` hold, exactly as encoded. Throws Error(PAGODA_ERR_FORMAT) naming what is
// wrong: too few bytes, a bad magic or version, a count or length that the bytes left cannot
// hold, a stop flag other than 0 or 1, bytes after the end. It never reads past `bytes` and
// reserves only what the bytes left could fill, so a forged count cannot make it allocate much.
StepIntake decode_intake(std::span<const unsigned char> bytes);

}  // namespace pagoda::engine
