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
               "node's time relative to the cell medians.\n"
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
    int flagged;  /* cells in which this rank (node: any of its ranks) was flagged */
    double ratio; /* sum over cells of mean / median */
    int cells;
} acc_t;

static void report(const cp_report_file_t *f, double zmax, double excess, int stat)
{
    int n = f->nranks, nnodes = 0;
    for (int q = 0; q < n; q++) {
        nnodes = f->ranks[q].node_id + 1 > nnodes ? f->ranks[q].node_id + 1 : nnodes;
    }
    acc_t *rank = calloc((size_t)n + 1, sizeof(*rank));
    acc_t *node = calloc((size_t)nnodes + 1, sizeof(*node));
    double *tmp = malloc(sizeof(double) * ((size_t)n + 1));
    char *node_hit = calloc((size_t)nnodes + 1, 1);
    if (!rank || !node || !tmp || !node_hit) {
        cp_report_error("out of memory");
        exit(CP_REPORT_EXIT_BAD);
    }
    printf("# stragglers in %s\n", f->path);
    printf("# a rank is flagged when its %s time has a robust z-score above %g (median and\n"
           "# MAD of the cell's per-rank %s times) and is at least %g%% above the median\n",
           stat_names[stat], zmax, stat_names[stat], excess);
    int cells = 0, with = 0;
    for (size_t i = 0; i < f->nrows; i++) {
        const collprof_result_row_t *r = &f->rows[i];
        const cp_report_cell_t *cl = &f->cells[i];
        const double *m = stat == STAT_MIN    ? cl->rank_min
                          : stat == STAT_MEAN ? cl->rank_mean
                                              : cl->rank_median;
        if (!cp_report_measured(r) || m == NULL || n < 2) {
            continue;
        }
        memcpy(tmp, m, sizeof(double) * (size_t)n);
        double med = cp_report_median(tmp, (size_t)n), meanad = 0;
        for (int q = 0; q < n; q++) {
            tmp[q] = fabs(m[q] - med);
            meanad += tmp[q] / n;
        }
        double mad = cp_report_median(tmp, (size_t)n);
        double scale = mad > 0 ? mad / CP_REPORT_MAD_SCALE : meanad / CP_REPORT_MEANAD_SCALE;
        cells++;
        memset(node_hit, 0, (size_t)nnodes + 1);
        int printed = 0;
        for (int q = 0; q < n; q++) {
            double z = scale > 0 ? (m[q] - med) / scale : 0;
            int nd = f->ranks[q].node_id;
            rank[q].cells++;
            rank[q].ratio += med > 0 ? m[q] / med : 1;
            node[nd].cells++;
            node[nd].ratio += med > 0 ? m[q] / med : 1;
            if (z <= zmax || m[q] < med * (1 + excess / 100)) {
                continue;
            }
            if (!printed++) {
                char name[512];
                cp_report_cell_name(r, name, sizeof(name));
                printf("%s: median %.1f us, MAD %.1f us\n", name, med, mad);
            }
            printf("  rank %d on %s: %s %.1f us (+%.0f%%, z %.1f)", q, f->ranks[q].hostname,
                   stat_names[stat], m[q], med > 0 ? (m[q] / med - 1) * 100 : 0, z);
            if (stat != STAT_MEAN) {
                printf("; mean %.1f us", cl->rank_mean[q]);
            }
            printf("\n");
            rank[q].flagged++;
            node_hit[nd] = 1;
        }
        for (int nd = 0; nd < nnodes; nd++) {
            node[nd].flagged += node_hit[nd];
        }
        with += printed > 0;
    }
    printf("# %d of %d cells with per-rank times have stragglers\n", with, cells);

    char ratio_head[32];
    snprintf(ratio_head, sizeof(ratio_head), "%s/median", stat_names[stat]);
    printf("\n== per rank ==\n%-6s %-24s %8s %14s\n", "rank", "host", "flagged", ratio_head);
    for (int q = 0; q < n; q++) {
        char fl[32];
        snprintf(fl, sizeof(fl), "%d/%d", rank[q].flagged, cells);
        printf("%-6d %-24s %8s %13.2fx\n", q, f->ranks[q].hostname, fl,
               rank[q].cells ? rank[q].ratio / rank[q].cells : 1.0);
    }
    printf("\n== per node ==\n%-6s %-24s %6s %8s %14s\n", "node", "host", "ranks", "flagged",
           ratio_head);
    for (int nd = 0; nd < nnodes; nd++) {
        int cnt = 0, first = -1;
        for (int q = 0; q < n; q++) {
            if (f->ranks[q].node_id == nd) {
                cnt++;
                first = first < 0 ? q : first;
            }
        }
        if (cnt == 0) {
            continue;
        }
        char fl[32];
        snprintf(fl, sizeof(fl), "%d/%d", node[nd].flagged, cells);
        printf("%-6d %-24s %6d %8s %13.2fx\n", nd, f->ranks[first].hostname, cnt, fl,
               node[nd].cells ? node[nd].ratio / node[nd].cells : 1.0);
    }
    free(rank);
    free(node);
    free(tmp);
    free(node_hit);
}

int cp_report_cmd_stragglers(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"z", 0, 1}, {"min-excess", 0, 1}, {"stat", 0, 1}, {NULL, 0, 0}};
    cp_report_args_t a = {argc, argv, 1, 0, "stragglers"};
    double z = 3.5, excess = 20;
    int stat = STAT_MIN;
    char *file = NULL, *val;
    int k;
    while ((k = cp_report_next_arg(&a, opts, &val)) != CP_REPORT_ARG_END) {
        if (k == CP_REPORT_ARG_ERROR) {
            return CP_REPORT_EXIT_BAD;
        } else if (k == CP_REPORT_ARG_OPERAND) {
            if (cp_report_one_file("stragglers", &file, val) != 0) {
                return CP_REPORT_EXIT_BAD;
            }
        } else if (k == 0) {
            usage(stdout);
            return CP_REPORT_EXIT_OK;
        } else if (k == 1) {
            if (cp_report_parse_double("stragglers", "--z", val, 0, 1e9, &z) != 0) {
                return CP_REPORT_EXIT_BAD;
            }
        } else if (k == 2) {
            if (cp_report_parse_double("stragglers", "--min-excess", val, 0, 1e9, &excess) != 0) {
                return CP_REPORT_EXIT_BAD;
            }
        } else {
            stat = !strcmp(val, "min")      ? STAT_MIN
                   : !strcmp(val, "mean")   ? STAT_MEAN
                   : !strcmp(val, "median") ? STAT_MEDIAN
                                            : -1;
            if (stat < 0) {
                cp_report_error("stragglers: --stat '%s' is not one of min, mean, median", val);
                return CP_REPORT_EXIT_BAD;
            }
        }
    }
    if (cp_report_need_file("stragglers", file != NULL) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    cp_report_file_t *f;
    char err[1024], *path;
    if (cp_report_single_path("stragglers", file, &path) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    if (cp_report_open(path, &f, err, sizeof(err)) != 0) {
        cp_report_error("%s: %s", path, err);
        free(path);
        return CP_REPORT_EXIT_BAD;
    }
    free(path);
    report(f, z, excess, stat);
    cp_report_close(f);
    return CP_REPORT_EXIT_OK;
}
