#include "server/prometheus_text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>

namespace pagoda::server {

namespace {

// Shortest text that reads back as the same double, with Prometheus' spellings of the
// non-finite values; integral values keep a ".0" (as Python's client writes `le`), so a bucket
// reads le="1.0" as vLLM's does.
std::string format_double(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, ec == std::errc() ? end : buf);
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s;
}

std::string escape_help(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

class Writer {
public:
    Writer(std::span<const ModelMetrics> models, std::string_view prefix) : models_(models), prefix_(prefix) {}

    void header(std::string_view name, std::string_view type, std::string_view help) {
        out_ += "# HELP " + full(name) + " " + escape_help(help) + "\n";
        out_ += "# TYPE " + full(name) + " " + std::string(type) + "\n";
    }

    // A gauge or counter: one sample per model.
    void scalar(std::string_view name, std::string_view type, std::string_view help,
                const std::function<std::string(const pagoda_engine_metrics_t &)> &value) {
        header(name, type, help);
        for (const ModelMetrics &m : models_) sample(full(name), labels(m), value(m.metrics));
    }

    // A counter split by finished reason, as vLLM's request_success.
    void by_reason(std::string_view name, std::string_view help) {
        header(name, "counter", help);
        struct Reason { const char *label; int64_t pagoda_engine_metrics_t::*field; };
        static constexpr Reason kReasons[] = {
            {"stop", &pagoda_engine_metrics_t::requests_finished_stop},
            {"length", &pagoda_engine_metrics_t::requests_finished_length},
            {"abort", &pagoda_engine_metrics_t::requests_finished_aborted},
            {"error", &pagoda_engine_metrics_t::requests_finished_error}};
        for (const ModelMetrics &m : models_)
            for (const Reason &r : kReasons)
                sample(full(name), labels(m) + ",finished_reason=\"" + r.label + "\"",
                       std::to_string(m.metrics.*r.field));
    }

    void histogram(std::string_view name, std::string_view help,
                   pagoda_histogram_t pagoda_engine_metrics_t::*field) {
        header(name, "histogram", help);
        const std::string base = full(name);
        for (const ModelMetrics &m : models_) {
            const pagoda_histogram_t &h = m.metrics.*field;
            const std::string l = labels(m);
            const uint32_t n = std::min<uint32_t>(h.n_bounds, PAGODA_HISTOGRAM_MAX_BOUNDS);
            for (uint32_t i = 0; i < n; ++i)
                sample(base + "_bucket", l + ",le=\"" + format_double(h.upper_bounds[i]) + "\"",
                       std::to_string(h.cumulative_counts[i]));
            sample(base + "_bucket", l + ",le=\"+Inf\"", std::to_string(h.count));
            sample(base + "_sum", l, format_double(h.sum));
            sample(base + "_count", l, std::to_string(h.count));
        }
    }

    std::string take() { return std::move(out_); }

private:
    std::string full(std::string_view name) const { return std::string(prefix_) + std::string(name); }
    static std::string labels(const ModelMetrics &m) {
        std::string l = "model_name=\"" + escape_label_value(m.model_name) + "\"";
        if (!m.placement_group.empty()) l += ",placement_group=\"" + escape_label_value(m.placement_group) + "\"";
        return l;
    }
    void sample(const std::string &name, const std::string &labels, const std::string &value) {
        out_ += name + "{" + labels + "} " + value + "\n";
    }

    std::span<const ModelMetrics> models_;
    std::string_view prefix_;
    std::string out_;
};

std::string i64(int64_t v) { return std::to_string(v); }

}  // namespace

std::string escape_label_value(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

std::string render_prometheus_text(std::span<const ModelMetrics> models, const PrometheusTextOptions &options) {
    if (models.empty()) return {};
    using M = pagoda_engine_metrics_t;
    Writer w(models, options.prefix);
    w.scalar("num_requests_running", "gauge", "Number of requests in model execution batches.",
             [](const M &m) { return i64(m.requests_running); });
    w.scalar("num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
             [](const M &m) { return i64(m.requests_waiting); });
    w.scalar("num_requests_swapped", "gauge", "Number of requests swapped to CPU.",
             [](const M &m) { return i64(m.requests_swapped); });
    w.scalar("kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
             [](const M &m) { return format_double(m.kv_cache_usage); });
    // Not vLLM's: the block counts behind the usage, so a client can check that none is lent.
    w.scalar("kv_cache_blocks_used", "gauge", "KV-cache blocks held by requests.",
             [](const M &m) { return i64(m.kv_blocks_used); });
    w.scalar("kv_cache_num_blocks", "gauge", "KV-cache blocks in the device pool.",
             [](const M &m) { return i64(m.kv_blocks_total); });
    w.scalar("prefix_cache_queries_total", "counter",
             "Prefix cache queries, in terms of number of queried tokens.",
             [](const M &m) { return i64(m.prefix_cache_queries); });
    w.scalar("prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
             [](const M &m) { return i64(m.prefix_cache_hits); });
    w.scalar("num_preemptions_total", "counter", "Cumulative number of preemption from the engine.",
             [](const M &m) { return i64(m.preemptions_recompute + m.preemptions_swap); });
    w.scalar("prompt_tokens_total", "counter", "Number of prefill tokens processed.",
             [](const M &m) { return i64(m.prompt_tokens); });
    w.scalar("generation_tokens_total", "counter", "Number of generation tokens processed.",
             [](const M &m) { return i64(m.generation_tokens); });
    w.by_reason("request_success_total", "Count of successfully processed requests.");
    w.histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                &M::time_to_first_token);
    w.histogram("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                &M::inter_token_latency);
    w.histogram("e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                &M::e2e_request_latency);
    w.histogram("request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
                &M::request_queue_time);
    return w.take();
}

}  // namespace pagoda::server
