// pagoda-bench-mesh: the multi-device executor on one machine's CPU backend split into logical
// devices (devices=3,device_threads=2/1/1: cpu:0 two threads, cpu:1 and cpu:2 one each), each
// variant beside what the planner predicts for it. Prints one JSON object per case.
//
//   pagoda-bench-mesh [--json] [--quick] [--prompt L] [--repeats N] [--profile-repeats N]
//                     [--decode-steps S] [--plugin-dir DIR] [--settle-ms MS] [--skip-prefill]
//                     [--skip-decode]
//
// Cases (field "name"):
//   prefill_slicing   one L-token prompt on pp=2 over cpu:1-2 (MeshExecutor, the slices given
//                     as PipelineOptions::prefill_slices): TeraPipe's DP slicing, the best
//                     uniform slicing and no slicing, and the whole model on cpu:0, each with
//                     its prediction (sliced: Eq. 5 on the profiled costs; unsliced:
//                     Σ_k t_k(L, 0) timed alone; cpu:0: its own timing). The profile of cpu:1
//                     is taken with cpu:2 busy beside it (ProfileOptions::neighbour), as the
//                     overlapping slices run; "predicted_*_direct" is Eq. 5 on the slices' own
//                     points timed the same way, without the fit.
//   decode_tp         decode at batch 16 (110m shape, f32): tp=2 over cpu:1-2 against cpu:0.
//   decode_pp         decode at batch 16 on pp=2 over cpu:1-2 with micro-batches (one per
//                     stage) and without; also a mixed step (a prefill chunk beside the decodes).
//   decode_tp_processes, prefill_tp_processes (with --processes): decode at batch 16 and one
//                     L-token prefill (110m shape, f32) on tp=2 over two processes (this one's
//                     cpu:1 and a second pagoda-bench-mesh's, started here and met on a loopback
//                     rendezvous, their collectives through shared memory), against tp=2 over
//                     cpu:1-2 in this process and the whole model on cpu:0: the cost of crossing
//                     processes, as ratios.
// Every timing is repeated with the variants taking turns (A B C A B C …) so that drift in the
// machine's speed reaches each alike; each reports its median, min and max.
// --quick runs a tiny model for the CTest smoke entry.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "capi/mesh_placement.hpp"
#include "exec/executor.hpp"
#include "kv/kv_cache.hpp"
#include "mesh/mesh.hpp"
#include "mesh/world.hpp"
#include "model/model.hpp"
#include "pagoda/pagoda.h"
#include "plan/cost_model.hpp"
#include "engine/layer_profiler.hpp"
#include "plan/model_shape.hpp"
#include "plan/plan.hpp"
#include "plan/terapipe_slicing.hpp"
#include "random_gguf.hpp"

using namespace pagoda;

namespace {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string lengths_json(const std::vector<int64_t> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

struct Spread {
    double median = 0, min = 0, max = 0;
};

Spread spread(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

std::string spread_json(const char *name, const Spread &s) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "\"%s\":%.6g,\"%s_min\":%.6g,\"%s_max\":%.6g", name, s.median, name, s.min,
                  name, s.max);
    return buf;
}

// A plan of identical pipeline stages cut at `boundaries` (0, …, n_layers), one device each:
// TeraPipe's setting, which the planner's own split need not be (it weighs the LM head as
// decode pays for it, and a long prefill pays it for one row).
plan::Plan pipeline_plan(const model::Model &model, const std::vector<int32_t> &boundaries) {
    plan::Plan p;
    p.shape = plan::model_shape(model.config());
    p.mesh = {1, int32_t(boundaries.size() - 1)};
    for (size_t k = 0; k + 1 < boundaries.size(); ++k) {
        plan::Stage s;
        s.first_layer = boundaries[k];
        s.end_layer = boundaries[k + 1];
        s.has_embedding = k == 0;
        s.has_head = k + 2 == boundaries.size();
        p.partition.stages.push_back(s);
    }
    return p;
}

// A model laid out on a mesh the way the public API lays it (place_on_mesh: the planner's plan
// for the mesh's axes, or the stages cut at `boundaries`), its sharded KV cache and the
// executor, with the pipeline options given.
struct MeshRun {
    std::shared_ptr<const mesh::Layout> layout;
    std::shared_ptr<kv::KvCache> cache;
    std::unique_ptr<exec::Executor> executor;
    std::vector<float> logits;

