/* alltoallv traffic generators, allgatherv's per-rank counts and the traffic-matrix file. */
#include "config.h"

#include "core/imbalance.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t row(const uint64_t *m, int n, int s)
{
    uint64_t t = 0;
    for (int d = 0; d < n; d++) {
        t += m[s * n + d];
    }
    return t;
}

static uint64_t col(const uint64_t *m, int n, int d)
{
    uint64_t t = 0;
    for (int s = 0; s < n; s++) {
        t += m[s * n + d];
    }
    return t;
}

static int gen(const char *spec, int n, uint64_t count, uint64_t *m)
{
    cp_imbalance_t imb;
    char err[256];
    if (cp_imbalance_parse(spec, &imb, err, sizeof(err)) != 0) {
        return -1;
    }
    cp_imbalance_matrix(&imb, n, count, m);
    cp_imbalance_free(&imb);
    return 0;
}

/* allgatherv counts of spec on n ranks for count elements, as text "a b c ..."; the
 * allgatherv, gatherv and scatterv matrices must carry them */
static int counts(const char *spec, int n, uint64_t count, char *out, size_t len)
{
    cp_imbalance_t imb;
    char err[256];
    uint64_t c[8], m[64], sum = 0;
    if (cp_imbalance_parse(spec, &imb, err, sizeof(err)) != 0 || n > 8) {
        return -1;
    }
    cp_imbalance_counts(&imb, n, count, c);
    /* the matrix sends rank s's count to every rank */
    int rows_ok = cp_imbalance_op_matrix(COLLPROF_OP_ALLGATHERV, &imb, n, count, 0, m) == 0;
    for (int r = 0; r < n; r++) {
        for (int d = 0; d < n; d++) {
            rows_ok &= m[r * n + d] == c[r];
        }
    }
    /* gatherv (root n-1): rank s's count to the root only; scatterv (root 0): the root's row */
    uint64_t g[64], sc[64];
    rows_ok &= cp_imbalance_op_matrix(COLLPROF_OP_GATHERV, &imb, n, count, n - 1, g) == 0;
    rows_ok &= cp_imbalance_op_matrix(COLLPROF_OP_SCATTERV, &imb, n, count, 0, sc) == 0;
    cp_imbalance_free(&imb);
    out[0] = '\0';
    for (int r = 0; r < n; r++) {
        sum += c[r];
        for (int d = 0; d < n; d++) {
            rows_ok &= g[r * n + d] == (d == n - 1 ? c[r] : 0);
            rows_ok &= sc[d * n + r] == (d == 0 ? c[r] : 0);
        }
        snprintf(out + strlen(out), len - strlen(out), "%s%llu", r ? " " : "",
                 (unsigned long long)c[r]);
    }
    return sum == count && rows_ok ? 0 : -1;
}

