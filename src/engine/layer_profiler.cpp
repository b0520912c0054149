#include "engine/layer_profiler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "exec/executor.hpp"
#include "exec/forward_batch.hpp"
#include "kv/kv_cache.hpp"
#include "mesh/layout.hpp"
#include "mesh/mesh.hpp"
#include "pagoda/dtype.h"

namespace pagoda::engine {

using plan::ContextSample;
using plan::DeviceSpec;
using plan::MeasuredLayerCosts;

namespace {

// The layout of one tensor-parallel stage over every device of `devices` (one device: the
// whole model there).
mesh::Layout group_layout(const model::ModelConfig &config, const DeviceGroup &devices) {
    const int32_t layers = int32_t(config.n_layers);
    if (devices.size() == 1) return mesh::Layout::single_device(layers);
    std::string names;
    for (const auto &d : devices) names += (names.empty() ? "" : ",") + d->name();
    const plan::ModelShape shape = plan::model_shape(config);
    mesh::LayoutSpec spec;
    spec.devices = int32_t(devices.size());
    spec.stages.push_back({0, layers, int32_t(devices.size()), 1});
    spec.shape = {shape.heads, shape.kv_heads, shape.intermediate, shape.experts, shape.expert_intermediate};
    return mesh::Layout(mesh::Mesh(names, "tp=" + std::to_string(devices.size())), spec);
}

// One sequence in a KV cache sized for 2·L tokens, and timed forward passes over it on a group
// of devices.
class ProfileRig {
public:
    ProfileRig(std::shared_ptr<const model::Model> model, const DeviceGroup &devices, const ProfileOptions &o)
        : config_(model->config()), logits_(size_t(config_.vocab_size)) {
        if (devices.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "profiler: no devices");
        const mesh::Layout layout = group_layout(config_, devices);
        cache_ = std::make_shared<kv::KvCache>(exec::kv_shards_for(config_, devices, layout), geometry(config_, o));
        executor_ = exec::make_executor(std::move(model), cache_, layout, {});
    }

    // Seconds of one forward of `tokens` new tokens at positions [context, context + tokens).
    // The cache must already hold `context` tokens (fill() did it); the slots written are the
    // same on every call, so repeats need no cleanup.
    double time(int64_t tokens, int64_t context) {
        const exec::ForwardBatch batch = make_batch(tokens, context);
        const auto start = std::chrono::steady_clock::now();
        executor_->run(batch, logits_.data());
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

    // Writes K/V for positions [0, context).
    void fill(int64_t context) {
        if (context > 0) time(context, 0);
    }

private:
    static kv::KvGeometry geometry(const model::ModelConfig &c, const ProfileOptions &o) {
        kv::KvGeometry g;
        g.dtype = PAGODA_DTYPE_F32;
        g.block_size = o.block_size;
        g.num_blocks = (2 * o.max_tokens + o.block_size - 1) / o.block_size + 1;
        g.n_layers = c.n_layers;
        g.n_kv_heads = c.n_kv_heads;
        g.head_dim = c.head_dim;
        return g;
    }

    exec::ForwardBatch make_batch(int64_t tokens, int64_t context) {
        const uint64_t seq = 1;
        if (!cache_->reserve(seq, context + tokens))
            throw Error(PAGODA_ERR_INTERNAL, "profiler: KV cache too small for " + std::to_string(context + tokens) + " tokens");
        const std::vector<int32_t> &table = cache_->table(seq);
        const int32_t bs = cache_->geometry().block_size;
        exec::ForwardBatch b;
        for (int64_t i = 0; i < tokens; ++i) {
            const int64_t pos = context + i;
            b.token_ids.push_back(int32_t((pos * 7919) % config_.vocab_size));
            b.positions.push_back(int32_t(pos));
            b.slot_mapping.push_back(int64_t(table[size_t(pos / bs)]) * bs + pos % bs);
        }
        b.query_start = {0, int32_t(tokens)};
        b.context_lens = {int32_t(context + tokens)};
        b.max_context_len = int32_t(context + tokens);
        b.max_blocks_per_seq = int32_t(table.size());
        b.block_tables = table;
        b.logit_rows = {int32_t(tokens - 1)};
        return b;
    }

    model::ModelConfig config_;
    std::vector<float> logits_;
    std::shared_ptr<kv::KvCache> cache_;
    std::unique_ptr<exec::Executor> executor_;
};

// Keeps options.neighbour busy on its own thread until destroyed, running the point being
// timed: the same new tokens after the same cached context. Pipeline stages run adjacent
// slices at once, so a stage's neighbour reads a context as long as its own; a neighbour that
// only ran no-context passes loaded the shared cache and memory less than the real one does,
// and the profile came out low for long-context slices. A failure there only stops the load:
// the timings themselves are unaffected.
class Neighbour {
public:
    Neighbour(const std::shared_ptr<const model::Model> &model, const ProfileOptions &o) {
        if (o.neighbour.empty()) return;
        rig_ = std::make_unique<ProfileRig>(model, o.neighbour, o);
        rig_->fill(o.max_tokens);  // every context the profile times is then cached there too
        thread_ = std::thread([this] {
            try {
                while (!stop_.load(std::memory_order_relaxed))
                    rig_->time(tokens_.load(std::memory_order_relaxed), context_.load(std::memory_order_relaxed));
            } catch (...) {
            }
        });
    }
    ~Neighbour() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
    }
    Neighbour(const Neighbour &) = delete;
    Neighbour &operator=(const Neighbour &) = delete;

