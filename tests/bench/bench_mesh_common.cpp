#include "bench_mesh_common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "capi/mesh_placement.hpp"
#include "mesh/mesh.hpp"
#include "plan/model_shape.hpp"

namespace pagoda::bench_mesh {

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string lengths_json(const std::vector<int64_t> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

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

MeshRun::MeshRun(const std::shared_ptr<const model::Model> &model, const std::string &devices,
                 const std::string &axes, exec::PipelineOptions pipeline, int64_t capacity_tokens,
                 const std::vector<int32_t> &boundaries, std::shared_ptr<const mesh::World> world) {
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

exec::ForwardBatch MeshRun::batch(const std::vector<int64_t> &tokens, const std::vector<int64_t> &context,
                                  int32_t vocab) {
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

double MeshRun::time(const exec::ForwardBatch &b, int32_t vocab) {
    logits.resize(b.logit_rows.size() * size_t(vocab));
    const double start = now();
    executor->run(b, logits.data());
    return now() - start;
}

int32_t g_settle_ms = 200;

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

}  // namespace pagoda::bench_mesh
