/*
 * alltoallv traffic generators, allgatherv's per-rank counts and the traffic-matrix file;
 * the traffic function (cp_traffic_cell) and each rank's view (cp_a2av_build) against the
 * n x n matrix the runner built before (old_op_matrix, kept here as the reference) for every
 * op, kind, root and many rank counts and counts; a view at 65,536 ranks in O(n) bytes.
 */
#include "config.h"

#include "colls/imbalance.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* ---- the reference: the n x n matrices of src/colls/imbalance.c before 2026-11-27 ---- */

static double old_weight(const cp_imbalance_t *imb, int n, int s, int d)
{
    switch (imb->kind) {
    case CP_IMB_LINEAR: return 1.0 + (double)((s + d) % n);
    case CP_IMB_SPREAD: {
        double dist = (double)((d - s + n) % n);
        return n > 1 ? 1.0 - imb->spread + imb->spread * 2.0 * dist / (double)(n - 1) : 1.0;
    }
    case CP_IMB_MOE: return d < imb->hot ? imb->bias : 1.0;
    case CP_IMB_FILE: return imb->weights[(size_t)s * (size_t)n + (size_t)d];
    case CP_IMB_UNIFORM:
    default: return 1.0;
    }
}

/* alltoallv's matrix; spread_n: spread's row sum is n (as now) instead of each row's loop */
static void old_matrix(const cp_imbalance_t *imb, int n, uint64_t count, uint64_t *matrix,
                       int spread_n)
{
    size_t nn = (size_t)n * (size_t)n;
    if (imb->kind == CP_IMB_FILE) {
        double total = 0;
        for (size_t i = 0; i < nn; i++) {
            total += imb->weights[i];
        }
        for (size_t i = 0; i < nn; i++) {
            matrix[i] = (uint64_t)floor(imb->weights[i] * (double)count * (double)n / total);
        }
        return;
    }
    for (int s = 0; s < n; s++) {
        double rowsum = 0;
        for (int d = 0; d < n; d++) {
            rowsum += old_weight(imb, n, s, d);
        }
        rowsum = spread_n && imb->kind == CP_IMB_SPREAD ? (double)n : rowsum;
        uint64_t given = 0;
        for (int d = 0; d < n; d++) {
            uint64_t c = (uint64_t)floor((double)count * old_weight(imb, n, s, d) / rowsum);
            matrix[(size_t)s * (size_t)n + (size_t)d] = c;
            given += c;
        }
        matrix[(size_t)s * (size_t)n + (size_t)s] += count > given ? count - given : 0;
    }
}

/* Every op's matrix (the old cp_imbalance_op_matrix); -1 for other ops or a bad root. */
static int old_op_matrix(collprof_op_t op, const cp_imbalance_t *imb, int n, uint64_t count,
                         int root, uint64_t *m, int spread_n)
{
    if (op == COLLPROF_OP_ALLTOALLV) {
        old_matrix(imb, n, count, m, spread_n);
        return 0;
    }
    if ((op != COLLPROF_OP_ALLGATHERV && op != COLLPROF_OP_GATHERV && op != COLLPROF_OP_SCATTERV) ||
        (op != COLLPROF_OP_ALLGATHERV && (root < 0 || root >= n))) {
        return -1;
    }
    uint64_t *c = calloc((size_t)n, sizeof(uint64_t));
    cp_imbalance_counts(imb, n, count, c);
    for (int s = 0; s < n; s++) {
        for (int d = 0; d < n; d++) {
            int gets = op == COLLPROF_OP_ALLGATHERV || (op == COLLPROF_OP_GATHERV && d == root) ||
                       (op == COLLPROF_OP_SCATTERV && s == root);
            m[(size_t)s * (size_t)n + (size_t)d] =
                gets ? (op == COLLPROF_OP_SCATTERV ? c[d] : c[s]) : 0;
        }
    }
    free(c);
    return 0;
}

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

/* The n x n matrix of op from the traffic function (small n: the tests' fixed cases). */
static int op_matrix(collprof_op_t op, const cp_imbalance_t *imb, int n, uint64_t count, int root,
                     uint64_t *m)
{
    cp_traffic_t t;
    if (cp_traffic_init(&t, op, imb, n, count, root) != 0) {
        return -1;
    }
    for (int s = 0; s < n; s++) {
        for (int d = 0; d < n; d++) {
            m[s * n + d] = cp_traffic_cell(&t, s, d);
        }
    }
    cp_traffic_free(&t);
    return 0;
}

