/* `pagoda plan --svg FILE`: the plan's pipeline schedule as an SVG written by hand. */
#include "plan_svg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Page geometry in px: readable at 800-1200 px wide. */
enum {
    PAGE_WIDTH = 1000,
    MARGIN_LEFT = 150, /* stage labels */
    MARGIN_RIGHT = 30,
    PLOT_WIDTH = PAGE_WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
    TITLE_HEIGHT = 66,
    HEADING_HEIGHT = 24,
    NOTE_HEIGHT = 16,
    PHASE_HEIGHT = 20, /* the fill / steady / drain strip above the bars */
    AXIS_HEIGHT = 44,  /* ticks, their labels and the axis title */
    LEGEND_ROW = 18,
    LEGEND_ENTRY_WIDTH = 160,
    LEGEND_MAX_ROWS = 3,
    CHART_GAP = 16
};

/* One chart: n_jobs jobs (micro-batches or slices) through n_stages stages. */
typedef struct chart {
    const char *kind;       /* "steps" or "slices": data-chart of its bars */
    size_t n_stages, n_jobs;
    double *start, *end;    /* [stage * n_jobs + job], seconds */
    double makespan;        /* when the last job leaves the last stage */
    double bound;           /* > 0: a time to mark (TeraPipe's Eq. 5), seconds */
    const int64_t *tokens;  /* per job, or NULL */
    double hue0;            /* first job's hue, degrees */
    char heading[320];
    char note[320];         /* a footnote under the heading, or "" */
} chart_t;

/* Writes `s` as XML character data or attribute text. */
static void put_text(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
            case '&': fputs("&amp;", f); break;
            case '<': fputs("&lt;", f); break;
            case '>': fputs("&gt;", f); break;
            case '"': fputs("&quot;", f); break;
            case '\'': fputs("&apos;", f); break;
            default:
                /* XML 1.0 allows no control characters but tab, newline and return. */
                if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
                    fputc('?', f);
                else
                    fputc(*p, f);
        }
    }
}

/* "<text x y attrs>escaped</text>" */
static void put_label(FILE *f, double x, double y, const char *attrs, const char *text) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    put_text(f, text);
    fputs("</text>\n", f);
}

/* Seconds for people: ms below one second, as `pagoda plan` prints them. */
static const char *format_seconds(double seconds, char *buf, size_t size) {
    if (seconds >= 1.0)
        snprintf(buf, size, "%.3f s", seconds);
    else
        snprintf(buf, size, "%.3f ms", seconds * 1e3);
    return buf;
}

/* Job j's colour: hues a golden angle apart, so neighbours differ however many jobs there are. */
static void job_colour(double hue0, size_t j, char fill[8], int *dark_text) {
    const double h = fmod(hue0 + 137.508 * (double)j, 360.0) / 60.0, s = 0.62, l = 0.55;
    const double c = (1.0 - fabs(2.0 * l - 1.0)) * s, x = c * (1.0 - fabs(fmod(h, 2.0) - 1.0)), m = l - c / 2;
    double r = 0, g = 0, b = 0;
    switch ((int)h) {
        case 0: r = c, g = x; break;
        case 1: r = x, g = c; break;
        case 2: g = c, b = x; break;
        case 3: g = x, b = c; break;
        case 4: r = x, b = c; break;
        default: r = c, b = x; break;
    }
    const int R = (int)lround((r + m) * 255), G = (int)lround((g + m) * 255), B = (int)lround((b + m) * 255);
    snprintf(fill, 8, "#%02x%02x%02x", R, G, B);
    *dark_text = 0.299 * R + 0.587 * G + 0.114 * B > 140;
}

/* Roughly how wide sans-serif text is (characters, not UTF-8 bytes), to skip or shrink labels
 * that would not fit. */
static double text_width(const char *s, double font_px) {
    size_t chars = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) chars += (*p & 0xC0) != 0x80;
    return 0.6 * font_px * (double)chars;
}

