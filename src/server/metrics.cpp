#include "server/metrics.hpp"

#include <cstdio>
#include <functional>

#include "capi/handles.hpp"
#include "pagoda/kv_cache.h"

namespace pagoda::server {

namespace {

struct Sample {
    pagoda_engine_stats_t engine{};
    pagoda_kv_cache_stats_t kv{};
};

std::string label_value(const std::string &s) {
    std::string out;
    for (char c : s) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

void family(std::string &out, const char *name, const char *type, const char *help,
            const std::vector<std::pair<std::string, Sample>> &samples,
            const std::function<double(const Sample &)> &value) {
    out += std::string("# HELP ") + name + " " + help + "\n";
    out += std::string("# TYPE ") + name + " " + type + "\n";
    for (const auto &[model, s] : samples) {
        char num[64];
        std::snprintf(num, sizeof num, "%.17g", value(s));
        out += std::string(name) + "{model_name=\"" + label_value(model) + "\"} " + num + "\n";
    }
}

}  // namespace

std::string render_metrics(const std::vector<MetricsSource> &sources) {
    std::vector<std::pair<std::string, Sample>> samples;
    for (const MetricsSource &src : sources) {
        Sample s;
        s.engine.struct_size = sizeof s.engine;
        s.kv.struct_size = sizeof s.kv;
        if (pagoda_engine_get_stats(src.engine, &s.engine) != PAGODA_OK) continue;
        if (src.engine->cache != nullptr) pagoda_kv_cache_get_stats(src.engine->cache, &s.kv);
        samples.emplace_back(src.model_name, s);
    }
    std::string out;
    family(out, "pagoda_num_requests_running", "gauge", "Requests holding KV blocks on the device.", samples,
           [](const Sample &s) { return double(s.engine.requests_running); });
    family(out, "pagoda_num_requests_waiting", "gauge", "Requests waiting to be scheduled.", samples,
           [](const Sample &s) { return double(s.engine.requests_waiting); });
    family(out, "pagoda_num_requests_swapped", "gauge", "Requests preempted to host swap space.", samples,
           [](const Sample &s) { return double(s.engine.requests_swapped); });
    family(out, "pagoda_kv_cache_usage_ratio", "gauge", "Fraction of KV blocks in use (0 to 1).", samples,
           [](const Sample &s) {
               return s.kv.blocks_total > 0 ? double(s.kv.blocks_used) / double(s.kv.blocks_total) : 0.0;
           });
    family(out, "pagoda_kv_cache_blocks_used", "gauge", "KV blocks held by running sequences.", samples,
           [](const Sample &s) { return double(s.kv.blocks_used); });
    family(out, "pagoda_kv_cache_blocks_cached", "gauge", "KV blocks kept only for the prefix cache.", samples,
           [](const Sample &s) { return double(s.kv.blocks_cached); });
    family(out, "pagoda_kv_cache_num_blocks", "gauge", "KV blocks in the device pool.", samples,
           [](const Sample &s) { return double(s.kv.blocks_total); });
    family(out, "pagoda_swap_blocks_used", "gauge", "Host swap blocks holding preempted sequences.", samples,
           [](const Sample &s) { return double(s.kv.swap_blocks_used); });
    family(out, "pagoda_num_preemptions_total", "counter", "Preemptions (recompute and swap).", samples,
           [](const Sample &s) { return double(s.engine.preemptions_recompute + s.engine.preemptions_swap); });
    family(out, "pagoda_prompt_tokens_total", "counter", "Prompt tokens computed.", samples,
           [](const Sample &s) { return double(s.engine.prompt_tokens); });
    family(out, "pagoda_generation_tokens_total", "counter", "Tokens generated.", samples,
           [](const Sample &s) { return double(s.engine.generated_tokens); });
    family(out, "pagoda_request_finished_total", "counter", "Requests ended, for any reason.", samples,
           [](const Sample &s) { return double(s.engine.requests_finished); });
    family(out, "pagoda_engine_steps_total", "counter", "Engine steps that ran the model.", samples,
           [](const Sample &s) { return double(s.engine.steps); });
    family(out, "pagoda_prefix_cache_queries_total", "counter", "Prompt blocks looked up in the prefix cache.",
           samples, [](const Sample &s) { return double(s.kv.prefix_queries); });
    family(out, "pagoda_prefix_cache_hits_total", "counter", "Prompt blocks found in the prefix cache.", samples,
           [](const Sample &s) { return double(s.kv.prefix_hits); });
    return out;
}

}  // namespace pagoda::server
