/* pagoda: the command-line front end of libpagoda, built on the public API only.
 *
 *     pagoda devices [--json]     list backends and their devices
 *     pagoda generate [--model PATH] --prompt TEXT [options]
 *     pagoda tokenize (--model PATH | --tokenizer PATH) --text TEXT [--json]
 *     pagoda serve [--model PATH] [--host ADDR] [--port N] [--api-key KEY]
 *     pagoda apply-template --model PATH --messages FILE [--add-generation-prompt]
 *     pagoda quantize IN OUT --type q8_0|q4_0|q4_k_m|q5_k_m|q6_k   (IN: GGUF or Hugging Face folder)
 *     pagoda tune --model PATH --out FILE [--max-tokens N]
 *     pagoda profile --model PATH --out FILE [--device DEV] [--beside DEV]
 *     pagoda profile --links --out FILE [--device DEVS]   (over a launch of several processes)
 *     pagoda --version | --help
 *
 * Subcommands live in cmd_<name>.c and are listed in `commands` below (see cli.h).
 */
#include <string.h>

#include "cli.h"

static const cli_command_t commands[] = {
    {"devices", "List the backends found and their devices (--json for machine-readable output)",
     cli_devices},
    {"generate", "Generate text with a model (default: the bundled stories260K)", cli_generate},
    {"tokenize", "Print the token ids of a text", cli_tokenize},
    {"serve", "Serve a model over HTTP with OpenAI's API (completions, chat, models, metrics)",
     cli_serve},
    {"apply-template", "Render a conversation with a model's chat template (prompt text only)",
     cli_apply_template},
    {"plan", "Plan pipeline stages and prompt slicing of a model on a mesh", cli_plan},
    {"simulate", "Simulate serving several models on a placement (SLO attainment)", cli_simulate},
    {"place", "Search for a placement of several models on a cluster (AlpaServe)", cli_place},
    {"profile", "Time a model's layers, or the links between devices, into a cost file (for plan and place)",
     cli_profile},
    {"bench", "Benchmarks; 'bench serve' replays a serving workload, paged vs contiguous KV", cli_bench},
    {"quantize", "Write a GGUF model with quantized weights (q8_0, q4_0, q4_k_m, q5_k_m, q6_k)",
     cli_quantize},
    {"tune", "Time the backends' kernels on a model's products and keep the fastest in a file",
     cli_tune},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fputs("Usage: pagoda <command> [options]\n"
          "       pagoda --version\n"
          "       pagoda --help\n"
          "\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-15s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "Run 'pagoda <command> --help' for a command's options.\n"
          "\n"
          "Environment:\n"
          "  PAGODA_BACKEND_PATH  colon-separated folders searched for backend plugins\n"
          "                       (libpagoda-backend-<name>.so) before libpagoda's own folder\n",
          out);
}

static int print_version(void) {
    /* The library's version first; then what this program was compiled against. */
    printf("pagoda %s (headers %d.%d.%d, plugin ABI %u.%u)\n", pagoda_version(),
           PAGODA_VERSION_MAJOR, PAGODA_VERSION_MINOR, PAGODA_VERSION_PATCH,
           (unsigned)PAGODA_BACKEND_ABI_MAJOR(PAGODA_BACKEND_ABI_VERSION),
           (unsigned)(PAGODA_BACKEND_ABI_VERSION & 0xffffu));
    return CLI_EXIT_OK;
}

int main(int argc, char **argv) {
    if (pagoda_version_number() / 10000 != PAGODA_VERSION_MAJOR) {
        fprintf(stderr, "pagoda: libpagoda %s does not match the headers this program was built "
                        "with (%d.%d.%d)\n",
                pagoda_version(), PAGODA_VERSION_MAJOR, PAGODA_VERSION_MINOR,
                PAGODA_VERSION_PATCH);
        return CLI_EXIT_FAILED;
    }
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) return print_version();

    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);

    fprintf(stderr, "pagoda: unknown %s '%s'\n\n", name[0] == '-' ? "option" : "command", name);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
