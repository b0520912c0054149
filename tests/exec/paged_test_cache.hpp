// Test scaffolding around LlamaForward: the CPU backend and a stream, a paged KV cache whose
// physical blocks are handed out in a shuffled order (so block tables are not the identity), and
// batches built from "these tokens for that sequence" pieces.
#pragma once

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "exec/forward_batch.hpp"
#include "kv/kv_geometry.hpp"
#include "model/model.hpp"
#include "pagoda/backend.h"
#include "runtime/device.hpp"
#include "model_test_support.hpp"

namespace pagoda::test {

// The CPU backend built beside the tests, loaded once per process.
inline const pagoda_backend *cpu_backend() {
    static pagoda_backend_t *backend = nullptr;
    if (backend == nullptr) {
        const pagoda_status_t s = pagoda_backend_load(
            PAGODA_TEST_BACKEND_DIR "/libpagoda-backend-cpu.so", "threads=2", &backend);
        if (s != PAGODA_OK)
            fail_msg("loading the CPU backend failed: %s: %s", pagoda_status_string(s),
                     pagoda_last_error_message());
    }
    return backend;
}

class PagedTestCache {
public:
    struct Sequence {
        std::vector<int32_t> blocks;  // physical block of each logical block
        int32_t length = 0;           // tokens cached
    };

    PagedTestCache(const runtime::Device &device, const model::ModelConfig &c, int32_t block_size,
                   int64_t num_blocks, unsigned seed, pagoda_dtype_t dtype = PAGODA_DTYPE_F32) {
        geometry.dtype = dtype;
        geometry.block_size = block_size;
        geometry.num_blocks = num_blocks;
        geometry.n_layers = c.n_layers;
        geometry.n_kv_heads = c.n_kv_heads;
        geometry.head_dim = c.head_dim;
        for (int64_t l = 0; l < c.n_layers; ++l) {
            buffers_.emplace_back(device, geometry.pool_bytes(), "test K pool");
            buffers_.emplace_back(device, geometry.pool_bytes(), "test V pool");
            pools.push_back({buffers_[buffers_.size() - 2].get(), buffers_.back().get()});
        }
        for (int32_t b = 0; b < int32_t(num_blocks); ++b) free_.push_back(b);
        std::mt19937 rng(seed);
        std::shuffle(free_.begin(), free_.end(), rng);
    }

    // Places `n` new tokens after what `s` holds; returns their slots.
    std::vector<int64_t> append(Sequence &s, int32_t n) {
        std::vector<int64_t> slots;
        for (int32_t i = 0; i < n; ++i) {
            const int32_t pos = s.length + i;
            if (pos / geometry.block_size >= int32_t(s.blocks.size())) {
                if (free_.empty()) fail_msg("test KV cache: out of blocks");
                s.blocks.push_back(free_.back());
                free_.pop_back();
            }
            slots.push_back(int64_t(s.blocks[size_t(pos / geometry.block_size)]) *
                                geometry.block_size +
                            pos % geometry.block_size);
        }
        return slots;
    }

    kv::KvGeometry geometry;
    std::vector<kv::LayerPools> pools;

private:
    std::vector<runtime::DeviceBuffer> buffers_;
    std::vector<int32_t> free_;
};

// `tokens` for `seq`; logits for every one of them, or only the last.
struct BatchPiece {
    PagedTestCache::Sequence *seq;
    std::vector<int32_t> tokens;
    bool all_logits = false;
};

// Builds the batch of `pieces` in order and advances each sequence's length.
inline exec::ForwardBatch make_batch(PagedTestCache &cache, const std::vector<BatchPiece> &pieces) {
    exec::ForwardBatch b;
    b.query_start.push_back(0);
    for (const BatchPiece &p : pieces) {
        const int32_t n = int32_t(p.tokens.size());
        const std::vector<int64_t> slots = cache.append(*p.seq, n);
        for (int32_t i = 0; i < n; ++i) {
            if (p.all_logits || i == n - 1) b.logit_rows.push_back(b.n_tokens());
            b.token_ids.push_back(p.tokens[size_t(i)]);
            b.positions.push_back(p.seq->length + i);
            b.slot_mapping.push_back(slots[size_t(i)]);
        }
        p.seq->length += n;
        b.query_start.push_back(b.n_tokens());
        b.context_lens.push_back(p.seq->length);
        b.max_context_len = std::max(b.max_context_len, p.seq->length);
        b.max_blocks_per_seq = std::max(b.max_blocks_per_seq, int32_t(p.seq->blocks.size()));
    }
    for (const BatchPiece &p : pieces) {
        std::vector<int32_t> row = p.seq->blocks;
        row.resize(size_t(b.max_blocks_per_seq), 0);
        b.block_tables.insert(b.block_tables.end(), row.begin(), row.end());
    }
    return b;
}

}  // namespace pagoda::test
