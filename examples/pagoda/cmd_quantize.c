/* pagoda quantize: a GGUF model or a Hugging Face folder written as GGUF with quantized weight
 * matrices. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void quantize_usage(FILE *out) {
    fputs("Usage: pagoda quantize IN OUT --type TYPE [--threads N] [--quiet]\n"
          "\n"
          "Writes OUT, a GGUF file of the model IN with its weight matrices quantized,\n"
          "and prints per tensor type the tensors, values and error written.\n"
          "IN is a GGUF file (F32, F16 or BF16 weights) or a Hugging Face folder of a\n"
          "Llama, Mistral, Qwen2/3, Gemma 2/3 or Phi-3 model (config.json, safetensors,\n"
          "tokenizer.json, tokenizer_config.json), converted as llama.cpp's convert_hf_to_gguf.py\n"
          "converts it; a tokenizer GGUF cannot carry faithfully is refused.\n"
          "\n"
          "Options:\n"
          "  --type TYPE   q8_0, q4_0, q4_k_m, q5_k_m or q6_k (llama.cpp's mixes of these names:\n"
          "                the _m types and q4_0 keep the output matrix in Q6_K; the _m types\n"
          "                also attn_v and ffn_down in some layers)\n"
          "  --threads N   threads quantizing (default: one per core)\n"
          "  --quiet       no progress on stderr\n"
          "  --help        show this help\n",
          out);
}

static const struct {
    const char *name;
    pagoda_quant_type_t type;
} kTypes[] = {{"q8_0", PAGODA_QUANT_Q8_0},
              {"q4_0", PAGODA_QUANT_Q4_0},
              {"q4_k_m", PAGODA_QUANT_Q4_K_M},
              {"q5_k_m", PAGODA_QUANT_Q5_K_M},
              {"q6_k", PAGODA_QUANT_Q6_K}};

/* Progress on one stderr line, rewritten in place. */
static int show_progress(void *user, float fraction, const char *stage) {
    (void)user;
    fprintf(stderr, "\r%5.1f%%  %-48.48s", 100.0 * fraction, stage);
    if (fraction >= 1.0f) fputc('\n', stderr);
    return 1;
}

int cli_quantize(int argc, char **argv) {
    const char *paths[2] = {NULL, NULL}, *type_name = NULL;
    int n_paths = 0, quiet = 0;
    long threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            quantize_usage(stdout);
            return CLI_EXIT_OK;
        }
        char *end = NULL;
        if (strcmp(f, "--quiet") == 0) quiet = 1;
        else if (i + 1 < argc && strcmp(f, "--type") == 0) type_name = argv[++i];
        else if (i + 1 < argc && strcmp(f, "--threads") == 0 &&
                 (threads = strtol(argv[i + 1], &end, 10), *end == '\0' && threads >= 1 && threads <= 1024))
            i++;
        else if (f[0] != '-' && n_paths < 2) paths[n_paths++] = f;
        else {
            fprintf(stderr, "pagoda quantize: unknown option, bad value or extra argument: '%s'\n\n", f);
            quantize_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    int type = -1;
    for (size_t t = 0; type_name && t < sizeof kTypes / sizeof kTypes[0]; t++)
        if (strcmp(type_name, kTypes[t].name) == 0) type = (int)kTypes[t].type;
    if (n_paths != 2 || type < 0) {
        fputs(n_paths != 2 ? "pagoda quantize: give IN and OUT\n\n"
                           : "pagoda quantize: --type must be q8_0, q4_0, q4_k_m, q5_k_m or q6_k\n\n",
              stderr);
        quantize_usage(stderr);
        return CLI_EXIT_USAGE;
    }

    pagoda_quantize_options_t options;
    pagoda_quantize_options_default(&options);
    options.type = type;
    options.threads = (int32_t)threads;
    if (!quiet) options.progress = show_progress;
    pagoda_quantize_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    pagoda_status_t s = pagoda_model_quantize(paths[0], paths[1], &options, &stats);
    if (s != PAGODA_OK) {
        if (!quiet) fputc('\n', stderr);
        return cli_fail("quantizing", s);
    }
    printf("%s: %.1f MiB of tensors -> %.1f MiB file (%lld tensors kept as they were)\n", paths[1],
           (double)stats.input_bytes / 1048576.0, (double)stats.output_bytes / 1048576.0,
           (long long)stats.tensors_kept);
    printf("%-6s %8s %14s %12s %14s\n", "type", "tensors", "values", "rmse", "relative rmse");
    for (int i = 0; i < stats.n_types; i++)
        printf("%-6s %8lld %14llu %12.4g %14.4g\n", stats.types[i].name, (long long)stats.types[i].tensors,
               (unsigned long long)stats.types[i].values, stats.types[i].rmse, stats.types[i].relative_rmse);
    return CLI_EXIT_OK;
}