/* A line of text at `font_px`, or smaller (down to 9 px) so that it fits in `room` px. */
static void put_line(FILE *f, double x, double y, double font_px, double room, const char *more_attrs,
                     const char *text) {
    const double w = text_width(text, font_px);
    double fs = w > room ? font_px * room / w : font_px;
    if (fs < 9) fs = 9;
    char attrs[160];
    snprintf(attrs, sizeof attrs, "font-size=\"%.1f\" %s", fs, more_attrs);
    put_label(f, x, y, attrs, text);
}

/* The pipeline recurrence (TeraPipe §3.3; its Eq. 5 is this schedule's length when every stage
 * takes the same time): job j starts on stage k when it has left stage k-1 and stage k has
 * finished job j-1. `seconds[k]` is one job's time on stage k. */
static void schedule(chart_t *c, const double *seconds) {
    const size_t J = c->n_jobs;
    for (size_t k = 0; k < c->n_stages; k++) {
        for (size_t j = 0; j < J; j++) {
            double ready = k > 0 ? c->end[(k - 1) * J + j] : 0.0;
            if (j > 0 && c->end[k * J + j - 1] > ready) ready = c->end[k * J + j - 1];
            c->start[k * J + j] = ready;
            c->end[k * J + j] = ready + seconds[k];
        }
    }
    c->makespan = c->end[c->n_stages * J - 1];
}

static double row_height(size_t n_stages) {
    if (n_stages <= 8) return 30;
    if (n_stages <= 16) return 22;
    const double h = 320.0 / (double)n_stages;
    return h < 10 ? 10 : h;
}

static size_t legend_rows(size_t n_jobs) {
    const size_t per_row = PLOT_WIDTH / LEGEND_ENTRY_WIDTH;
    const size_t rows = (n_jobs + per_row - 1) / per_row;
    return rows < LEGEND_MAX_ROWS ? rows : LEGEND_MAX_ROWS;
}

static double chart_height(const chart_t *c) {
    return HEADING_HEIGHT + (c->note[0] ? NOTE_HEIGHT : 0) + PHASE_HEIGHT +
           row_height(c->n_stages) * (double)c->n_stages + AXIS_HEIGHT +
           LEGEND_ROW * (double)legend_rows(c->n_jobs) + CHART_GAP;
}

