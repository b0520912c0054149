// pagoda-bench-placement: AlpaServe's simulator against the real thing. One placement, one
// trace: the server serves the placement (pagoda_server_add_placement, in this process, on
// this machine's devices) while a one-thread open-loop client sends the trace's requests at
// their arrival times over HTTP; the simulator replays the same trace (the same Gamma streams,
// same seed) on the same placement. Both results are printed in the simulator's JSON shape, with
// the difference in SLO attainment per model and overall.
//
//   pagoda-bench-placement --placement FILE [--rate R[,R...]] [--cv C] [--duration T] [--seed S]
//                          [--max-tokens G] [--prompt TEXT] [--slo-scale X]
//                          [--calibrate-runs K] [--devices KIND] [--out-placement FILE]
//                          [--no-overhead] [--keep-stages] [--no-reject] [--svg FILE]
//
// Each rate is one replay (a fresh server); --svg draws SLO attainment against the rate,
// simulated and measured, on one chart.
// The placement's stage latencies are first measured (calibration): each replica is made on
// its group's devices and a request (the prompt, G tokens, greedy) timed alone K times; the
// median, split evenly over the group's stages, replaces its stage_seconds (--keep-stages: the
// placement's own stage_seconds stay, such as `pagoda place` found them from a cost file, and
// each JSON line lists both per replica). With --slo-scale,
// each model's SLO becomes X times its fastest replica's measured latency (AlpaServe's "SLO
// scale"). Then the server's own cost per request is measured (each model's request alone over
// HTTP, less the engine's time) and written as the placement's "overhead", which the server's
// controller and the simulator both add to every prediction (--no-overhead: 0). The calibrated
// placement is what both the server and the simulator run. --no-reject turns the placement's
// rejection at arrival off (both sides then serve every request, a late one a miss), so that
// attainment depends on how long requests really take rather than on the shared controller.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "attainment_svg.hpp"
#include "open_loop_client.hpp"
#include "pagoda/pagoda.h"
#include "plan/placement.hpp"
#include "plan/simulator.hpp"
#include "plan/simulator_histogram.hpp"
#include "plan/simulator_report.hpp"
#include "plan/workload.hpp"

using namespace pagoda;

namespace {

struct Args {
    std::string placement_path, out_placement, devices = "cpu";
    std::string prompt = "Once upon a time";
    std::vector<double> rates = {1.0};
    double cv = 1.0, duration = 30.0, slo_scale = 0.0;
    std::string svg;
    uint64_t seed = 1;
    int max_tokens = 16, calibrate_runs = 3;
    bool measure_overhead = true;
    bool keep_stages = false;  // serve and simulate the placement's own stage_seconds
    bool reject = true;        // false: the placement's reject_late off, for server and simulator
};

// One replica timed alone: what the placement said (Σ stage_seconds) and what it took.
struct ReplicaTiming {
    size_t group = 0;
    std::string model;
    double predicted = 0, measured = 0;
};

void check(pagoda_status_t s, const std::string &what) {
    if (s != PAGODA_OK) throw std::runtime_error(what + ": " + pagoda_last_error_message());
}

// "1,2,4": requests per second per model, one replay each.
std::vector<double> parse_rates(const char *text) {
    std::vector<double> rates;
    std::stringstream list(text);
    for (std::string item; std::getline(list, item, ',');) {
        char *end = nullptr;
        const double r = std::strtod(item.c_str(), &end);
        if (end == item.c_str() || *end != '\0' || !(r > 0) || !std::isfinite(r))
            throw std::runtime_error("--rate wants positive numbers separated by commas, not '" + std::string(text) + "'");
        rates.push_back(r);
    }
    if (rates.empty()) throw std::runtime_error("--rate is empty");
    return rates;
}

std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

pagoda_request_options_t request_options(const Args &a) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.max_tokens = a.max_tokens;
    o.temperature = 0.0f;
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    return o;
}

