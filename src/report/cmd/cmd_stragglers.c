/*
 * `stragglers FILE`: ranks that are slower than their peers.
 *
 * Each rank's time of a cell is compared with the others' through a
 * robust z-score, 0.6745 (x - median) / MAD: the median and the median
 * absolute deviation ignore the straggler itself, where a mean and a
 * standard deviation would be dragged along by it.  Only the slow side
 * counts, and only by a real margin (--min-excess): when all ranks agree
 * to within a microsecond the MAD is tiny and any jitter gets a huge z.
 *
 * Which time of a rank: by default its fastest iteration (--stat min).  A
 * rank that is slow every time is slow at its best too, while a rank that
 * was descheduled now and then, or that waited inside the collective for
 * a slow peer, still has fast iterations.  Per-rank means
 * (/cells/<cell>/rank_mean_us, --stat mean) mix both: on an oversubscribed
 * node the waiting ranks' means grow as much as the straggler's, and the
 * straggler is lost (seen on 4 ranks on 2 cores).
 *
 * A slow node or link: in an allreduce or a broadcast every rank waits for
 * the slowest, so per-rank times cannot name it.  In sendrecv (the ring),
 * alltoall and scatter they can.  In each such cell the slowest rank (in
 * the ring the two slowest: the node's own rank and the one it sends to),
 * when at least --min-excess above the median, blames the nodes its traffic
 * crosses: its own, and in the ring that of the rank it receives from (a
 * send may complete into the socket's buffers; a receive is done when the
 * data arrived).  A scatter's root, which waits for every transfer, is no
 * candidate.  The node blamed most in a cell is the cell's slow end, and a
 * node that is the slow end of more than half of those cells is named a
 * suspect node.
 */
#include "config.h"

#include "report/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the MAD of a normal sample is 0.6745 standard deviations */
#define CP_REPORT_MAD_SCALE 0.6745
/* when more than half the ranks agree exactly the MAD is 0; the mean absolute
 * deviation, scaled to a standard deviation likewise, stands in */
#define CP_REPORT_MEANAD_SCALE 0.7979

enum { STAT_MIN, STAT_MEAN, STAT_MEDIAN };
static const char *const stat_names[] = {"min", "mean", "median"};

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report stragglers FILE [--z Z] [--min-excess PCT]\n"
               "                                  [--stat min|mean|median]\n"
               "List, per cell, the ranks (and their hosts) whose time is an outlier: a\n"
               "robust z-score above Z (from the median and the median absolute deviation\n"
               "of the cell's per-rank times) and at least PCT percent above the median.\n"
               "Then how many cells flagged each rank and each host, and each rank's and\n"
               "node's time relative to the cell medians.  Last, the node that is the slow\n"
               "end of most sendrecv, alltoall and scatter cells (3 nodes or more), named\n"
               "a suspect node when it is that of more than half of them.\n"
               "\n"
               "  --z Z             robust z-score threshold (default 3.5)\n"
               "  --min-excess PCT  smallest excess over the median that counts (default 20)\n"
               "  --stat S          a rank's time: min, its fastest iteration (default: a\n"
               "                    rank slow every time); mean, its mean (rank_mean_us);\n"
               "                    median, its median iteration\n"
               "  -h, --help        this help\n"
               "\n"
               "Exit status: 0 (also when stragglers are found), 2 bad usage or a file that\n"
               "cannot be read.\n");
}

typedef struct acc {
    int blamed;   /* node: cells in which it was the slow end */
    int flagged;  /* cells in which this rank (node: any of its ranks) was flagged */
    double ratio; /* sum over cells of mean / median */
    int cells;
} acc_t;

