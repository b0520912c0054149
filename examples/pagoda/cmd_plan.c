/* pagoda plan: lay a model out on a mesh (pipeline stages, sub-meshes, tensor parallelism) and
 * optionally slice a long prompt across the stages, from predicted costs. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan_svg.h"

static void plan_usage(FILE *out) {
    fputs("Usage: pagoda plan (--model PATH | --config FILE) --mesh NxM [options]\n"
          "\n"
          "Plans pipeline stages over N nodes of M devices and prints the stages (or the whole\n"
          "plan as JSON with --json).\n"
          "\n"
          "Options:\n"
          "  --model PATH          a GGUF file or Hugging Face folder (its weights are not read into memory)\n"
          "  --config FILE         a Hugging Face config.json (no weights needed)\n"
          "  --mesh NxM            nodes x devices per node, e.g. 8x8\n"
          "  --device NAME         device preset for the analytic costs: h100, cpu (default cpu)\n"
          "  --cost-file FILE      measured layer costs, and links when it holds them\n"
          "                      (pagoda profile, pagoda profile --links)\n"
          "  --objective OBJ       latency (default) or throughput\n"
          "  --micro-batches B     micro-batches for throughput (default 1)\n"
          "  --stages K            exactly K pipeline stages (default: the planner's choice)\n"
          "  --tensor-parallel T   every stage on T devices (default: the planner's choice)\n"
          "  --expert-parallel E   a mixture of experts' experts split into E groups of each\n"
          "                        stage's devices (default: the planner's choice)\n"
          "  --step-tokens N       new tokens per pipeline step (default 2048)\n"
          "  --kv-tokens N         KV-cache tokens every layer reserves (default 0)\n"
          "  --prompt-len L        also slice an L-token prompt across the stages (TeraPipe)\n"
          "  --granularity G       slices are multiples of G tokens (default 8)\n"
          "  --json                print the plan as JSON\n"
          "  --svg FILE            also draw the pipeline schedule as SVG: stages down, time across,\n"
          "                        a bar per micro-batch (and per prompt slice) on each stage\n"
          "  --help                show this help\n",
          out);
}

static int parse_long(const char *flag, const char *text, long long *out) {
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || v < 0) {
        fprintf(stderr, "pagoda plan: %s wants a non-negative integer, got \"%s\"\n", flag, text);
        return 0;
    }
    *out = v;
    return 1;
}

/* The name a path ends in, for the picture's title: "llama-70b/config.json" names the folder. */
static const char *last_part(const char *path, char *name, size_t size) {
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--;
    size_t begin = end;
    while (begin > 0 && path[begin - 1] != '/') begin--;
    if (end - begin == strlen("config.json") && strncmp(path + begin, "config.json", end - begin) == 0 && begin > 1) {
        end = begin - 1; /* the folder holding config.json */
        begin = end;
        while (begin > 0 && path[begin - 1] != '/') begin--;
    }
    snprintf(name, size, "%.*s", (int)(end - begin), path + begin);
    return name;
}

