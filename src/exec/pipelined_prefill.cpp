#include "exec/pipelined_prefill.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>

#include "common/error.hpp"

namespace pagoda::exec {

namespace {

// The forward batch of one slice: tokens [start, start + length) of one sequence after `start`
// cached ones; logits for the prompt's last token only.
ForwardBatch slice_batch(const std::vector<int32_t> &prompt, int64_t start, int64_t length,
                         const std::vector<int32_t> &table, int32_t block_size) {
    ForwardBatch b;
    for (int64_t pos = start; pos < start + length; ++pos) {
        b.token_ids.push_back(prompt[size_t(pos)]);
        b.positions.push_back(int32_t(pos));
        b.slot_mapping.push_back(int64_t(table[size_t(pos / block_size)]) * block_size +
                                 pos % block_size);
    }
    b.query_start = {0, int32_t(length)};
    b.context_lens = {int32_t(start + length)};
    b.max_context_len = int32_t(start + length);
    b.max_blocks_per_seq = int32_t(table.size());
    b.block_tables = table;
    if (start + length == int64_t(prompt.size())) b.logit_rows = {int32_t(length - 1)};
    return b;
}

// How many slices each stage has finished, and the first error; stages wait on it for their
// predecessor's output.
class Progress {
public:
    explicit Progress(size_t stages) : done_(stages, 0) {}

    // Blocks until stage `k` has finished `slices` slices; false when a stage failed.
    bool wait(size_t k, size_t slices) {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return error_ != nullptr || done_[k] >= slices; });
        return error_ == nullptr;
    }
    void finished(size_t k) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++done_[k];
        }
        cv_.notify_all();
    }
    void fail(std::exception_ptr e) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (error_ == nullptr) error_ = e;
        }
        cv_.notify_all();
    }
    bool failed() {
        std::lock_guard<std::mutex> lock(mutex_);
        return error_ != nullptr;
    }
    std::exception_ptr error() {
        std::lock_guard<std::mutex> lock(mutex_);
        return error_;
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<size_t> done_;
    std::exception_ptr error_;
};

}  // namespace

PipelinedPrefill::PipelinedPrefill(std::shared_ptr<const model::Model> model,
                                   const std::vector<const runtime::Stream *> &streams,
                                   const std::vector<int32_t> &boundaries)
    : model_(std::move(model)), boundaries_(boundaries) {
    const int64_t layers = model_->config().n_layers;
    if (streams.empty() || boundaries.size() != streams.size() + 1 || boundaries.front() != 0 ||
        boundaries.back() != layers)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "pipelined prefill: " + std::to_string(streams.size()) + " stages need " +
                        std::to_string(streams.size() + 1) + " boundaries from 0 to " +
                        std::to_string(layers) + ", got " + std::to_string(boundaries.size()));
    for (size_t k = 0; k < streams.size(); ++k) {
        if (boundaries[k] >= boundaries[k + 1])
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "pipelined prefill: stage " + std::to_string(k) + " has no layers (" +
                            std::to_string(boundaries[k]) + " to " +
                            std::to_string(boundaries[k + 1]) + ")");
        if (streams[k] == nullptr)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "pipelined prefill: stage " + std::to_string(k) + " has no stream");
        forwards_.push_back(std::make_unique<LlamaForward>(model_, *streams[k]));
    }
}

PipelinedPrefill::~PipelinedPrefill() = default;

std::vector<float> PipelinedPrefill::run(const std::vector<int32_t> &prompt,
                                         const std::vector<int64_t> &slice_lengths,
                                         kv::KvCache &cache, uint64_t seq) {
    int64_t total = 0;
    for (int64_t l : slice_lengths) {
        if (l <= 0)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                        "pipelined prefill: slice length " + std::to_string(l) + " is not positive");
        total += l;
    }
    if (prompt.empty() || total != int64_t(prompt.size()))
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "pipelined prefill: slices sum to " + std::to_string(total) +
                        " tokens, the prompt has " + std::to_string(prompt.size()));
    const std::vector<int32_t> &table = cache.table(seq);
    const int32_t block_size = cache.geometry().block_size;
    if (int64_t(table.size()) * block_size < total)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "pipelined prefill: sequence " + std::to_string(seq) + " has room for " +
                        std::to_string(int64_t(table.size()) * block_size) + " tokens, not " +
                        std::to_string(total));

    // Built before the stages start, so the threads only read them.
    std::vector<ForwardBatch> batches;
    for (int64_t start = 0; int64_t l : slice_lengths) {
        batches.push_back(slice_batch(prompt, start, l, table, block_size));
        start += l;
    }
    const size_t n_stages = forwards_.size(), n_slices = batches.size();
    const size_t hidden = size_t(model_->config().hidden_size);
    // hidden[k][i]: what stage k hands stage k + 1 for slice i.
    std::vector<std::vector<std::vector<float>>> handoff(n_stages);
    for (size_t k = 0; k + 1 < n_stages; ++k)
        for (const ForwardBatch &b : batches) handoff[k].emplace_back(size_t(b.n_tokens()) * hidden);
    std::vector<float> logits(size_t(model_->config().vocab_size));

    Progress progress(n_stages);
    auto stage_loop = [&](size_t k) {
        try {
            for (size_t i = 0; i < n_slices; ++i) {
                if (k > 0 ? !progress.wait(k - 1, i + 1) : progress.failed()) return;
                LlamaForward::Stage st;
                st.first_layer = boundaries_[k];
                st.end_layer = boundaries_[k + 1];
                st.hidden_in = k > 0 ? handoff[k - 1][i].data() : nullptr;
                st.hidden_out = k + 1 < n_stages ? handoff[k][i].data() : nullptr;
                forwards_[k]->run_stage(batches[i], cache.geometry(), cache.pools(), st,
                                        logits.data());
                progress.finished(k);
            }
        } catch (...) {
            progress.fail(std::current_exception());
        }
    };
    std::vector<std::thread> threads;
    for (size_t k = 1; k < n_stages; ++k) threads.emplace_back(stage_loop, k);
    stage_loop(0);  // the caller is stage 0
    for (std::thread &t : threads) t.join();
    if (std::exception_ptr e = progress.error()) std::rethrow_exception(e);
    return logits;
}

}  // namespace pagoda::exec
