// pagoda-bench-serve: `pagoda bench serve` (examples/pagoda/cmd_bench.c, bench_serve.c, compiled
// in unchanged) plus what the C command line cannot do itself: write a random-weight model of a
// named shape and load the CPU backend with a thread count.
//
//   pagoda-bench-serve [--random-model serve|tiny|110m] [--threads N] [--plugin-dir DIR]
//                      <any `pagoda bench serve` option>
//
// Without --model, the random "serve" model is used: hidden 256, 4 layers, context 2048, fast
// enough on two cores to replay hundreds of ShareGPT-like requests in a minute or two, and a
// default cache of 1024 blocks of 16 tokens that long sequences fill, so the KV cache, not the
// sequence cap, limits the batch.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "pagoda/pagoda.h"
#include "random_gguf.hpp"

extern "C" {
#include "cli.h"
}

namespace {

void usage(FILE *to) {
    std::fprintf(to,
                 "usage: pagoda-bench-serve [--random-model SPEC] [--threads N] [--plugin-dir DIR]\n"
                 "                          [pagoda bench serve options]\n"
                 "  --random-model SPEC  random weights of a known shape: serve (default without\n"
                 "                       --model), tiny or 110m\n"
                 "  --threads N          CPU backend threads (default: the backend's choice)\n"
                 "  --plugin-dir DIR     folder of libpagoda-backend-cpu.so (default: %s)\n"
                 "The remaining options are `pagoda bench serve`'s:\n\n",
                 PAGODA_BENCH_PLUGIN_DIR);
}

int run(int argc, char **argv) {
    std::string random_model, threads, plugin_dir = PAGODA_BENCH_PLUGIN_DIR;
    bool has_model = false, help = false;
    std::vector<std::string> rest{"bench", "serve"};  // as cli_bench gets them from `pagoda`
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool ours = arg == "--random-model" || arg == "--threads" || arg == "--plugin-dir";
        if (ours && i + 1 >= argc) {
            std::fprintf(stderr, "pagoda-bench-serve: %s needs a value\n", arg.c_str());
            return CLI_EXIT_USAGE;
        }
        if (arg == "--random-model") random_model = argv[++i];
        else if (arg == "--threads") threads = argv[++i];
        else if (arg == "--plugin-dir") plugin_dir = argv[++i];
        else {
            has_model = has_model || arg == "--model";
            help = help || arg == "--help" || arg == "-h";
            rest.push_back(arg);
        }
    }
    if (help) usage(stdout);
    if (has_model && !random_model.empty()) {
        std::fputs("pagoda-bench-serve: give --model or --random-model, not both\n", stderr);
        return CLI_EXIT_USAGE;
    }
    // --quick without a model keeps the CLI's default (the bundled stories260K): seconds.
    const bool quick = std::find(rest.begin(), rest.end(), "--quick") != rest.end();
    if (!has_model && random_model.empty() && !quick && !help) random_model = "serve";

    // Loaded explicitly so that the thread count applies; discovery then finds it loaded.
    const std::string plugin = plugin_dir + "/libpagoda-backend-cpu.so";
    const std::string config = threads.empty() ? std::string() : "threads=" + threads;
    pagoda_backend_t *backend = nullptr;
    if (!help) {
        const pagoda_status_t s = pagoda_backend_load(plugin.c_str(), config.c_str(), &backend);
        if (s != PAGODA_OK) return cli_fail(("loading " + plugin).c_str(), s);
    }

    pagoda::bench::TempGgufFile file;
    if (!random_model.empty()) {
        const pagoda::bench::RandomModelShape shape = pagoda::bench::random_model_shape(random_model);
        pagoda::bench::write_random_gguf(file.path(), shape, PAGODA_DTYPE_F32, 1);
        rest.push_back("--model");
        rest.push_back(file.path());
    }
    std::vector<char *> args;
    for (std::string &s : rest) args.push_back(s.data());
    args.push_back(nullptr);
    return cli_bench(int(args.size()) - 1, args.data());
}

}  // namespace

int main(int argc, char **argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "pagoda-bench-serve: %s\n", e.what());
        return CLI_EXIT_FAILED;
    }
}
