#include "exec/mesh_executor.hpp"

#include <algorithm>
#include <string>
#include <thread>

#include "common/error.hpp"
#include "exec/llama_forward.hpp"

namespace pagoda::exec {

namespace {

// A stage's handoff over the pipeline group, whose ranks are the mesh's device indices: rank r
// of a stage receives from rank r mod (the previous stage's width) and sends to every rank of
// the next stage that maps back to it, so stages of different widths still pair up.
class PipelineHandoff final : public StageHandoff {
public:
    PipelineHandoff(const mesh::Communicator &group, int32_t from, std::vector<int32_t> to, int64_t hidden)
        : group_(group), from_(from), to_(std::move(to)), hidden_(hidden) {}

    void receive(const runtime::Stream &stream, float *residual, int64_t n_tokens) override {
        group_.recv(stream, residual, size_t(n_tokens * hidden_), PAGODA_DTYPE_F32, from_);
    }
    void send(const runtime::Stream &stream, const float *residual, int64_t n_tokens) override {
        for (int32_t peer : to_) group_.send(stream, residual, size_t(n_tokens * hidden_), PAGODA_DTYPE_F32, peer);
    }

private:
    const mesh::Communicator &group_;
    int32_t from_;
    std::vector<int32_t> to_;
    int64_t hidden_;
};

}  // namespace

struct MeshExecutor::Worker {
    size_t index = 0;  // the mesh device, and the cache shard it uses
    mesh::DevicePlacement place;
    ModelShard shard;
    const kv::KvShard *cache = nullptr;
    std::thread thread;
    uint64_t seen = 0;  // the last command generation carried out

    // Made on the worker's thread.
    std::unique_ptr<runtime::Stream> stream;
    std::unique_ptr<LlamaForward> forward;
    std::unique_ptr<mesh::Communicator> pipeline, tensor_parallel, cache_parallel;
    std::unique_ptr<PipelineHandoff> handoff;
    std::vector<float> unit_logits;  // the reporting rank's logits of one unit
    std::vector<float> unit_hidden;  // and its hidden rows
};

MeshExecutor::MeshExecutor(std::shared_ptr<const model::Model> model, std::shared_ptr<kv::KvCache> cache,
                           const mesh::Layout &layout, const PipelineOptions &pipeline,
                           std::shared_ptr<const mesh::World> world)
    : model_(std::move(model)), cache_(std::move(cache)), layout_(layout), pipeline_(pipeline) {
    if (world != nullptr && world->size() > 1) {
        world_ = std::move(world);
        first_local_ = size_t(world_->rank()) * cache_->shard_count();
        world_options_ = mesh::world_comm_options(*world_);
        machine_options_ = world_options_;
        if (!world_->network_collectives()) machine_options_.scope = PAGODA_COMM_SCOPE_HOST;
    }
    const model::ModelConfig &c = model_->config();
    for (size_t d = first_local_; d < first_local_ + cache_->shard_count(); ++d) {
        auto w = std::make_unique<Worker>();
        w->index = d;
        w->place = layout_.place(d);
        const mesh::StagePlacement &stage = layout_.stages()[size_t(w->place.stage)];
        w->shard = {stage.first_layer, stage.end_layer, w->place.tp_rank, stage.tensor_parallel,
                    w->place.kvp_rank, layout_.kv_parallel(), stage.expert_parallel};
        w->cache = &cache_->shard(d - first_local_);
        const kv::KvShardSpec &spec = w->cache->spec();
        if (spec.first_layer != stage.first_layer || spec.end_layer != stage.end_layer ||
            spec.kv_head_begin != w->shard.kv_head_begin(c) || spec.n_kv_heads != w->shard.n_kv_heads(c) ||
            spec.kv_shard != w->shard.kv_rank || spec.kv_shards != w->shard.kv_size)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "the KV cache's part on " + spec.device->name() +
                                                         " does not hold what the layout gives that device");
        workers_.push_back(std::move(w));
    }
    pending_ = workers_.size();
    for (auto &w : workers_) w->thread = std::thread([this, &w = *w] { worker_main(w); });
    try {
        // Setup is the command the workers start with; wait for it like any other.
        {
            std::unique_lock lock(mutex_);
            done_.wait(lock, [&] { return pending_ == 0; });
            if (error_) std::rethrow_exception(error_);
        }
        new_group_ids();
        dispatch(Command::join_groups);
        if (spans_processes()) processes_ = std::make_unique<mesh::ProcessGroup>(cache_->shard(0).device(), *world_);
    } catch (...) {
        stop_workers();
        throw;
    }
}

