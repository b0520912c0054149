// pagoda-bench-mesh: the multi-device executor on one machine's CPU backend split into logical
// devices (devices=3,device_threads=2/1/1: cpu:0 two threads, cpu:1 and cpu:2 one each), each
// variant beside what the planner predicts for it. Prints one JSON object per case.
//
//   pagoda-bench-mesh [--json] [--quick] [--prompt L] [--repeats N] [--profile-repeats N]
//                     [--decode-steps S] [--plugin-dir DIR] [--settle-ms MS] [--skip-prefill]
//                     [--skip-decode] [--processes [--world-rank R --rendezvous HOST:PORT]]
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
//   decode_tp_processes, prefill_tp_processes, all_reduce_tp2_processes, link_profile (with
//                     --processes): tp=2 over two processes, through shared memory and through
//                     Gloo over TCP, and the all-reduces alone beside the cost model's prediction
//                     from the links measured in turns with them (bench_mesh_processes.cpp). The second rank is this program again,
//                     started here and met on loopback; or, with --world-rank R --rendezvous
//                     HOST:PORT (and HOST:PORT+1 free), both ranks are started by someone else,
//                     in two network namespaces say, and run only these cases.
// Every timing is repeated with the variants taking turns (A B C A B C …) so that drift in the
// machine's speed reaches each alike; each reports its median, min and max.
// --quick runs a tiny model for the CTest smoke entry.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_mesh_common.hpp"
#include "engine/layer_profiler.hpp"
#include "mesh/mesh.hpp"
#include "pagoda/pagoda.h"
#include "plan/cost_model.hpp"
#include "plan/model_shape.hpp"
#include "plan/plan.hpp"
#include "plan/terapipe_slicing.hpp"

using namespace pagoda;
using namespace pagoda::bench_mesh;

namespace {

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

}  // namespace

int main(int argc, char **argv) {
    bool quick = false, prefill = true, decode = true, processes = false;
    int32_t world_rank = 0;  // with --rendezvous: this process's rank of the two
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
                                 "[--skip-prefill] [--skip-decode] [--processes [--world-rank R --rendezvous HOST:PORT]]\n");
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
    try {
        if (!rendezvous.empty())
            return bench_processes_main(argv[0], quick, prompt, repeats, steps, world_rank, rendezvous, {});
        if (prefill) bench_prefill(quick, prompt, repeats, profile_repeats);
        if (decode) bench_decode(quick, repeats, steps);
        if (processes) return bench_processes_main(argv[0], quick, prompt, repeats, steps, 0, "", forwarded);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pagoda-bench-mesh: %s\n", e.what());
        return 1;
    }
    return 0;
}
