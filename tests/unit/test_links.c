/*
 * The link sweep's pure parts (src/screen/links.c): the round-robin schedule
 * pairs every two nodes exactly once, never a node twice in a round, in
 * N-1 rounds (N with a bye each for odd N); the analysis names a slow link
 * and a suspect node, and nothing in a clean matrix.
 */
#include "config.h"

#include "screen/links.h"
#include "base/stats.h"

#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* Every pair once, each node at most once per round, partners symmetric. */
static int schedule_ok(int n)
{
    int rounds = cp_links_rounds(n);
    int *met = calloc((size_t)n * (size_t)n, sizeof(int));
    int ok = met != NULL && rounds == (n % 2 ? n : n - 1);
    for (int r = 0; ok && r < rounds; r++) {
        int byes = 0;
        for (int a = 0; a < n; a++) {
            int b = cp_links_partner(n, r, a);
            if (b < 0) {
                byes++;
                continue;
            }
            ok &= b != a && b < n && cp_links_partner(n, r, b) == a;
            met[a * n + b]++;
        }
        ok &= byes == n % 2;
    }
    for (int a = 0; ok && a < n; a++) {
        for (int b = 0; b < n; b++) {
            ok &= met[a * n + b] == (a != b);
        }
    }
    free(met);
    return ok;
}

static void test_schedule(void)
{
    ok(cp_links_rounds(0) == 0 && cp_links_rounds(1) == 0, "no rounds below 2 nodes");
    ok(cp_links_rounds(2) == 1 && cp_links_partner(2, 0, 0) == 1 && cp_links_partner(2, 0, 1) == 0,
       "2 nodes: one round, one pair");
    ok(cp_links_partner(3, 0, 0) == -1 || cp_links_partner(3, 0, 1) == -1 ||
           cp_links_partner(3, 0, 2) == -1,
       "3 nodes: a node sits each round out");
    ok(cp_links_partner(4, 3, 0) == -1 && cp_links_partner(4, 0, 4) == -1 &&
           cp_links_partner(4, -1, 0) == -1,
       "out-of-range round or node: -1");
    int all = 1, bad = -1;
    for (int n = 2; n <= 64; n++) {
        if (!schedule_ok(n)) {
            all = 0;
            bad = n;
            break;
        }
    }
    ok(all, "2..64 nodes: every pair exactly once, no node twice in a round (first bad: %d)", bad);
    ok(cp_links_rounds(16) == 15 && cp_links_rounds(1024) == 1023 && cp_links_rounds(5) == 5,
       "N-1 rounds for even N, N for odd N");
}

/* n x n matrix with every link at 1 GB/s but node slow's at x */
static void matrix(double *m, int n, int slow, double x)
{
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            m[a * n + b] = a == b ? 0 : (a == slow || b == slow) ? x : 1.0 + 0.01 * (a + b);
        }
    }
}

static void test_analysis(void)
{
    double m[64];
    cp_links_verdict_t v;
    matrix(m, 4, -1, 0);
    ok(cp_links_analyse(m, 4, 0.5, &v) == 0 && v.nslow_links == 0 && v.nsuspects == 0 &&
           v.measured == 6,
       "clean 4-node matrix: nothing flagged, 6 links");
    cp_links_verdict_free(&v);
    matrix(m, 4, 2, 0.1);
    ok(cp_links_analyse(m, 4, 0.5, &v) == 0 && v.nslow_links == 3 && v.nsuspects == 1 &&
           v.suspect[2] && v.node_slow_links[2] == 3 && v.node_links[2] == 3 &&
           v.node_slow_links[0] == 1,
       "node 2 at 0.1x: its 3 links slow, node 2 the only suspect");
    ok(v.node_bw[2] / v.node_ref[2] < 0.15, "node 2: ratio to the others' median %.2f",
       v.node_bw[2] / v.node_ref[2]);
    cp_links_verdict_free(&v);
    matrix(m, 3, 0, 0.1);
    ok(cp_links_analyse(m, 3, 0.5, &v) == 0 && v.nsuspects == 1 && v.suspect[0],
       "3 nodes, node 0 slow: node 0 suspect");
    cp_links_verdict_free(&v);
    matrix(m, 4, 1, 0.6);
    ok(cp_links_analyse(m, 4, 0.5, &v) == 0 && v.nslow_links == 0 && v.nsuspects == 0,
       "node 1 at 0.6x: above the 0.5x threshold, nothing flagged");
    cp_links_verdict_free(&v);
    ok(cp_links_analyse(m, 4, 0.7, &v) == 0 && v.nsuspects == 1 && v.suspect[1],
       "the same at threshold 0.7: node 1 suspect");
    cp_links_verdict_free(&v);
    matrix(m, 2, 0, 0.1);
    ok(cp_links_analyse(m, 2, 0.5, &v) == 0 && v.nslow_links == 0 && v.nsuspects == 0,
       "2 nodes: one link, nothing to compare, nothing flagged");
    cp_links_verdict_free(&v);
    matrix(m, 4, -1, 0);
    m[0 * 4 + 1] = m[1 * 4 + 0] = 0.05;
    ok(cp_links_analyse(m, 4, 0.5, &v) == 0 && v.nslow_links == 1 && v.slow[1] && v.slow[4] &&
           v.nsuspects == 0,
       "one slow link between two good nodes: the link, no node");
    cp_links_verdict_free(&v);
    m[0 * 4 + 2] = m[2 * 4 + 0] = 0; /* not measured */
    ok(cp_links_analyse(m, 4, 0.5, &v) == 0 && v.measured == 5 && !v.slow[2],
       "a link without a figure is neither measured nor flagged");
    cp_links_verdict_free(&v);
}

static void test_median(void)
{
    double a[] = {3, 1, 2}, b[] = {4, 1, 3, 2};
    ok(cp_stats_median(a, 3) == 2 && cp_stats_median(b, 4) == 2.5 && cp_stats_median(a, 0) == 0,
       "median of odd, even and empty");
}

int main(void)
{
    test_schedule();
    test_analysis();
    test_median();
    return tap_done();
}
