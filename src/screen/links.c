#include "config.h"

#include "screen/links.h"

#include "screen/screen.h"

#include "base/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int cp_links_rounds(int nnodes)
{
    if (nnodes < 2) {
        return 0;
    }
    return nnodes % 2 == 0 ? nnodes - 1 : nnodes;
}

/*
 * The circle method on m = nnodes rounded up to even: node m-1 stays put
 * and meets node `round`; the others sit on a circle of m-1 seats and pair
 * across it, (round + i) with (round - i).  With nnodes odd, node m-1 is
 * the bye.
 */
int cp_links_partner(int nnodes, int round, int node)
{
    int m = nnodes + (nnodes % 2), seats = m - 1;
    if (nnodes < 2 || round < 0 || round >= cp_links_rounds(nnodes) || node < 0 || node >= nnodes) {
        return -1;
    }
    int other;
    if (node == m - 1) {
        other = round;
    } else if (node == round) {
        other = m - 1;
    } else {
        /* node = round + i on the circle: its partner is round - i */
        other = ((2 * round - node) % seats + seats) % seats;
    }
    return other < nnodes ? other : -1;
}

static int measured(double x)
{
    return x > 0 && isfinite(x);
}

void cp_links_verdict_free(cp_links_verdict_t *v)
{
    free(v->slow);
    free(v->link_ref);
    free(v->node_bw);
    free(v->node_ref);
    free(v->node_links);
    free(v->node_slow_links);
    free(v->suspect);
    memset(v, 0, sizeof(*v));
}

/* Each link against the median of the other measured links. */
static void judge_links(const double *bw, cp_links_verdict_t *v, double *tmp)
{
    int n = v->n;
    for (int a = 0; a < n; a++) {
        for (int b = a + 1; b < n; b++) {
            double x = bw[a * n + b];
            if (!measured(x)) {
                continue;
            }
            size_t k = 0;
            for (int c = 0; c < n; c++) {
                for (int d = c + 1; d < n; d++) {
                    if ((c != a || d != b) && measured(bw[c * n + d])) {
                        tmp[k++] = bw[c * n + d];
                    }
                }
            }
            double ref = cp_stats_median(tmp, k);
            int slow = n >= 3 && k > 0 && x < v->threshold * ref;
            v->link_ref[a * n + b] = v->link_ref[b * n + a] = ref;
            v->slow[a * n + b] = v->slow[b * n + a] = (unsigned char)slow;
            v->nslow_links += slow;
            v->node_links[a]++;
            v->node_links[b]++;
            v->node_slow_links[a] += slow;
            v->node_slow_links[b] += slow;
        }
    }
}

/* Each node's median link against the median of the other nodes'. */
static void judge_nodes(const double *bw, cp_links_verdict_t *v, double *tmp)
{
    int n = v->n;
    for (int a = 0; a < n; a++) {
        size_t k = 0;
        for (int b = 0; b < n; b++) {
            if (b != a && measured(bw[a * n + b])) {
                tmp[k++] = bw[a * n + b];
            }
        }
        v->node_bw[a] = cp_stats_median(tmp, k);
    }
    for (int a = 0; a < n; a++) {
        size_t k = 0;
        for (int b = 0; b < n; b++) {
            if (b != a && v->node_links[b] > 0) {
                tmp[k++] = v->node_bw[b];
            }
        }
        v->node_ref[a] = cp_stats_median(tmp, k);
        int sus = n >= 3 && k > 0 && v->node_links[a] > 0 &&
                  v->node_bw[a] < v->threshold * v->node_ref[a];
        v->suspect[a] = (unsigned char)sus;
        v->nsuspects += sus;
    }
}

int cp_links_analyse(const double *bw, int n, double threshold, cp_links_verdict_t *v)
{
    size_t nn = (size_t)(n > 0 ? n : 1);
    memset(v, 0, sizeof(*v));
    v->n = n;
    v->threshold = threshold;
    v->slow = calloc(nn * nn, 1);
    v->link_ref = calloc(nn * nn, sizeof(double));
    v->node_bw = calloc(nn, sizeof(double));
    v->node_ref = calloc(nn, sizeof(double));
    v->node_links = calloc(nn, sizeof(int));
    v->node_slow_links = calloc(nn, sizeof(int));
    v->suspect = calloc(nn, 1);
    double *tmp = calloc(nn * nn, sizeof(double));
    if (!v->slow || !v->link_ref || !v->node_bw || !v->node_ref || !v->node_links ||
        !v->node_slow_links || !v->suspect || !tmp) {
        free(tmp);
        cp_links_verdict_free(v);
        return -1;
    }
    judge_links(bw, v, tmp);
    for (int a = 0; a < n; a++) {
        v->measured += v->node_links[a];
    }
    v->measured /= 2;
    judge_nodes(bw, v, tmp);
    free(tmp);
    return 0;
}

/* ---- the /links rows as matrices ---------------------------------------- */

int cp_links_first_of(const collprof_link_row_t *rows, size_t i)
{
    for (size_t j = 0; j < i; j++) {
        if (!strcmp(rows[j].backend, rows[i].backend) && !strcmp(rows[j].kind, rows[i].kind)) {
            return 0;
        }
    }
    return 1;
}

void cp_links_matrix(const collprof_link_row_t *rows, size_t nrows, const char *backend,
                     const char *kind, int time, int n, double *m)
{
    memset(m, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (size_t i = 0; i < nrows; i++) {
        const collprof_link_row_t *r = &rows[i];
        int a = r->node_a, b = r->node_b;
        if (strcmp(r->backend, backend) != 0 || strcmp(r->kind, kind) != 0 || a < 0 || b < 0 ||
            a >= n || b >= n || a == b ||
            !cp_screen_outcome_judged(cp_screen_outcome_of(r->status))) {
            continue;
        }
        m[a * n + b] = m[b * n + a] = time ? r->time_mean_us : r->bw_gbs;
    }
}

void cp_links_print(FILE *f, const char *const *names, int n, const double *m, int prec,
                    const unsigned char *mark)
{
    int w = 10;
    for (int a = 0; a < n; a++) {
        int l = (int)strlen(names[a]) + 2;
        w = l > w ? l : w;
    }
    fprintf(f, "%-*s", w, "");
    for (int b = 0; b < n; b++) {
        fprintf(f, "%*s", w, names[b]);
    }
    fprintf(f, "\n");
    for (int a = 0; a < n; a++) {
        fprintf(f, "%-*s", w, names[a]);
        for (int b = 0; b < n; b++) {
            char cell[64];
            double x = m[a * n + b];
            if (a == b || !measured(x)) {
                snprintf(cell, sizeof(cell), "-");
            } else {
                snprintf(cell, sizeof(cell), "%.*f%s", prec, x,
                         mark != NULL && mark[a * n + b] ? "*" : "");
            }
            fprintf(f, "%*s", w, cell);
        }
        fprintf(f, "\n");
    }
}