int cli_plan(int argc, char **argv) {
    const char *model_path = NULL, *config_path = NULL, *svg_path = NULL;
    int json = 0;
    pagoda_plan_options_t o;
    pagoda_plan_options_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            plan_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(f, "--json") == 0) {
            json = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "pagoda plan: unknown option or missing value: %s\n", f);
            plan_usage(stderr);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        long long n = 0;
        if (strcmp(f, "--model") == 0) model_path = v;
        else if (strcmp(f, "--config") == 0) config_path = v;
        else if (strcmp(f, "--mesh") == 0) o.mesh_shape = v;
        else if (strcmp(f, "--svg") == 0) svg_path = v;
        else if (strcmp(f, "--device") == 0) o.device = v;
        else if (strcmp(f, "--cost-file") == 0) o.cost_file = v;
        else if (strcmp(f, "--objective") == 0) {
            if (strcmp(v, "latency") == 0) o.objective = PAGODA_PLAN_LATENCY;
            else if (strcmp(v, "throughput") == 0) o.objective = PAGODA_PLAN_THROUGHPUT;
            else {
                fprintf(stderr, "pagoda plan: --objective is latency or throughput, not \"%s\"\n", v);
                return CLI_EXIT_USAGE;
            }
        } else if (strcmp(f, "--micro-batches") == 0) {
            if (!parse_long(f, v, &n)) return CLI_EXIT_USAGE;
            o.micro_batches = (int32_t)n;
        } else if (strcmp(f, "--stages") == 0) {
            if (!parse_long(f, v, &n)) return CLI_EXIT_USAGE;
            o.stages = (int32_t)n;
        } else if (strcmp(f, "--tensor-parallel") == 0) {
            if (!parse_long(f, v, &n)) return CLI_EXIT_USAGE;
            o.tensor_parallel = (int32_t)n;
        } else if (strcmp(f, "--expert-parallel") == 0) {
            if (!parse_long(f, v, &n)) return CLI_EXIT_USAGE;
            o.expert_parallel = (int32_t)n;
        } else if (strcmp(f, "--step-tokens") == 0) {
            if (!parse_long(f, v, &n)) return CLI_EXIT_USAGE;
            o.step_tokens = n;
        } else if (strcmp(f, "--kv-tokens") == 0) {
            if (!parse_long(f, v, &n)) return CLI_EXIT_USAGE;
            o.kv_tokens = n;
        } else if (strcmp(f, "--prompt-len") == 0) {
            if (!parse_long(f, v, &n)) return CLI_EXIT_USAGE;
            o.prompt_tokens = n;
        } else if (strcmp(f, "--granularity") == 0) {
            if (!parse_long(f, v, &n)) return CLI_EXIT_USAGE;
            o.granularity = n;
        } else {
            fprintf(stderr, "pagoda plan: unknown option %s\n", f);
            plan_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if ((model_path == NULL) == (config_path == NULL) || o.mesh_shape == NULL) {
        fputs("pagoda plan: give one of --model and --config, and --mesh\n", stderr);
        plan_usage(stderr);
        return CLI_EXIT_USAGE;
    }

    pagoda_plan_t *plan = NULL;
    pagoda_status_t s;
    if (config_path != NULL) {
        s = pagoda_plan_create_from_config(config_path, &o, &plan);
    } else {
        pagoda_model_t *model = NULL;
        s = pagoda_model_open(model_path, NULL, &model);
        if (s != PAGODA_OK) return cli_fail("opening the model", s);
        s = pagoda_plan_create(model, NULL, &o, &plan);
        pagoda_model_destroy(model);
    }
    if (s != PAGODA_OK) return cli_fail("planning", s);

    if (svg_path != NULL) {
        char costs[300], name[256];
        if (o.cost_file != NULL)
            snprintf(costs, sizeof costs, "measured (%s)", last_part(o.cost_file, name, sizeof name));
        else
            snprintf(costs, sizeof costs, "%s preset", o.device != NULL ? o.device : "cpu");
        plan_svg_info_t info = {last_part(model_path != NULL ? model_path : config_path, name, sizeof name),
                                o.mesh_shape, costs, o.objective, o.micro_batches, o.step_tokens};
        if (plan_svg_write(plan, &info, svg_path) != 0) {
            pagoda_plan_destroy(plan);
            return CLI_EXIT_FAILED;
        }
    }

    if (json) {
        char *text = NULL;
        s = pagoda_plan_to_json(plan, &text);
        if (s != PAGODA_OK) {
            pagoda_plan_destroy(plan);
            return cli_fail("writing the plan", s);
        }
        puts(text);
        pagoda_free(text);
    } else {
        pagoda_plan_summary_t sum;
        sum.struct_size = sizeof sum;
        pagoda_plan_get_summary(plan, &sum);
        printf("%zu stages, latency %.3f ms, bottleneck stage %.3f ms (%.1f steps/s)\n", sum.n_stages,
               sum.latency_seconds * 1e3, sum.max_stage_seconds * 1e3, sum.throughput_per_second);
        for (size_t i = 0; i < sum.n_stages; i++) {
            pagoda_plan_stage_t st;
            char mem[32];
            st.struct_size = sizeof st;
            pagoda_plan_get_stage(plan, i, &st);
            char experts[40] = "";
            if (st.expert_parallel > 1) snprintf(experts, sizeof experts, ", experts over ep %d", st.expert_parallel);
            printf("  stage %zu: layers %lld-%lld on (%d,%d), tp %d%s, %.3f ms, %s per device%s%s\n", i,
                   (long long)st.first_layer, (long long)st.end_layer - 1, st.nodes, st.devices,
                   st.tensor_parallel, experts, st.seconds * 1e3,
                   cli_format_bytes((uint64_t)st.memory_bytes, mem, sizeof mem),
                   st.has_embedding ? ", embedding" : "", st.has_head ? ", LM head" : "");
        }
        if (sum.n_slices > 0) {
            printf("prompt slices (%zu):", sum.n_slices);
            for (size_t i = 0; i < sum.n_slices; i++) printf(" %lld", (long long)pagoda_plan_slice_length(plan, i));
            printf("\nsliced prefill %.3f ms, best uniform %.3f ms (%.3fx)\n", sum.sliced_prefill_seconds * 1e3,
                   sum.uniform_prefill_seconds * 1e3,
                   sum.sliced_prefill_seconds > 0 ? sum.uniform_prefill_seconds / sum.sliced_prefill_seconds : 1.0);
        }
    }
    pagoda_plan_destroy(plan);
    return CLI_EXIT_OK;
}