typedef struct tally {
    const cp_report_file_t *f;
    double zmax, excess;
    int stat;
    int n, nnodes;
    acc_t *rank, *node;
    double *tmp;     /* [n] scratch */
    char *node_hit;  /* [nnodes] flagged in this cell */
    int cells;       /* cells with per-rank times */
    int blame_cells; /* of those, sendrecv, alltoall and scatter cells */
    int *blame;      /* [nnodes] blame in the current cell */
    int *order;      /* [n] scratch */
    int *ends;       /* [nrows] the slow end of each blame cell, -1 none, -2 not one */
} tally_t;

/* Flag the outliers among one cell's per-rank times m[]: 1 when any was printed. */
static int flag_cell(tally_t *t, const collprof_result_row_t *r, const cp_report_cell_t *cl,
                     const double *m)
{
    int n = t->n, printed = 0;
    memcpy(t->tmp, m, sizeof(double) * (size_t)n);
    double med = cp_report_median(t->tmp, (size_t)n), meanad = 0;
    for (int q = 0; q < n; q++) {
        t->tmp[q] = fabs(m[q] - med);
        meanad += t->tmp[q] / n;
    }
    double mad = cp_report_median(t->tmp, (size_t)n);
    double scale = mad > 0 ? mad / CP_REPORT_MAD_SCALE : meanad / CP_REPORT_MEANAD_SCALE;
    memset(t->node_hit, 0, (size_t)t->nnodes + 1);
    for (int q = 0; q < n; q++) {
        double z = scale > 0 ? (m[q] - med) / scale : 0;
        int nd = t->f->ranks[q].node_id;
        t->rank[q].cells++;
        t->rank[q].ratio += med > 0 ? m[q] / med : 1;
        t->node[nd].cells++;
        t->node[nd].ratio += med > 0 ? m[q] / med : 1;
        if (z <= t->zmax || m[q] < med * (1 + t->excess / 100)) {
            continue;
        }
        if (!printed++) {
            char name[512];
            cp_report_cell_name(r, name, sizeof(name));
            printf("%s: median %.1f us, MAD %.1f us\n", name, med, mad);
        }
        printf("  rank %d on %s: %s %.1f us (+%.0f%%, z %.1f)", q, t->f->ranks[q].hostname,
               stat_names[t->stat], m[q], med > 0 ? (m[q] / med - 1) * 100 : 0, z);
        if (t->stat != STAT_MEAN) {
            printf("; mean %.1f us", cl->rank_mean[q]);
        }
        printf("\n");
        t->rank[q].flagged++;
        t->node_hit[nd] = 1;
    }
    for (int nd = 0; nd < t->nnodes; nd++) {
        t->node[nd].flagged += t->node_hit[nd];
    }
    return printed > 0;
}

static const double *sort_times;

static int by_time(const void *a, const void *b)
{
    double x = sort_times[*(const int *)a], y = sort_times[*(const int *)b];
    return (x > y) - (x < y);
}

/* Ranks whose time can name a slow node of cell r: 1 for candidates (not a scatter's root). */
static int candidates(const tally_t *t, const collprof_result_row_t *r, const double *m)
{
    int k = 0;
    for (int q = 0; q < t->n; q++) {
        if (!(!strcmp(r->op, "scatter") && q == r->root) && m[q] > 0) {
            t->order[k++] = q;
        }
    }
    sort_times = m;
    qsort(t->order, (size_t)k, sizeof(int), by_time);
    return k;
}

/* The node cell r's slowest ranks blame most (sendrecv, alltoall, scatter), or -1. */
static int slow_end(tally_t *t, const collprof_result_row_t *r, const double *m)
{
    int ring = !strcmp(r->op, "sendrecv"), n = t->n;
    int k = candidates(t, r, m), top = ring ? 2 : 1;
    if (k < 3) {
        return -1;
    }
    double med = k % 2 ? m[t->order[k / 2]] : (m[t->order[k / 2 - 1]] + m[t->order[k / 2]]) / 2;
    memset(t->blame, 0, sizeof(int) * (size_t)t->nnodes);
    for (int i = k - top; i < k; i++) {
        int q = t->order[i];
        if (m[q] < med * (1 + t->excess / 100)) {
            return -1; /* not clearly slower than the others */
        }
        t->blame[t->f->ranks[q].node_id]++;
        if (ring) { /* a ring rank is done when its receive is: the sender's link counts */
            t->blame[t->f->ranks[(q - 1 + n) % n].node_id]++;
        }
    }
    int best = 0, ties = 0;
    for (int nd = 1; nd < t->nnodes; nd++) {
        ties = t->blame[nd] == t->blame[best] ? ties + 1 : t->blame[nd] > t->blame[best] ? 0 : ties;
        best = t->blame[nd] > t->blame[best] ? nd : best;
    }
    return ties == 0 && t->blame[best] > 0 ? best : -1;
}

