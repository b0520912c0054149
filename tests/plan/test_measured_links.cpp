// Measured links: the fit recovers a known latency and bandwidth (exactly without noise, closely
// with it), refuses samples it cannot fit, round-trips through the cost file beside the layer
// entries (saving one part keeps the other), names the field of a malformed link, and the cost
// model prices all-reduces and sends with the link of each level once given them.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "plan/cost_model.hpp"
#include "plan/device_spec.hpp"
#include "plan/measured_costs.hpp"
#include "plan/measured_links.hpp"

#include "plan_test_support.hpp"

using namespace pagoda::plan;
using pagoda::test::expect_error;

namespace {

bool close(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)); }

// Samples of a call paying `messages` latencies and `bytes / bandwidth`, 4 KiB to 8 MiB, each
// time scaled by a random factor within ±noise.
std::vector<LinkSample> samples(double messages, double latency, double bandwidth, double noise, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> jitter(1.0 - noise, 1.0 + noise);
    std::vector<LinkSample> out;
    for (double b = 4096; b <= 8 << 20; b *= 2)
        out.push_back({b, (messages * latency + b / bandwidth) * (noise > 0 ? jitter(rng) : 1.0)});
    return out;
}

MeasuredLink link(LinkPath path, double latency, double bandwidth) {
    MeasuredLink l;
    l.backend = "cpu";
    l.path = path;
    l.between = "cpu:0@rank0 and cpu:0@rank1";
    l.transport = path == LinkPath::AcrossMachines ? "network" : "shared_memory";
    l.all_reduce_samples = samples(2, latency, bandwidth, 0, 1);
    // A send of the same bytes takes one latency and half the all-reduce's time on the wire.
    l.send_samples = samples(1, latency, 2 * bandwidth, 0, 2);
    fit_measured_link(l);
    return l;
}

ModelShape small_shape() {
    ModelShape s;
    s.hidden = 768;
    s.intermediate = 2048;
    s.layers = 12;
    s.heads = 12;
    s.kv_heads = 12;
    s.head_dim = 64;
    s.vocab = 32000;
    return s;
}

std::string temp_path(const char *name) { return "/tmp/pagoda_test_links_" + std::to_string(getpid()) + name; }

void test_fit_recovers_latency_and_bandwidth(void **) {
    // Exact samples give the line back: an all-reduce is 2 latencies, a send 1.
    LinkFit f = fit_link(samples(2, 20e-6, 5e9, 0, 1), 2, 1);
    assert_true(close(f.latency, 20e-6, 1e-9));
    assert_true(close(f.bandwidth, 5e9, 1e-9));
    assert_true(f.fit_error < 1e-9);
    f = fit_link(samples(1, 50e-6, 1.25e9, 0, 1), 1, 1);
    assert_true(close(f.latency, 50e-6, 1e-9));
    assert_true(close(f.bandwidth, 1.25e9, 1e-9));
    // ±5 % noise on every sample: within 10 % of both, and an error of the noise's size.
    f = fit_link(samples(2, 20e-6, 5e9, 0.05, 7), 2, 1);
    assert_true(close(f.latency, 20e-6, 0.10));
    assert_true(close(f.bandwidth, 5e9, 0.10));
    assert_true(f.fit_error > 0 && f.fit_error < 0.05);
    // A line through below the origin has no latency: the best line through it instead.
    f = fit_link({{4096, 1e-6}, {8192, 3e-6}, {16384, 7e-6}}, 1, 1);
    assert_true(f.latency == 0);
    assert_true(f.bandwidth > 0);
}

void test_fit_refuses_what_it_cannot_fit(void **) {
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "two sizes", [] { fit_link({{4096, 1e-5}, {4096, 2e-5}}, 1, 1); });
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "positive", [] { fit_link({{4096, 0}, {8192, 2e-5}}, 1, 1); });
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "positive", [] { fit_link({{-1, 1e-5}, {8192, 2e-5}}, 1, 1); });
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "do not grow",
                 [] { fit_link({{4096, 4e-5}, {8192, 2e-5}, {16384, 1e-5}}, 1, 1); });
    expect_error(PAGODA_ERR_INVALID_ARGUMENT, "link path", [] { link_path_from_name("between_racks"); });
    assert_true(link_path_from_name("across_machines") == LinkPath::AcrossMachines);
}

