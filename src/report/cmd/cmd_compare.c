/*
 * `compare BASE NEW`: the same cells of two runs, side by side, with a
 * verdict per cell.
 *
 * A verdict needs two things.  Significance: a Mann-Whitney rank-sum test
 * of the two runs' per-iteration times (the max over ranks, as in the
 * rows' statistics), because a shared machine makes single numbers jump
 * by tens of percent between launches.  Size: the p50 time must change by
 * more than --threshold percent, because with many iterations even a 1%
 * shift is "significant" and nobody wants to hear about it.
 *
 * Where both files repeated the cell (collprof --repeats, schema 1.4), the
 * iterations of one launch are no longer the unit of noise: the repeats
 * are.  Significance then means disjoint intervals of the median of the
 * repeats' p50s (docs/metrics.md), and size a change of that median.
 */
#include "config.h"

#include "report/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report compare BASE NEW [--threshold PCT] [--alpha A]\n"
               "Match the cells of two result files by backend, variant, op, dtype, redop,\n"
               "root, in-place, imbalance and count, and print for each the busBW ratio and\n"
               "the p50 time ratio NEW/BASE with a verdict:\n"
               "  regression    NEW is significantly slower (Mann-Whitney rank-sum test of\n"
               "                the per-iteration times, p < A) and its p50 time grew by\n"
               "                more than PCT percent\n"
               "  improvement   significantly faster, p50 time fell by more than PCT percent\n"
               "  within noise  anything else\n"
               "Where both files repeated a cell (collprof --repeats), the verdict comes from\n"
               "the intervals of the median of the repeats' p50s instead of the test: a\n"
               "regression when NEW's interval lies wholly above BASE's and that median grew\n"
               "by more than PCT percent (an improvement: wholly below, fell by more).\n"
               "Where a side has no raw samples (collprof-report import: nccl-tests, OSU),\n"
               "the verdict is the change of the p50 time (the mean where a side has no\n"
               "p50) beyond PCT percent alone.\n"
               "\n"
               "  --threshold PCT  smallest change of the p50 time that counts (default 5)\n"
               "  --alpha A        significance level of the test (default 0.01)\n"
               "  -h, --help       this help\n"
               "\n"
               "Two replays (collprof --replay) compare by op x size x group instead\n"
               "(the /replay rows, and the whole trace; by backend too unless each file\n"
               "replayed on one: this trace on gloo against mpi), the p50 time's change\n"
               "beyond PCT percent alone (a replay keeps no raw samples per op).\n"
               "\n"
               "Exit status: 0 no regression, 1 at least one regression, 2 bad usage or a\n"
               "file that cannot be read.\n");
}

static int same_cell(const collprof_result_row_t *a, const collprof_result_row_t *b)
{
    return !strcmp(a->backend, b->backend) && !strcmp(a->variant, b->variant) &&
           !strcmp(a->op, b->op) && !strcmp(a->dtype, b->dtype) && !strcmp(a->redop, b->redop) &&
           a->root == b->root && a->in_place == b->in_place &&
           !strcmp(a->imbalance, b->imbalance) && a->count == b->count &&
           !strcmp(a->split, b->split);
}

typedef struct tally {
    int compared, regressions, improvements, noise, other, only_base, only_new;
    int by_interval;  /* verdicts from the repeats' intervals */
    int by_threshold; /* a side without raw samples (imported): the change alone */
} tally_t;

typedef struct settings {
    double threshold; /* percent */
    double alpha;
} settings_t;

static void ratio_str(double num, double den, char *buf, size_t len)
{
    if (den > 0 && isfinite(num / den)) {
        snprintf(buf, len, "%.2fx", num / den);
    } else {
        snprintf(buf, len, "-");
    }
}

/* A row of a run with repeats (schema 1.4): the median of its repeats' p50s has an interval. */
static int has_interval(const collprof_result_row_t *r)
{
    return r->repeats >= 2 && r->ci_level > 0 && r->rep_p50_us > 0;
}

/*
 * Both runs repeated the cell: NEW is slower when its interval lies wholly
 * above BASE's (faster: wholly below) and the median of its repeats' p50s
 * moved by more than the threshold.  The "p-value" column then shows the
 * lower coverage of the two intervals ("ci97%").
 */
static const char *interval_verdict(const settings_t *s, const collprof_result_row_t *rb,
                                    const collprof_result_row_t *rn, char *pv, size_t len,
                                    tally_t *t)
{
    double cover = rb->ci_level < rn->ci_level ? rb->ci_level : rn->ci_level;
    double change = rn->rep_p50_us / rb->rep_p50_us - 1;
    snprintf(pv, len, "ci%.0f%%", cover * 100);
    t->compared++;
    t->by_interval++;
    if (rn->ci_lo_us > rb->ci_hi_us && change * 100 > s->threshold) {
        t->regressions++;
        return "regression";
    }
    if (rn->ci_hi_us < rb->ci_lo_us && -change * 100 > s->threshold) {
        t->improvements++;
        return "improvement";
    }
    t->noise++;
    return "within noise";
}