static void blame_cell(tally_t *t, const collprof_result_row_t *r, const double *m)
{
    if (t->nnodes < 3 || (strcmp(r->op, "sendrecv") != 0 && strcmp(r->op, "alltoall") != 0 &&
                          strcmp(r->op, "scatter") != 0)) {
        return;
    }
    t->blame_cells++;
    int nd = slow_end(t, r, m);
    t->ends[r - t->f->rows] = nd;
    if (nd >= 0) {
        t->node[nd].blamed++;
    }
}

static const char *node_host(const tally_t *t, int nd)
{
    for (int q = 0; q < t->n; q++) {
        if (t->f->ranks[q].node_id == nd) {
            return t->f->ranks[q].hostname;
        }
    }
    return "?";
}

/* The nodes that were the slow end of most sendrecv, alltoall and scatter cells. */
static void print_suspects(const tally_t *t)
{
    printf("\n== suspect nodes (sendrecv, alltoall and scatter cells) ==\n");
    if (t->nnodes < 3) {
        printf("# needs 3 nodes or more: with %d every node is at an end of every slow transfer\n",
               t->nnodes);
        return;
    }
    for (size_t i = 0; i < t->f->nrows; i++) {
        if (t->ends[i] != -2) {
            char name[512];
            cp_report_cell_name(&t->f->rows[i], name, sizeof(name));
            printf("  %s: slow end %s\n", name, t->ends[i] >= 0 ? node_host(t, t->ends[i]) : "-");
        }
    }
    int named = 0;
    for (int nd = 0; nd < t->nnodes; nd++) {
        const char *host = node_host(t, nd);
        if (2 * t->node[nd].blamed > t->blame_cells) {
            printf("%s: the slow end of %d of %d cells: suspect node %s\n", host,
                   t->node[nd].blamed, t->blame_cells, host);
            named++;
        }
    }
    if (named == 0) {
        printf("# no node is the slow end of more than half of the %d cells\n", t->blame_cells);
    }
}

/* How often each rank and each node was flagged, and their times relative to the medians. */
static void print_tallies(const tally_t *t)
{
    const cp_report_file_t *f = t->f;
    char ratio_head[32], fl[32];
    snprintf(ratio_head, sizeof(ratio_head), "%s/median", stat_names[t->stat]);
    printf("\n== per rank ==\n%-6s %-24s %8s %14s\n", "rank", "host", "flagged", ratio_head);
    for (int q = 0; q < t->n; q++) {
        snprintf(fl, sizeof(fl), "%d/%d", t->rank[q].flagged, t->cells);
        printf("%-6d %-24s %8s %13.2fx\n", q, f->ranks[q].hostname, fl,
               t->rank[q].cells ? t->rank[q].ratio / t->rank[q].cells : 1.0);
    }
    printf("\n== per node ==\n%-6s %-24s %6s %8s %14s\n", "node", "host", "ranks", "flagged",
           ratio_head);
    for (int nd = 0; nd < t->nnodes; nd++) {
        int cnt = 0, first = -1;
        for (int q = 0; q < t->n; q++) {
            if (f->ranks[q].node_id == nd) {
                cnt++;
                first = first < 0 ? q : first;
            }
        }
        if (cnt == 0) {
            continue;
        }
        snprintf(fl, sizeof(fl), "%d/%d", t->node[nd].flagged, t->cells);
        printf("%-6d %-24s %6d %8s %13.2fx\n", nd, f->ranks[first].hostname, cnt, fl,
               t->node[nd].cells ? t->node[nd].ratio / t->node[nd].cells : 1.0);
    }
}

