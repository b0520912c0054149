// pagoda-bench-plan: how fast the planners run at the goal sizes, and what TeraPipe
// slicing gains on costs measured on this machine's CPU backend. Prints one JSON object per case.
//
//   pagoda-bench-plan [--json] [--quick] [--skip-measured] [--profile-out FILE]
//                     [--profile-tokens L] [--repeats N] [--plugin-dir DIR]
//
// Cases (field "name"):
//   terapipe_slicing  L tokens over K stages at granularity g (goal: L=8192, K=48, g=8 < 1 s),
//                     exact (ε = 0) and with TeraPipe's ε = 0.1 ms;
//   stage_partition   an 80-layer model (Llama-3-70B's shape) on 8 × 8 H100s (goal < 5 s),
//                     for the latency objective and for throughput with 16 micro-batches;
//   measured_slicing  a random-weight model profiled on the CPU backend with one thread (TeraPipe
//                     Eq. 9 fit and its error), split into 2 stages, its prompt sliced by the DP
//                     against the best uniform slicing: the predicted speedup (paper:
//                     1.04–1.12×). pagoda-bench-mesh runs such slicings on a real pp=2 mesh
//                     and sets each prediction beside its measurement.
//   placement         (hook) AlpaServe placement: added with src/plan/placement*.
// --quick runs small sizes for the CTest smoke entry.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "pagoda/pagoda.h"
#include "plan/cost_model.hpp"
#include "engine/layer_profiler.hpp"
#include "plan/simulator_bench.hpp"
#include "plan/stage_partition.hpp"
#include "plan/terapipe_slicing.hpp"
#include "bench_mesh_common.hpp"
#include "random_gguf.hpp"
#include "runtime/device.hpp"

using namespace pagoda::plan;
using pagoda::engine::profile_layer_costs;
using pagoda::engine::ProfileOptions;

using pagoda::bench_mesh::lengths_json;
using pagoda::bench_mesh::now;