/* A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks over `range`. */
static double nice_step(double range, int target) {
    const double raw = range / target, p = pow(10.0, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

/* The phase strip: fill (until the last stage starts), steady state (every stage busy, or able
 * to be), drain (after the first stage is done). Without a steady state the middle is a time
 * when the first stage is done and the last has not started. */
static void put_phases(FILE *f, const chart_t *c, double y, double px) {
    const size_t J = c->n_jobs, K = c->n_stages;
    const double fill_end = c->start[(K - 1) * J], drain_start = c->end[J - 1];
    const int steady = fill_end <= drain_start;
    const double a = steady ? fill_end : drain_start, b = steady ? drain_start : fill_end;
    const struct {
        double from, to;
        const char *name, *colour;
    } phases[] = {{0, a, "fill", "#d6e6f5"},
                  {a, b, steady ? "steady state" : "filling and draining", steady ? "#d9efd3" : "#f1e6cf"},
                  {b, c->makespan, "drain", "#f5dada"}};
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
        const double w = (phases[i].to - phases[i].from) * px;
        if (w <= 0.5) continue;
        const double x = MARGIN_LEFT + phases[i].from * px;
        fprintf(f, "<rect class=\"phase\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" fill=\"%s\"/>\n", x, y, w,
                phases[i].colour);
        if (text_width(phases[i].name, 10) + 6 <= w)
            put_label(f, x + w / 2, y + 11, "font-size=\"10\" fill=\"#333\" text-anchor=\"middle\"", phases[i].name);
    }
}

/* Draws chart `c` from y0 down; `stages` describes its rows. */
static void put_chart(FILE *f, const chart_t *c, const pagoda_plan_stage_t *stages, double y0) {
    const size_t K = c->n_stages, J = c->n_jobs;
    const double extent = c->makespan > c->bound ? c->makespan : c->bound;
    const double px = extent > 0 ? PLOT_WIDTH / extent : 0, rh = row_height(K);
    const double per_second = extent >= 1.0 ? 1.0 : 1e3; /* axis units per second */
    const char *unit_name = extent >= 1.0 ? "s" : "ms";
    char buf[320];

    double y = y0;
    put_line(f, 16, y + 16, 14, PAGE_WIDTH - 16 - MARGIN_RIGHT, "font-weight=\"bold\" fill=\"#222\"", c->heading);
    y += HEADING_HEIGHT;
    if (c->note[0]) {
        put_line(f, 16, y + 11, 11, PAGE_WIDTH - 16 - MARGIN_RIGHT, "font-style=\"italic\" fill=\"#555\"", c->note);
        y += NOTE_HEIGHT;
    }
    put_phases(f, c, y, px);
    y += PHASE_HEIGHT;

    /* Stage rows: a band each, labelled with the stage's layers and tensor parallelism. */
    const double top = y, height = rh * (double)K;
    for (size_t k = 0; k < K; k++) {
        const double ry = top + rh * (double)k;
        fprintf(f, "<rect x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%.2f\" fill=\"%s\"/>\n", MARGIN_LEFT, ry, PLOT_WIDTH, rh,
                k % 2 ? "#ffffff" : "#f4f5f7");
        snprintf(buf, sizeof buf, "stage %zu", k);
        if (rh >= 26) {
            put_label(f, MARGIN_LEFT - 8, ry + rh / 2 - 2, "font-size=\"12\" fill=\"#222\" text-anchor=\"end\"", buf);
            snprintf(buf, sizeof buf, "layers %lld-%lld, tp %d", (long long)stages[k].first_layer,
                     (long long)stages[k].end_layer - 1, stages[k].tensor_parallel);
            put_label(f, MARGIN_LEFT - 8, ry + rh / 2 + 10, "font-size=\"10\" fill=\"#666\" text-anchor=\"end\"", buf);
        } else {
            const double fs = rh >= 14 ? 11 : 9;
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " (L%lld-%lld)", (long long)stages[k].first_layer,
                     (long long)stages[k].end_layer - 1);
            char attrs[96];
            snprintf(attrs, sizeof attrs, "font-size=\"%.0f\" fill=\"#222\" text-anchor=\"end\"", fs);
            put_label(f, MARGIN_LEFT - 8, ry + rh / 2 + fs * 0.35, attrs, buf);
        }
    }
    fprintf(f, "<text x=\"16\" y=\"%.1f\" font-size=\"12\" fill=\"#222\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 16 %.1f)\">pipeline stage</text>\n",
            top + height / 2, top + height / 2);

    /* Bars, with a tooltip each. */
    const double bh = rh >= 14 ? rh - 6 : rh - 2;
    for (size_t k = 0; k < K; k++) {
        for (size_t j = 0; j < J; j++) {
            const double s = c->start[k * J + j], e = c->end[k * J + j];
            char fill[8], t0[32], t1[32];
            int dark = 0;
            job_colour(c->hue0, j, fill, &dark);
            const double x = MARGIN_LEFT + s * px, w = (e - s) * px, by = top + rh * (double)k + (rh - bh) / 2;
            fprintf(f, "<rect class=\"bar\" data-chart=\"%s\" data-stage=\"%zu\" data-job=\"%zu\" data-start=\"%.9g\" "
                       "data-end=\"%.9g\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"%s>",
                    c->kind, k, j, s, e, x, by, w, bh, fill,
                    /* a hairline between neighbours, unless it would hide a narrow bar */
                    w >= 4 ? " stroke=\"#ffffff\" stroke-width=\"0.6\"" : "");
            if (c->tokens)
                snprintf(buf, sizeof buf, "stage %zu, slice %zu (%lld tokens): %s to %s", k, j + 1,
                         (long long)c->tokens[j], format_seconds(s, t0, sizeof t0), format_seconds(e, t1, sizeof t1));
            else
                snprintf(buf, sizeof buf, "stage %zu, micro-batch %zu: %s to %s", k, j + 1,
                         format_seconds(s, t0, sizeof t0), format_seconds(e, t1, sizeof t1));
            fputs("<title>", f);
            put_text(f, buf);
            fputs("</title></rect>\n", f);
            if (c->tokens)
                snprintf(buf, sizeof buf, "%lld", (long long)c->tokens[j]);
            else
                snprintf(buf, sizeof buf, "%zu", j + 1);
            if (bh >= 11 && text_width(buf, 11) + 4 <= w)
                put_label(f, x + w / 2, by + bh / 2 + 4,
                          dark ? "font-size=\"11\" fill=\"#1a1a1a\" text-anchor=\"middle\""
                               : "font-size=\"11\" fill=\"#ffffff\" text-anchor=\"middle\"",
                          buf);
        }
    }

    /* TeraPipe's Eq. 5: what the planner predicted, every stage at the slowest one's pace. */
    if (c->bound > 0) {
        const double x = MARGIN_LEFT + c->bound * px;
        char t[32];
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#222\" stroke-width=\"1.2\" "
                   "stroke-dasharray=\"5 3\"/>\n",
                x, top - 2, x, top + height + 2);
        /* Below the axis, beside the axis title: Eq. 5 is never earlier than the drawn end, so
         * the line sits at the plot's right end, where the centred title does not reach. */
        snprintf(buf, sizeof buf, "TeraPipe Eq. 5: %s", format_seconds(c->bound, t, sizeof t));
        put_label(f, x - 6, top + height + 36, "font-size=\"11\" fill=\"#222\" text-anchor=\"end\"", buf);
    }

    /* The time axis. */
    const double ay = top + height;
    fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#222\"/>\n", MARGIN_LEFT, ay,
            MARGIN_LEFT + PLOT_WIDTH, ay);
    if (extent > 0) {
        const double step = nice_step(extent * per_second, 8);
        const int decimals = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        for (int i = 0;; i++) {
            const double v = step * i;
            if (v > extent * per_second * (1 + 1e-9)) break;
            const double x = MARGIN_LEFT + v / per_second * px;
            fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#222\"/>\n", x, ay, x, ay + 5);
            snprintf(buf, sizeof buf, "%.*f", decimals, v);
            put_label(f, x, ay + 17, "font-size=\"11\" fill=\"#222\" text-anchor=\"middle\"", buf);
        }
    }
    snprintf(buf, sizeof buf, "time (%s)", unit_name);
    put_label(f, MARGIN_LEFT + PLOT_WIDTH / 2.0, ay + 36, "font-size=\"12\" fill=\"#222\" text-anchor=\"middle\"", buf);

    /* Legend: a swatch per job; past the rows it has, a count of the rest. */
    const size_t per_row = PLOT_WIDTH / LEGEND_ENTRY_WIDTH, room = per_row * legend_rows(J);
    const size_t shown = J <= room ? J : room - 1;
    const double ly = ay + AXIS_HEIGHT;
    for (size_t j = 0; j < shown; j++) {
        const double lx = MARGIN_LEFT + (double)(j % per_row) * LEGEND_ENTRY_WIDTH;
        const double ey = ly + (double)(j / per_row) * LEGEND_ROW;
        char fill[8];
        int dark = 0;
        job_colour(c->hue0, j, fill, &dark);
        fprintf(f, "<rect class=\"swatch\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", lx, ey, fill);
        if (c->tokens)
            snprintf(buf, sizeof buf, "slice %zu: %lld tokens", j + 1, (long long)c->tokens[j]);
        else
            snprintf(buf, sizeof buf, "micro-batch %zu", j + 1);
        put_label(f, lx + 17, ey + 10, "font-size=\"11\" fill=\"#222\"", buf);
    }
    if (shown < J) {
        const double lx = MARGIN_LEFT + (double)(shown % per_row) * LEGEND_ENTRY_WIDTH;
        snprintf(buf, sizeof buf, "... and %zu more %s", J - shown, c->tokens ? "slices" : "micro-batches");
        put_label(f, lx, ly + (double)(shown / per_row) * LEGEND_ROW + 10, "font-size=\"11\" fill=\"#555\"", buf);
    }
}

