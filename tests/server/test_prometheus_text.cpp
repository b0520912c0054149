// The Prometheus text renderer (src/server/prometheus_text): its output parses back to the
// numbers it was given (every gauge, counter, cumulative bucket, sum and count, per model, the
// model names unescaped), each family's # HELP and # TYPE come before its samples, which stay
// together; `promtool check metrics` accepts it (lint-clean under the "pagoda_" prefix, only
// the colon remark under vLLM's "vllm:"); histograms bucket by Prometheus' `le`.
// promtool is Debian's `prometheus` package; without it the promtool checks are skipped, and
// fail when CI=true.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "engine/engine_metrics.hpp"
#include "server/prometheus_text.hpp"

// cmocka after the C++ headers: its macros (fail, skip) would rename their members.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
}

namespace {

using pagoda::server::ModelMetrics;
using pagoda::server::PrometheusTextOptions;
using pagoda::server::render_prometheus_text;

// ---- A small reader of the exposition format ---------------------------------------------

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;  // values unescaped
    double value = 0.0;
};

struct Exposition {
    std::map<std::string, std::string> help, type;
    std::vector<Sample> samples;
};

std::string unescape(const std::string &s, size_t &i) {  // from after the opening quote
    std::string out;
    while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) {
            ++i;
            out += s[i] == 'n' ? '\n' : s[i];
        } else {
            out += s[i];
        }
        ++i;
    }
    assert_true(i < s.size());
    ++i;  // the closing quote
    return out;
}

double parse_value(const std::string &v) {
    if (v == "+Inf") return INFINITY;
    if (v == "-Inf") return -INFINITY;
    if (v == "NaN") return NAN;
    char *end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    assert_true(end != nullptr && *end == '\0');
    return d;
}

// The family a sample belongs to: its name without a histogram suffix when the family is one.
std::string family_of(const Exposition &e, const std::string &name) {
    for (const char *suffix : {"_bucket", "_sum", "_count"}) {
        const std::string sfx(suffix);
        if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0) {
            std::string base = name.substr(0, name.size() - sfx.size());
            auto it = e.type.find(base);
            if (it != e.type.end() && it->second == "histogram") return base;
        }
    }
    return name;
}

Exposition parse(const std::string &text) {
    Exposition e;
    std::set<std::string> closed;  // families whose samples ended
    std::string current;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        assert_true(nl != std::string::npos);  // every line ends with a newline
        const std::string line = text.substr(pos, nl - pos);
        pos = nl + 1;
        if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
            const std::string rest = line.substr(7);
            const size_t sp = rest.find(' ');
            assert_true(sp != std::string::npos);
            auto &table = line[2] == 'H' ? e.help : e.type;
            assert_true(table.emplace(rest.substr(0, sp), rest.substr(sp + 1)).second);
            continue;
        }
        assert_true(!line.empty() && line[0] != '#');
        Sample s;
        size_t i = line.find_first_of("{ ");
        assert_true(i != std::string::npos);
        s.name = line.substr(0, i);
        if (line[i] == '{') {
            ++i;
            while (line[i] != '}') {
                const size_t eq = line.find('=', i);
                assert_true(eq != std::string::npos && line[eq + 1] == '"');
                std::string key = line.substr(i, eq - i);
                i = eq + 2;
                std::string value = unescape(line, i);
                assert_true(s.labels.emplace(key, value).second);
                if (line[i] == ',') ++i;
            }
            ++i;
        }
        assert_true(line[i] == ' ');
        s.value = parse_value(line.substr(i + 1));
        // Its family was announced, and its samples are not split by another family's.
        const std::string family = family_of(e, s.name);
        assert_true(e.help.count(family) == 1 && e.type.count(family) == 1);
        if (family != current) {
            assert_true(closed.insert(current).second || current.empty());
            assert_true(closed.count(family) == 0);
            current = family;
        }
        e.samples.push_back(std::move(s));
    }
    return e;
}