MeshExecutor::~MeshExecutor() {
    processes_.reset();
    stop_workers();
}

std::vector<int32_t> MeshExecutor::tensor_group(size_t k, int32_t c) const {
    const mesh::StagePlacement &stage = layout_.stages()[k];
    std::vector<int32_t> members;
    for (int32_t j = 0; j < stage.tensor_parallel; ++j)
        members.push_back(stage.devices[size_t(c * stage.tensor_parallel + j)]);
    return members;
}

std::vector<int32_t> MeshExecutor::cache_group(size_t k, int32_t r) const {
    const mesh::StagePlacement &stage = layout_.stages()[k];
    std::vector<int32_t> members;
    for (int32_t c = 0; c < layout_.kv_parallel(); ++c)
        members.push_back(stage.devices[size_t(c * stage.tensor_parallel + r)]);
    return members;
}

const pagoda_comm_options_t *MeshExecutor::options_for(const std::vector<int32_t> &members) const {
    if (!spans_processes()) return nullptr;
    const size_t per_process = cache_->shard_count();
    const int32_t machine = world_->machine_of(int32_t(size_t(members.front()) / per_process));
    for (int32_t d : members)
        if (world_->machine_of(int32_t(size_t(d) / per_process)) != machine) return &world_options_;
    return &machine_options_;
}

void MeshExecutor::new_group_ids() {
    const runtime::Device &device = cache_->shard(0).device();
    // Over several processes rank 0 makes every id and hands them out, in this order.
    const bool makes = !spans_processes() || world_->rank() == 0;
    auto new_id = [&](const pagoda_comm_options_t *options) {
        return makes ? mesh::new_comm_id(device, options) : pagoda_comm_unique_id_t{};
    };
    std::vector<pagoda_comm_unique_id_t *> all;
    pipeline_id_ = new_id(spans_processes() ? &world_options_ : nullptr);
    all.push_back(&pipeline_id_);
    tp_ids_.assign(layout_.stages().size(), {});
    kvp_ids_.assign(layout_.stages().size(), {});
    for (size_t k = 0; k < layout_.stages().size(); ++k) {
        for (int32_t c = 0; c < layout_.kv_parallel(); ++c) tp_ids_[k].push_back(new_id(options_for(tensor_group(k, c))));
        for (int32_t r = 0; r < layout_.stages()[k].tensor_parallel; ++r)
            kvp_ids_[k].push_back(new_id(options_for(cache_group(k, r))));
    }
    if (!spans_processes()) return;
    for (auto &ids : tp_ids_)
        for (auto &id : ids) all.push_back(&id);
    for (auto &ids : kvp_ids_)
        for (auto &id : ids) all.push_back(&id);
    for (pagoda_comm_unique_id_t *id : all) world_->bootstrap()->broadcast(id, sizeof *id, 0);
}

void MeshExecutor::stop_workers() noexcept {
    {
        std::lock_guard lock(mutex_);
        command_ = Command::stop;
        ++generation_;
    }
    work_.notify_all();
    for (auto &w : workers_)
        if (w->thread.joinable()) w->thread.join();
}

void MeshExecutor::fail(std::exception_ptr error) noexcept {
    {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = error;
    }
    comms_.abort_all();
}

