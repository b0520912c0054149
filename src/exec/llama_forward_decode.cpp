// LlamaForward's decode steps by bucket: a decode-only batch padded to its bucket's size, run
// from the bucket's fixed device inputs, op by op the first time and then recorded and replayed
// as a graph where the backend records them (decode_graphs.hpp).
#include <string>

#include "common/error.hpp"
#include "common/log.hpp"
#include "exec/llama_forward_state.hpp"

namespace pagoda::exec {

void LlamaForward::State::bind_bucket(const DecodeBucket &bucket) {
    token_ids.ptr = bucket.token_ids.get();
    positions.ptr = bucket.positions.get();
    slots.ptr = bucket.slots.get();
    query_start.ptr = bucket.query_start.get();
    context_lens.ptr = bucket.context_lens.get();
    block_tables.ptr = bucket.block_tables.get();
    logit_rows.ptr = bucket.logit_rows.get();
}

bool LlamaForward::State::run_bucketed(const ForwardBatch &batch, const kv::KvGeometry &g,
                                       const std::vector<kv::LayerPools> &pools, float *out) {
    const model::ModelConfig &c = model->config();
    decode_graphs.use_cache(g, pools, c.max_position);
    DecodeBucket *bucket = decode_graphs.prepare(batch);
    if (bucket == nullptr) return false;  // a context longer than the fixed block-table rows
    const size_t size = size_t(bucket->size);
    // The buckets share one set of activations, grown to the largest bucket yet; a graph
    // recorded on smaller buffers is stale once they move.
    if (bind_activations(bucket_memory, size, size)) decode_graphs.drop_graphs();
    bind_bucket(*bucket);
    const ForwardBatch &padded = bucket->padded;
    const Stage whole{0, int32_t(c.n_layers)};

    const bool record = decode_mode == DecodeMode::Graphs && !bucket->capture_failed;
    if (record && bucket->graph) {
        bucket->graph.launch(stream);
        ++decode_stats.graph_launches;
    } else if (record && bucket->warmed) {
        // The first run op by op sized the backend's scratch for this bucket; now record.
        stream.begin_capture();
        runtime::Graph graph;
        try {
            launch_layers(padded, g, pools, whole);
        } catch (...) {
            // A launch the backend refused is an error of the step, as it would be op by op;
            // the recording is dropped first so the stream runs work again.
            try {
                (void)stream.end_capture();
            } catch (...) {
            }
            throw;
        }
        try {
            graph = stream.end_capture();
        } catch (const Error &e) {
            // The backend could not record something it runs fine op by op: keep this bucket
            // op by op rather than fail the step.
            bucket->capture_failed = true;
            pagoda::log(PAGODA_LOG_WARN, std::string("decode steps of ") + std::to_string(size) +
                                     " sequences run op by op: " + e.what());
        }
        if (graph) {
            bucket->graph = std::move(graph);
            ++decode_stats.captures;
            bucket->graph.launch(stream);
            ++decode_stats.graph_launches;
        } else {
            launch_layers(padded, g, pools, whole);
            ++decode_stats.padded_op_by_op;
        }
    } else {
        launch_layers(padded, g, pools, whole);
        bucket->warmed = true;
        ++decode_stats.padded_op_by_op;
    }
    // Only the real sequences' rows; the padding's are dropped.
    deliver(size_t(batch.n_seqs()), out);
    return true;
}

}  // namespace pagoda::exec