// The one sample of `name` with these labels.
double value_of(const Exposition &e, const std::string &name, const std::map<std::string, std::string> &labels) {
    const Sample *found = nullptr;
    for (const Sample &s : e.samples)
        if (s.name == name && s.labels == labels) {
            assert_null(found);
            found = &s;
        }
    if (found == nullptr) fail_msg("no sample %s", name.c_str());
    return found->value;
}

// ---- Figures to render --------------------------------------------------------------------

pagoda_engine_metrics_t figures(int64_t base) {
    pagoda_engine_metrics_t m{};
    m.struct_size = sizeof m;
    m.requests_running = base + 1;
    m.requests_waiting = base + 2;
    m.requests_swapped = base + 3;
    m.kv_blocks_used = 37;
    m.kv_blocks_total = 100 + base;
    m.kv_cache_usage = static_cast<double>(m.kv_blocks_used) / static_cast<double>(m.kv_blocks_total);
    m.prompt_tokens = 1000 + base;
    m.prompt_tokens_computed = 900 + base;
    m.generation_tokens = 5000 + base;
    m.requests_finished_stop = 11 + base;
    m.requests_finished_length = 12 + base;
    m.requests_finished_aborted = 13 + base;
    m.requests_finished_error = 14 + base;
    m.preemptions_recompute = 5;
    m.preemptions_swap = 6 + base;
    m.prefix_cache_queries = 777 + base;
    m.prefix_cache_hits = 333 + base;
    pagoda::engine::LatencyHistogram ttft(pagoda::engine::kTimeToFirstTokenBounds),
        itl(pagoda::engine::kInterTokenLatencyBounds), e2e(pagoda::engine::kRequestLatencyBounds),
        queue(pagoda::engine::kRequestLatencyBounds);
    for (double v : {0.0004, 0.001, 0.0123, 0.1, 3.3, 5000.0}) ttft.observe(v * static_cast<double>(base + 1));
    for (int k = 0; k < 50 + base; ++k) itl.observe(0.003 * k);
    for (double v : {0.2, 0.8, 100.0}) e2e.observe(v);
    queue.observe(0.01);
    ttft.fill(m.time_to_first_token);
    itl.fill(m.inter_token_latency);
    e2e.fill(m.e2e_request_latency);
    queue.fill(m.request_queue_time);
    return m;
}

const std::string kOddName = "odd \"model\" \\ with\nnewline";

std::vector<ModelMetrics> two_models() {
    return {ModelMetrics{"stories260K", figures(0)}, ModelMetrics{kOddName, figures(7)}};
}

void check_histogram(const Exposition &e, const std::string &name, const std::string &model,
                     const pagoda_histogram_t &h) {
    std::map<std::string, std::string> l{{"model_name", model}};
    for (uint32_t i = 0; i < h.n_bounds; ++i) {
        auto bl = l;
        char le[64];
        std::snprintf(le, sizeof le, "%.17g", h.upper_bounds[i]);
        // Whatever spelling the renderer chose, it reads back as the bound.
        const Sample *found = nullptr;
        for (const Sample &s : e.samples)
            if (s.name == name + "_bucket" && s.labels.at("model_name") == model && s.labels.count("le") &&
                s.labels.at("le") != "+Inf" && parse_value(s.labels.at("le")) == h.upper_bounds[i])
                found = &s;
        if (found == nullptr) fail_msg("no bucket le=%s of %s", le, name.c_str());
        assert_true(found->value == static_cast<double>(h.cumulative_counts[i]));
    }
    auto inf = l;
    inf["le"] = "+Inf";
    assert_true(value_of(e, name + "_bucket", inf) == static_cast<double>(h.count));
    assert_true(value_of(e, name + "_count", l) == static_cast<double>(h.count));
    assert_true(value_of(e, name + "_sum", l) == h.sum);  // shortest round-trip text: exact
    size_t buckets = 0;
    for (const Sample &s : e.samples)
        if (s.name == name + "_bucket" && s.labels.at("model_name") == model) ++buckets;
    assert_int_equal(buckets, h.n_bounds + 1);
}

