/* alltoallv traffic generators and the traffic-matrix file. */
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
    return tap_done();
}
