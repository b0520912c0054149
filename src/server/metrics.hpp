// GET /metrics: every served engine's pagoda_engine_get_metrics() in Prometheus' text format
// (version 0.0.4, prometheus_text.hpp), one series per served model (label model_name). Names
// are vLLM's with `pagoda_` in place of `vllm:`: promtool's linter rejects ':' outside
// recording rules, and the endpoint must pass `promtool check metrics`.
#pragma once

#include <string>
#include <vector>

#include "pagoda/engine.h"

namespace pagoda::server {

struct MetricsSource {
    std::string model_name;
    const pagoda_engine_t *engine;
};

std::string render_metrics(const std::vector<MetricsSource> &sources);

}  // namespace pagoda::server