void check_model(const Exposition &e, const std::string &p, const std::string &model,
                 const pagoda_engine_metrics_t &m) {
    const std::map<std::string, std::string> l{{"model_name", model}};
    auto eq = [&](const std::string &name, double want) {
        assert_true(value_of(e, p + name, l) == want);
    };
    eq("num_requests_running", static_cast<double>(m.requests_running));
    eq("num_requests_waiting", static_cast<double>(m.requests_waiting));
    eq("num_requests_swapped", static_cast<double>(m.requests_swapped));
    eq("kv_cache_usage_perc", m.kv_cache_usage);
    eq("kv_cache_blocks_used", static_cast<double>(m.kv_blocks_used));
    eq("kv_cache_num_blocks", static_cast<double>(m.kv_blocks_total));
    eq("prompt_tokens_total", static_cast<double>(m.prompt_tokens));
    eq("generation_tokens_total", static_cast<double>(m.generation_tokens));
    eq("num_preemptions_total", static_cast<double>(m.preemptions_recompute + m.preemptions_swap));
    eq("prefix_cache_queries_total", static_cast<double>(m.prefix_cache_queries));
    eq("prefix_cache_hits_total", static_cast<double>(m.prefix_cache_hits));
    const std::pair<const char *, int64_t> reasons[] = {{"stop", m.requests_finished_stop},
                                                        {"length", m.requests_finished_length},
                                                        {"abort", m.requests_finished_aborted},
                                                        {"error", m.requests_finished_error}};
    for (const auto &[reason, count] : reasons) {
        auto rl = l;
        rl["finished_reason"] = reason;
        assert_true(value_of(e, p + "request_success_total", rl) == static_cast<double>(count));
    }
    check_histogram(e, p + "time_to_first_token_seconds", model, m.time_to_first_token);
    check_histogram(e, p + "inter_token_latency_seconds", model, m.inter_token_latency);
    check_histogram(e, p + "e2e_request_latency_seconds", model, m.e2e_request_latency);
    check_histogram(e, p + "request_queue_time_seconds", model, m.request_queue_time);
}

void test_parses_back(void **) {
    const std::vector<ModelMetrics> models = two_models();
    for (const char *prefix : {"vllm:", "pagoda_"}) {
        PrometheusTextOptions o;
        o.prefix = prefix;
        const std::string text = render_prometheus_text(models, o);
        const Exposition e = parse(text);
        for (const ModelMetrics &mm : models) check_model(e, prefix, mm.model_name, mm.metrics);
        // Nothing else: 11 one-line families and request_success's 4 lines per model, and
        // each histogram's buckets, sum and count.
        size_t want = 0;
        for (const ModelMetrics &mm : models)
            want += 11 + 4 + (mm.metrics.time_to_first_token.n_bounds + 3) +
                    (mm.metrics.inter_token_latency.n_bounds + 3) +
                    (mm.metrics.e2e_request_latency.n_bounds + 3) + (mm.metrics.request_queue_time.n_bounds + 3);
        assert_int_equal(e.samples.size(), want);
        assert_int_equal(e.type.size(), 16);
        assert_string_equal(e.type.at(std::string(prefix) + "time_to_first_token_seconds").c_str(), "histogram");
        assert_string_equal(e.type.at(std::string(prefix) + "prompt_tokens_total").c_str(), "counter");
        assert_string_equal(e.type.at(std::string(prefix) + "kv_cache_usage_perc").c_str(), "gauge");
    }
    // vLLM's spelling of the bounds: le="1.0", le="0.001".
    const std::string text = render_prometheus_text(models);
    assert_true(text.find("vllm:time_to_first_token_seconds_bucket{model_name=\"stories260K\",le=\"1.0\"}") !=
                std::string::npos);
    assert_true(text.find("le=\"0.001\"") != std::string::npos);
}

void test_escaping(void **) {
    assert_string_equal(pagoda::server::escape_label_value("a\\b\"c\nd").c_str(), "a\\\\b\\\"c\\nd");
    const std::string text = render_prometheus_text(two_models());
    assert_true(text.find("model_name=\"odd \\\"model\\\" \\\\ with\\nnewline\"") != std::string::npos);
    assert_true(render_prometheus_text({}).empty());
}