    // With `world`, `devices` are this process's share of a mesh over the world's processes.
    MeshRun(const std::shared_ptr<const model::Model> &model, const std::string &devices, const std::string &axes,
            exec::PipelineOptions pipeline, int64_t capacity_tokens, const std::vector<int32_t> &boundaries = {},
            std::shared_ptr<const mesh::World> world = nullptr) {
        const mesh::Mesh mesh(devices, axes, world);
        const plan::Plan cut = boundaries.empty() ? plan::Plan{} : pipeline_plan(*model, boundaries);
        MeshPlacement placement = place_on_mesh(*model, mesh, boundaries.empty() ? nullptr : &cut);
        layout = placement.layout;
        const model::ModelConfig &c = model->config();
        kv::KvGeometry g;
        g.dtype = PAGODA_DTYPE_F32;
        g.block_size = 16;
        g.num_blocks = capacity_tokens / g.block_size + 2;
        g.n_layers = c.n_layers;
        g.n_kv_heads = c.n_kv_heads;
        g.head_dim = c.head_dim;
        kv::KvCacheOptions ko;
        ko.prefix_caching = false;
        cache = std::make_shared<kv::KvCache>(kv_shards_for(c, mesh, *layout), g, ko);
        executor = exec::make_executor(model, cache, *layout, pipeline, world);
    }

    // A step of `seqs` sequences (ids 1..seqs), sequence s adding tokens[s] tokens after
    // context[s] cached ones; logits for each sequence's last token.
    exec::ForwardBatch batch(const std::vector<int64_t> &tokens, const std::vector<int64_t> &context, int32_t vocab) {
        exec::ForwardBatch b;
        const int32_t bs = cache->geometry().block_size;
        size_t widest = 0;
        for (size_t s = 0; s < tokens.size(); ++s) {
            if (!cache->reserve(s + 1, context[s] + tokens[s])) throw std::runtime_error("no KV room");
            widest = std::max(widest, cache->table(s + 1).size());
        }
        b.max_blocks_per_seq = int32_t(widest);
        b.query_start.push_back(0);
        for (size_t s = 0; s < tokens.size(); ++s) {
            const std::vector<int32_t> &table = cache->table(s + 1);
            for (int64_t i = 0; i < tokens[s]; ++i) {
                const int64_t pos = context[s] + i;
                b.token_ids.push_back(int32_t((pos * 7919 + int64_t(s) * 131) % vocab));
                b.positions.push_back(int32_t(pos));
                b.slot_mapping.push_back(int64_t(table[size_t(pos / bs)]) * bs + pos % bs);
            }
            b.query_start.push_back(b.n_tokens());
            b.context_lens.push_back(int32_t(context[s] + tokens[s]));
            b.max_context_len = std::max(b.max_context_len, b.context_lens.back());
            std::vector<int32_t> row(widest, 0);
            std::copy(table.begin(), table.end(), row.begin());
            b.block_tables.insert(b.block_tables.end(), row.begin(), row.end());
            b.logit_rows.push_back(b.n_tokens() - 1);
        }
        return b;
    }

