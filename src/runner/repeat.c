#include "config.h"

#include "runner/repeat.h"

#include "runner/overlap.h"

#include <stdlib.h>
#include <string.h>

int cp_repeat_on(const cp_options_t *opt)
{
    return opt->repeats > 1 || opt->min_time_s > 0 || opt->target_ci_pct > 0;
}

/* A non-blocking op's means over every repeat's iterations (before acc->iters grows). */
static void merge_overlap(cp_result_t *acc, const cp_result_t *one)
{
    double a = acc->iters, b = one->iters;
    if (a + b <= 0) {
        return;
    }
    acc->fig.overall_us = (acc->fig.overall_us * a + one->fig.overall_us * b) / (a + b);
    acc->fig.comm_us = (acc->fig.comm_us * a + one->fig.comm_us * b) / (a + b);
    acc->fig.compute_us = (acc->fig.compute_us * a + one->fig.compute_us * b) / (a + b);
    acc->fig.overlap_pct =
        cp_overlap_pct(acc->fig.overall_us, acc->fig.compute_us, acc->fig.comm_us);
}

/* The samples of one after acc's, row by row ([row][iteration] both: rows are ranks on rank
 * 0, this rank's own alone elsewhere). */
static int append_samples(cp_result_t *acc, const cp_result_t *one)
{
    if (one->srows != acc->srows) {
        return -1;
    }
    size_t n = (size_t)acc->srows, a = (size_t)acc->iters, b = (size_t)one->iters;
    double *s = malloc(sizeof(double) * n * (a + b));
    double *p50 = realloc(acc->rep_p50, sizeof(double) * (size_t)(acc->repeats + 1));
    acc->rep_p50 = p50 != NULL ? p50 : acc->rep_p50;
    uint64_t *it = realloc(acc->rep_iters, sizeof(uint64_t) * (size_t)(acc->repeats + 1));
    acc->rep_iters = it != NULL ? it : acc->rep_iters;
    if (s == NULL || p50 == NULL || it == NULL) {
        free(s);
        return -1;
    }
    for (size_t q = 0; q < n; q++) {
        memcpy(s + q * (a + b), acc->samples + q * a, sizeof(double) * a);
        memcpy(s + q * (a + b) + a, one->samples + q * b, sizeof(double) * b);
    }
    free(acc->samples);
    acc->samples = s;
    merge_overlap(acc, one);
    acc->iters += one->iters;
    acc->rep_p50[acc->repeats] = one->fig.stats.p50;
    acc->rep_iters[acc->repeats] = (uint64_t)one->iters;
    acc->repeats++;
    return 0;
}

/* acc's row for b: the same index when the repeats read the same counters, else a search. */
static collprof_counter_row_t *same_counter(cp_result_t *acc, const collprof_counter_row_t *b,
                                            int at)
{
    for (int k = -1; k < acc->ncounters; k++) {
        int i = k < 0 ? at : k;
        if (i >= acc->ncounters) {
            continue;
        }
        collprof_counter_row_t *a = &acc->counters[i];
        if (a->node == b->node && strcmp(a->name, b->name) == 0 &&
            strcmp(a->source, b->source) == 0) {
            return a;
        }
    }
    return NULL;
}

/* The counters of a further repeat: counters add up (their ops too), gauges take its value
 * (the one after the last repeat); a counter acc lacks (absent from the first repeat's
 * readings) is left out. */
static void merge_counters(cp_result_t *acc, const cp_result_t *one)
{
    for (int k = 0; k < one->ncounters; k++) {
        const collprof_counter_row_t *b = &one->counters[k];
        collprof_counter_row_t *a = same_counter(acc, b, k);
        if (a == NULL) {
            continue;
        }
        if (strcmp(a->kind, "gauge") == 0) {
            a->delta = b->delta;
            continue;
        }
        a->delta += b->delta;
        a->ops += b->ops;
        a->per_op = a->ops > 0 ? a->delta / (double)a->ops : 0;
    }
}

/* The first repeat: acc takes everything one holds. */
static int first_repeat(cp_result_t *acc, cp_result_t *one)
{
    *acc = *one;
    memset(one, 0, sizeof(*one));
    acc->repeats = 0;
    if (acc->samples == NULL) {
        return 0; /* it did not run */
    }
    acc->rep_p50 = malloc(sizeof(double));
    acc->rep_iters = malloc(sizeof(uint64_t));
    if (acc->rep_p50 == NULL || acc->rep_iters == NULL) {
        return -1;
    }
    acc->rep_p50[0] = acc->fig.stats.p50;
    acc->rep_iters[0] = (uint64_t)acc->iters;
    acc->repeats = 1;
    return 0;
}

