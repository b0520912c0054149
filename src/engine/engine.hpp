// The serving loop: requests come in from any thread; each step schedules a batch, runs the
// model once over it, samples, and queues outputs. Owns the forward pass and the request
// states; borrows the KV cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/constraint_cache.hpp"
#include "engine/engine_metrics.hpp"
#include "engine/request.hpp"
#include "engine/scheduler.hpp"
#include "exec/executor.hpp"
#include "kv/kv_cache.hpp"
#include "model/model.hpp"
#include "pagoda/kernel_choice.h"
#include "runtime/device.hpp"

namespace pagoda::engine {

struct EngineConfig {
    int32_t max_num_seqs = 256;
    int32_t max_num_batched_tokens = 2048;
    pagoda_preemption_t preemption = PAGODA_PREEMPT_AUTO;
    pagoda_kv_reservation_t reservation = PAGODA_KV_PAGED;
    pagoda_decode_graphs_t decode_graphs = PAGODA_DECODE_GRAPHS_AUTO;
    pagoda_device_sampling_t device_sampling = PAGODA_DEVICE_SAMPLING_AUTO;
    pagoda_dtype_t activation_dtype = PAGODA_DTYPE_INVALID;  // INVALID: the engine picks
    // Products on block-quantized weights may round activations to 8 bits (engine.h's AUTO).
    bool quantized_activations = true;
    // Kernel choice by measurement (kernel_choice.h): the file ("" = none) and how it is used.
    std::string kernel_choices_file;
    pagoda_kernel_choice_t kernel_choice = PAGODA_KERNEL_CHOICE_FILE;
    // Where the model runs: the cache's devices as laid out; NULL = the whole model on the
    // cache's one device.
    std::shared_ptr<const mesh::Layout> layout;
    exec::PipelineOptions pipeline;
    // Set when the layout spans several processes: rank 0 leads, the others follow (engine.h).
    std::shared_ptr<const mesh::World> world;
    // When set, outputs go here on the stepping thread instead of the poll queue.
    std::function<void(const Output &)> on_output;
};

// pagoda_engine_stats_t's counters.
struct EngineStats {
    int64_t requests_waiting = 0;
    int64_t requests_running = 0;
    int64_t requests_swapped = 0;
    int64_t requests_finished = 0;
    int64_t preemptions_recompute = 0;
    int64_t preemptions_swap = 0;
    int64_t steps = 0;
    int64_t prompt_tokens = 0;
    int64_t generated_tokens = 0;
    int64_t batched_sequences = 0;
    int64_t graph_steps = 0;
    int64_t device_sampled_tokens = 0;
};

class Engine {
public:
    // `tokenizer` may be NULL: the engine then serves token ids only (open_model_tokenizer).
    Engine(std::shared_ptr<const model::Model> model, std::shared_ptr<const tok::Tokenizer> tokenizer,
           std::shared_ptr<kv::KvCache> cache, EngineConfig config);
    ~Engine();

    // Thread-safe. Throw Error(INVALID_ARGUMENT) naming the problem.
    uint64_t submit_tokens(std::span<const int32_t> prompt, RequestConfig config);
    uint64_t submit_text(std::string_view text, RequestConfig config);
    // Thread-safe; waits for a running step to end. Throws NOT_FOUND for no live request `id`.
    void abort(uint64_t id);
    // One iteration. A device failure ends every scheduled request with ERROR and rethrows.
    // Over several processes each step of rank 0's engine is one of every other rank's, and a
    // failed step leaves the engine failed for good: its mesh's communicators are aborted and
    // cannot be rebuilt, so every later step throws BACKEND with the first failure.
    void step();
    // Why the engine failed for good, or "" while it works (thread-safe).
    std::string failed_for_good() const;
    // On a rank other than 0 of a mesh over processes: steps as rank 0 steps (taking its
    // intake, dropping outputs) until rank 0's engine goes away. Throws INVALID_ARGUMENT on rank
    // 0 or a mesh in one process, and what a step throws.
    void follow();
    // Thread-safe.
    bool has_work() const noexcept { return live_requests_.load() > 0; }
    // Thread-safe: the oldest queued output, or false.
    bool poll(Output &out);
    // Thread-safe: appends up to `max` of the oldest queued outputs to `out`, under one lock.
    void poll_many(std::vector<Output> &out, size_t max);

