#include "kv/block_hash.hpp"

namespace pagoda::kv {

namespace {

// splitmix64's finaliser: every input bit reaches every output bit.
uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

}  // namespace

uint64_t default_block_hash(uint64_t parent_key, std::span<const int32_t> tokens, uint64_t extra_key) {
    uint64_t h = mix(parent_key ^ 0x9e3779b97f4a7c15ull);
    h = mix(h ^ extra_key);
    for (int32_t t : tokens) h = mix(h ^ static_cast<uint32_t>(t));
    return mix(h ^ static_cast<uint64_t>(tokens.size()));
}

}  // namespace pagoda::kv