void MeshExecutor::dispatch(Command command) {
    std::unique_lock lock(mutex_);
    command_ = command;
    pending_ = workers_.size();
    error_ = nullptr;
    ++generation_;
    work_.notify_all();
    done_.wait(lock, [&] { return pending_ == 0; });
    if (std::exception_ptr e = error_) {
        error_ = nullptr;
        std::rethrow_exception(e);
    }
}

void MeshExecutor::worker_main(Worker &w) {
    Command command = Command::setup;
    for (;;) {
        if (command == Command::stop) break;
        try {
            execute(w, command);
        } catch (...) {
            fail(std::current_exception());
        }
        std::unique_lock lock(mutex_);
        if (--pending_ == 0) done_.notify_all();
        work_.wait(lock, [&] { return generation_ != w.seen; });
        w.seen = generation_;
        command = command_;
    }
    // Communicators go before the forward pass and the stream they were used on.
    leave_groups(w);
    w.forward.reset();
    w.stream.reset();
}

void MeshExecutor::leave_groups(Worker &w) {
    for (auto *comm : {w.pipeline.get(), w.tensor_parallel.get(), w.cache_parallel.get()})
        if (comm != nullptr) comms_.remove(comm);
    w.handoff.reset();
    w.cache_parallel.reset();
    w.tensor_parallel.reset();
    w.pipeline.reset();
}

void MeshExecutor::execute(Worker &w, Command command) {
    switch (command) {
        case Command::setup: {
            const runtime::Device &device = w.cache->device();
            w.stream = std::make_unique<runtime::Stream>(device);
            w.forward = std::make_unique<LlamaForward>(model_, *w.stream, w.shard);
            break;
        }
        case Command::join_groups: join_groups(w); break;
        case Command::run: run_units(w); break;
        case Command::set_decode_mode: w.forward->set_decode_mode(decode_mode_); break;
        case Command::set_quantized_activations:
            w.forward->set_quantized_activations(quantized_activations_);
            break;
        case Command::set_kernel_choices: w.forward->set_kernel_choices(kernel_choices_); break;
        case Command::tune_kernels: {
            std::lock_guard lock(tune_mutex_);
            w.forward->tune_kernels(*tuning_, tune_rows_);
            break;
        }
        case Command::stop: break;
    }
}

// Every rank joins its groups in the same order (the pipeline group, its tensor-parallel group,
// its cache-parallel group), so no two ranks wait on each other's groups.
void MeshExecutor::join_groups(Worker &w) {
    leave_groups(w);
    const runtime::Device &device = w.cache->device();
    const std::vector<mesh::StagePlacement> &stages = layout_.stages();
    const size_t k = size_t(w.place.stage);
    if (stages.size() > 1) {
        w.pipeline = std::make_unique<mesh::Communicator>(device, pipeline_id_, int32_t(layout_.device_count()),
                                                          int32_t(w.index), "pipeline",
                                                          spans_processes() ? &world_options_ : nullptr);
        comms_.add(w.pipeline.get());
        // Stages pair up within a kvp copy: device (kvp copy c, tp rank r) of stage k hands on to
        // the devices (c, j) of stage k + 1 with j mod (stage k's width) = r.
        const int32_t r = w.place.tp_rank, c = w.place.kvp_rank;
        int32_t from = -1;
        std::vector<int32_t> to;
        if (k > 0) {
            const int32_t width = stages[k - 1].tensor_parallel;
            from = stages[k - 1].devices[size_t(c * width + r % width)];
        }
        if (k + 1 < stages.size()) {
            const int32_t width = stages[k + 1].tensor_parallel;
            for (int32_t j = 0; j < width; ++j)
                if (j % stages[k].tensor_parallel == r) to.push_back(stages[k + 1].devices[size_t(c * width + j)]);
        }
        w.handoff = std::make_unique<PipelineHandoff>(*w.pipeline, from, std::move(to),
                                                      model_->config().hidden_size);
    }
    if (stages[k].tensor_parallel > 1) {
        w.tensor_parallel = std::make_unique<mesh::Communicator>(
            device, tp_ids_[k][size_t(w.place.kvp_rank)], stages[k].tensor_parallel, w.place.tp_rank,
            "tensor-parallel group of stage " + std::to_string(k),
            options_for(tensor_group(k, w.place.kvp_rank)));
        comms_.add(w.tensor_parallel.get());
    }
    if (layout_.kv_parallel() > 1) {
        w.cache_parallel = std::make_unique<mesh::Communicator>(
            device, kvp_ids_[k][size_t(w.place.tp_rank)], layout_.kv_parallel(), w.place.kvp_rank,
            "cache-parallel group of stage " + std::to_string(k), options_for(cache_group(k, w.place.tp_rank)));
        comms_.add(w.cache_parallel.get());
    }
    w.forward->set_tensor_parallel(w.tensor_parallel.get());
    w.forward->set_cache_parallel(w.cache_parallel.get());
}

