// pagoda-bench-kernels: kernel throughput of one backend, next to the machine's ceilings
// measured in the same run, printed as one JSON object per line.
//
//   pagoda-bench-kernels [--backend cpu|cuda] [--threads N] [--quick] [--bench LIST]
//                        [--plugin-dir DIR] [--repeats N] [--min-time SECONDS]
//
// The backend is loaded through the public API (pagoda_backend_load) and driven through its
// raw table (pagoda_backend_interface), as any host tool would. On a GPU (--backend cuda),
// kernels are timed with the backend's timing events, and compared with the device's own
// ceilings measured in the run: device-to-device copy bandwidth and, through cuBLAS directly,
// the bf16 GEMM peak; tests/gpu/run.sh tabulates the figures against their goals.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <thread>

#include "bench_common.hpp"

namespace {

using pagoda::bench::Options;

void usage(FILE *to) {
    std::fprintf(to,
                 "usage: pagoda-bench-kernels [options]\n"
                 "  --backend NAME     cpu (default) or cuda\n"
                 "  --threads N        CPU threads (config threads=N); default: every core\n"
                 "  --isa NAME         CPU kernels: native (default), avx2 or portable (config isa=)\n"
                 "  --quick            tiny sizes and times: a smoke run of a few seconds\n"
                 "  --shapes NAME      CPU matmul shapes: llama7b (default; Llama-2-7B's projections)\n"
                 "                     or llama1b (Llama-3.2-1B's, with k/v and the LM head)\n"
                 "  --bench LIST       comma-separated subset of "
                 "bandwidth,peak,sgemm,gemv,gemv_q8x,gemv_q8k,matmul,attention\n"
                 "                     (peak: cuBLAS's bf16 GEMM peak, GPU backends only)\n"
                 "  --plugin-dir DIR   folder of libpagoda-backend-<name>.so (default: %s)\n"
                 "  --repeats N        timed repeats per measurement (default 5)\n"
                 "  --min-time S       seconds each repeat runs at least (default 0.3)\n",
                 PAGODA_BENCH_PLUGIN_DIR);
}

bool parse_int(const char *text, long lo, long hi, long &out) {
    char *end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < lo || v > hi) return false;
    out = v;
    return true;
}

// Fills `o` from argv; returns false (after printing why) on a bad command line.
bool parse_options(int argc, char **argv, Options &o) {
    o.plugin_dir = PAGODA_BENCH_PLUGIN_DIR;
    bool repeats_set = false, time_set = false;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&](const char *name) -> const char * {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", name);
                return nullptr;
            }
            return argv[++i];
        };
        long n = 0;
        if (arg == "--help" || arg == "-h") {
            usage(stdout);
            std::exit(0);
        } else if (arg == "--quick") {
            o.quick = true;
        } else if (arg == "--backend") {
            const char *v = value("--backend");
            if (v == nullptr) return false;
            o.backend = v;
        } else if (arg == "--plugin-dir") {
            const char *v = value("--plugin-dir");
            if (v == nullptr) return false;
            o.plugin_dir = v;
        } else if (arg == "--shapes") {
            const char *v = value("--shapes");
            if (v == nullptr) return false;
            o.shapes = v;
            if (o.shapes != "llama7b" && o.shapes != "llama1b") {
                std::fprintf(stderr, "--shapes wants llama7b or llama1b\n");
                return false;
            }
        } else if (arg == "--isa") {
            const char *v = value("--isa");
            if (v == nullptr) return false;
            o.isa = v;
        } else if (arg == "--threads") {
            const char *v = value("--threads");
            if (v == nullptr || !parse_int(v, 1, 1024, n)) {
                std::fprintf(stderr, "--threads wants a count in 1..1024\n");
                return false;
            }
            o.threads = int(n);
        } else if (arg == "--repeats") {
            const char *v = value("--repeats");
            if (v == nullptr || !parse_int(v, 1, 1000, n)) {
                std::fprintf(stderr, "--repeats wants a count in 1..1000\n");
                return false;
            }
            o.repeats = int(n);
            repeats_set = true;
        } else if (arg == "--min-time") {
            const char *v = value("--min-time");
            char *end = nullptr;
            double s = v ? std::strtod(v, &end) : -1.0;
            if (v == nullptr || *end != '\0' || !(s >= 0.0 && s <= 60.0)) {
                std::fprintf(stderr, "--min-time wants seconds in 0..60\n");
                return false;
            }
            o.target_seconds = s;
            time_set = true;
        } else if (arg == "--bench") {
            const char *v = value("--bench");
            if (v == nullptr) return false;
            std::stringstream list(v);
            std::string name;
            while (std::getline(list, name, ',')) {
                if (name != "bandwidth" && name != "peak" && name != "sgemm" && name != "gemv" &&
                    name != "gemv_q8x" && name != "gemv_q8k" && name != "matmul" &&
                    name != "attention") {
                    std::fprintf(stderr, "--bench: unknown benchmark '%s'\n", name.c_str());
                    return false;
                }
                o.benches.push_back(name);
            }
        } else {
            std::fprintf(stderr, "unknown option '%s'\n", arg.c_str());
            usage(stderr);
            return false;
        }
    }
    if (o.threads == 0) o.threads = int(std::max(1u, std::thread::hardware_concurrency()));
    if (o.quick) {
        // Every code path once, on sizes that take milliseconds; no cache-defeating rotation.
        if (!time_set) o.target_seconds = 0.01;
        if (!repeats_set) o.repeats = 2;
        o.min_iterations = 1;
        o.rotate_bytes = 0;
    }
    return true;
}

