// pagoda-bench-server: the HTTP server's overhead. The same closed-loop workload (R streamed
// requests, C in flight at once) runs through the C API (one thread steps the engine and polls)
// and through the server over HTTP on 127.0.0.1 (C keep-alive connections driven by one epoll
// thread, reading Server-Sent Events: bench_http_client.cpp), alternating for several rounds in
// one run. Reported per round and as medians with their spread: requests/s, time to first token and inter-token latency, and
// HTTP/C-API ratios (throughput: higher is better; the goal is >= 0.95). The prompt is 8 token
// ids, so a random-weight model (tests/fixtures/make_random_model.py) serves as well.
//
//   pagoda-bench-server [--model PATH] [--requests 256] [--concurrency 16] [--max-tokens 32]
//                       [--rounds 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench_http_client.hpp"
#include "pagoda/pagoda.h"

namespace {

using Clock = std::chrono::steady_clock;
// Token ids, so that models without a tokenizer (random-weight ones) serve too.
const int32_t kPrompt[] = {1, 2, 3, 4, 5, 6, 7, 8};
double ms_since(Clock::time_point t0, Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(t - t0).count();
}

struct Config {
    std::string model = PAGODA_BENCH_DEFAULT_MODEL;
    int requests = 256, concurrency = 16, max_tokens = 32, rounds = 3;
};

struct Result {
    double seconds = 0;
    std::vector<double> ttft, itl;  // milliseconds
    double rps() const { return double(ttft.size()) / seconds; }
};

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
double mean(const std::vector<double> &v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / double(v.size());
}

void check(pagoda_status_t s, const char *what) {
    if (s != PAGODA_OK) {
        std::fprintf(stderr, "pagoda-bench-server: %s: %s\n", what, pagoda_last_error_message());
        std::exit(1);
    }
}

pagoda_request_options_t request_options(const Config &c) {
    pagoda_request_options_t o;
    pagoda_request_options_default(&o);
    o.max_tokens = c.max_tokens;
    o.temperature = 0;
    o.flags = PAGODA_REQUEST_IGNORE_EOS;
    return o;
}

// The C API: one thread submits, steps and polls, keeping `concurrency` requests in flight.
Result run_capi(pagoda_engine_t *engine, const Config &c) {
    pagoda_request_options_t o = request_options(c);
    struct Live {
        Clock::time_point submitted, last;
        bool first = true;
    };
    std::map<uint64_t, Live> live;
    Result r;
    int submitted = 0, done = 0;
    auto t0 = Clock::now();
    auto submit = [&] {
        uint64_t id;
        check(pagoda_engine_submit_tokens(engine, kPrompt, sizeof kPrompt / sizeof kPrompt[0], &o, &id), "submit");
        live[id] = Live{Clock::now(), {}, true};
        ++submitted;
    };
    while (submitted < c.concurrency && submitted < c.requests) submit();
    pagoda_output_t out{};
    out.struct_size = sizeof out;
    while (done < c.requests) {
        check(pagoda_engine_step(engine), "step");
        while (pagoda_engine_poll(engine, &out) == PAGODA_OK) {
            auto it = live.find(out.request_id);
            if (it == live.end()) continue;
            auto now = Clock::now();
            if (out.n_tokens > 0) {
                if (it->second.first) r.ttft.push_back(ms_since(it->second.submitted, now));
                else r.itl.push_back(ms_since(it->second.last, now) / double(out.n_tokens));
                it->second.first = false;
                it->second.last = now;
            }
            if (out.request_finished) {
                live.erase(it);
                ++done;
                if (submitted < c.requests) submit();
            }
        }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
}

Result run_http(pagoda_engine_t *engine, const Config &c) {
    pagoda_server_t *server;
    check(pagoda_server_create(nullptr, &server), "server create");
    check(pagoda_server_add_model(server, "m", engine), "add model");
    check(pagoda_server_start(server), "server start");
    int port = pagoda_server_port(server);
    std::string body = "{\"model\":\"m\",\"prompt\":[1,2,3,4,5,6,7,8],\"max_tokens\":" +
                       std::to_string(c.max_tokens) + ",\"temperature\":0,\"ignore_eos\":true,\"stream\":true}";
    auto t0 = Clock::now();
    pagoda::bench::StreamTimings timings =
        pagoda::bench::run_streamed_requests(port, "/v1/completions", body, c.requests, c.concurrency);
    Result r;
    r.ttft = std::move(timings.ttft_ms);
    r.itl = std::move(timings.itl_ms);
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    check(pagoda_server_stop(server), "server stop");
    pagoda_server_destroy(server);
    return r;
}

void print(const char *mode, int round, const Result &r) {
    std::printf("{\"mode\":\"%s\",\"round\":%d,\"requests_per_s\":%.2f,\"ttft_ms_mean\":%.3f,\"ttft_ms_p50\":%.3f,"
                "\"itl_ms_mean\":%.3f,\"itl_ms_p50\":%.3f}\n",
                mode, round, r.rps(), mean(r.ttft), median(r.ttft), mean(r.itl), median(r.itl));
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    Config c;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string f = argv[i];
        if (f == "--model") c.model = argv[i + 1];
        else if (f == "--requests") c.requests = std::atoi(argv[i + 1]);
        else if (f == "--concurrency") c.concurrency = std::atoi(argv[i + 1]);
        else if (f == "--max-tokens") c.max_tokens = std::atoi(argv[i + 1]);
        else if (f == "--rounds") c.rounds = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: pagoda-bench-server [--model PATH] [--requests N] [--concurrency C] "
                                 "[--max-tokens T] [--rounds K]\n");
            return 2;
        }
    }
    if (c.requests < 1 || c.concurrency < 1 || c.max_tokens < 1 || c.rounds < 1) return 2;
    pagoda_model_t *model;
    pagoda_mesh_t *mesh;
    pagoda_kv_cache_t *cache;
    pagoda_engine_t *engine;
    check(pagoda_model_open(c.model.c_str(), nullptr, &model), "model");
    check(pagoda_mesh_create(nullptr, &mesh), "mesh");
    check(pagoda_kv_cache_create(model, mesh, nullptr, nullptr, &cache), "kv cache");
    check(pagoda_engine_create(model, mesh, nullptr, cache, nullptr, &engine), "engine");
    std::printf("{\"model\":\"%s\",\"requests\":%d,\"concurrency\":%d,\"max_tokens\":%d,\"rounds\":%d}\n",
                c.model.c_str(), c.requests, c.concurrency, c.max_tokens, c.rounds);
    // A warm-up of each, unreported.
    Config warm = c;
    warm.requests = std::min(c.requests, 2 * c.concurrency);
    run_capi(engine, warm);
    run_http(engine, warm);
    std::vector<double> ratio_rps, ratio_ttft, ratio_itl;
    for (int round = 0; round < c.rounds; ++round) {
        Result a = run_capi(engine, c);
        print("capi", round, a);
        Result h = run_http(engine, c);
        print("http", round, h);
        ratio_rps.push_back(h.rps() / a.rps());
        ratio_ttft.push_back(median(h.ttft) / median(a.ttft));
        ratio_itl.push_back(median(h.itl) / median(a.itl));
    }
    auto spread = [](const std::vector<double> &v) {
        return std::make_pair(*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
    };
    auto [rlo, rhi] = spread(ratio_rps);
    auto [tlo, thi] = spread(ratio_ttft);
    auto [ilo, ihi] = spread(ratio_itl);
    std::printf("{\"summary\":true,\"http_over_capi_requests_per_s\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f},"
                "\"http_over_capi_ttft_p50\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f},"
                "\"http_over_capi_itl_p50\":{\"median\":%.3f,\"min\":%.3f,\"max\":%.3f}}\n",
                median(ratio_rps), rlo, rhi, median(ratio_ttft), tlo, thi, median(ratio_itl), ilo, ihi);
    pagoda_engine_destroy(engine);
    pagoda_kv_cache_destroy(cache);
    pagoda_mesh_destroy(mesh);
    pagoda_model_destroy(model);
    return 0;
}