void MeshExecutor::run_units(Worker &w) {
    const model::ModelConfig &c = model_->config();
    const bool last = w.shard.last_stage(c), reports = last && w.place.tp_rank == 0 && w.place.kvp_rank == 0;
    const size_t vocab = size_t(c.vocab_size);
    LlamaForward::Stage stage;
    stage.first_layer = w.shard.first_layer;
    stage.end_layer = w.shard.end(c);
    stage.handoff = w.handoff.get();
    stage.discard_logits = last && !reports;
    if (whole_ != nullptr) {
        // One stage: the step runs as it is and its logits land in place.
        w.forward->run_stage(*whole_, w.cache->geometry(), w.cache->pools(), stage, reports ? logits_ : nullptr);
        if (reports && !whole_->hidden_rows.empty()) w.forward->copy_hidden(hidden_.data());
        return;
    }
    const size_t hidden = size_t(c.hidden_size);
    for (const PipelineUnit &unit : units_) {
        // Once a device failed the step is lost; the others stop at their next unit.
        if (comms_.aborted()) return;
        float *out = nullptr;
        if (reports) {
            w.unit_logits.resize(unit.batch.logit_rows.size() * vocab);
            out = w.unit_logits.data();
        }
        w.forward->run_stage(unit.batch, w.cache->geometry(), w.cache->pools(), stage, out);
        if (!reports) continue;
        for (size_t i = 0; i < unit.step_rows.size(); ++i)
            std::copy_n(w.unit_logits.data() + i * vocab, vocab, logits_ + size_t(unit.step_rows[i]) * vocab);
        if (unit.hidden_step_rows.empty()) continue;
        w.unit_hidden.resize(unit.hidden_step_rows.size() * hidden);
        w.forward->copy_hidden(w.unit_hidden.data());
        for (size_t i = 0; i < unit.hidden_step_rows.size(); ++i)
            std::copy_n(w.unit_hidden.data() + i * hidden, hidden,
                        hidden_.data() + size_t(unit.hidden_step_rows[i]) * hidden);
    }
}

void MeshExecutor::run(const ForwardBatch &batch, float *logits) {
    if (!batch.hidden_rows.empty() && spans_processes())
        throw Error(PAGODA_ERR_UNSUPPORTED, "hidden states for embeddings are not gathered over a "
                                            "mesh over processes (" + layout_.describe() + ")");
    if (groups_broken_ && spans_processes())
        throw Error(PAGODA_ERR_BACKEND, "an earlier step failed on the mesh's processes; its groups are not rebuilt "
                                        "across processes: make the engine again on every rank");
    if (groups_broken_) {
        comms_.reset();
        new_group_ids();
        dispatch(Command::join_groups);
        groups_broken_ = false;
    }
    const bool pipelined = layout_.stages().size() > 1;
    {
        std::lock_guard lock(mutex_);
        units_ = pipelined ? split_step(batch, int32_t(layout_.stages().size()), pipeline_)
                           : std::vector<PipelineUnit>();
        whole_ = pipelined ? nullptr : &batch;
        logits_ = logits;
        hidden_.resize(batch.hidden_rows.size() * size_t(model_->config().hidden_size));
    }
    try {
        dispatch(Command::run);
        if (spans_processes()) {
            // Every process samples from the logits of the last stage's first device.
            const size_t reporter = size_t(layout_.stages().back().devices.front());
            const size_t rows = batch.logit_rows.size(), vocab = size_t(model_->config().vocab_size);
            processes_->broadcast(logits, rows * vocab, int32_t(reporter / workers_.size()));
        }
    } catch (...) {
        groups_broken_ = comms_.aborted() || spans_processes();
        if (spans_processes() && processes_) processes_->abort();
        throw;
    }
}