namespace {

// GPT-3 175B's layer (TeraPipe Tab. 1 row 9: 96 layers, 2 per stage at 48 stages) on H100s.
ModelShape gpt3_175b() {
    ModelShape s;
    s.hidden = 12288;
    s.intermediate = 4 * 12288;
    s.layers = 96;
    s.heads = 96;
    s.kv_heads = 96;
    s.head_dim = 128;
    s.vocab = 50257;
    return s;
}

ModelShape llama3_70b() {
    ModelShape s;
    s.hidden = 8192;
    s.intermediate = 28672;
    s.layers = 80;
    s.heads = 64;
    s.kv_heads = 8;
    s.head_dim = 128;
    s.vocab = 128256;
    return s;
}

void bench_slicing(int64_t prompt, int32_t stages, int64_t granularity, double epsilon) {
    const CostModel model(gpt3_175b(), device_preset("h100"));
    const int64_t layers_per_stage = gpt3_175b().layers / stages > 0 ? gpt3_175b().layers / stages : 1;
    const SliceCostFn cost = [&](int64_t l, int64_t c) {
        return double(layers_per_stage) * model.layer_seconds(l, c, 8) + model.send_seconds(l, true);
    };
    SlicingOptions o;
    o.stages = stages;
    o.prompt_tokens = prompt;
    o.granularity = granularity;
    o.epsilon_seconds = epsilon;
    const double start = now();
    const Slicing s = plan_token_slices(cost, o);
    const double seconds = now() - start;
    const Slicing u = best_uniform_slicing(cost, o);
    std::printf("{\"name\":\"terapipe_slicing\",\"prompt_tokens\":%lld,\"stages\":%d,\"granularity\":%lld,"
                "\"epsilon_seconds\":%g,\"seconds\":%.4f,\"candidates_evaluated\":%lld,\"slices\":%zu,"
                "\"latency_seconds\":%.6g,\"uniform_latency_seconds\":%.6g,\"speedup_over_uniform\":%.4f}\n",
                (long long)prompt, stages, (long long)granularity, epsilon, seconds,
                (long long)s.candidates_evaluated, s.lengths.size(), s.latency_seconds, u.latency_seconds,
                u.latency_seconds / s.latency_seconds);
}

void bench_partition(const MeshShape &mesh, PartitionObjective objective, int32_t micro_batches, int64_t layers) {
    ModelShape shape = llama3_70b();
    shape.layers = layers;
    const CostModel model(shape, device_preset("h100"));
    ServingWorkload w;
    w.tokens = 2048;
    w.kv_tokens = 200000;
    const StageCostTable table = make_stage_cost_table(model, mesh, w);
    PartitionOptions o;
    o.objective = objective;
    o.micro_batches = micro_batches;
    const double start = now();
    const StagePartition p = partition_stages(table, mesh, o);
    const double seconds = now() - start;
    std::printf("{\"name\":\"stage_partition\",\"layers\":%lld,\"nodes\":%d,\"devices_per_node\":%d,"
                "\"objective\":\"%s\",\"micro_batches\":%d,\"seconds\":%.4f,\"stages\":%zu,"
                "\"first_stage_tp\":%d,\"latency_seconds\":%.6g,\"max_stage_seconds\":%.6g,\"objective_seconds\":%.6g}\n",
                (long long)layers, mesh.nodes, mesh.devices_per_node,
                objective == PartitionObjective::Latency ? "latency" : "throughput", micro_batches, seconds,
                p.stages.size(), p.stages.front().tensor_parallel, p.latency_seconds, p.max_stage_seconds,
                p.objective_seconds);
}

// Profiles a random-weight model on the CPU backend and plans a 2-stage sliced prefill with it.
void bench_measured(const std::string &plugin_dir, bool quick, const std::string &profile_out,
                    int64_t profile_tokens, int32_t repeats) {
    pagoda::bench::RandomModelShape shape{"plan-profile", 256, 4, 4, 4, 768, 256, 4096};
    pagoda::bench::TempGgufFile file;
    pagoda::bench::write_random_gguf(file.path(), shape, PAGODA_DTYPE_F32, 7);
    pagoda_backend_t *backend = nullptr;
    const std::string so = plugin_dir + "/libpagoda-backend-cpu.so";
    // One thread: the pipeline runs each stage on its own core, so the costs it is planned with
    // are one core's.
    if (pagoda_backend_load(so.c_str(), "threads=1", &backend) != PAGODA_OK) {
        std::fprintf(stderr, "pagoda-bench-plan: %s\n", pagoda_last_error_message());
        return;
    }
    auto device = std::make_shared<const pagoda::runtime::Device>(backend, 0);
    auto model = pagoda::model::open_model(file.path(), {}, nullptr);
    ProfileOptions po;
    po.max_tokens = quick ? 128 : profile_tokens;
    po.granularity = quick ? 32 : 16;
    po.grid = quick ? 4 : 8;
    po.repeats = quick ? 1 : repeats;
    const double start = now();
    const MeasuredLayerCosts costs =
        profile_layer_costs(model, {device}, "cpu", device->name() + " 1 thread", device_preset("cpu"), po);
    const double profile_seconds = now() - start;
    if (!profile_out.empty()) save_measured_costs(profile_out, costs);

    // Two stages of half the layers each; activations cross in memory.
    const CostModel cm(costs);
    const double half = double(shape.layers / 2);
    const SliceCostFn cost = [&](int64_t l, int64_t c) {
        return half * cm.layer_seconds(l, c, 1) + cm.send_seconds(l, false);
    };
    SlicingOptions o;
    o.stages = 2;
    o.prompt_tokens = po.max_tokens;
    o.granularity = po.granularity;
    const Slicing s = plan_token_slices(cost, o);
    const Slicing u = best_uniform_slicing(cost, o);

    std::printf("{\"name\":\"measured_slicing\",\"backend\":\"cpu\",\"model\":\"%s\",\"prompt_tokens\":%lld,"
                "\"stages\":2,\"granularity\":%lld,\"profile_seconds\":%.2f,\"fit\":[%.4g,%.4g,%.4g,%.4g],"
                "\"context_fit_error\":%.4f,\"total_fit_error\":%.4f,\"holdout_samples\":%lld,"
                "\"slices\":%s,\"latency_seconds\":%.6g,\"uniform_slices\":%s,\"uniform_latency_seconds\":%.6g,"
                "\"unsliced_latency_seconds\":%.6g,\"speedup_over_uniform\":%.4f}\n",
                costs.shape.key().c_str(), (long long)o.prompt_tokens, (long long)o.granularity, profile_seconds,
                costs.fit.a0, costs.fit.a1, costs.fit.a2, costs.fit.a3, costs.context_fit_error,
                costs.total_fit_error, (long long)costs.holdout_samples, lengths_json(s.lengths).c_str(),
                s.latency_seconds, lengths_json(u.lengths).c_str(), u.latency_seconds,
                evaluate_slicing(cost, 2, {o.prompt_tokens}).latency_seconds, u.latency_seconds / s.latency_seconds);
}

}  // namespace