int cp_repeat_add(cp_result_t *acc, cp_result_t *one)
{
    int rc = 0;
    if (acc->nranks == 0) {
        rc = first_repeat(acc, one);
    } else {
        acc->fig.wrong += one->fig.wrong;
        merge_counters(acc, one);
        if (one->fig.status != COLLPROF_CELL_OK && acc->fig.status == COLLPROF_CELL_OK) {
            acc->fig.status = one->fig.status; /* the first repeat that failed says why */
            snprintf(acc->fig.reason, sizeof(acc->fig.reason), "repeat %d: %s", acc->repeats + 1,
                     one->fig.reason);
        }
        if (one->samples != NULL) {
            rc = append_samples(acc, one);
        }
    }
    cp_result_free(one);
    if (rc != 0) {
        acc->fig.status = COLLPROF_CELL_ERROR;
        snprintf(acc->fig.reason, sizeof(acc->fig.reason), "out of memory merging the repeats");
    }
    return rc;
}

/* Statistics and per-rank means over every repeat's iterations. */
static int pooled_figures(cp_result_t *acc)
{
    double *imax = calloc((size_t)acc->iters, sizeof(double));
    if (imax == NULL) {
        return -1;
    }
    double factor = acc->fig.algbw > 0 ? acc->fig.busbw / acc->fig.algbw : 0;
    cp_stats_iter_max(acc->samples, acc->nranks, acc->iters, imax);
    cp_stats_compute(imax, acc->iters, &acc->fig.stats);
    free(imax);
    acc->fig.algbw = acc->fig.stats.mean > 0 ? (double)acc->bytes / acc->fig.stats.mean * 1e-3 : 0;
    acc->fig.busbw = acc->fig.algbw * factor;
    for (int q = 0; q < acc->nranks; q++) {
        double s = 0;
        for (int i = 0; i < acc->iters; i++) {
            s += acc->samples[(size_t)q * (size_t)acc->iters + (size_t)i];
        }
        acc->rank_mean[q] = s / acc->iters;
    }
    return 0;
}

/* The interval and the modes of the repeats' p50s. */
static int repeat_figures(const double *p50, int n, cp_median_ci_t *ci, int *bimodal,
                          cp_modes_t *modes)
{
    double *v = malloc(sizeof(double) * (size_t)n);
    if (v == NULL) {
        return -1;
    }
    memcpy(v, p50, sizeof(double) * (size_t)n);
    cp_stats_median(v, (size_t)n); /* sorts */
    cp_stats_median_ci(v, n, ci);
    *bimodal = cp_stats_bimodal(v, n, modes);
    free(v);
    return 0;
}

void cp_repeat_finish(cp_result_t *acc)
{
    if (acc->repeats == 0) {
        return;
    }
    /* the pooled figures from every rank's samples, on rank 0 (the others hold their own
     * alone, and keep the figures rank 0 broadcast for the first repeat: never read there) */
    int rc = acc->repeats > 1 && acc->srows == acc->nranks ? pooled_figures(acc) : 0;
    if (rc == 0) {
        rc = repeat_figures(acc->rep_p50, acc->repeats, &acc->ci, &acc->bimodal, &acc->modes);
    }
    if (rc != 0) {
        acc->fig.status = COLLPROF_CELL_ERROR;
        snprintf(acc->fig.reason, sizeof(acc->fig.reason), "out of memory computing the figures");
    }
}

double cp_repeat_ci_pct(const cp_median_ci_t *ci)
{
    if (ci->k == 0 || ci->median <= 0) {
        return -1;
    }
    return (ci->hi - ci->lo) / ci->median * 100;
}

int cp_repeat_more(const cp_options_t *opt, const cp_result_t *acc, double elapsed_s)
{
    if (acc->repeats == 0 || acc->fig.status != COLLPROF_CELL_OK ||
        acc->repeats >= CP_MAX_REPEATS) {
        return 0;
    }
    if (opt->max_time_s > 0 && elapsed_s >= opt->max_time_s) {
        return 0;
    }
    if (acc->repeats < opt->repeats || (opt->min_time_s > 0 && elapsed_s < opt->min_time_s)) {
        return 1;
    }
    if (opt->target_ci_pct > 0) {
        cp_median_ci_t ci;
        cp_modes_t modes;
        int bimodal;
        if (repeat_figures(acc->rep_p50, acc->repeats, &ci, &bimodal, &modes) != 0) {
            return 0;
        }
        double pct = cp_repeat_ci_pct(&ci);
        return ci.coverage < CP_STATS_CI_LEVEL || pct < 0 || pct > opt->target_ci_pct;
    }
    return 0;
}
