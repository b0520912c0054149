// Engine metrics as Prometheus' text exposition format (version 0.0.4), for GET /metrics:
// one family per metric with # HELP and # TYPE, every model's sample under a `model_name`
// label, histograms as cumulative `_bucket{le=...}` lines ending at +Inf, then `_sum` and
// `_count`. Names are vLLM's (vllm/v1/metrics/loggers.py) under a configurable prefix.
// Depends on nothing but the public engine.h, so any front end (the HTTP server, a host's own
// exporter) can use it.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "pagoda/engine.h"

namespace pagoda::server {

// One engine's figures, under the name its model is served as.
struct ModelMetrics {
    std::string model_name;            // any UTF-8; escaped in the label
    pagoda_engine_metrics_t metrics{};  // as pagoda_engine_get_metrics() fills it
    std::string placement_group{};     // "" = none; else a placement_group label (replicas)
};

struct PrometheusTextOptions {
    // Put before every metric name. "vllm:" gives vLLM's names, so dashboards and alerts built
    // for vLLM read these unchanged; promtool's linter flags the colon (Prometheus keeps
    // colons for recording rules) though the format allows it. "pagoda_" lints clean.
    std::string_view prefix = "vllm:";
};

// The exposition text of every model's metrics; empty for no model. (Model name, placement
// group) pairs must be distinct (each gives one series per metric).
std::string render_prometheus_text(std::span<const ModelMetrics> models,
                                   const PrometheusTextOptions &options = {});

// A label value escaped as the format asks: backslash, double quote and newline.
std::string escape_label_value(std::string_view value);

}  // namespace pagoda::server
