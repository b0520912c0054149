/* `pagoda plan --svg FILE`: a plan's pipeline schedule drawn as a plain SVG (no library).
 *
 * Stages run down the page, time across it. Each micro-batch of the step workload is one bar
 * per stage; when the plan slices a prompt (TeraPipe), a second chart gives each slice one bar
 * per stage, labelled with its tokens, so the pipeline's fill, steady state and drain show.
 * Start times follow the pipeline recurrence TeraPipe's Eq. 5 sums up: a job starts on stage k
 * once it has left stage k-1 and stage k has finished the job before it. Public API and ISO C11
 * only.
 *
 * Every bar is a <rect class="bar"> carrying data-chart ("steps" or "slices"), data-stage,
 * data-job, data-start and data-end (seconds), which tests/examples/check_plan_svg.py reads.
 */
#ifndef PAGODA_CLI_PLAN_SVG_H
#define PAGODA_CLI_PLAN_SVG_H

#include <stdint.h>

#include <pagoda/pagoda.h>

/* What the title says that the plan handle does not: all strings may be NULL. */
typedef struct plan_svg_info {
    const char *model;      /* the model's name (a path's last part will do) */
    const char *mesh;       /* "NxM" */
    const char *costs;      /* where the costs came from: a device preset or a cost file */
    int32_t objective;      /* a pagoda_plan_objective_t */
    int32_t micro_batches;  /* B: micro-batches drawn in the steps chart (< 1 counts as 1) */
    int64_t step_tokens;    /* new tokens per micro-batch */
} plan_svg_info_t;

/* Writes the schedule of `plan` to `path`. Returns 0, or -1 after printing why to stderr. */
int plan_svg_write(const pagoda_plan_t *plan, const plan_svg_info_t *info, const char *path);

#endif /* PAGODA_CLI_PLAN_SVG_H */
