// Decode steps as recorded graphs (CUDA graphs, on the CUDA backend). A decode step of a small
// model is hundreds of short launches whose cost is mostly the host issuing them; recorded once
// and launched as one graph, the step costs one launch. A graph bakes in its launch parameters
// and device addresses, so a step is padded to a batch-size bucket and its index arrays live in
// buffers fixed per bucket, as vLLM's CUDA-graph runner does:
//   - buckets of 1, 2, 4, 8, 16, 24, 32 and then every 16 up to 256 sequences (larger batches
//     run op by op);
//   - a padding sequence decodes token 0 at position 0 into slot −1 (KV_WRITE skips it) over a
//     context of 1 token in block 0, whose logits are dropped;
//   - block tables have a fixed row width, enough for the longest context the cache can hold
//     up to 8192 tokens (vLLM's max_seq_len_to_capture); a batch needing wider rows runs op by
//     op.
// This file holds the bucket bookkeeping; LlamaForward (llama_forward.cpp) issues the ops.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "exec/forward_batch.hpp"
#include "kv/kv_geometry.hpp"
#include "runtime/device.hpp"

namespace pagoda::exec {

// How LlamaForward runs a decode-only batch.
enum class DecodeMode {
    Graphs,       // padded to a bucket and launched as a recorded graph where the backend records
    OpByOp,       // launched op by op, unpadded (PAGODA_DECODE_GRAPHS_OFF)
    PaddedOpByOp  // padded to a bucket as for graphs, but launched op by op (tests the padding)
};

// The bucket a decode batch of `n_seqs` sequences is padded to, or 0 beyond the largest.
int32_t decode_bucket(int32_t n_seqs);

// Every sequence brings exactly one new token and every token's logits are asked for.
bool is_decode_only(const ForwardBatch &batch);

// What the decode path did so far; for tests and benchmarks.
struct DecodeGraphStats {
    int64_t captures = 0;         // graphs recorded
    int64_t graph_launches = 0;   // steps launched as a graph
    int64_t padded_op_by_op = 0;  // padded steps launched op by op (warm-ups included)
};

// One bucket's fixed state: the padded batch on the host (kept until the step synchronizes, as
// asynchronous uploads need), its index arrays on the device, and its graph.
struct DecodeBucket {
    int32_t size = 0;
    ForwardBatch padded;
    runtime::DeviceBuffer token_ids, positions, slots, query_start, context_lens, block_tables,
        logit_rows;
    runtime::Graph graph;
    bool warmed = false;          // ran op by op once, which sizes the backend's scratch
    bool capture_failed = false;  // the backend would not record it: stays op by op
};

class DecodeGraphs {
public:
    explicit DecodeGraphs(const runtime::Stream &stream) : stream_(stream) {}

    // Forgets every bucket when the cache's geometry or pools differ from the last call's (the
    // graphs hold their addresses, the block tables' width depends on the geometry). Returns
    // the block-table row width for this cache: enough blocks for the longest context
    // (`max_context` tokens, capped by the cache's capacity and by 8192).
    int32_t use_cache(const kv::KvGeometry &geometry, const std::vector<kv::LayerPools> &pools,
                      int64_t max_context);

    // The bucket for `batch` (decode-only, at most 256 sequences), its padded batch filled in
    // and uploaded into its fixed buffers; nullptr when a sequence needs a wider block-table row
    // than the fixed one.
    DecodeBucket *prepare(const ForwardBatch &batch);

    // Drops every recorded graph (their activation buffers moved), keeping the buckets.
    void drop_graphs() noexcept;

private:
    const runtime::Stream &stream_;
    std::map<int32_t, DecodeBucket> buckets_;
    // What the buckets were made for.
    kv::KvGeometry geometry_{};
    std::vector<kv::LayerPools> pools_;
    int32_t row_width_ = 0;
};

}  // namespace pagoda::exec