static int gen(const char *spec, int n, uint64_t count, uint64_t *m)
{
    cp_imbalance_t imb;
    char err[256];
    if (cp_imbalance_parse(spec, &imb, err, sizeof(err)) != 0) {
        return -1;
    }
    op_matrix(COLLPROF_OP_ALLTOALLV, &imb, n, count, 0, m);
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
    int rows_ok = op_matrix(COLLPROF_OP_ALLGATHERV, &imb, n, count, 0, m) == 0;
    for (int r = 0; r < n; r++) {
        for (int d = 0; d < n; d++) {
            rows_ok &= m[r * n + d] == c[r];
        }
    }
    /* gatherv (root n-1): rank s's count to the root only; scatterv (root 0): the root's row */
    uint64_t g[64], sc[64];
    rows_ok &= op_matrix(COLLPROF_OP_GATHERV, &imb, n, count, n - 1, g) == 0;
    rows_ok &= op_matrix(COLLPROF_OP_SCATTERV, &imb, n, count, 0, sc) == 0;
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
    cp_traffic_t t;
    cp_imbalance_t u = {.kind = CP_IMB_UNIFORM};
    ok(cp_traffic_init(&t, COLLPROF_OP_ALLREDUCE, &u, 2, 10, 0) == COLLPROF_ERR_INVALID &&
           cp_traffic_init(&t, COLLPROF_OP_GATHERV, &u, 4, 10, 4) == COLLPROF_ERR_INVALID,
       "no traffic for allreduce, nor for a root outside the ranks");

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

/* ---- the traffic function and the views against the reference ---- */

typedef struct tally {
    long cases, bad, loop_cells; /* loop_cells: spread's cells off the old per-row loop sum */
    char first[200];
} tally_t;

static int ref_symmetric(const uint64_t *m, int n)
{
    for (size_t s = 0; s < (size_t)n; s++) {
        for (size_t d = s + 1; d < (size_t)n; d++) {
            if (m[s * (size_t)n + d] != m[d * (size_t)n + s]) {
                return 0;
            }
        }
    }
    return 1;
}

/* Rank r's view against the reference's row r and column r (and gatherv's, scatterv's blocks). */
static int view_ok(const cp_a2av_t *a, collprof_op_t op, const uint64_t *m, int n, int r, int root)
{
    uint64_t so = 0, ro = 0, bo = 0;
    int good = a->n == n;
    for (int p = 0; p < n; p++) {
        uint64_t sc = m[(size_t)r * n + p], rc = m[(size_t)p * n + r];
        good &= a->sendcounts[p] == sc && a->recvcounts[p] == rc && a->sdispls[p] == so &&
                a->rdispls[p] == ro;
        so += sc;
        ro += rc;
        if (op == COLLPROF_OP_GATHERV || op == COLLPROF_OP_SCATTERV) {
            uint64_t b =
                op == COLLPROF_OP_GATHERV ? m[(size_t)p * n + root] : m[(size_t)root * n + p];
            good &= a->bcounts[p] == b && a->bdispls[p] == bo;
            bo += b;
        }
    }
    return good && a->send_total == so && a->recv_total == ro &&
           a->symmetric == ref_symmetric(m, n);
}

/* Every cell, every rank's view and the heaviest rank (alltoallv's S) of one case. */
static void compare_case(collprof_op_t op, const cp_imbalance_t *imb, int n, uint64_t count,
                         int root, tally_t *ty)
{
    size_t nn = (size_t)n * (size_t)n;
    uint64_t *ref = malloc(nn * sizeof(uint64_t)), *loop = malloc(nn * sizeof(uint64_t));
    cp_traffic_t t;
    int good = cp_traffic_init(&t, op, imb, n, count, root) == 0;
    int spread = imb->kind == CP_IMB_SPREAD && op == COLLPROF_OP_ALLTOALLV;
    old_op_matrix(op, imb, n, count, root, ref, 1);
    if (spread) { /* the others' matrices do not depend on it */
        old_op_matrix(op, imb, n, count, root, loop, 0);
    }
    uint64_t most_ref = 0, most_view = 0;
    for (int s = 0; good && s < n; s++) {
        uint64_t row = 0, col = 0;
        for (int d = 0; d < n; d++) {
            good &= cp_traffic_cell(&t, s, d) == ref[(size_t)s * n + d];
            ty->loop_cells += spread && ref[(size_t)s * n + d] != loop[(size_t)s * n + d];
            row += ref[(size_t)s * n + d];
            col += ref[(size_t)d * n + s];
        }
        most_ref = row > most_ref ? row : most_ref;
        most_ref = col > most_ref ? col : most_ref;
        if (n > 64 && s > 1 && s != n / 2 && s != n - 1) {
            continue; /* four ranks' views at 257 ranks */
        }
        cp_a2av_t a;
        good &=
            cp_a2av_build(&a, op, imb, n, count, root, s) == 0 && view_ok(&a, op, ref, n, s, root);
        uint64_t m = a.send_total > a.recv_total ? a.send_total : a.recv_total;
        most_view = m > most_view ? m : most_view;
        cp_a2av_free(&a);
    }
    good &= n > 64 || most_ref == most_view;
    cp_traffic_free(&t);
    ty->cases++;
    if (!good && ty->bad++ == 0) {
        snprintf(ty->first, sizeof(ty->first), " (first: %s %s n=%d count=%llu root=%d)",
                 collprof_op_name(op), imb->label, n, (unsigned long long)count, root);
    }
    free(ref);
    free(loop);
}

/* A file's matrix of n x n weights (a fixed pseudo-random one with zeros, or a symmetric one). */
static void file_imb(cp_imbalance_t *imb, int n, int symmetric, double *w)
{
    unsigned x = 12345u + (unsigned)n;
    for (int s = 0; s < n; s++) {
        for (int d = 0; d < n; d++) {
            x = x * 1103515245u + 12345u;
            double v = (double)((x >> 16) % 10) * 0.75;
            w[(size_t)s * n + d] = symmetric && d < s ? w[(size_t)d * n + s] : v;
        }
    }
    w[0] += 1; /* never all zero */
    *imb = (cp_imbalance_t){.kind = CP_IMB_FILE, .file_n = n, .weights = w};
    for (size_t i = 0; i < (size_t)n * (size_t)n; i++) {
        imb->file_total += w[i];
    }
    snprintf(imb->label, sizeof(imb->label), "file:%s", symmetric ? "symmetric" : "random");
}

static void compare_ops(const cp_imbalance_t *imb, int n, tally_t *ty)
{
    const uint64_t counts[] = {
        0, 1, 2, (uint64_t)n - 1, (uint64_t)n + 1, 1000, 4097, 3000000007ull};
    const collprof_op_t ops[] = {COLLPROF_OP_ALLTOALLV, COLLPROF_OP_ALLGATHERV, COLLPROF_OP_GATHERV,
                                 COLLPROF_OP_SCATTERV};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        if (n > 64 && k % 2 == 1) {
            continue; /* fewer counts at 257 ranks */
        }
        for (size_t o = 0; o < 4; o++) {
            int roots[] = {0, n / 2, n - 1};
            int nroots = ops[o] == COLLPROF_OP_GATHERV || ops[o] == COLLPROF_OP_SCATTERV ? 3 : 1;
            for (int r = 0; r < nroots; r++) {
                compare_case(ops[o], imb, n, counts[k], roots[r], ty);
            }
        }
    }
}

