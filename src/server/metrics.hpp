// GET /metrics: every served engine's metrics (pagoda_engine_get_metrics()'s) in Prometheus' text format
// (version 0.0.4, prometheus_text.hpp), one series per served model (label model_name; a
// placement's replicas add placement_group), and the placement's SLO rejections. Names
// are vLLM's with `pagoda_` in place of `vllm:`: promtool's linter rejects ':' outside
// recording rules, and the endpoint must pass `promtool check metrics`.
#pragma once

#include <string>
#include <vector>

#include "pagoda/engine.h"
#include "server/engine_port.hpp"

namespace pagoda::server {

struct MetricsSource {
    std::string model_name;
    const EnginePort *engine;
    int32_t placement_group = -1;  // a placement's replica: its group, as a label
};

// A placement's model and the requests its controller rejected at arrival (SLO).
struct SloRejections {
    std::string model_name;
    uint64_t rejected = 0;
};

std::string render_metrics(const std::vector<MetricsSource> &sources,
                           const std::vector<SloRejections> &rejections = {});

}  // namespace pagoda::server
