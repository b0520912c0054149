/* The `pagoda` command: what its subcommands share.
 *
 * A subcommand is one file with one function `int cli_<name>(int argc, char **argv)` that gets
 * the arguments after `pagoda` (argv[0] is the subcommand's name) and returns a CLI_EXIT_* code.
 * To add one (generate, tokenize, serve, bench, ...): write cmd_<name>.c, declare its function
 * here, and add a line to the table in main.c. Everything uses the public API only.
 */
#ifndef PAGODA_CLI_H
#define PAGODA_CLI_H

#include <stdint.h>
#include <stdio.h>

#include <pagoda/pagoda.h>

/* Exit codes shared by every subcommand. */
enum {
    CLI_EXIT_OK = 0,     /* did what was asked */
    CLI_EXIT_FAILED = 1, /* a library call failed; the message went to stderr */
    CLI_EXIT_USAGE = 2   /* bad command line; the usage went to stderr */
};

/* One subcommand: its name, a one-line summary for `pagoda --help`, and its function. */
typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} cli_command_t;

/* Subcommands. */
int cli_devices(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_apply_template(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_simulate(int argc, char **argv);
int cli_place(int argc, char **argv);
int cli_profile(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_quantize(int argc, char **argv);
int cli_tune(int argc, char **argv);

/* Where a model runs: its mesh's devices and axes, and a plan written by `pagoda plan --json`
 * (NULL: the library lays it out). */
typedef struct cli_placement {
    const char *devices;
    const char *axes;
    const char *plan_path;
    long long mesh_timeout_ms; /* over several processes; 0 = the library's default */
} cli_placement_t;

/* Parses --device, --axes, --plan and --mesh-timeout into `p`; 1 when `flag` was one of them
 * (--mesh-timeout's value is checked when the mesh is made). */
int cli_placement_flag(cli_placement_t *p, const char *flag, const char *value);

/* Opens `model_path`, a mesh of `p->devices` (NULL: cpu:0) with `p->axes`, and the plan at
 * `p->plan_path` (`*plan` stays NULL without one). Returns CLI_EXIT_OK, or CLI_EXIT_FAILED
 * after printing why; the caller destroys whatever was made either way. */
/* Under mpirun, a rank other than 0 takes part in rank 0's steps rather than serving: returns
 * 1 once it has followed (or failed to read the mesh's ranks), with the status in `*status`
 * (reported when not OK); 0 on rank 0 and on a mesh in one process. */
int cli_follow_unless_rank0(const pagoda_mesh_t *mesh, pagoda_engine_t *engine, pagoda_status_t *status);

int cli_open_model(const char *model_path, const cli_placement_t *p, pagoda_model_t **model,
                   pagoda_mesh_t **mesh, pagoda_plan_t **plan);

/* The bundled stories260K GGUF (installed, or in the source tree); NULL when neither exists. */
const char *cli_default_model(void);

/* Prints "pagoda: <what>: <STATUS>: <thread's error message>" to stderr; returns
 * CLI_EXIT_FAILED so that callers can `return cli_fail(...)`. */
int cli_fail(const char *what, pagoda_status_t status);

/* Writes `s` as a JSON string literal (quotes and escapes included); NULL gives `null`. */
void cli_json_string(FILE *out, const char *s);

/* Formats a byte count for people ("15.6 GiB") into buf; returns buf. */
const char *cli_format_bytes(uint64_t bytes, char *buf, size_t size);

/* workload_args.c: the workload flags of `simulate` and `place` (--rate, --total-rate, --cv,
 * --slo, --duration, --seed and, with `with_overhead`, --overhead) parsed from argv[*i] and its
 * value into `o`. Returns 1 when it was one (advancing *i past the value), 0 when argv[*i] is
 * not a workload flag (or lacks a value), -1 after printing why its value is bad. */
int cli_workload_flag(const char *command, int argc, char **argv, int *i, int with_overhead,
                      pagoda_simulate_options_t *o);
/* The whole file as a NUL-terminated string (free() it), or NULL when it cannot be read. */
char *cli_read_file(const char *path);

#endif /* PAGODA_CLI_H */