static void compare_tests(void)
{
    static const int ns[] = {1, 2, 3, 4, 5, 7, 8, 16, 64, 257};
    static const char *const specs[] = {"uniform",    "linear",     "spread:0", "spread:0.25",
                                        "spread:0.5", "spread:0.7", "spread:1", "moe:1:4",
                                        "moe:2:2.5",  "moe:3:1.1"};
    tally_t gen = {0}, spread = {0}, file = {0};
    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
        int n = ns[k];
        for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
            cp_imbalance_t imb;
            char err[256];
            if (cp_imbalance_parse(specs[i], &imb, err, sizeof(err)) != 0 ||
                cp_imbalance_validate(&imb, n, err, sizeof(err)) != 0) {
                continue; /* more hot ranks than ranks */
            }
            compare_ops(&imb, n, imb.kind == CP_IMB_SPREAD ? &spread : &gen);
        }
        double *w = malloc(sizeof(double) * (size_t)n * (size_t)n);
        for (int sym = 0; sym < 2; sym++) {
            cp_imbalance_t imb;
            file_imb(&imb, n, sym, w);
            compare_ops(&imb, n, &file);
        }
        free(w);
    }
    ok(gen.bad == 0 && gen.loop_cells == 0,
       "uniform, linear, moe: every cell, view and heaviest rank as the n x n matrix: %ld/%ld "
       "cases%s",
       gen.cases - gen.bad, gen.cases, gen.first);
    ok(file.bad == 0 && file.loop_cells == 0,
       "file (random, symmetric): every cell, view and heaviest rank as the matrix: %ld/%ld%s",
       file.cases - file.bad, file.cases, file.first);
    ok(spread.bad == 0,
       "spread: every cell, view and heaviest rank as the matrix with row sum n: %ld/%ld%s "
       "(%ld cells differ from the old per-row loop sum)",
       spread.cases - spread.bad, spread.cases, spread.first, spread.loop_cells);
}