    void set_point(int64_t tokens, int64_t context) {
        context_.store(context, std::memory_order_relaxed);
        tokens_.store(tokens, std::memory_order_relaxed);
    }

private:
    std::unique_ptr<ProfileRig> rig_;
    std::atomic<int64_t> tokens_{1}, context_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace

void validate(const ProfileOptions &o) {
    if (o.max_tokens <= 0 || o.granularity <= 0 || o.grid <= 0 || o.repeats <= 0 || o.warmup < 0 ||
        o.block_size <= 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT,
                    "profile options: max_tokens, granularity, grid, repeats and block_size must be positive");
    if (o.max_tokens % o.granularity != 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "profile options: max_tokens " + std::to_string(o.max_tokens) +
                                                     " is not a multiple of granularity " +
                                                     std::to_string(o.granularity));
    if (o.max_tokens % o.grid != 0 || (o.max_tokens / o.grid) % o.granularity != 0)
        throw Error(PAGODA_ERR_INVALID_ARGUMENT, "profile options: max_tokens / grid (" +
                                                     std::to_string(o.max_tokens) + " / " + std::to_string(o.grid) +
                                                     ") must be a multiple of granularity " +
                                                     std::to_string(o.granularity));
    if (o.grid < 2) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "profile options: grid must be at least 2 to fit 4 coefficients");
}

MeasuredLayerCosts profile_layer_costs(std::shared_ptr<const model::Model> model, const DeviceGroup &devices,
                                       const std::string &backend, const std::string &description,
                                       const DeviceSpec &spec, const ProfileOptions &o) {
    validate(o);
    if (!model || devices.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "profiler: no model or no device");
    ProfileRig rig(model, devices, o);
    Neighbour neighbour(model, o);
    const double layers = double(model->config().n_layers);
    // The fastest of the repeats: on a shared machine interference only ever adds time.
    auto measure = [&](int64_t tokens, int64_t context) {
        neighbour.set_point(tokens, context);
        for (int32_t i = 0; i < o.warmup; ++i) rig.time(tokens, context);
        double best = INFINITY;
        for (int32_t i = 0; i < o.repeats; ++i) best = std::min(best, rig.time(tokens, context));
        return best / layers;
    };
    // t(l, c) and t(l, 0), their repeats interleaved; the fastest of each.
    auto measure_pair = [&](int64_t tokens, int64_t context) {
        for (int32_t i = 0; i < o.warmup; ++i) {
            neighbour.set_point(tokens, context);
            rig.time(tokens, context);
            neighbour.set_point(tokens, 0);
            rig.time(tokens, 0);
        }
        double with = INFINITY, without = INFINITY;
        for (int32_t i = 0; i < o.repeats; ++i) {
            neighbour.set_point(tokens, context);
            with = std::min(with, rig.time(tokens, context));
            neighbour.set_point(tokens, 0);
            without = std::min(without, rig.time(tokens, 0));
        }
        return std::pair{with / layers, without / layers};
    };

    MeasuredLayerCosts out;
    out.backend = backend;
    out.device = description;
    out.dtype = "f32";
    out.shape = plan::model_shape(model->config());
    out.tensor_parallel = int32_t(devices.size());
    out.device_spec = spec;
    out.granularity = o.granularity;
    for (int64_t l = o.granularity; l <= o.max_tokens; l += o.granularity)
        out.no_context_seconds.push_back(measure(l, 0));

    // The context grid; every third point is held out to judge the fit.
    const int64_t step = o.max_tokens / o.grid;
    std::vector<ContextSample> fit_set, holdout;
    std::vector<double> holdout_totals;
    int64_t index = 0;
    for (int64_t c = step; c <= o.max_tokens; c += step) {
        rig.fill(c);
        // The grid's l, led by the shortest slice the DP may cut (granularity), so that the fit
        // is not extrapolated below the grid where short slices meet long contexts.
        std::vector<int64_t> ls;
        if (o.granularity < step) ls.push_back(o.granularity);
        for (int64_t l = step; l <= o.max_tokens; l += step) ls.push_back(l);
        for (int64_t l : ls) {
            // t(l, 0) again, each repeat beside one of t(l, c), so drift in the machine's speed
            // cancels from the overhead (rewriting positions [0, l) stores the same K/V as
            // before, and t(l, c) rewrites [c, c + l) after it).
            const auto [total, base] = measure_pair(l, c);
            const ContextSample s{l, c, total - base};
            if (index++ % 3 == 2) {
                holdout.push_back(s);
                holdout_totals.push_back(total);
            } else {
                fit_set.push_back(s);
            }
        }
    }
    out.fit = plan::fit_context_term(fit_set);
    out.fit_samples = int64_t(fit_set.size());
    out.holdout_samples = int64_t(holdout.size());
    out.context_fit_error = plan::context_fit_error(out.fit, holdout);
    double rel = 0;
    for (size_t i = 0; i < holdout.size(); ++i)
        rel += std::fabs(out.seconds(holdout[i].tokens, holdout[i].context) - holdout_totals[i]) / holdout_totals[i];
    out.total_fit_error = holdout.empty() ? 0.0 : rel / double(holdout.size());
    return out;
}

std::vector<double> measure_layer_points(std::shared_ptr<const model::Model> model, const DeviceGroup &devices,
                                         const std::vector<LayerPoint> &points, const ProfileOptions &o) {
    validate(o);
    if (!model || devices.empty()) throw Error(PAGODA_ERR_INVALID_ARGUMENT, "profiler: no model or no device");
    ProfileRig rig(model, devices, o);
    Neighbour neighbour(model, o);
    int64_t filled = 0;
    for (const LayerPoint &p : points) filled = std::max(filled, p.context);
    rig.fill(filled);  // every point's context is then cached; time() rewrites only its own slots
    std::vector<double> out;
    for (const LayerPoint &p : points) {
        if (p.tokens <= 0 || p.context < 0 || p.tokens + p.context > 2 * o.max_tokens)
            throw Error(PAGODA_ERR_INVALID_ARGUMENT, "profiler: point (" + std::to_string(p.tokens) + ", " +
                                                         std::to_string(p.context) + ") outside 2·max_tokens");
        neighbour.set_point(p.tokens, p.context);
        for (int32_t i = 0; i < o.warmup; ++i) rig.time(p.tokens, p.context);
        double best = INFINITY;
        for (int32_t i = 0; i < o.repeats; ++i) best = std::min(best, rig.time(p.tokens, p.context));
        out.push_back(best / double(model->config().n_layers));
    }
    return out;
}

}  // namespace pagoda::engine