int main(int argc, char **argv) {
    bool quick = false, measured = true;
    int64_t profile_tokens = 1024;  // L of the measured slicing: the longest prompt profiled
    int32_t repeats = 3;            // timed runs per profiled point; the fastest is kept
    std::string plugin_dir = PAGODA_BENCH_PLUGIN_DIR, profile_out;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--json") continue;  // the only output format
        else if (a == "--quick") quick = true;
        else if (a == "--skip-measured") measured = false;
        else if (a == "--plugin-dir" && i + 1 < argc) plugin_dir = argv[++i];
        else if (a == "--profile-out" && i + 1 < argc) profile_out = argv[++i];
        else if (a == "--profile-tokens" && i + 1 < argc) profile_tokens = std::atoll(argv[++i]);
        else if (a == "--repeats" && i + 1 < argc) repeats = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr,
                         "usage: pagoda-bench-plan [--json] [--quick] [--skip-measured] [--profile-out FILE] "
                         "[--profile-tokens L] [--repeats N] [--plugin-dir DIR]\n");
            return 2;
        }
    }
    try {
        if (quick) {
            bench_slicing(1024, 8, 8, 0.0);
            bench_partition({2, 8}, PartitionObjective::Latency, 1, 16);
            bench_partition({2, 8}, PartitionObjective::Throughput, 8, 16);
        } else {
            bench_slicing(8192, 48, 8, 0.0);
            bench_slicing(8192, 48, 8, 1e-4);
            bench_slicing(2048, 48, 8, 0.0);
            bench_partition({8, 8}, PartitionObjective::Latency, 1, 80);
            bench_partition({8, 8}, PartitionObjective::Throughput, 16, 80);
        }
        // Hook: the AlpaServe placement case ("name":"placement") goes here.
        {  // src/plan/simulator_bench.hpp: Algorithm 2 on 8 models, and the simulator on a day
            PlacementBenchCase pc;
            if (!quick) pc.nodes = 2;
            for (bool fast : {false, true}) {
                pc.fast_greedy = fast;
                const PlacementBenchResult p = bench_placement(pc);
                std::printf("{\"name\":\"placement\",\"nodes\":%d,\"devices_per_node\":%d,\"models\":%d,"
                            "\"fast_greedy\":%s,\"requests\":%llu,\"simulations\":%lld,\"greedy_runs\":%lld,"
                            "\"slo_attainment\":%.4f,\"seconds\":%.4f}\n",
                            pc.nodes, pc.devices_per_node, pc.models, fast ? "true" : "false",
                            (unsigned long long)p.requests, (long long)p.simulations, (long long)p.greedy_runs,
                            p.slo_attainment, p.seconds);
            }
            SimulatorBenchCase sc;
            if (quick) sc.hours = 0.1;
            const SimulatorBenchResult r = bench_simulator(sc);
            std::printf("{\"name\":\"simulate\",\"hours\":%g,\"total_rate\":%g,\"models\":%d,\"groups\":%d,"
                        "\"requests\":%llu,\"slo_attainment\":%.4f,\"seconds\":%.4f}\n",
                        sc.hours, sc.total_rate, sc.models, sc.groups, (unsigned long long)r.requests,
                        r.slo_attainment, r.seconds);
        }
        if (measured) {
            if (profile_tokens < 128 || profile_tokens % 128 != 0 || repeats < 1) {
                std::fprintf(stderr, "pagoda-bench-plan: --profile-tokens must be a multiple of 128 "
                                     "and --repeats at least 1\n");
                return 2;
            }
            bench_measured(plugin_dir, quick, profile_out, profile_tokens, repeats);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pagoda-bench-plan: %s\n", e.what());
        return 1;
    }
    return 0;
}