    double time(const exec::ForwardBatch &b, int32_t vocab) {
        logits.resize(b.logit_rows.size() * size_t(vocab));
        const double start = now();
        executor->run(b, logits.data());
        return now() - start;
    }
};

// Pause before each timed run: OpenBLAS's threads spin for a while after a multi-threaded
// call (cpu:0's) before they sleep, and would take a core from the variant that follows.
int32_t g_settle_ms = 200;

// Each of `runs` called once per round, rounds after one untimed warm-up; per-variant seconds.
std::vector<std::vector<double>> interleave(const std::vector<std::function<double()>> &runs, int32_t repeats) {
    std::vector<std::vector<double>> out(runs.size());
    for (int32_t r = 0; r <= repeats; ++r)
        for (size_t i = 0; i < runs.size(); ++i) {
            if (g_settle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(g_settle_ms));
            const double t = runs[i]();
            if (r > 0) out[i].push_back(t);
        }
    return out;
}

std::shared_ptr<const model::Model> random_model(const bench::RandomModelShape &shape) {
    bench::TempGgufFile file;
    bench::write_random_gguf(file.path(), shape, PAGODA_DTYPE_F32, 7);
    return model::open_model(file.path(), {}, nullptr);
}

std::shared_ptr<const runtime::Device> device(const std::string &name) {
    return mesh::Mesh(name, "").devices().front();
}

// (a) TeraPipe on pp=2 against the alternatives, each beside its prediction.
void bench_prefill(bool quick, int64_t prompt, int32_t repeats, int32_t profile_repeats) {
    const bench::RandomModelShape shape{"mesh-prefill", 256, 4, 4, 4, 768, 4096, 2 * prompt + 64};
    auto model = random_model(shape);
    const int32_t vocab = int32_t(shape.vocab);

    // cpu:1's layer costs, timed with cpu:2 running beside it (both 1-thread devices).
    engine::ProfileOptions po;
    po.max_tokens = prompt;
    po.granularity = 32;
    po.grid = quick ? 4 : 8;
    po.repeats = profile_repeats;
    po.neighbour = {device("cpu:2")};
    double start = now();
    const plan::MeasuredLayerCosts costs =
        engine::profile_layer_costs(model, {device("cpu:1")}, "cpu", "cpu:1 1 thread beside cpu:2",
                                  plan::device_preset("cpu"), po);
    const double profile_seconds = now() - start;

    const exec::PipelineOptions unsliced_opts;
    const std::vector<int32_t> halves{0, int32_t(shape.layers / 2), int32_t(shape.layers)};
    MeshRun unsliced(model, "cpu:1-2", "pp=2", unsliced_opts, prompt, halves);
    const std::vector<mesh::StagePlacement> &stages = unsliced.layout->stages();
    const plan::CostModel cm(costs);
    // One stage's time for a slice: its layers plus the hand-off; the slowest stage sets Eq. 5.
    auto stage_seconds = [&](const mesh::StagePlacement &st, int64_t l, int64_t c) {
        return double(st.end_layer - st.first_layer) * cm.layer_seconds(l, c, 1) + cm.send_seconds(l, false);
    };
    const plan::SliceCostFn cost = [&](int64_t l, int64_t c) {
        double worst = 0;
        for (const auto &st : stages) worst = std::max(worst, stage_seconds(st, l, c));
        return worst;
    };
    plan::SlicingOptions so;
    so.stages = int32_t(stages.size());
    so.prompt_tokens = prompt;
    so.granularity = po.granularity;
    const plan::Slicing dp = plan::plan_token_slices(cost, so);
    const plan::Slicing uniform = plan::best_uniform_slicing(cost, so);
    // Σ_k t_k(L, 0): the stages one after another, so each is timed alone, not beside a busy
    // neighbour as the overlapping slices are.
    engine::ProfileOptions alone = po;
    alone.neighbour.clear();
    const double t_alone = engine::measure_layer_points(model, {device("cpu:1")}, {{prompt, 0}}, alone).front();
    double predicted_unsliced = 0;
    for (const auto &st : stages)
        predicted_unsliced += double(st.end_layer - st.first_layer) * t_alone + cm.send_seconds(prompt, false);

    // The same prediction from the slices' own points timed directly (no fit): what is left
    // between it and the measurement is the executor's, not the cost model's.
    auto direct = [&](const std::vector<int64_t> &lengths) {
        std::vector<engine::LayerPoint> points;
        int64_t c = 0;
        for (int64_t l : lengths) {
            points.push_back({l, c});
            c += l;
        }
        const std::vector<double> t = engine::measure_layer_points(model, {device("cpu:1")}, points, po);
        double sum = 0, worst = 0;
        for (size_t i = 0; i < t.size(); ++i) {
            double slowest = 0;
            for (const auto &st : stages)
                slowest = std::max(slowest, double(st.end_layer - st.first_layer) * t[i] +
                                                cm.send_seconds(lengths[i], false));
            sum += slowest;
            worst = std::max(worst, slowest);
        }
        return sum + double(stages.size() - 1) * worst;  // Eq. 5
    };
    const double direct_dp = direct(dp.lengths), direct_uniform = direct(uniform.lengths);

    // cpu:0 (2 threads) unsliced: its own profile of the one point it runs.
    const double predicted_cpu0 =
        double(shape.layers) * engine::measure_layer_points(model, {device("cpu:0")}, {{prompt, 0}}, alone).front();

    exec::PipelineOptions dp_opts, uniform_opts;
    dp_opts.prefill_slices = dp.lengths;
    uniform_opts.prefill_slices = uniform.lengths;
    for (auto *o : {&dp_opts, &uniform_opts}) {
        o->granularity = po.granularity;
        o->slice_min_tokens = 1;
    }
    MeshRun sliced_dp(model, "cpu:1-2", "pp=2", dp_opts, prompt, halves);
    MeshRun sliced_uniform(model, "cpu:1-2", "pp=2", uniform_opts, prompt, halves);
    MeshRun one(model, "cpu:0", "", {}, prompt);
    const exec::ForwardBatch b_dp = sliced_dp.batch({prompt}, {0}, vocab);
    const exec::ForwardBatch b_uniform = sliced_uniform.batch({prompt}, {0}, vocab);
    const exec::ForwardBatch b_unsliced = unsliced.batch({prompt}, {0}, vocab);
    const exec::ForwardBatch b_one = one.batch({prompt}, {0}, vocab);
    start = now();
    const auto m = interleave({[&] { return sliced_dp.time(b_dp, vocab); },
                               [&] { return sliced_uniform.time(b_uniform, vocab); },
                               [&] { return unsliced.time(b_unsliced, vocab); },
                               [&] { return one.time(b_one, vocab); }},
                              repeats);
    const double run_seconds = now() - start;
    const Spread s_dp = spread(m[0]), s_uniform = spread(m[1]), s_unsliced = spread(m[2]), s_one = spread(m[3]);
    std::vector<double> ratio;
    for (size_t i = 0; i < m[0].size(); ++i) ratio.push_back(m[1][i] / m[0][i]);
    // Against the median; the profile keeps the fastest of its repeats, so on a loaded machine
    // the error against the fastest run ("_vs_min") is the like-for-like one.
    auto err = [](double predicted, double measured) { return (predicted - measured) / measured; };
    std::printf(
        "{\"name\":\"prefill_slicing\",\"layout\":\"%s\",\"prompt_tokens\":%lld,\"granularity\":%lld,"
        "\"repeats\":%d,\"profile_seconds\":%.1f,\"run_seconds\":%.1f,\"fit\":[%.4g,%.4g,%.4g,%.4g],"
        "\"context_fit_error\":%.4f,\"total_fit_error\":%.4f,"
        "\"dp_slices\":%s,\"uniform_slices\":%s,"
        "\"predicted_dp\":%.6g,\"predicted_dp_direct\":%.6g,%s,\"error_dp\":%.4f,\"error_dp_vs_min\":%.4f,"
        "\"predicted_uniform\":%.6g,\"predicted_uniform_direct\":%.6g,%s,\"error_uniform\":%.4f,\"error_uniform_vs_min\":%.4f,"
        "\"predicted_unsliced\":%.6g,%s,\"error_unsliced\":%.4f,\"error_unsliced_vs_min\":%.4f,"
        "\"predicted_cpu0\":%.6g,%s,\"error_cpu0\":%.4f,\"error_cpu0_vs_min\":%.4f,"
        "\"predicted_speedup_over_uniform\":%.4f,%s}\n",
        unsliced.layout->describe().c_str(), (long long)prompt, (long long)po.granularity, repeats,
        profile_seconds, run_seconds, costs.fit.a0, costs.fit.a1, costs.fit.a2, costs.fit.a3,
        costs.context_fit_error, costs.total_fit_error, lengths_json(dp.lengths).c_str(),
        lengths_json(uniform.lengths).c_str(), dp.latency_seconds, direct_dp,
        spread_json("measured_dp", s_dp).c_str(), err(dp.latency_seconds, s_dp.median), err(dp.latency_seconds, s_dp.min), uniform.latency_seconds,
        direct_uniform, spread_json("measured_uniform", s_uniform).c_str(),
        err(uniform.latency_seconds, s_uniform.median), err(uniform.latency_seconds, s_uniform.min), predicted_unsliced,
        spread_json("measured_unsliced", s_unsliced).c_str(), err(predicted_unsliced, s_unsliced.median), err(predicted_unsliced, s_unsliced.min),
        predicted_cpu0, spread_json("measured_cpu0", s_one).c_str(), err(predicted_cpu0, s_one.median), err(predicted_cpu0, s_one.min),
        uniform.latency_seconds / dp.latency_seconds,
        spread_json("measured_speedup_over_uniform", spread(ratio)).c_str());
    std::fflush(stdout);
}

// Decode steps of `batch` sequences after `context` cached tokens each, on each run in turn.
// Returns per run the tokens/s of each repeat.
std::vector<std::vector<double>> decode_rates(const std::vector<MeshRun *> &runs, int32_t vocab, int64_t batch,
                                              int64_t context, int32_t steps, int32_t repeats) {
    for (MeshRun *r : runs)  // the prompts, once
        r->time(r->batch(std::vector<int64_t>(size_t(batch), context), std::vector<int64_t>(size_t(batch), 0), vocab),
                vocab);
    std::vector<std::vector<exec::ForwardBatch>> step_batches;
    for (MeshRun *r : runs) {
        std::vector<exec::ForwardBatch> v;
        for (int32_t s = 0; s < steps; ++s)
            v.push_back(r->batch(std::vector<int64_t>(size_t(batch), 1),
                                 std::vector<int64_t>(size_t(batch), context + s), vocab));
        step_batches.push_back(std::move(v));
    }
    std::vector<std::function<double()>> fns;
    for (size_t i = 0; i < runs.size(); ++i)
        fns.push_back([&, i] {
            double t = 0;
            for (const exec::ForwardBatch &b : step_batches[i]) t += runs[i]->time(b, vocab);
            return double(batch * steps) / t;
        });
    return interleave(fns, repeats);
}

std::vector<double> ratios(const std::vector<double> &a, const std::vector<double> &b) {
    std::vector<double> r;
    for (size_t i = 0; i < a.size(); ++i) r.push_back(a[i] / b[i]);
    return r;
}

// (b) tp=2 on two 1-thread devices against one 2-thread device; (c) pp=2 with and without
// micro-batches.
void bench_decode(bool quick, int32_t repeats, int32_t steps) {
    const bench::RandomModelShape shape = bench::random_model_shape(quick ? "tiny" : "110m");
    auto model = random_model(shape);
    const int32_t vocab = int32_t(shape.vocab);
    const int64_t batch = 16, context = quick ? 16 : 64, capacity = batch * (context + steps + 16) + 1024;
    {
        MeshRun tp(model, "cpu:1-2", "tp=2", {}, capacity), one(model, "cpu:0", "", {}, capacity);
        const auto r = decode_rates({&tp, &one}, vocab, batch, context, steps, repeats);
        std::printf("{\"name\":\"decode_tp\",\"model\":\"%s\",\"batch\":%lld,\"context\":%lld,\"steps\":%d,"
                    "\"repeats\":%d,%s,%s,%s}\n",
                    shape.name.c_str(), (long long)batch, (long long)context, steps, repeats,
                    spread_json("tp2_tokens_per_second", spread(r[0])).c_str(),
                    spread_json("cpu0_tokens_per_second", spread(r[1])).c_str(),
                    spread_json("ratio", spread(ratios(r[0], r[1]))).c_str());
        std::fflush(stdout);
    }
    exec::PipelineOptions micro, none;
    micro.micro_batches = 2;  // one per stage
    none.micro_batches = 1;
    MeshRun pp_micro(model, "cpu:1-2", "pp=2", micro, capacity), pp_none(model, "cpu:1-2", "pp=2", none, capacity);
    const auto r = decode_rates({&pp_micro, &pp_none}, vocab, batch, context, steps, repeats);
    std::printf("{\"name\":\"decode_pp\",\"model\":\"%s\",\"layout\":\"%s\",\"batch\":%lld,\"context\":%lld,"
                "\"steps\":%d,\"repeats\":%d,%s,%s,%s}\n",
                shape.name.c_str(), pp_micro.layout->describe().c_str(), (long long)batch, (long long)context, steps,
                repeats, spread_json("micro_batched_tokens_per_second", spread(r[0])).c_str(),
                spread_json("whole_batch_tokens_per_second", spread(r[1])).c_str(),
                spread_json("ratio", spread(ratios(r[0], r[1]))).c_str());
    std::fflush(stdout);

    // Mixed: one sequence's prefill chunk beside 15 decodes in the same step.
    const int64_t chunk = quick ? 32 : 256;
    std::vector<int64_t> tokens(size_t(batch), 1), ctx(size_t(batch), context + steps);
    tokens[0] = chunk;
    ctx[0] = 0;
    const exec::ForwardBatch b_micro = pp_micro.batch(tokens, ctx, vocab), b_none = pp_none.batch(tokens, ctx, vocab);
    const auto mixed = interleave({[&] { return pp_micro.time(b_micro, vocab); },
                                   [&] { return pp_none.time(b_none, vocab); }},
                                  repeats);
    std::printf("{\"name\":\"mixed_pp\",\"model\":\"%s\",\"prefill_tokens\":%lld,\"decodes\":%lld,\"repeats\":%d,"
                "%s,%s,%s}\n",
                shape.name.c_str(), (long long)chunk, (long long)(batch - 1), repeats,
                spread_json("micro_batched_step_seconds", spread(mixed[0])).c_str(),
                spread_json("whole_batch_step_seconds", spread(mixed[1])).c_str(),
                spread_json("speedup", spread(ratios(mixed[1], mixed[0]))).c_str());
    std::fflush(stdout);
}

// (d) tp=2 across two processes against tp=2 in one and one device. Rank 1 makes the same calls
// on its own share of the cross-process mesh, in the same order, so that its runs pair with
// rank 0's; it prints nothing.
void bench_processes(bool quick, int64_t prompt, int32_t repeats, int32_t steps,
                     const std::shared_ptr<const mesh::World> &world) {
    const bench::RandomModelShape shape = bench::random_model_shape(quick ? "tiny" : "110m");
    auto model = random_model(shape);
    const int32_t vocab = int32_t(shape.vocab);
    const bool leads = world->rank() == 0;
    const int64_t batch = 16, context = quick ? 16 : 64;
    const int64_t capacity = prompt + batch * (context + steps + 16) + 1024;  // the decodes, then seq 1 grown
    MeshRun across(model, "cpu:1", "tp=2", {}, capacity, {}, world);
    std::unique_ptr<MeshRun> inside, one;
    if (leads) {
        inside = std::make_unique<MeshRun>(model, "cpu:1-2", "tp=2", exec::PipelineOptions{}, capacity);
        one = std::make_unique<MeshRun>(model, "cpu:0", "", exec::PipelineOptions{}, capacity);
    }
    std::vector<MeshRun *> runs{&across};
    if (leads) runs.insert(runs.end(), {inside.get(), one.get()});
    const auto decode = decode_rates(runs, vocab, batch, context, steps, repeats);
    std::vector<exec::ForwardBatch> prefills;
    for (MeshRun *r : runs) prefills.push_back(r->batch({prompt}, {0}, vocab));
    std::vector<std::function<double()>> fns;
    for (size_t i = 0; i < runs.size(); ++i) fns.push_back([&, i] { return runs[i]->time(prefills[i], vocab); });
    const auto prefill = interleave(fns, repeats);
    if (!leads) return;
    std::printf("{\"name\":\"decode_tp_processes\",\"model\":\"%s\",\"batch\":%lld,\"context\":%lld,\"steps\":%d,"
                "\"repeats\":%d,%s,%s,%s,%s,%s}\n",
                shape.name.c_str(), (long long)batch, (long long)context, steps, repeats,
                spread_json("tp2_processes_tokens_per_second", spread(decode[0])).c_str(),
                spread_json("tp2_one_process_tokens_per_second", spread(decode[1])).c_str(),
                spread_json("cpu0_tokens_per_second", spread(decode[2])).c_str(),
                spread_json("processes_over_one_process", spread(ratios(decode[0], decode[1]))).c_str(),
                spread_json("processes_over_cpu0", spread(ratios(decode[0], decode[2]))).c_str());
    std::printf("{\"name\":\"prefill_tp_processes\",\"model\":\"%s\",\"prompt\":%lld,\"repeats\":%d,%s,%s,%s,%s,%s}\n",
                shape.name.c_str(), (long long)prompt, repeats,
                spread_json("tp2_processes_seconds", spread(prefill[0])).c_str(),
                spread_json("tp2_one_process_seconds", spread(prefill[1])).c_str(),
                spread_json("cpu0_seconds", spread(prefill[2])).c_str(),
                spread_json("processes_speed_over_one_process", spread(ratios(prefill[1], prefill[0]))).c_str(),
                spread_json("processes_speed_over_cpu0", spread(ratios(prefill[2], prefill[0]))).c_str());
    std::fflush(stdout);
}

// A loopback port the kernel has just picked for nobody (it may be taken again before rank 0
// listens; then the rendezvous fails, naming it).
int free_loopback_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0;
    if (fd >= 0) close(fd);
    if (!ok) throw std::runtime_error("no free loopback port");
    return ntohs(a.sin_port);
}