static void report(const cp_report_file_t *f, double zmax, double excess, int stat)
{
    tally_t t = {f,    zmax, excess, stat, f->nranks, 0,    NULL, NULL,
                 NULL, NULL, 0,      0,    NULL,      NULL, NULL};
    for (int q = 0; q < t.n; q++) {
        t.nnodes = f->ranks[q].node_id + 1 > t.nnodes ? f->ranks[q].node_id + 1 : t.nnodes;
    }
    t.rank = calloc((size_t)t.n + 1, sizeof(*t.rank));
    t.node = calloc((size_t)t.nnodes + 1, sizeof(*t.node));
    t.tmp = malloc(sizeof(double) * ((size_t)t.n + 1));
    t.node_hit = calloc((size_t)t.nnodes + 1, 1);
    t.blame = calloc((size_t)t.nnodes + 1, sizeof(int));
    t.order = calloc((size_t)t.n + 1, sizeof(int));
    t.ends = malloc(sizeof(int) * (f->nrows + 1));
    for (size_t i = 0; t.ends != NULL && i < f->nrows; i++) {
        t.ends[i] = -2;
    }
    if (!t.rank || !t.node || !t.tmp || !t.node_hit || !t.blame || !t.order || !t.ends) {
        cp_report_error("out of memory");
        exit(CP_REPORT_EXIT_BAD);
    }
    printf("# stragglers in %s\n", f->path);
    printf("# a rank is flagged when its %s time has a robust z-score above %g (median and\n"
           "# MAD of the cell's per-rank %s times) and is at least %g%% above the median\n",
           stat_names[stat], zmax, stat_names[stat], excess);
    int with = 0;
    for (size_t i = 0; i < f->nrows; i++) {
        const cp_report_cell_t *cl = &f->cells[i];
        const double *m = stat == STAT_MIN    ? cl->rank_min
                          : stat == STAT_MEAN ? cl->rank_mean
                                              : cl->rank_median;
        if (!cp_report_measured(&f->rows[i]) || m == NULL || t.n < 2) {
            continue;
        }
        t.cells++;
        with += flag_cell(&t, &f->rows[i], cl, m);
        blame_cell(&t, &f->rows[i], m);
    }
    printf("# %d of %d cells with per-rank times have stragglers\n", with, t.cells);
    print_tallies(&t);
    print_suspects(&t);
    free(t.blame);
    free(t.order);
    free(t.ends);
    free(t.rank);
    free(t.node);
    free(t.tmp);
    free(t.node_hit);
}

typedef struct settings {
    double z, excess;
    int stat;
} settings_t;

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k == 1) {
        return cp_report_parse_double("stragglers", "--z", val, 0, 1e9, &s->z);
    }
    if (k == 2) {
        return cp_report_parse_double("stragglers", "--min-excess", val, 0, 1e9, &s->excess);
    }
    s->stat = cp_report_parse_choice("stragglers", "--stat", val, stat_names, 3,
                                     "one of min, mean, median");
    return s->stat < 0 ? -1 : 0;
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    const settings_t *s = ctx;
    (void)n;
    report(files[0], s->z, s->excess, s->stat);
    return CP_REPORT_EXIT_OK;
}

int cp_report_cmd_stragglers(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"z", 0, 1}, {"min-excess", 0, 1}, {"stat", 0, 1}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"stragglers",        usage, opts, option, NULL,
                                        CP_REPORT_FILES_ONE, run};
    settings_t s = {3.5, 20, STAT_MIN};
    return cp_report_run(&cmd, &s, argc, argv);
}
