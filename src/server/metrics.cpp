#include "server/metrics.hpp"

#include "server/prometheus_text.hpp"

namespace pagoda::server {

std::string render_metrics(const std::vector<MetricsSource> &sources) {
    std::vector<ModelMetrics> models;
    for (const MetricsSource &src : sources) {
        ModelMetrics m;
        m.model_name = src.model_name;
        m.metrics.struct_size = sizeof m.metrics;
        if (src.engine->metrics(&m.metrics) != PAGODA_OK) continue;
        models.push_back(std::move(m));
    }
    PrometheusTextOptions options;
    options.prefix = "pagoda_";
    return render_prometheus_text(models, options);
}

}  // namespace pagoda::server