// Seconds of one request alone on a replica of `model_path` on group `g`: the median of
// `runs` after one warm-up.
double time_alone(const std::string &model_path, const plan::PlacementGroup &g, const Args &a) {
    const std::string devices = plan::group_device_list(g, a.devices), axes = plan::group_axes(g);
    pagoda_mesh_options_t mo;
    pagoda_mesh_options_default(&mo);
    mo.devices = devices.c_str();
    mo.axes = axes.empty() ? nullptr : axes.c_str();
    pagoda_mesh_t *mesh = nullptr;
    check(pagoda_mesh_create(&mo, &mesh), "mesh " + devices);
    pagoda_model_t *model = nullptr;
    check(pagoda_model_open(model_path.c_str(), nullptr, &model), "model " + model_path);
    pagoda_kv_cache_t *cache = nullptr;
    check(pagoda_kv_cache_create(model, mesh, nullptr, nullptr, &cache), "cache");
    pagoda_engine_t *engine = nullptr;
    check(pagoda_engine_create(model, mesh, nullptr, cache, nullptr, &engine), "engine");
    const pagoda_request_options_t o = request_options(a);
    std::vector<double> times;
    for (int r = 0; r <= a.calibrate_runs; ++r) {
        uint64_t id = 0;
        const double t0 = now_seconds();
        check(pagoda_engine_submit_text(engine, a.prompt.data(), a.prompt.size(), &o, &id), "submit");
        pagoda_output_t out;
        out.struct_size = sizeof out;
        while (pagoda_engine_has_work(engine)) {
            check(pagoda_engine_step(engine), "step");
            while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {
            }
        }
        if (r > 0) times.push_back(now_seconds() - t0);  // the first warms up
    }
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_model_destroy(model);
    pagoda_mesh_destroy(mesh);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// Measures every replica alone and, unless --keep-stages, writes its stage_seconds; with
// --slo-scale, each SLO is that many times the model's fastest measured replica.
std::vector<ReplicaTiming> calibrate(plan::Placement &p, const Args &a) {
    std::vector<ReplicaTiming> timings;
    std::vector<double> fastest(p.models.size(), INFINITY);
    for (size_t g = 0; g < p.groups.size(); ++g)
        for (plan::Replica &r : p.groups[g].replicas) {
            ReplicaTiming timing{g, p.models[r.model].name, 0.0, time_alone(p.models[r.model].path, p.groups[g], a)};
            for (double s : r.stage_seconds) timing.predicted += s;
            if (!a.keep_stages) r.stage_seconds.assign(size_t(p.groups[g].pipeline), timing.measured / p.groups[g].pipeline);
            fastest[r.model] = std::min(fastest[r.model], timing.measured);
            std::fprintf(stderr, "calibrated: group %zu (%s), model %s: %.4f s alone, %.4f s in the placement\n", g,
                         plan::group_device_list(p.groups[g], a.devices).c_str(), timing.model.c_str(),
                         timing.measured, timing.predicted);
            timings.push_back(std::move(timing));
        }
    if (a.slo_scale > 0)
        for (size_t m = 0; m < p.models.size(); ++m)
            if (std::isfinite(fastest[m])) p.models[m].slo_seconds = a.slo_scale * fastest[m];
    return timings;
}

// The served trace, counted as the simulator counts: a 429 is a rejection, an answer within
// the SLO (measured from the request's arrival in the trace) is within it, anything else a miss.
plan::SimulationResult measured_result(const plan::Placement &p, const plan::Trace &trace,
                                       const std::vector<bench::TimedAnswer> &answers) {
    plan::SimulationResult r;
    r.per_model.resize(p.models.size());
    plan::LatencyHistogram histogram;
    for (size_t i = 0; i < trace.size(); ++i) {
        const uint32_t m = trace.models[i];
        plan::ModelOutcome &o = r.per_model[m];
        ++o.requests;
        const bench::TimedAnswer &a = answers[i];
        if (a.status == 429) {
            ++o.rejected;
            continue;
        }
        if (a.status != 200) continue;  // a failure: a miss
        const double latency = a.finished - trace.times[i];  // both from the replay's start
        histogram.add(latency);
        r.horizon_seconds = std::max(r.horizon_seconds, a.finished);
        if (latency <= p.models[m].slo_seconds) ++o.within_slo;
    }
    plan::summarise_outcomes(r, histogram);
    return r;
}

// One completion request of the benchmark's shape (greedy, every token generated) for `model`.
std::string completion_body(const std::string &model, const Args &a) {
    return nlohmann::json{{"model", model}, {"prompt", a.prompt}, {"max_tokens", a.max_tokens},
                          {"temperature", 0}, {"ignore_eos", true}}
        .dump();
}

// A server on a free loopback port serving `p` in this process; its port in *port.
pagoda_server_t *serve(const plan::Placement &p, const Args &a, int *port) {
    pagoda_server_options_t so;
    pagoda_server_options_default(&so);
    so.port = 0;
    pagoda_server_t *server = nullptr;
    check(pagoda_server_create(&so, &server), "server");
    check(pagoda_server_start(server), "server start");
    const std::string json = plan::placement_to_json(p);
    check(pagoda_server_add_placement(server, json.c_str(), a.devices.c_str(), nullptr, nullptr), "placement");
    *port = pagoda_server_port(server);
    return server;
}

void stop(pagoda_server_t *server) {
    check(pagoda_server_stop(server), "server stop");
    pagoda_server_destroy(server);
}

// Each replica's first request pays one-time work (buffers, first kernels). As many requests
// per model at once as it has replicas reach every replica (the controller sends the second
// where the first is not queued); then the clocks are left to drain, so the trace starts on
// idle groups as the simulator's does.
void warm_up(int port, const plan::Placement &p, const Args &a) {
    std::vector<bench::TimedRequest> requests;
    double longest = 0;
    for (size_t m = 0; m < p.models.size(); ++m) {
        for (size_t k = 0; k < p.replica_count(uint32_t(m)); ++k)
            requests.push_back({0.0, "/v1/completions", completion_body(p.models[m].name, a)});
    }
    for (const plan::PlacementGroup &g : p.groups) {
        double total = 0;
        for (const plan::Replica &r : g.replicas)
            for (double t : r.stage_seconds) total += t;
        longest = std::max(longest, total);
    }
    for (const bench::TimedAnswer &answer : bench::run_open_loop(port, requests, 120.0))
        if (answer.status != 200 && answer.status != 429)
            throw std::runtime_error("a warm-up request answered " + std::to_string(answer.status) + ": " +
                                     answer.body);
    std::this_thread::sleep_for(std::chrono::duration<double>(2 * longest + 0.1));
}

// Seconds the server adds to a request beyond the engine's time alone: each model's request
// sent alone through HTTP (idle clocks, so the replica the placement says is fastest), its
// median latency less that replica's measured time alone; the median over the models.
double measure_overhead(const plan::Placement &p, const std::vector<ReplicaTiming> &timings, const Args &a) {
    int port = 0;
    pagoda_server_t *server = serve(p, a, &port);
    warm_up(port, p, a);
    std::vector<double> overheads;
    for (size_t m = 0; m < p.models.size(); ++m) {
        // The controller's choice on idle clocks: the first group of the least Σ stage_seconds.
        double predicted = INFINITY;
        size_t chosen = p.groups.size();
        for (size_t g = 0; g < p.groups.size(); ++g)
            for (const plan::Replica &r : p.groups[g].replicas)
                if (r.model == m) {
                    double t = 0;
                    for (double x : r.stage_seconds) t += x;
                    if (t < predicted) {
                        predicted = t;
                        chosen = g;
                    }
                }
        double fastest = INFINITY;
        for (const ReplicaTiming &t : timings)
            if (t.group == chosen && t.model == p.models[m].name) fastest = t.measured;
        if (!std::isfinite(fastest)) continue;
        const std::string body = completion_body(p.models[m].name, a);
        std::vector<double> latencies;
        for (int r = 0; r < std::max(3, a.calibrate_runs); ++r) {
            const auto answers = bench::run_open_loop(port, {{0.0, "/v1/completions", body}}, 120.0);
            if (answers[0].status != 200) throw std::runtime_error("an overhead probe answered " + std::to_string(answers[0].status));
            latencies.push_back(answers[0].finished - answers[0].sent);
            std::this_thread::sleep_for(std::chrono::duration<double>(std::max(predicted, fastest) + 0.02));
        }
        std::sort(latencies.begin(), latencies.end());
        overheads.push_back(std::max(0.0, latencies[latencies.size() / 2] - fastest));
    }
    stop(server);
    std::sort(overheads.begin(), overheads.end());
    return overheads.empty() ? 0.0 : overheads[overheads.size() / 2];
}

double attainment(const plan::ModelOutcome &o) {
    return o.requests == 0 ? 1.0 : double(o.within_slo) / double(o.requests);
}

// The placement with measured stage latencies (unless --keep-stages), SLOs and overhead;
// each replica's timing alone in *timings.
plan::Placement calibrated_placement(const Args &a, std::vector<ReplicaTiming> *timings) {
    plan::Placement placement = plan::placement_from_json(read_file(a.placement_path), a.placement_path);
    *timings = calibrate(placement, a);
    if (!a.reject) placement.reject_late = false;
    if (a.measure_overhead) {
        placement.overhead_seconds = measure_overhead(placement, *timings, a);
        std::fprintf(stderr, "calibrated: the server adds %.4f s to a request\n", placement.overhead_seconds);
    }
    if (!a.out_placement.empty()) std::ofstream(a.out_placement) << plan::placement_to_json(placement) << "\n";
    return placement;
}

// One trace at `rate` requests per second per model: simulated, then served by a fresh server
// (idle clocks) and replayed. Prints its JSON line; returns (simulated, measured) attainment.
bench::AttainmentPoint replay_at(const plan::Placement &placement, const std::vector<ReplicaTiming> &timings,
                                 const Args &a, double rate) {
    std::vector<plan::ArrivalProcess> processes(placement.models.size(), plan::ArrivalProcess{rate, a.cv});
    plan::GammaWorkload workload(processes, a.duration, a.seed);
    const plan::Trace trace = plan::record(workload);
    plan::Simulator simulator(placement, plan::SimulationOptions{});
    plan::TraceWorkload replay = trace.source(uint32_t(placement.models.size()));
    const plan::SimulationResult simulated = simulator.run(replay);

    std::vector<bench::TimedRequest> requests;
    for (size_t i = 0; i < trace.size(); ++i)
        requests.push_back({trace.times[i], "/v1/completions", completion_body(placement.models[trace.models[i]].name, a)});
    int port = 0;
    pagoda_server_t *server = serve(placement, a, &port);
    warm_up(port, placement, a);
    const std::vector<bench::TimedAnswer> answers = bench::run_open_loop(port, requests, 120.0);
    stop(server);

    const plan::SimulationResult measured = measured_result(placement, trace, answers);
    nlohmann::ordered_json per_model = nlohmann::ordered_json::array();
    for (size_t m = 0; m < placement.models.size(); ++m)
        per_model.push_back({{"name", placement.models[m].name},
                             {"simulated", attainment(simulated.per_model[m])},
                             {"measured", attainment(measured.per_model[m])},
                             {"difference", attainment(measured.per_model[m]) - attainment(simulated.per_model[m])}});
    nlohmann::ordered_json out;
    out["bench"] = "placement";
    out["placement"] = a.placement_path;
    out["rate_per_model"] = rate;
    out["cv"] = a.cv;
    out["duration"] = a.duration;
    out["seed"] = a.seed;
    out["max_tokens"] = a.max_tokens;
    out["overhead"] = placement.overhead_seconds;
    out["stages"] = a.keep_stages ? "placement" : "measured";
    nlohmann::ordered_json replicas = nlohmann::ordered_json::array();
    for (const ReplicaTiming &t : timings)
        replicas.push_back({{"group", t.group}, {"model", t.model}, {"placement_seconds", t.predicted},
                            {"alone_seconds", t.measured}});
    out["replicas"] = std::move(replicas);
    out["simulated"] = nlohmann::ordered_json::parse(plan::simulation_to_json(simulated, placement));
    out["measured"] = nlohmann::ordered_json::parse(plan::simulation_to_json(measured, placement));
    out["attainment_difference"] = measured.slo_attainment - simulated.slo_attainment;
    out["per_model"] = std::move(per_model);
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
    return {rate, simulated.slo_attainment, measured.slo_attainment};
}

int run(const Args &a) {
    // Linked statically, so the backend is loaded from the build tree (its configuration from
    // PAGODA_BACKEND_CPU_CONFIG, e.g. devices=4).
    if (a.devices == "cpu") {
        pagoda_backend_t *backend = nullptr;
        check(pagoda_backend_load(PAGODA_BENCH_PLUGIN_DIR "/libpagoda-backend-cpu.so", nullptr, &backend),
              "loading the CPU backend");
    }
    std::vector<ReplicaTiming> timings;
    const plan::Placement placement = calibrated_placement(a, &timings);
    std::vector<bench::AttainmentPoint> points;
    for (double rate : a.rates) points.push_back(replay_at(placement, timings, a, rate));
    if (!a.svg.empty()) {
        char title[256];
        const std::string name = a.placement_path.substr(a.placement_path.find_last_of('/') + 1);
        std::snprintf(title, sizeof title, "%s: SLO attainment, CV %g, seed %llu, %g s per rate",
                      name.c_str(), a.cv, (unsigned long long)a.seed, a.duration);
        std::ofstream file(a.svg);
        file << bench::attainment_svg(title, points);
        if (!file.flush()) throw std::runtime_error("cannot write " + a.svg);
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Args a;
    try {
        for (int i = 1; i < argc; ++i) {
            auto value = [&]() -> const char * {
                if (i + 1 >= argc) throw std::runtime_error(std::string(argv[i]) + " needs a value");
                return argv[++i];
            };
            const char *f = argv[i];
            if (!std::strcmp(f, "--placement")) a.placement_path = value();
            else if (!std::strcmp(f, "--rate")) a.rates = parse_rates(value());
            else if (!std::strcmp(f, "--svg")) a.svg = value();
            else if (!std::strcmp(f, "--cv")) a.cv = std::atof(value());
            else if (!std::strcmp(f, "--duration")) a.duration = std::atof(value());
            else if (!std::strcmp(f, "--seed")) a.seed = std::strtoull(value(), nullptr, 10);
            else if (!std::strcmp(f, "--max-tokens")) a.max_tokens = std::atoi(value());
            else if (!std::strcmp(f, "--prompt")) a.prompt = value();
            else if (!std::strcmp(f, "--slo-scale")) a.slo_scale = std::atof(value());
            else if (!std::strcmp(f, "--calibrate-runs")) a.calibrate_runs = std::atoi(value());
            else if (!std::strcmp(f, "--devices")) a.devices = value();
            else if (!std::strcmp(f, "--out-placement")) a.out_placement = value();
            else if (!std::strcmp(f, "--no-overhead")) a.measure_overhead = false;
            else if (!std::strcmp(f, "--keep-stages")) a.keep_stages = true;
            else if (!std::strcmp(f, "--no-reject")) a.reject = false;
            else throw std::runtime_error(std::string("unknown option ") + f);
        }
        if (a.placement_path.empty()) throw std::runtime_error("--placement FILE is required");
        if (a.calibrate_runs < 1) throw std::runtime_error("--calibrate-runs must be at least 1");
        return run(a);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pagoda-bench-placement: %s\n", e.what());
        return 1;
    }
}