/*
 * A side without raw samples (an imported file: nccl-tests, OSU): no test is possible, so
 * the verdict is the change of the time alone against the threshold, of the p50 where
 * both have one, else of the mean (what nccl-tests reports).
 */
static const char *summary_verdict(const settings_t *s, const collprof_result_row_t *rb,
                                   const collprof_result_row_t *rn, double *tb, double *tn,
                                   char *ratio, size_t len, tally_t *t)
{
    int p50 = rb->time_p50_us > 0 && rn->time_p50_us > 0;
    *tb = p50 ? rb->time_p50_us : rb->time_mean_us;
    *tn = p50 ? rn->time_p50_us : rn->time_mean_us;
    ratio_str(*tn, *tb, ratio, len);
    double change = *tb > 0 ? *tn / *tb - 1 : 0;
    t->compared++;
    t->by_threshold++;
    if (change * 100 > s->threshold) {
        t->regressions++;
        return p50 ? "regression (no samples: p50 by threshold)"
                   : "regression (no samples: mean by threshold)";
    }
    if (-change * 100 > s->threshold) {
        t->improvements++;
        return p50 ? "improvement (no samples: p50 by threshold)"
                   : "improvement (no samples: mean by threshold)";
    }
    t->noise++;
    return "within threshold (no samples)";
}

static void compare_one(const settings_t *s, const collprof_result_row_t *rb,
                        const cp_report_cell_t *cb, const collprof_result_row_t *rn,
                        const cp_report_cell_t *cn, int width, tally_t *t)
{
    char name[512], bw[16], p50[16], pv[16] = "-";
    const char *verdict;
    double tb = rb->time_p50_us, tn = rn->time_p50_us;
    cp_report_cell_name(rb, name, sizeof(name));
    ratio_str(rn->busbw_gbs, rb->busbw_gbs, bw, sizeof(bw));
    ratio_str(rn->time_p50_us, rb->time_p50_us, p50, sizeof(p50));
    if (!cp_report_measured(rb) || !cp_report_measured(rn)) {
        verdict = !cp_report_measured(rb) ? "not comparable: BASE has no timings"
                                          : "not comparable: NEW has no timings";
        t->other++;
    } else if (has_interval(rb) && has_interval(rn)) {
        verdict = interval_verdict(s, rb, rn, pv, sizeof(pv), t);
        ratio_str(rn->rep_p50_us, rb->rep_p50_us, p50, sizeof(p50));
        tb = rb->rep_p50_us;
        tn = rn->rep_p50_us;
    } else if (cb->iter_max == NULL || cn->iter_max == NULL) {
        verdict = summary_verdict(s, rb, rn, &tb, &tn, p50, sizeof(p50), t);
    } else {
        double p = cp_report_mann_whitney(cb->iter_max, (size_t)rb->iterations, cn->iter_max,
                                          (size_t)rn->iterations);
        double change = rb->time_p50_us > 0 ? rn->time_p50_us / rb->time_p50_us - 1 : 0;
        snprintf(pv, sizeof(pv), "%.2g", p);
        if (p < s->alpha && change * 100 > s->threshold) {
            verdict = "regression";
            t->regressions++;
        } else if (p < s->alpha && -change * 100 > s->threshold) {
            verdict = "improvement";
            t->improvements++;
        } else {
            verdict = "within noise";
            t->noise++;
        }
        t->compared++;
    }
    printf("%-*s %9.2f %9.2f %8s %11.1f %11.1f %8s %8s  %s\n", width, name, rb->busbw_gbs,
           rn->busbw_gbs, bw, tb, tn, p50, pv, verdict);
}