/* Bytes the allocator hands out now (0 where unknown). */
static size_t heap_bytes(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#else
    return 0;
#endif
}

/* 65,536 ranks: each view is O(n) bytes (the n x n matrix was 8 x n^2 = 32 GiB per rank). */
static void scale_tests(void)
{
    const int n = 65536;
    const collprof_op_t ops[] = {COLLPROF_OP_ALLTOALLV, COLLPROF_OP_ALLGATHERV, COLLPROF_OP_GATHERV,
                                 COLLPROF_OP_SCATTERV};
    static const char *const specs[] = {"uniform", "linear", "spread:0.5", "moe:2:4"};
    int good = 1;
    size_t most = 0;
    for (size_t i = 0; i < 4; i++) {
        cp_imbalance_t imb;
        char err[256];
        cp_imbalance_parse(specs[i], &imb, err, sizeof(err));
        for (size_t o = 0; o < 4; o++) {
            cp_a2av_t a;
            size_t before = heap_bytes();
            good &= cp_a2av_build(&a, ops[o], &imb, n, 1u << 20, n - 1, n / 2) == 0;
            size_t held = heap_bytes() - before;
            most = held > most ? held : most;
            good &= ops[o] != COLLPROF_OP_ALLTOALLV || a.send_total == 1u << 20;
            cp_a2av_free(&a);
        }
    }
    ok(good && most <= 6 * sizeof(size_t) * (size_t)n + 65536,
       "a view at 65,536 ranks, every op and kind: %zu bytes held at most (6 x 8 x n = %zu)", most,
       6 * sizeof(size_t) * (size_t)n);
    ok(sizeof(cp_a2av_t) < 128, "cp_a2av_t has no n x n member (%zu bytes)", sizeof(cp_a2av_t));
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

    cp_a2av_t a, hot;
    cp_imbalance_t moe = {.kind = CP_IMB_MOE, .hot = 1, .bias = 4}, uni = {.kind = CP_IMB_UNIFORM};
    ok(cp_a2av_build(&a, COLLPROF_OP_ALLTOALLV, &moe, 4, 700, 0, 2) == 0 &&
           cp_a2av_build(&hot, COLLPROF_OP_ALLTOALLV, &moe, 4, 700, 0, 0) == 0 &&
           a.sendcounts[0] == 400 && a.sdispls[1] == 400 && a.recvcounts[0] == 100 &&
           a.rdispls[3] == 300 && a.send_total == 700 && a.recv_total == 400 &&
           hot.recv_total == 1600 && !a.symmetric && !hot.symmetric && a.stride == 700 &&
           a.bcounts == NULL,
       "rank view: counts, displacements, the hot rank's column, stride");
    cp_a2av_free(&a);
    cp_a2av_free(&hot);
    ok(cp_a2av_build(&a, COLLPROF_OP_ALLTOALLV, &uni, 4, 100, 0, 0) == 0 && a.symmetric,
       "uniform is symmetric");
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
    op_matrix(COLLPROF_OP_ALLTOALLV, &imb, 2, 100, 0, m);
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
    compare_tests();
    scale_tests();
    return tap_done();
}