// Starts rank 1 of the cross-process cases: this program again, with the same settings.
pid_t start_second_rank(const char *self, const std::string &rendezvous, std::vector<std::string> args) {
    args.insert(args.end(), {"--world-rank", "1", "--rendezvous", rendezvous});
    std::vector<char *> argv{const_cast<char *>(self)};
    for (std::string &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    return pid;
}

}  // namespace

int main(int argc, char **argv) {
    bool quick = false, prefill = true, decode = true, processes = false;
    int32_t world_rank = 0;
    std::string rendezvous;
    int64_t prompt = 2048;
    int32_t repeats = 5, profile_repeats = 2, steps = 16;
    std::string plugin_dir = PAGODA_BENCH_PLUGIN_DIR;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--json") continue;  // the only output format
        else if (a == "--processes") processes = true;
        else if (a == "--world-rank" && has_value) world_rank = std::atoi(argv[++i]);
        else if (a == "--rendezvous" && has_value) rendezvous = argv[++i];
        else if (a == "--quick") quick = true;
        else if (a == "--skip-prefill") prefill = false;
        else if (a == "--skip-decode") decode = false;
        else if (a == "--prompt" && i + 1 < argc) prompt = std::atoll(argv[++i]);
        else if (a == "--repeats" && i + 1 < argc) repeats = std::atoi(argv[++i]);
        else if (a == "--profile-repeats" && i + 1 < argc) profile_repeats = std::atoi(argv[++i]);
        else if (a == "--decode-steps" && i + 1 < argc) steps = std::atoi(argv[++i]);
        else if (a == "--plugin-dir" && i + 1 < argc) plugin_dir = argv[++i];
        else if (a == "--settle-ms" && i + 1 < argc) g_settle_ms = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: pagoda-bench-mesh [--json] [--quick] [--prompt L] [--repeats N] "
                                 "[--profile-repeats N] [--decode-steps S] [--plugin-dir DIR] [--settle-ms MS] "
                                 "[--skip-prefill] [--skip-decode] [--processes]\n");
            return 2;
        }
    }
    // The settings a second rank of the cross-process cases takes too.
    std::vector<std::string> forwarded{"--prompt", std::to_string(prompt), "--repeats", std::to_string(repeats),
                                       "--decode-steps", std::to_string(steps), "--plugin-dir", plugin_dir,
                                       "--settle-ms", std::to_string(g_settle_ms)};
    if (quick) forwarded.push_back("--quick");
    if (quick) {
        g_settle_ms = 0;
        prompt = 256;
        repeats = 1;
        profile_repeats = 1;
        steps = 2;
    }
    if (prompt < 256 || prompt % 256 != 0 || repeats < 1 || profile_repeats < 1 || steps < 1) {
        std::fprintf(stderr, "pagoda-bench-mesh: --prompt must be a multiple of 256, the counts at least 1\n");
        return 2;
    }
    const std::string so = plugin_dir + "/libpagoda-backend-cpu.so";
    pagoda_backend_t *backend = nullptr;
    if (pagoda_backend_load(so.c_str(), "devices=3,device_threads=2/1/1", &backend) != PAGODA_OK) {
        std::fprintf(stderr, "pagoda-bench-mesh: %s\n", pagoda_last_error_message());
        return 1;
    }
    pid_t second = -1;
    try {
        if (world_rank == 1) {
            mesh::WorldOptions w;
            w.rank = 1;
            w.size = 2;
            w.rendezvous = rendezvous;
            bench_processes(quick, prompt, repeats, steps, std::make_shared<const mesh::World>(w));
            return 0;
        }
        if (prefill) bench_prefill(quick, prompt, repeats, profile_repeats);
        if (decode) bench_decode(quick, repeats, steps);
        if (processes) {
            mesh::WorldOptions w;
            w.rank = 0;
            w.size = 2;
            w.rendezvous = "127.0.0.1:" + std::to_string(free_loopback_port());
            second = start_second_rank(argv[0], w.rendezvous, forwarded);
            bench_processes(quick, prompt, repeats, steps, std::make_shared<const mesh::World>(w));
            int status = 0;
            waitpid(second, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                std::fprintf(stderr, "pagoda-bench-mesh: the second rank ended with status 0x%x\n", status);
                return 1;
            }
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pagoda-bench-mesh: %s\n", e.what());
        if (second > 0) {
            kill(second, SIGKILL);
            waitpid(second, nullptr, 0);
        }
        return 1;
    }
    return 0;
}
