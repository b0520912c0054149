// One iteration's work for the model: the new tokens of every scheduled sequence, flattened,
// with where each goes in the paged KV cache and which rows need logits. Host memory; the
// executor copies what it needs to the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pagoda::exec {

struct ForwardBatch {
    // Per new token (all sequences, in sequence order).
    std::vector<int32_t> token_ids;
    std::vector<int32_t> positions;     // absolute position of each token in its sequence
    std::vector<int64_t> slot_mapping;  // block_id * block_size + offset, where its K/V go

    // Per sequence.
    std::vector<int32_t> query_start;   // [n_seqs + 1], cumulative new-token counts, [0] = 0
    std::vector<int32_t> context_lens;  // [n_seqs], tokens in the cache after this step's writes
    std::vector<int32_t> block_tables;  // [n_seqs, max_blocks_per_seq], unused entries 0
    int32_t max_blocks_per_seq = 0;
    int32_t max_context_len = 0;

    // Rows of the flattened tokens whose logits the caller wants (the last token of a
    // sequence that samples; every prompt token when prompt logprobs are asked), ascending.
    std::vector<int32_t> logit_rows;
    // Rows whose hidden states after the final norm the caller wants (embedding requests:
    // pooled on the host), in any order; read back with the executor's copy_hidden().
    std::vector<int32_t> hidden_rows;

    int32_t n_tokens() const { return static_cast<int32_t>(token_ids.size()); }
    int32_t n_seqs() const { return static_cast<int32_t>(context_lens.size()); }
};

// How to pick each logit row's token on the device (PAGODA_OP_SAMPLE's per-row parameters),
// one entry per logit row of the step.
struct DeviceSampling {
    std::vector<float> temperature;  // 0 = greedy
    std::vector<int32_t> top_k;
    std::vector<float> top_p;
    std::vector<float> min_p;
    std::vector<float> uniform;  // the row's draw in [0, 1); unused by greedy rows

    size_t size() const { return temperature.size(); }
    void clear() {
        temperature.clear();
        top_k.clear();
        top_p.clear();
        min_p.clear();
        uniform.clear();
    }
};

}  // namespace pagoda::exec