    const kv::KvCache &cache() const noexcept { return *cache_; }
    // What the engine serves, for front ends (the HTTP server) that take an engine alone.
    const model::Model &model() const noexcept { return *model_; }
    const std::shared_ptr<const tok::Tokenizer> &tokenizer() const noexcept { return tokenizer_; }
    // Whether outputs go to EngineConfig::on_output rather than the poll queue.
    bool has_output_callback() const noexcept { return static_cast<bool>(config_.on_output); }
    // What each device holds (weights, KV), in mesh order.
    std::vector<exec::DeviceUsage> device_usage() const { return executor_->device_usage(); }
    // Thread-safe.
    EngineStats stats() const;
    // Thread-safe: the serving metrics (pagoda_engine_metrics_t), struct_size left 0.
    pagoda_engine_metrics_t metrics() const;
    // The kernel choices the engine runs with (kernel_choice.h); empty under RULES.
    const runtime::KernelChoices &kernel_choices() const noexcept { return *kernel_choices_; }

private:
    void admit_incoming();
    // Checks a submission and makes its request (not yet queued, no id).
    std::unique_ptr<Request> make_request(std::span<const int32_t> prompt, RequestConfig config);
    // Over several processes (engine_lockstep.cpp): rank 0 broadcasts what arrived since the last
    // step and the others take it; every rank then applies the aborts and queues the requests.
    void exchange_intake(std::vector<std::unique_ptr<Request>> &batch, std::vector<uint64_t> &aborts);
    void apply_aborts(const std::vector<uint64_t> &aborts);
    // Tells the followers that this (rank 0's) engine is going away.
    void announce_stop() noexcept;
    bool follower() const noexcept { return processes_ != nullptr && processes_->rank() != 0; }
    void run_batch(const Schedule &schedule);
    // Sampling: the first sample forks the prompt's sequence into the request's width; each
    // sequence then draws its own token from its row of logits.
    void fork_samples(Request &r);
    // Samples in place: `logits` is modified.
    void sample_sequence(Request &r, Sequence &s, std::span<float> logits);
    void sample_request(Request &r, const std::vector<std::span<float>> &rows);
    bool device_can_pick(const Request &r) const;
    void choose_activation_dtype();
    // Reads the kernel choice file, measures what it lacks when asked to (writing it back),
    // and hands the table to the executor. Throws as loading and measuring do.
    void setup_kernel_choices();
    // Appends `res.token` to `s`: output, stop conditions, text.
    void accept_token(Request &r, Sequence &s, const sample::SampleResult &res);
    void after_sampling(Request &r);
    // An embedding request whose prompt is computed: its pooled vector out, the request ended.
    void finish_embedding(Request &r);
    // Beam search over the rows of every live beam (`rows[i]` for r.live[i]).
    void beam_step(Request &r, const std::vector<std::span<const float>> &rows);
    void answer_at_end(Request &r);
    std::unique_ptr<Sequence> new_sequence(const Request &r, int32_t index,
                                           std::span<const int32_t> prompt);
    // Ends the request with `reason` (ABORTED, ERROR): outputs for what was not sent yet.
    std::vector<Output> end_request(Request &r, pagoda_finish_reason_t reason,
                                    pagoda_status_t status = PAGODA_OK, const std::string &error = {});
    void flush_text(Sequence &s);
    Output take_output(Request &r, Sequence &s);
    void step_locked();
    // Queues an output of this step (under the step lock); deliver() hands them out after.
    void emit(Output out);
    void deliver(std::vector<Output> produced);
    void fail_all(const std::vector<Request *> &requests, pagoda_status_t status,
                  const std::string &message);
    // Ends `r`'s life in the engine; `reason` is why the request ended (for the metrics).
    void remove(Request *r, pagoda_finish_reason_t reason);
    // Latency metrics of a step: requests first scheduled, requests given tokens at `now`.
    void record_scheduled(const Schedule &schedule, MetricsClock::time_point now);
    void record_tokens(Request &r, MetricsClock::time_point now);
    void publish_queue_sizes();

    std::shared_ptr<const model::Model> model_;
    std::shared_ptr<const tok::Tokenizer> tokenizer_;  // NULL: token ids only
    std::shared_ptr<kv::KvCache> cache_;
    EngineConfig config_;
    std::unique_ptr<exec::Executor> executor_;
    std::shared_ptr<const runtime::KernelChoices> kernel_choices_ =
        std::make_shared<const runtime::KernelChoices>();
    Scheduler scheduler_;
    std::vector<int32_t> eos_ids_;
    std::unique_ptr<ConstraintCache> constraints_;  // compiled constraints, by kind and text

    // Over several processes: the group the intake and logits travel over; null otherwise.
    const mesh::ProcessGroup *processes_ = nullptr;
    uint64_t step_index_ = 0;  // steps taken, checked against rank 0's
    bool stopped_ = false;     // a follower whose rank 0 has gone
    std::string failure_;      // a mesh over processes whose step failed: why (under step_mutex_)

    // Submissions from any thread, moved into the step's state at the next step.
    std::mutex incoming_mutex_;
    std::vector<std::unique_ptr<Request>> incoming_;
    std::vector<uint64_t> pending_aborts_;  // over several processes: applied at the next step
    uint64_t next_id_ = 1;
    std::atomic<uint64_t> next_kv_id_{1};  // the cache's sequence ids, one per Sequence
    std::atomic<int64_t> live_requests_{0};

    // The step's state; abort also takes this lock.
    mutable std::mutex step_mutex_;
    std::map<uint64_t, std::unique_ptr<Request>> requests_;
    RequestQueues queues_;
    std::vector<float> logits_;
    std::vector<float> row_scratch_;  // a logits row the sampler may modify
    std::vector<float> hidden_;       // the step's hidden rows (embedding requests)
    bool sample_on_device_ = false;   // pick tokens with the device's SAMPLE where a step allows
    exec::DeviceSampling device_sampling_;
    std::vector<int32_t> picked_tokens_;
    std::vector<float> picked_logprobs_;
    std::vector<Output> produced_;  // this step's outputs, delivered once the lock is released

    // Counters for stats() from any thread.
    std::atomic<int64_t> n_running_{0}, n_swapped_{0}, n_finished_{0}, n_preempt_recompute_{0},
        n_preempt_swap_{0}, n_steps_{0}, n_prompt_tokens_{0}, n_generated_{0}, n_batched_seqs_{0},
        n_graph_steps_{0}, n_device_sampled_{0};

    EngineMetrics metrics_;

    std::mutex output_mutex_;
    std::deque<Output> outputs_;
};

}  // namespace pagoda::engine