// Prometheus' `le` is "less than or equal": a value on a bound counts in that bound's bucket;
// past the last bound, only in +Inf.
void test_bucket_bounds(void **) {
    pagoda::engine::LatencyHistogram h(pagoda::engine::kInterTokenLatencyBounds);
    h.observe(0.01);
    h.observe(0.0100001);
    h.observe(80.0);
    h.observe(81.0);
    pagoda_histogram_t out;
    h.fill(out);
    assert_int_equal(out.n_bounds, 19);
    assert_int_equal(out.cumulative_counts[0], 1);
    assert_int_equal(out.cumulative_counts[1], 2);
    assert_int_equal(out.cumulative_counts[17], 2);
    assert_int_equal(out.cumulative_counts[18], 3);
    assert_int_equal(out.count, 4);
    assert_true(std::fabs(out.sum - (0.01 + 0.0100001 + 80.0 + 81.0)) < 1e-9);
    assert_true(out.upper_bounds[19] == 0.0);
}

// ---- promtool -----------------------------------------------------------------------------

std::string find_promtool() {
    const char *path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / "promtool";
        std::error_code ec;
        if (!candidate.parent_path().empty() && std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
        start = end + 1;
    }
    return {};
}

// Skips without promtool, except in CI, where it must be installed (scripts/install-deps.sh).
std::string promtool_or_skip() {
    std::string promtool = find_promtool();
    if (promtool.empty()) {
        const char *ci = std::getenv("CI");
        if (ci != nullptr && std::string(ci) == "true")
            fail_msg("promtool is missing (Debian's prometheus package, in scripts/install-deps.sh) and CI=true");
        std::printf("SKIP: no promtool on PATH (install Debian's prometheus package)\n");
        skip();
    }
    return promtool;
}

// promtool's exit status and what it printed for `text`.
std::pair<int, std::string> promtool_check(const std::string &promtool, const std::string &text) {
    std::string file = (std::filesystem::temp_directory_path() /
                        ("pagoda-metrics-" + std::to_string(::getpid()) + ".prom")).string();
    FILE *f = std::fopen(file.c_str(), "wb");
    assert_non_null(f);
    assert_int_equal(std::fwrite(text.data(), 1, text.size(), f), text.size());
    std::fclose(f);
    const std::string cmd = "'" + promtool + "' check metrics < '" + file + "' 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    assert_non_null(p);
    std::string out;
    char buf[512];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    std::filesystem::remove(file);
    assert_true(WIFEXITED(status));
    return {WEXITSTATUS(status), out};
}

void test_promtool_accepts(void **) {
    const std::string promtool = promtool_or_skip();
    PrometheusTextOptions clean;
    clean.prefix = "pagoda_";
    auto [rc, out] = promtool_check(promtool, render_prometheus_text(two_models(), clean));
    if (rc != 0 || !out.empty()) fail_msg("promtool check metrics (pagoda_): status %d\n%s", rc, out.c_str());

    // vLLM's names: parsed fine; the linter's only remark is the colon in each name.
    auto [vrc, vout] = promtool_check(promtool, render_prometheus_text(two_models()));
    size_t start = 0, lines = 0;
    while (start < vout.size()) {
        size_t end = vout.find('\n', start);
        if (end == std::string::npos) end = vout.size();
        const std::string line = vout.substr(start, end - start);
        if (!line.empty()) {
            ++lines;
            if (line.find("metric names should not contain ':'") == std::string::npos)
                fail_msg("promtool check metrics (vllm:): %s", line.c_str());
        }
        start = end + 1;
    }
    assert_true(vrc == 0 || (vrc == 3 && lines == 16));
    // A broken exposition is refused, so the checks above mean something.
    auto [brc, bout] = promtool_check(promtool, "# TYPE x counter\nx{a=\"b} 1\n");
    assert_true(brc != 0);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parses_back),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_bucket_bounds),
        cmocka_unit_test(test_promtool_accepts),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