// The 1-minute load average, or -1 where /proc/loadavg cannot be read.
double load_average() {
    double load = -1.0;
    if (FILE *f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf", &load) != 1) load = -1.0;
        std::fclose(f);
    }
    return load;
}

}  // namespace

int main(int argc, char **argv) {
    using namespace pagoda::bench;
    Options o;
    if (!parse_options(argc, argv, o)) return 2;

    const std::string path = o.plugin_dir + "/libpagoda-backend-" + o.backend + ".so";
    // Only the CPU backend takes a thread count; the others refuse unknown keys.
    const std::string config =
        o.backend == "cpu" ? "threads=" + std::to_string(o.threads) + (o.isa.empty() ? "" : ",isa=" + o.isa)
                           : "";
    pagoda_backend_t *backend = nullptr;
    pagoda_status_t s =
        pagoda_backend_load(path.c_str(), config.empty() ? nullptr : config.c_str(), &backend);
    if (s != PAGODA_OK) {
        std::fprintf(stderr, "pagoda-bench-kernels: loading %s: %s: %s\n", path.c_str(),
                     pagoda_status_string(s), pagoda_last_error_message());
        return 1;
    }

    int status = 0;
    try {
        Bench bench(o, backend);
        JsonLine info = JsonLine::start(bench, "info");
        info.add("description", pagoda_backend_description(backend));
        info.add("device", bench.device().name).add("arch", bench.device().arch);
        info.add("pagoda", pagoda_version()).add("quick", int64_t(o.quick));
        info.add("min_time", o.target_seconds).add("repeats", o.repeats);
        // Other work on the machine skews every number; say how busy it was.
        info.add("loadavg_1m", load_average());
        info.print();
        if (wanted(o, "bandwidth")) bench_bandwidth(bench);
        // A GPU's arithmetic ceiling, which prefill attention is judged against.
        if (!bench.host_memory() && (wanted(o, "peak") || wanted(o, "attention"))) {
#ifdef PAGODA_BENCH_WITH_CUBLAS
            bench_gemm_peak(bench);
#else
            print_skipped(JsonLine::start(bench, "gemm_peak_bf16"),
                          "built without the CUDA toolkit (PAGODA_WITH_CUDA=OFF)");
#endif
        }
        bench_matmul(bench);
        bench_attention(bench);
        if (wanted(o, "bandwidth")) bench_bandwidth_again(bench);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pagoda-bench-kernels: %s\n", e.what());
        status = 1;
    }
    pagoda_backends_unload_all();
    return status;
}
