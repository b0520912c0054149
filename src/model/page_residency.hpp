// Which of a model's mapped pages stay resident. Opening a model pages in every tensor; once its
// devices have placed their shards, the pages no device reads from the mapping (another
// process's experts or layers, weights a GPU holds copies of, widened quantized ones) are
// dropped from this process's resident set, so that a rank's memory is its shard's. They stay
// in the page cache and come back on a later read (say, by another engine on the same model).
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.hpp"

namespace pagoda::model {

// Bytes [begin, end) of mapped memory that something reads.
struct ByteRange {
    const unsigned char *begin = nullptr;
    const unsigned char *end = nullptr;
};

// Drops the whole pages of `model`'s tensors that no range of `used` touches (madvise
// MADV_DONTNEED on a read-only private file mapping: nothing is lost). Returns the bytes dropped.
// Tensors outside the model's mappings are left alone.
uint64_t release_unused_pages(const Model &model, std::vector<ByteRange> used);

}  // namespace pagoda::model