void test_cost_file_keeps_links_and_entries(void **) {
    const std::string path = temp_path("_file.json");
    std::remove(path.c_str());
    const MeasuredLink within = link(LinkPath::WithinMachine, 20e-6, 4e9);
    save_measured_link(path, within);
    MeasuredLayerCosts costs;
    costs.backend = "cpu";
    costs.device = "cpu:0 test";
    costs.dtype = "f32";
    costs.shape = small_shape();
    costs.device_spec = device_preset("cpu");
    costs.granularity = 8;
    costs.no_context_seconds = {1e-3, 2e-3};
    save_measured_costs(path, costs);  // keeps the link
    save_measured_link(path, link(LinkPath::AcrossMachines, 60e-6, 0.6e9));
    save_measured_link(path, link(LinkPath::WithinMachine, 30e-6, 3e9));  // replaces the first
    const std::vector<MeasuredLink> links = read_measured_links(path);
    assert_int_equal(links.size(), 2);
    assert_true(links[0].path == LinkPath::WithinMachine && close(links[0].all_reduce.latency, 30e-6, 1e-9));
    assert_true(links[1].path == LinkPath::AcrossMachines && close(links[1].send.bandwidth, 1.2e9, 1e-9));
    assert_int_equal(links[1].all_reduce_samples.size(), within.all_reduce_samples.size());
    assert_string_equal(links[1].between.c_str(), "cpu:0@rank0 and cpu:0@rank1");
    assert_int_equal(read_cost_file(path).size(), 1);  // the entry survived the links' saves

    // A file without links has none; malformed links are named.
    auto write = [&](const std::string &text) { std::ofstream(path, std::ios::trunc) << text; };
    write(R"({"format": "pagoda-costs", "version": 1, "entries": []})");
    assert_true(read_measured_links(path).empty());
    nlohmann::json doc = {{"format", "pagoda-costs"}, {"version", 1}, {"entries", nlohmann::json::array()}};
    doc["links"] = nlohmann::json::array({measured_link_to_json(within)});
    doc["links"][0]["path"] = "between_racks";
    write(doc.dump());
    expect_error(PAGODA_ERR_FORMAT, "links[0]: link path \"between_racks\"", [&] { read_measured_links(path); });
    doc["links"][0]["path"] = "within_machine";
    doc["links"][0]["send"]["samples"][1] = {4096};
    write(doc.dump());
    expect_error(PAGODA_ERR_FORMAT, "links[0].send.samples[1] must be [bytes, seconds]",
                 [&] { read_measured_links(path); });
    doc["links"][0]["send"].erase("samples");
    doc["links"][0]["send"]["samples"] = {{4096, 1e-5}, {8192, 2e-5}};
    doc["links"][0]["all_reduce"]["bandwidth"] = -1;
    write(doc.dump());
    expect_error(PAGODA_ERR_FORMAT, "all_reduce fit wants", [&] { read_measured_links(path); });
    doc["links"] = "none";
    write(doc.dump());
    expect_error(PAGODA_ERR_FORMAT, "\"links\" must be an array", [&] { read_measured_links(path); });
    std::remove(path.c_str());
}

void test_cost_model_prices_with_measured_links(void **) {
    CostModel model(small_shape(), device_preset("cpu"));
    assert_string_equal(model.link_source().c_str(), "assumed");
    const double bytes = 48 * 1024;
    const double preset_within = model.all_reduce_seconds(bytes, 2, false);
    const double preset_across = model.all_reduce_seconds(bytes, 2, true);

    // Only within machines: across nodes keeps the preset.
    std::vector<MeasuredLink> links{link(LinkPath::WithinMachine, 20e-6, 4e9)};
    assert_int_equal(model.use_measured_links(links), 1);
    assert_true(close(model.all_reduce_seconds(bytes, 2, false), 2 * 20e-6 + bytes / 4e9, 1e-9));
    assert_true(close(model.all_reduce_seconds(bytes, 2, true), preset_across, 1e-12));
    // A ring over four devices: 6 latencies and 3/2 of the bytes, from the two-device fit.
    assert_true(close(model.all_reduce_seconds(bytes, 4, false), 6 * 20e-6 + 1.5 * bytes / 4e9, 1e-9));
    // A stage's send of 16 tokens' activations: one latency, the send's own bandwidth.
    const double act = 16.0 * 768 * device_preset("cpu").activation_bytes;
    assert_true(close(model.send_seconds(16, false), 20e-6 + act / 8e9, 1e-9));
    assert_string_equal(model.link_source().c_str(), "measured within_machine within nodes; assumed across nodes");
    assert_true(!close(model.all_reduce_seconds(bytes, 2, false), preset_within, 0.01));

    // Within a process only: it prices a node; a link of another backend is ignored.
    CostModel threads(small_shape(), device_preset("cpu"));
    MeasuredLink cuda = link(LinkPath::AcrossMachines, 5e-6, 50e9);
    cuda.backend = "cuda";
    assert_int_equal(threads.use_measured_links({link(LinkPath::WithinProcess, 8e-6, 7e9), cuda}), 1);
    assert_true(close(threads.all_reduce_seconds(bytes, 2, false), 2 * 8e-6 + bytes / 7e9, 1e-9));
    assert_string_equal(threads.link_source().c_str(), "measured within_process within nodes; assumed across nodes");

    // Both levels, and the machine's path before the process's for a node.
    links = {link(LinkPath::WithinProcess, 8e-6, 7e9), link(LinkPath::AcrossMachines, 60e-6, 0.6e9),
             link(LinkPath::WithinMachine, 20e-6, 4e9)};
    CostModel both(small_shape(), device_preset("cpu"));
    assert_int_equal(both.use_measured_links(links), 2);
    assert_true(close(both.all_reduce_seconds(bytes, 2, false), 2 * 20e-6 + bytes / 4e9, 1e-9));
    assert_true(close(both.all_reduce_seconds(bytes, 2, true), 2 * 60e-6 + bytes / 0.6e9, 1e-9));
    assert_true(close(both.send_seconds(16, true), 60e-6 + act / 1.2e9, 1e-9));
    assert_string_equal(both.link_source().c_str(),
                        "measured within_machine within nodes; measured across_machines across nodes");
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_latency_and_bandwidth),
        cmocka_unit_test(test_fit_refuses_what_it_cannot_fit),
        cmocka_unit_test(test_cost_file_keeps_links_and_entries),
        cmocka_unit_test(test_cost_model_prices_with_measured_links),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