bool MeshExecutor::run_sampled(const ForwardBatch &, const DeviceSampling &, int32_t *, float *) {
    throw Error(PAGODA_ERR_INTERNAL, "sampling on the device is not offered on a multi-device mesh");
}

void MeshExecutor::copy_logits(float *) {
    throw Error(PAGODA_ERR_INTERNAL, "sampling on the device is not offered on a multi-device mesh");
}

void MeshExecutor::copy_hidden(float *hidden) {
    std::copy(hidden_.begin(), hidden_.end(), hidden);
}

void MeshExecutor::set_activation_dtype(pagoda_dtype_t dtype) {
    if (dtype != PAGODA_DTYPE_F32)
        throw Error(PAGODA_ERR_UNSUPPORTED,
                    "activations other than f32 are not carried across the devices of a mesh yet");
}

pagoda_dtype_t MeshExecutor::weight_dtype() const { return workers_.front()->forward->weight_dtype(); }

void MeshExecutor::set_quantized_activations(bool allow) {
    quantized_activations_ = allow;
    dispatch(Command::set_quantized_activations);
}

void MeshExecutor::set_kernel_choices(std::shared_ptr<const runtime::KernelChoices> choices) {
    kernel_choices_ = std::move(choices);
    dispatch(Command::set_kernel_choices);
}

void MeshExecutor::tune_kernels(runtime::KernelChoices &choices, int64_t max_rows) {
    tuning_ = &choices;
    tune_rows_ = max_rows;
    try {
        dispatch(Command::tune_kernels);
    } catch (...) {
        // A worker's failure aborted the communicators, as in run().
        tuning_ = nullptr;
        groups_broken_ = comms_.aborted();
        throw;
    }
    tuning_ = nullptr;
}

void MeshExecutor::set_decode_mode(DecodeMode mode) {
    decode_mode_ = mode;
    dispatch(Command::set_decode_mode);
}

bool MeshExecutor::devices_apart_from_host() const {
    for (const auto &w : workers_)
        if (w->cache->device().host_accessible()) return false;
    return true;
}

std::vector<DeviceUsage> MeshExecutor::device_usage() const {
    const model::ModelConfig &c = model_->config();
    std::vector<DeviceUsage> out;
    for (const auto &w : workers_) {
        DeviceUsage u;
        u.device = w->cache->device().name();
        u.stage = w->place.stage;
        u.tp_rank = w->place.tp_rank;
        u.tp_size = w->shard.tp_size;
        u.kvp_rank = w->shard.kv_rank;
        u.kvp_size = w->shard.kv_size;
        u.first_layer = w->shard.first_layer;
        u.end_layer = w->shard.end(c);
        u.kv_heads = w->shard.n_kv_heads(c);
        u.weight_bytes = w->forward->weight_bytes();
        u.layer_weight_bytes = w->forward->layer_weight_bytes();
        u.expert_weight_bytes = w->forward->expert_weight_bytes();
        u.ep_rank = w->shard.ep_rank();
        u.ep_size = w->shard.ep_size;
        u.kv_bytes = w->cache->bytes();
        out.push_back(u);
    }
    return out;
}

std::vector<model::ByteRange> MeshExecutor::host_weight_ranges() const {
    std::vector<model::ByteRange> out;
    for (const auto &w : workers_) {
        const std::vector<model::ByteRange> &mine = w->forward->host_weight_ranges();
        out.insert(out.end(), mine.begin(), mine.end());
    }
    return out;
}

}  // namespace pagoda::exec