static void counts_tests(void)
{
    static const char *const cases[][4] = {
        {"uniform", "4", "1000", "250 250 250 250"},
        {"uniform", "3", "1000", "334 333 333"}, /* the leftover goes to rank 0 */
        {"linear", "4", "1000", "100 200 300 400"},
        {"spread:1", "3", "999", "0 333 666"}, /* rank 0 contributes nothing */
        {"spread:0.5", "3", "600", "100 200 300"},
        {"moe:1:4", "4", "700", "400 100 100 100"},
        {"moe:2:2", "3", "10", "4 4 2"},
        {"linear", "1", "7", "7"},
        {"spread:1", "2", "5", "0 5"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char got[128];
        int rc = counts(cases[i][0], atoi(cases[i][1]), strtoull(cases[i][2], NULL, 10), got,
                        sizeof(got));
        ok(rc == 0 && !strcmp(got, cases[i][3]), "allgatherv %s on %s ranks, %s elements: %s",
           cases[i][0], cases[i][1], cases[i][2], got);
    }
    ok(cp_imbalance_op_matrix(COLLPROF_OP_ALLREDUCE, NULL, 2, 10, 0, NULL) == -1,
       "no traffic matrix for allreduce");

    /* file: rank r's weight is the sum of its row */
    char path[] = "/tmp/cp_test_tmv_XXXXXX", spec[64], got[128];
    int fd = mkstemp(path);
    const char *text = "1 0 0\n2 2 2\n0 0 0\n";
    ok(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write 3x3 file");
    close(fd);
    snprintf(spec, sizeof(spec), "file:%s", path);
    ok(counts(spec, 3, 700, got, sizeof(got)) == 0 && !strcmp(got, "100 600 0"),
       "allgatherv from a file: row sums 1 6 0 give %s", got);
    unlink(path);
}

int main(void)
{
    uint64_t m[64], u[64];
    char err[256];
    int rows_ok;

    ok(gen("uniform", 4, 1000, m) == 0 && m[0] == 250 && m[5] == 250 && m[15] == 250,
       "uniform: count/n to everyone");

    ok(gen("linear", 4, 1000, m) == 0, "linear parses");
    rows_ok = 1;
    for (int s = 0; s < 4; s++) {
        rows_ok &= row(m, 4, s) == 1000;
    }
    ok(rows_ok, "linear: every rank sends exactly count");
    ok(m[0 * 4 + 3] == 400 && m[0 * 4 + 1] == 200 && m[1 * 4 + 3] == 100,
       "linear: weights 1..n by (s+d) mod n (%llu %llu %llu)", (unsigned long long)m[3],
       (unsigned long long)m[1], (unsigned long long)m[7]);

    gen("uniform", 4, 1000, u);
    ok(gen("spread:0", 4, 1000, m) == 0 && !memcmp(m, u, sizeof(uint64_t) * 16),
       "spread:0 is uniform");
    ok(gen("spread:1", 5, 1000, m) == 0 && m[0] == 0 && m[4] > m[1] && row(m, 5, 0) == 1000 &&
           col(m, 5, 2) == 1000,
       "spread:1: nothing to self, farthest peer gets most, sends and receives balanced");

    ok(gen("moe:1:4", 4, 700, m) == 0 && m[0] == 400 && m[1] == 100 && col(m, 4, 0) == 1600 &&
           col(m, 4, 1) == 400,
       "moe:1:4: the hot rank receives 4x");

    cp_a2av_t a;
    uint64_t *mm = malloc(sizeof(uint64_t) * 16);
    gen("moe:1:4", 4, 700, mm);
    ok(cp_a2av_build(&a, mm, 4, 2) == 0 && a.sendcounts[0] == 400 && a.sdispls[1] == 400 &&
           a.recvcounts[0] == 100 && a.rdispls[3] == 300 && a.send_total == 700 &&
           a.recv_total == 400 && a.max_rank_elems == 1600 && !a.symmetric,
       "rank view: counts, displacements, heaviest rank");
    cp_a2av_free(&a);
    mm = malloc(sizeof(uint64_t) * 16);
    gen("uniform", 4, 100, mm);
    ok(cp_a2av_build(&a, mm, 4, 0) == 0 && a.symmetric, "uniform is symmetric");
    cp_a2av_free(&a);

    char path[] = "/tmp/cp_test_tm_XXXXXX";
    int fd = mkstemp(path);
    const char *text = "# 2x2 weights\n1 3\n3, 1\n";
    ok(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write matrix file");
    close(fd);
    cp_imbalance_t imb;
    char spec[128];
    snprintf(spec, sizeof(spec), "file:%s", path);
    ok(cp_imbalance_parse(spec, &imb, err, sizeof(err)) == 0 && imb.file_n == 2, "file loads");
    cp_imbalance_matrix(&imb, 2, 100, m);
    ok(m[0] == 25 && m[1] == 75 && m[2] == 75 && m[3] == 25, "file scaled to count per rank");
    ok(cp_imbalance_validate(&imb, 2, err, sizeof(err)) == 0, "2x2 fits 2 ranks");
    ok(cp_imbalance_validate(&imb, 4, err, sizeof(err)) == -1 && strstr(err, "2 x 2") != NULL,
       "2x2 refused for 4 ranks: %s", err);
    cp_imbalance_free(&imb);

    const char *bad[][2] = {{"1 2\n3\n", "row has 1 entries"},
                            {"1 2 3\n4 5 6\n", "must be square"},
                            {"1 -2\n3 4\n", "not a non-negative number"},
                            {"0 0\n0 0\n", "all weights are zero"},
                            {"# nothing\n", "no rows"},
                            {"1 x\n2 3\n", "'x' is not"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        FILE *f = fopen(path, "w");
        fputs(bad[i][0], f);
        fclose(f);
        err[0] = '\0';
        ok(cp_imbalance_parse(spec, &imb, err, sizeof(err)) == -1 && strstr(err, bad[i][1]),
           "bad traffic matrix %zu: %s", i, err);
    }
    unlink(path);
    ok(cp_imbalance_parse("moe:3", &imb, err, sizeof(err)) == 0 &&
           cp_imbalance_validate(&imb, 2, err, sizeof(err)) == -1,
       "moe with more hot ranks than the job is refused");
    counts_tests();
    return tap_done();
}