static int chart_alloc(chart_t *c, const char *kind, size_t n_stages, size_t n_jobs) {
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->n_stages = n_stages;
    c->n_jobs = n_jobs;
    c->start = calloc(n_stages * n_jobs, sizeof *c->start);
    c->end = calloc(n_stages * n_jobs, sizeof *c->end);
    return c->start && c->end;
}

static void chart_free(chart_t *c) {
    free(c->start);
    free(c->end);
}

int plan_svg_write(const pagoda_plan_t *plan, const plan_svg_info_t *info, const char *path) {
    pagoda_plan_summary_t sum;
    sum.struct_size = sizeof sum;
    pagoda_status_t s = pagoda_plan_get_summary(plan, &sum);
    if (s != PAGODA_OK) return cli_fail("reading the plan for --svg", s), -1;
    const size_t K = sum.n_stages, M = sum.n_slices;
    const size_t B = info->micro_batches > 1 ? (size_t)info->micro_batches : 1;
    if (K == 0) {
        fputs("pagoda plan: --svg: the plan has no stages\n", stderr);
        return -1;
    }

    int rc = -1;
    FILE *f = NULL;
    chart_t charts[2];
    size_t n_charts = 0;
    pagoda_plan_stage_t *stages = calloc(K, sizeof *stages);
    double *seconds = calloc(K, sizeof *seconds);
    int64_t *tokens = calloc(M ? M : 1, sizeof *tokens);
    if (!stages || !seconds || !tokens) {
        fputs("pagoda plan: --svg: out of memory\n", stderr);
        goto done;
    }
    size_t slowest = 0;
    for (size_t k = 0; k < K; k++) {
        stages[k].struct_size = sizeof stages[k];
        if ((s = pagoda_plan_get_stage(plan, k, &stages[k])) != PAGODA_OK) {
            cli_fail("reading the plan for --svg", s);
            goto done;
        }
        if (stages[k].seconds > stages[slowest].seconds) slowest = k;
    }
    int64_t prompt = 0;
    for (size_t i = 0; i < M; i++) {
        if ((s = pagoda_plan_slice_length_v2(plan, i, &tokens[i])) != PAGODA_OK) {
            cli_fail("reading the plan's slices for --svg", s);
            goto done;
        }
        prompt += tokens[i];
    }

    /* The steps chart: B micro-batches of the step workload, each taking the plan's stage
     * time on every stage; its length is the throughput objective, Σ t_k + (B − 1)·max t_k. */
    char t0[32], t1[32], t2[32];
    if (!chart_alloc(&charts[n_charts++], "steps", K, B)) goto oom;
    for (size_t k = 0; k < K; k++) seconds[k] = stages[k].seconds;
    schedule(&charts[0], seconds);
    charts[0].hue0 = 210;
    snprintf(charts[0].heading, sizeof charts[0].heading, "Pipeline steps: %zu micro-batch%s of %lld tokens, %s", B,
             B == 1 ? "" : "es", (long long)info->step_tokens, format_seconds(charts[0].makespan, t0, sizeof t0));

    /* The slices chart. The public plan gives each stage's time for a step and the sliced
     * prefill's Eq. 5 latency T = Σ t_i + (K − 1)·max t_i, not each slice's time on each stage,
     * so those are modelled: the optimal slicing balances its slices' times (later slices are
     * shorter because their attention reads more context), so every slice gets
     * t = T / (M + K − 1) on the slowest stage (Eq. 5 then gives T back), and each stage the
     * share of it its step time has of the slowest stage's. */
    if (M > 0 && sum.sliced_prefill_seconds > 0) {
        chart_t *c = &charts[n_charts++];
        if (!chart_alloc(c, "slices", K, M)) goto oom;
        const double per_slice = sum.sliced_prefill_seconds / (double)(M + K - 1);
        const double slowest_s = stages[slowest].seconds;
        for (size_t k = 0; k < K; k++) seconds[k] = slowest_s > 0 ? per_slice * stages[k].seconds / slowest_s : per_slice;
        schedule(c, seconds);
        c->tokens = tokens;
        c->bound = sum.sliced_prefill_seconds;
        c->hue0 = 20;
        snprintf(c->heading, sizeof c->heading,
                 "Prefill: a %lld-token prompt in %zu TeraPipe slices, %s (Eq. 5: %s; best equal slices: %s)",
                 (long long)prompt, M, format_seconds(c->makespan, t0, sizeof t0),
                 format_seconds(sum.sliced_prefill_seconds, t1, sizeof t1),
                 format_seconds(sum.uniform_prefill_seconds, t2, sizeof t2));
        snprintf(c->note, sizeof c->note,
                 "Slice times modelled: Eq. 5's latency shared evenly by the slices on stage %zu, the slowest; "
                 "other stages in proportion to their step times.",
                 slowest);
    }

    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "pagoda plan: cannot write %s: %s\n", path, strerror(errno));
        goto done;
    }
    double height = TITLE_HEIGHT + 10;
    for (size_t i = 0; i < n_charts; i++) height += chart_height(&charts[i]);
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
            "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
            PAGE_WIDTH, ceil(height), PAGE_WIDTH, ceil(height), PAGE_WIDTH, ceil(height));
    char title[512];
    char objective[64];
    if (info->objective == PAGODA_PLAN_THROUGHPUT)
        snprintf(objective, sizeof objective, "throughput objective (%zu micro-batch%s)", B, B == 1 ? "" : "es");
    else
        snprintf(objective, sizeof objective, "latency objective");
    snprintf(title, sizeof title, "Pipeline schedule: %s on a %s mesh, %s", info->model ? info->model : "the model",
             info->mesh ? info->mesh : "?", objective);
    fputs("<title>", f);
    put_text(f, title);
    fputs("</title>\n", f);
    put_line(f, 16, 28, 18, PAGE_WIDTH - 16 - MARGIN_RIGHT, "font-weight=\"bold\" fill=\"#111\"", title);
    snprintf(title, sizeof title,
             "%zu stage%s, costs: %s; one step through all stages %s, slowest stage %zu at %s (%.1f steps/s)", K,
             K == 1 ? "" : "s", info->costs ? info->costs : "cpu", format_seconds(sum.latency_seconds, t0, sizeof t0),
             slowest, format_seconds(sum.max_stage_seconds, t1, sizeof t1), sum.throughput_per_second);
    put_line(f, 16, 50, 13, PAGE_WIDTH - 16 - MARGIN_RIGHT, "fill=\"#444\"", title);
    double y = TITLE_HEIGHT;
    for (size_t i = 0; i < n_charts; i++) {
        put_chart(f, &charts[i], stages, y);
        y += chart_height(&charts[i]);
    }
    fputs("</svg>\n", f);
    rc = 0;
    goto done;
oom:
    fputs("pagoda plan: --svg: out of memory\n", stderr);
done:
    if (f) {
        int bad = ferror(f);
        if (fclose(f) != 0) bad = 1;
        if (bad && rc == 0) {
            fprintf(stderr, "pagoda plan: writing %s failed: %s\n", path, strerror(errno));
            rc = -1;
        }
    }
    for (size_t i = 0; i < n_charts; i++) chart_free(&charts[i]);
    free(stages);
    free(seconds);
    free(tokens);
    return rc;
}