static void run_compare(const settings_t *s, const cp_report_file_t *base,
                        const cp_report_file_t *cur, tally_t *t)
{
    /* each NEW cell matches at most one BASE cell: a run may repeat a cell */
    char *used = calloc(cur->nrows ? cur->nrows : 1, 1);
    size_t *match = malloc(sizeof(size_t) * (base->nrows ? base->nrows : 1));
    if (used == NULL || match == NULL) {
        free(used);
        free(match);
        cp_report_error("out of memory");
        exit(CP_REPORT_EXIT_BAD);
    }
    int width = 4;
    for (size_t i = 0; i < base->nrows; i++) {
        match[i] = (size_t)-1;
        for (size_t j = 0; j < cur->nrows; j++) {
            if (!used[j] && same_cell(&base->rows[i], &cur->rows[j])) {
                used[j] = 1;
                match[i] = j;
                break;
            }
        }
        char name[512];
        cp_report_cell_name(&base->rows[i], name, sizeof(name));
        width = (int)strlen(name) > width ? (int)strlen(name) : width;
    }
    printf("# compare BASE %s\n#         NEW  %s\n", base->path, cur->path);
    if (base->root.world_size != cur->root.world_size ||
        base->root.node_count != cur->root.node_count) {
        /* allowed (a scaling study), but every ratio below mixes two effects */
        printf("# note: BASE ran %lld ranks on %lld node(s), NEW %lld ranks on %lld node(s)\n",
               base->root.world_size, base->root.node_count, cur->root.world_size,
               cur->root.node_count);
    }
    printf(
        "# verdict: Mann-Whitney rank-sum test of the per-iteration times (max over ranks) at\n"
        "# alpha %g, and a change of the p50 time above %g%%; where both runs repeated the cell\n"
        "# (--repeats), disjoint intervals of the median of the repeats' p50s (p-value column:\n"
        "# ciN%%, the lower coverage of the two) and a change of that median above %g%%\n",
        s->alpha, s->threshold, s->threshold);
    printf("%-*s %9s %9s %8s %11s %11s %8s %8s  %s\n", width, "# cell", "busBW", "busBW", "busBW",
           "p50(us)", "p50(us)", "p50", "p-value", "verdict");
    printf("%-*s %9s %9s %8s %11s %11s %8s %8s\n", width, "#", "BASE", "NEW", "NEW/BASE", "BASE",
           "NEW", "NEW/BASE", "");
    for (size_t i = 0; i < base->nrows; i++) {
        if (match[i] != (size_t)-1) {
            compare_one(s, &base->rows[i], &base->cells[i], &cur->rows[match[i]],
                        &cur->cells[match[i]], width, t);
        }
    }
    for (size_t i = 0; i < base->nrows; i++) {
        if (match[i] == (size_t)-1) {
            char name[512];
            cp_report_cell_name(&base->rows[i], name, sizeof(name));
            printf("only in BASE: %s\n", name);
            t->only_base++;
        }
    }
    for (size_t j = 0; j < cur->nrows; j++) {
        if (!used[j]) {
            char name[512];
            cp_report_cell_name(&cur->rows[j], name, sizeof(name));
            printf("only in NEW:  %s\n", name);
            t->only_new++;
        }
    }
    free(used);
    free(match);
}

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k == 1) {
        return cp_report_parse_double("compare", "--threshold", val, 0, 1e6, &s->threshold);
    }
    return cp_report_parse_double("compare", "--alpha", val, 1e-12, 1, &s->alpha);
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    tally_t t;
    (void)n;
    memset(&t, 0, sizeof(t));
    if (CP_REPORT_IS_REPLAY(files[0]) != CP_REPORT_IS_REPLAY(files[1])) {
        const cp_report_file_t *r = CP_REPORT_IS_REPLAY(files[0]) ? files[0] : files[1];
        cp_report_error("compare: %s is a replay (collprof --replay) and %s is not: compare "
                        "replays with replays",
                        r->path, r == files[0] ? files[1]->path : files[0]->path);
        return CP_REPORT_EXIT_BAD;
    }
    if (CP_REPORT_IS_REPLAY(files[0])) {
        return cp_report_replay_compare(files[0], files[1], ((settings_t *)ctx)->threshold);
    }
    run_compare(ctx, files[0], files[1], &t);
    printf("# %d cells compared: %d regression%s, %d improvement%s, %d within noise", t.compared,
           t.regressions, t.regressions == 1 ? "" : "s", t.improvements,
           t.improvements == 1 ? "" : "s", t.noise);
    if (t.by_interval) {
        printf(" (%d from the repeats' intervals)", t.by_interval);
    }
    if (t.by_threshold) {
        printf(" (%d by the threshold alone: no raw samples)", t.by_threshold);
    }
    if (t.other) {
        printf("; %d not comparable", t.other);
    }
    if (t.only_base || t.only_new) {
        printf("; %d only in BASE, %d only in NEW", t.only_base, t.only_new);
    }
    printf("\n");
    return t.regressions > 0 ? CP_REPORT_EXIT_REGRESSION : CP_REPORT_EXIT_OK;
}

int cp_report_cmd_compare(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"threshold", 0, 1}, {"alpha", 0, 1}, {NULL, 0, 0}};
    /* a directory holding a single run stands for that run's file */
    static const cp_report_cmd_t cmd = {
        "compare", usage, opts, option, NULL, CP_REPORT_FILES_BASE_NEW, run};
    settings_t s = {5.0, 0.01};
    return cp_report_run(&cmd, &s, argc, argv);
}
