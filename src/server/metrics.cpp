#include "server/metrics.hpp"

#include "server/prometheus_text.hpp"

namespace pagoda::server {

std::string render_metrics(const std::vector<MetricsSource> &sources,
                           const std::vector<SloRejections> &rejections) {
    std::vector<ModelMetrics> models;
    for (const MetricsSource &src : sources) {
        ModelMetrics m;
        m.model_name = src.model_name;
        if (src.placement_group >= 0) m.placement_group = std::to_string(src.placement_group);
        m.metrics.struct_size = sizeof m.metrics;
        if (src.engine->metrics(&m.metrics) != PAGODA_OK) continue;
        models.push_back(std::move(m));
    }
    PrometheusTextOptions options;
    options.prefix = "pagoda_";
    std::string text = render_prometheus_text(models, options);
    if (rejections.empty()) return text;
    text += "# HELP pagoda_slo_rejected_requests_total Requests rejected at arrival: the placement's "
            "controller predicted they would miss their model's SLO.\n"
            "# TYPE pagoda_slo_rejected_requests_total counter\n";
    for (const SloRejections &r : rejections)
        text += "pagoda_slo_rejected_requests_total{model_name=\"" + escape_label_value(r.model_name) +
                "\"} " + std::to_string(r.rejected) + "\n";
    return text;
}

}  // namespace pagoda::server
