// The forward pass over a mesh of devices: one worker thread per device, each with its stream,
// its shard of the weights (model_shard.hpp), its shard of the KV cache and its communicators
// (mesh/communicator.hpp): the tensor-parallel group of its stage, the cache-parallel group of
// its kvp peers, and the pipeline group over every device, through which a stage hands its
// residual stream to the next (send/recv).
//
// A step's batch is cut into pipeline units (pipeline_units.hpp) that flow through the stages;
// the last stage's first tensor-parallel rank reports the logits. A failure on any device
// aborts every communicator, so no rank waits forever in a collective; the step then fails on
// the caller's thread once every worker has stopped, and the next step rebuilds the groups.
//
// Over several processes (a mesh::World), each process runs the workers of its own devices; the
// groups' ids come from rank 0 through the world's bootstrap, the groups span processes (shared
// memory between processes, NCCL between GPUs), and the step's logits reach every process from
// the one that reports them. A failure there is final: the groups are not rebuilt, since the
// other processes may be gone.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "exec/executor.hpp"
#include "exec/pipeline_units.hpp"
#include "mesh/communicator.hpp"

namespace pagoda::exec {

class MeshExecutor final : public Executor {
public:
    // Starts a worker per device of `layout` (cache shard i on mesh device i), places the
    // weights and joins the groups. Throws what placing or joining throws, after stopping every
    // worker.
    MeshExecutor(std::shared_ptr<const model::Model> model, std::shared_ptr<kv::KvCache> cache,
                 const mesh::Layout &layout, const PipelineOptions &pipeline,
                 std::shared_ptr<const mesh::World> world = nullptr);
    ~MeshExecutor() override;

    void run(const ForwardBatch &batch, float *logits) override;
    bool can_sample_on_device() const override { return false; }
    bool run_sampled(const ForwardBatch &batch, const DeviceSampling &sampling, int32_t *tokens,
                     float *logprobs) override;
    void copy_logits(float *logits) override;
    // The last stage's first rank reports them, as the logits (over processes: not yet).
    bool returns_hidden_states() const override { return !spans_processes(); }
    void copy_hidden(float *hidden) override;
    // Half activations are not carried across devices yet: only F32.
    void set_activation_dtype(pagoda_dtype_t dtype) override;
    pagoda_dtype_t weight_dtype() const override;
    void set_decode_mode(DecodeMode mode) override;
    void set_quantized_activations(bool allow) override;
    void set_kernel_choices(std::shared_ptr<const runtime::KernelChoices> choices) override;
    void tune_kernels(runtime::KernelChoices &choices, int64_t max_rows) override;
    int64_t graph_launches() const override { return 0; }
    bool devices_apart_from_host() const override;
    size_t device_count() const override { return workers_.size(); }
    std::vector<DeviceUsage> device_usage() const override;
    std::vector<model::ByteRange> host_weight_ranges() const override;
    const mesh::ProcessGroup *processes() const override { return processes_.get(); }

private:
    struct Worker;
    enum class Command {
        setup, join_groups, run, set_decode_mode, set_quantized_activations,
        set_kernel_choices, tune_kernels, stop
    };

    void worker_main(Worker &w);
    void execute(Worker &w, Command command);
    void join_groups(Worker &w);
    void leave_groups(Worker &w);
    void run_units(Worker &w);
    // Has every worker carry out `command`; rethrows the first failure once all are done.
    void dispatch(Command command);
    void fail(std::exception_ptr error) noexcept;
    void stop_workers() noexcept;

    std::shared_ptr<const model::Model> model_;
    std::shared_ptr<kv::KvCache> cache_;
    mesh::Layout layout_;
    PipelineOptions pipeline_;
    std::vector<std::unique_ptr<Worker>> workers_;
    mesh::CommSet comms_;
    bool groups_broken_ = false;  // a failure aborted them: join new ones before the next step

    // The command in flight and its inputs, guarded by mutex_.
    std::mutex mutex_;
    std::condition_variable work_;
    std::condition_variable done_;
    uint64_t generation_ = 0;
    Command command_ = Command::setup;
    size_t pending_ = 0;
    std::exception_ptr error_;
    std::vector<PipelineUnit> units_;       // a pipeline's step, cut into units
    const ForwardBatch *whole_ = nullptr;  // or, with one stage, the step itself
    float *logits_ = nullptr;
    std::vector<float> hidden_;             // the step's hidden rows, as the reporter left them
    DecodeMode decode_mode_ = DecodeMode::OpByOp;
    bool quantized_activations_ = false;
    std::shared_ptr<const runtime::KernelChoices> kernel_choices_;
    // tune_kernels: the table the workers add to, one worker at a time (under tune_mutex_).
    runtime::KernelChoices *tuning_ = nullptr;
    int64_t tune_rows_ = 0;
    std::mutex tune_mutex_;
    pagoda_comm_unique_id_t pipeline_id_{};
    // Per stage: the ids of its tensor-parallel groups (one per kvp rank) and of its
    // cache-parallel groups (one per tp rank).
    std::vector<std::vector<pagoda_comm_unique_id_t>> tp_ids_, kvp_ids_;
    void new_group_ids();

    // Over several processes: the world, the index of this process's first device, the
    // communicators' options (the world's, and shared memory for a group inside one machine),
    // and the process group the logits travel over.
    std::shared_ptr<const mesh::World> world_;
    size_t first_local_ = 0;
    pagoda_comm_options_t world_options_{}, machine_options_{};
    std::unique_ptr<mesh::ProcessGroup> processes_;
    bool spans_processes() const noexcept { return world_ != nullptr; }
    // The options of a communicator over mesh devices `members`: none in one process; over
    // processes, shared memory when they are all on one machine (tensor parallelism within a
    // machine, pipeline stages across), else the world's.
    const pagoda_comm_options_t *options_for(const std::vector<int32_t> &members) const;
    // The devices of stage k's tensor-parallel group of kvp copy c, and of its cache-parallel
    // group of tp rank r.
    std::vector<int32_t> tensor_group(size_t k, int32_t c) const;
    std::vector<int32_t> cache_group(size_t k, int32_t r) const;
};

}  // namespace pagoda::exec
