// GET /metrics: the engines' counters in Prometheus' text format (version 0.0.4), one series per
// served model (label model_name). Names follow vLLM's with `pagoda_` in place of `vllm:`
// (promtool rejects ':' outside recording rules).
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
