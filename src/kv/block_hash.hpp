// The key of a full KV block in the prefix cache: a hash of its parent block's key, its token
// ids and extra keys (an adapter id, say), so equal keys mean equal prefixes up to and including
// the block (vLLM's automatic prefix caching). Collisions are possible; the prefix cache
// verifies a hit against what it stored, so a collision costs a miss, never wrong keys/values.
#pragma once

#include <cstdint>
#include <span>

namespace pagoda::kv {

// Tests inject a weak function to force collisions.
using BlockHashFn = uint64_t (*)(uint64_t parent_key, std::span<const int32_t> tokens,
                                 uint64_t extra_key);

uint64_t default_block_hash(uint64_t parent_key, std::span<const int32_t> tokens, uint64_t extra_key);

}  // namespace pagoda::kv
