// What the cases of pagoda-bench-mesh share: a model laid out on a mesh with its cache and
// executor (MeshRun), timings taken in turns so that drift reaches every variant alike, and
// their spreads as JSON fields.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec/executor.hpp"
#include "kv/kv_cache.hpp"
#include "mesh/layout.hpp"
#include "mesh/world.hpp"
#include "model/model.hpp"
#include "plan/plan.hpp"
#include "random_gguf.hpp"

namespace pagoda::bench_mesh {

double now();
std::string lengths_json(const std::vector<int64_t> &v);

struct Spread {
    double median = 0, min = 0, max = 0;
};
Spread spread(std::vector<double> v);
// "name":median,"name_min":min,"name_max":max
std::string spread_json(const char *name, const Spread &s);
std::vector<double> ratios(const std::vector<double> &a, const std::vector<double> &b);

// A plan of identical pipeline stages cut at `boundaries` (0, …, n_layers), one device each:
// TeraPipe's setting, which the planner's own split need not be (it weighs the LM head as
// decode pays for it, and a long prefill pays it for one row).
plan::Plan pipeline_plan(const model::Model &model, const std::vector<int32_t> &boundaries);

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
            std::shared_ptr<const mesh::World> world = nullptr);

    // A step of `seqs` sequences (ids 1..seqs), sequence s adding tokens[s] tokens after
    // context[s] cached ones; logits for each sequence's last token.
    exec::ForwardBatch batch(const std::vector<int64_t> &tokens, const std::vector<int64_t> &context, int32_t vocab);
    // Seconds one run of `b` takes.
    double time(const exec::ForwardBatch &b, int32_t vocab);
};

// Pause before each timed run: OpenBLAS's threads spin for a while after a multi-threaded
// call (cpu:0's) before they sleep, and would take a core from the variant that follows.
extern int32_t g_settle_ms;

// Each of `runs` called once per round, rounds after one untimed warm-up; per-variant seconds.
std::vector<std::vector<double>> interleave(const std::vector<std::function<double()>> &runs, int32_t repeats);

// A random f32 model of `shape` (weights from seed 7).
std::shared_ptr<const model::Model> random_model(const bench::RandomModelShape &shape);

// Decode steps of `batch` sequences after `context` cached tokens each, on each run in turn.
// Returns per run the tokens/s of each repeat.
std::vector<std::vector<double>> decode_rates(const std::vector<MeshRun *> &runs, int32_t vocab, int64_t batch,
                                              int64_t context, int32_t steps, int32_t repeats);

// (d) The cases over two processes (bench_mesh_processes.cpp). Rank 0 starts the second rank
// itself (this program again, forwarding `forwarded`), or with `rendezvous` given both were
// started by someone else (a script putting them in two network namespaces). Returns the
// process's exit code.
int bench_processes_main(const char *self, bool quick, int64_t prompt, int32_t repeats, int32_t steps,
                         int32_t world_rank, const std::string &rendezvous, std::vector<std::string> forwarded);

}  // namespace pagoda::bench_mesh
