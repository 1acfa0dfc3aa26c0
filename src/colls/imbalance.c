#include "config.h"

#include "colls/imbalance.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        return -1;
    }
    *out = v;
    return 0;
}

/* A growing array of weights. */
typedef struct weights {
    double *w;
    size_t n, cap;
} weights_t;

/* Append one line's weights; returns how many, or -1 with err set. */
static int parse_row(char *line, weights_t *ws, const char *path, int lineno, char *err,
                     size_t errlen)
{
    int c = 0;
    for (char *tok = strtok(line, " \t\r\n,"); tok != NULL; tok = strtok(NULL, " \t\r\n,")) {
        double v;
        if (parse_double(tok, 0.0, 1e18, &v) != 0) {
            snprintf(err, errlen, "%s:%d: '%s' is not a non-negative number", path, lineno, tok);
            return -1;
        }
        if (ws->n == ws->cap) {
            size_t cap = ws->cap ? ws->cap * 2 : 64;
            double *grown = realloc(ws->w, cap * sizeof(double));
            if (grown == NULL) {
                snprintf(err, errlen, "out of memory reading '%s'", path);
                return -1;
            }
            ws->w = grown;
            ws->cap = cap;
        }
        ws->w[ws->n++] = v;
        c++;
    }
    return c;
}

/* The whole matrix read: square, and not all zero. */
static int check_matrix(const weights_t *ws, int rows, int cols, const char *path, double *sum,
                        char *err, size_t errlen)
{
    if (rows == 0) {
        snprintf(err, errlen, "%s: no rows (expected an n x n matrix of weights)", path);
        return -1;
    }
    if (rows != cols) {
        snprintf(err, errlen, "%s: matrix is %d x %d; it must be square (one row per rank)", path,
                 rows, cols);
        return -1;
    }
    double total = 0;
    for (size_t i = 0; i < ws->n; i++) {
        total += ws->w[i];
    }
    if (total <= 0) {
        snprintf(err, errlen, "%s: all weights are zero", path);
        return -1;
    }
    *sum = total;
    return 0;
}

/*
 * Traffic-matrix file: '#' starts a comment, blank lines are ignored, and
 * every other line is one source rank's row of non-negative weights
 * separated by spaces, tabs or commas.  It must be square.
 */
static int load_file(const char *path, cp_imbalance_t *imb, char *err, size_t errlen)
{
    FILE *f = cp_fopen_regular(path, "traffic matrix", err, errlen);
    if (f == NULL) {
        return -1;
    }
    weights_t ws = {NULL, 0, 0};
    int rows = 0, cols = -1, lineno = 0, rc = -1, got;
    char line[65536];
    while ((got = cp_read_line(f, line, sizeof(line), &lineno)) != 0) {
        if (got < 0) {
            snprintf(err, errlen, "%s:%d: line too long", path, lineno);
            goto out;
        }
        int c = parse_row(line, &ws, path, lineno, err, errlen);
        if (c < 0) {
            goto out;
        }
        if (c == 0) {
            continue;
        }
        if (cols >= 0 && c != cols) {
            snprintf(err, errlen, "%s:%d: row has %d entries, earlier rows have %d", path, lineno,
                     c, cols);
            goto out;
        }
        cols = c;
        if (++rows > 65536 || (double)rows * cols > (double)(1 << 24)) {
            snprintf(err, errlen, "%s: more than 65536 rows or 16,777,216 entries", path);
            goto out;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read traffic matrix '%s': %s", path, strerror(errno));
        goto out;
    }
    if (check_matrix(&ws, rows, cols, path, &imb->file_total, err, errlen) != 0) {
        goto out;
    }
    imb->weights = ws.w;
    imb->file_n = rows;
    ws.w = NULL;
    rc = 0;
out:
    free(ws.w);
    fclose(f);
    return rc;
}

int cp_imbalance_parse(const char *spec, cp_imbalance_t *out, char *err, size_t errlen)
{
    cp_imbalance_t imb = {.kind = CP_IMB_UNIFORM, .hot = 1, .bias = 4.0};
    const char *colon = strchr(spec, ':');
    size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *arg = colon ? colon + 1 : NULL;
    if (klen == 7 && !strncmp(spec, "uniform", 7) && arg == NULL) {
        imb.kind = CP_IMB_UNIFORM;
        snprintf(imb.label, sizeof(imb.label), "uniform");
    } else if (klen == 6 && !strncmp(spec, "linear", 6) && arg == NULL) {
        imb.kind = CP_IMB_LINEAR;
        snprintf(imb.label, sizeof(imb.label), "linear");
    } else if (klen == 6 && !strncmp(spec, "spread", 6)) {
        imb.kind = CP_IMB_SPREAD;
        if (arg == NULL || parse_double(arg, 0.0, 1.0, &imb.spread) != 0) {
            snprintf(err, errlen, "imbalance '%s': spread needs a value in 0..1 (spread:0.5)",
                     spec);
            return -1;
        }
        snprintf(imb.label, sizeof(imb.label), "spread:%g", imb.spread);
    } else if (klen == 3 && !strncmp(spec, "moe", 3)) {
        imb.kind = CP_IMB_MOE;
        if (arg != NULL) {
            char buf[64];
            snprintf(buf, sizeof(buf), "%s", arg);
            char *b = strchr(buf, ':');
            if (b != NULL) {
                *b++ = '\0';
            }
            char *end = NULL;
            long hot = strtol(buf, &end, 10);
            if (*buf == '\0' || *end != '\0' || hot < 1 || hot > 1000000 ||
                (b != NULL && parse_double(b, 1.0, 1e6, &imb.bias) != 0)) {
                snprintf(
                    err, errlen,
                    "imbalance '%s': use moe[:HOT[:BIAS]] with HOT >= 1 hot ranks and BIAS >= 1",
                    spec);
                return -1;
            }
            imb.hot = (int)hot;
        }
        snprintf(imb.label, sizeof(imb.label), "moe:%d:%g", imb.hot, imb.bias);
    } else if (klen == 4 && !strncmp(spec, "file", 4)) {
        imb.kind = CP_IMB_FILE;
        if (arg == NULL || *arg == '\0') {
            snprintf(err, errlen, "imbalance '%s': use file:PATH", spec);
            return -1;
        }
        if (load_file(arg, &imb, err, errlen) != 0) {
            return -1;
        }
        const char *base = strrchr(arg, '/');
        snprintf(imb.label, sizeof(imb.label), "file:%.80s", base ? base + 1 : arg);
    } else {
        snprintf(err, errlen,
                 "unknown imbalance '%s' (use uniform, linear, spread:S, moe[:HOT[:BIAS]] or "
                 "file:PATH)",
                 spec);
        return -1;
    }
    *out = imb;
    return 0;
}

void cp_imbalance_free(cp_imbalance_t *imb)
{
    free(imb->weights);
    imb->weights = NULL;
}

int cp_imbalance_validate(const cp_imbalance_t *imb, int n, char *err, size_t errlen)
{
    if (imb->kind == CP_IMB_FILE && imb->file_n != n) {
        snprintf(err, errlen, "traffic matrix %s is %d x %d but the job has %d ranks", imb->label,
                 imb->file_n, imb->file_n, n);
        return -1;
    }
    if (imb->kind == CP_IMB_MOE && imb->hot > n) {
        snprintf(err, errlen, "imbalance %s names %d hot ranks but the job has %d ranks",
                 imb->label, imb->hot, n);
        return -1;
    }
    return 0;
}

static double weight(const cp_imbalance_t *imb, int n, int s, int d)
{
    switch (imb->kind) {
    case CP_IMB_LINEAR: return 1.0 + (double)((s + d) % n);
    case CP_IMB_SPREAD: {
        /* distance 0 (self) .. n-1; the mean weight over a row is 1 */
        double dist = (double)((d - s + n) % n);
        return n > 1 ? 1.0 - imb->spread + imb->spread * 2.0 * dist / (double)(n - 1) : 1.0;
    }
    case CP_IMB_MOE: return d < imb->hot ? imb->bias : 1.0;
    case CP_IMB_FILE: return imb->weights[(size_t)s * (size_t)n + (size_t)d];
    case CP_IMB_UNIFORM:
    default: return 1.0;
    }
}

static double rank_weight(const cp_imbalance_t *imb, int n, int r)
{
    switch (imb->kind) {
    case CP_IMB_LINEAR: return 1.0 + (double)r;
    case CP_IMB_SPREAD:
        return n > 1 ? 1.0 - imb->spread + imb->spread * 2.0 * (double)r / (double)(n - 1) : 1.0;
    case CP_IMB_MOE: return r < imb->hot ? imb->bias : 1.0;
    case CP_IMB_FILE: {
        double row = 0;
        for (int d = 0; d < n; d++) {
            row += imb->weights[(size_t)r * (size_t)n + (size_t)d];
        }
        return row;
    }
    case CP_IMB_UNIFORM:
    default: return 1.0;
    }
}

void cp_imbalance_counts(const cp_imbalance_t *imb, int n, uint64_t count, uint64_t *counts)
{
    double total = 0;
    for (int r = 0; r < n; r++) {
        total += rank_weight(imb, n, r);
    }
    uint64_t given = 0;
    for (int r = 0; r < n; r++) {
        double w = rank_weight(imb, n, r);
        counts[r] = total > 0 ? (uint64_t)floor((double)count * w / total) : 0;
        counts[r] = counts[r] > count - given ? count - given : counts[r];
        given += counts[r];
    }
    /* the leftovers (fewer than n, barring rounding) one each to the weighted ranks */
    while (given < count && total > 0) {
        for (int r = 0; r < n && given < count; r++) {
            if (rank_weight(imb, n, r) > 0) {
                counts[r]++;
                given++;
            }
        }
    }
}

/* The generated kinds' row weight sum, the same for every row: every row holds the same
 * weights (linear's a permutation of 1..n, spread's one per distance, moe's by destination).
 * Uniform's and linear's are exact integers and moe's row 0's loop is every row's; spread's is
 * n, the exact sum of its weights (a loop's rounding would depend on the row). */
static double row_sum(const cp_imbalance_t *imb, int n)
{
    if (imb->kind == CP_IMB_SPREAD) {
        return (double)n;
    }
    double sum = 0;
    for (int d = 0; d < n; d++) {
        sum += weight(imb, n, 0, d);
    }
    return sum;
}

/* alltoallv, generated kinds: rank s's share for d before the leftover. */
static uint64_t share(const cp_traffic_t *t, int s, int d)
{
    return (uint64_t)floor((double)t->count * weight(t->imb, t->n, s, d) / t->rowsum);
}

static int init_alltoallv(cp_traffic_t *t)
{
    if (t->imb->kind == CP_IMB_FILE) {
        return COLLPROF_OK; /* the weights and their sum, from the file */
    }
    t->rowsum = row_sum(t->imb, t->n);
    uint64_t given = 0; /* the same for every row: the same weights */
    for (int d = 0; d < t->n; d++) {
        given += share(t, 0, d);
    }
    t->left = t->count > given ? t->count - given : 0;
    return COLLPROF_OK;
}

int cp_traffic_init(cp_traffic_t *t, collprof_op_t op, const cp_imbalance_t *imb, int n,
                    uint64_t count, int root)
{
    *t = (cp_traffic_t){.op = op, .imb = imb, .n = n, .root = root, .count = count};
    if (n < 1 || imb == NULL || (imb->kind == CP_IMB_FILE && imb->file_n != n)) {
        return COLLPROF_ERR_INVALID;
    }
    if (op == COLLPROF_OP_ALLTOALLV) {
        return init_alltoallv(t);
    }
    if (op != COLLPROF_OP_ALLGATHERV && op != COLLPROF_OP_GATHERV && op != COLLPROF_OP_SCATTERV) {
        return COLLPROF_ERR_INVALID;
    }
    if (op != COLLPROF_OP_ALLGATHERV && (root < 0 || root >= n)) {
        return COLLPROF_ERR_INVALID;
    }
    t->counts = calloc((size_t)n, sizeof(uint64_t));
    if (t->counts == NULL) {
        return COLLPROF_ERR_NO_MEMORY;
    }
    cp_imbalance_counts(imb, n, count, t->counts);
    return COLLPROF_OK;
}

uint64_t cp_traffic_cell(const cp_traffic_t *t, int s, int d)
{
    switch (t->op) {
    case COLLPROF_OP_ALLTOALLV:
        if (t->imb->kind == CP_IMB_FILE) {
            /* the whole matrix scaled so that the average row sends count elements */
            double w = t->imb->weights[(size_t)s * (size_t)t->n + (size_t)d];
            return (uint64_t)floor(w * (double)t->count * (double)t->n / t->imb->file_total);
        }
        return share(t, s, d) + (s == d ? t->left : 0);
    case COLLPROF_OP_ALLGATHERV: return t->counts[s];
    case COLLPROF_OP_GATHERV: return d == t->root ? t->counts[s] : 0;
    case COLLPROF_OP_SCATTERV: return s == t->root ? t->counts[d] : 0;
    default: return 0;
    }
}

/* The file kind: every pair, the weights first (equal weights give equal cells); stops at the
 * first asymmetric pair. */
static int file_symmetric(const cp_traffic_t *t)
{
    size_t n = (size_t)t->n;
    for (size_t s = 0; s < n; s++) {
        for (size_t d = s + 1; d < n; d++) {
            if (t->imb->weights[s * n + d] != t->imb->weights[d * n + s] &&
                cp_traffic_cell(t, (int)s, (int)d) != cp_traffic_cell(t, (int)d, (int)s)) {
                return 0;
            }
        }
    }
    return 1;
}

/* Every v-op's count rule: allgatherv's rows are constant (symmetric when every count is
 * the same); gatherv's and scatterv's traffic is one column or row (symmetric when no other
 * rank has a block). */
static int counts_symmetric(const cp_traffic_t *t)
{
    for (int r = 0; r < t->n; r++) {
        if (t->op == COLLPROF_OP_ALLGATHERV ? t->counts[r] != t->counts[0]
                                            : r != t->root && t->counts[r] != 0) {
            return 0;
        }
    }
    return 1;
}

int cp_traffic_symmetric(const cp_traffic_t *t)
{
    if (t->op != COLLPROF_OP_ALLTOALLV) {
        return counts_symmetric(t);
    }
    if (t->imb->kind == CP_IMB_FILE) {
        return file_symmetric(t);
    }
    /* generated: an off-diagonal cell depends on (s, d) through d (moe), (s + d) mod n
     * (linear), (d - s) mod n (spread) or nothing (uniform), so row 0 against column 0 covers
     * every pair */
    for (int k = 1; k < t->n; k++) {
        if (cp_traffic_cell(t, 0, k) != cp_traffic_cell(t, k, 0)) {
            return 0;
        }
    }
    return 1;
}

void cp_traffic_free(cp_traffic_t *t)
{
    free(t->counts);
    t->counts = NULL;
}

/* gatherv, scatterv: every rank's block (the root's column or row) and its displacement. */
static void view_blocks(cp_a2av_t *a, const cp_traffic_t *t)
{
    size_t at = 0;
    for (int q = 0; q < t->n; q++) {
        a->bcounts[q] = t->counts[q];
        a->bdispls[q] = at;
        at += a->bcounts[q];
    }
}

/* This rank's row and column, and alltoallv's block stride. */
static void view_row_column(cp_a2av_t *a, const cp_traffic_t *t, int rank)
{
    for (int p = 0; p < t->n; p++) {
        a->sendcounts[p] = cp_traffic_cell(t, rank, p);
        a->recvcounts[p] = cp_traffic_cell(t, p, rank);
        a->sdispls[p] = a->send_total;
        a->rdispls[p] = a->recv_total;
        a->send_total += a->sendcounts[p];
        a->recv_total += a->recvcounts[p];
    }
    /* a generated row sends count in all; a file's cell is at most count x n */
    a->stride = t->imb->kind == CP_IMB_FILE ? t->count * (uint64_t)t->n : t->count;
}

int cp_a2av_build(cp_a2av_t *a, collprof_op_t op, const cp_imbalance_t *imb, int n, uint64_t count,
                  int root, int rank)
{
    cp_traffic_t t;
    memset(a, 0, sizeof(*a));
    int rc = cp_traffic_init(&t, op, imb, n, count, root);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    size_t nn = (size_t)n;
    int blocks = op == COLLPROF_OP_GATHERV || op == COLLPROF_OP_SCATTERV;
    a->n = n;
    a->sendcounts = calloc(nn, sizeof(size_t));
    a->sdispls = calloc(nn, sizeof(size_t));
    a->recvcounts = calloc(nn, sizeof(size_t));
    a->rdispls = calloc(nn, sizeof(size_t));
    a->bcounts = blocks ? calloc(nn, sizeof(size_t)) : NULL;
    a->bdispls = blocks ? calloc(nn, sizeof(size_t)) : NULL;
    if (!a->sendcounts || !a->sdispls || !a->recvcounts || !a->rdispls ||
        (blocks && (!a->bcounts || !a->bdispls))) {
        cp_traffic_free(&t);
        cp_a2av_free(a);
        return COLLPROF_ERR_NO_MEMORY;
    }
    view_row_column(a, &t, rank);
    if (blocks) {
        view_blocks(a, &t);
    }
    a->symmetric = cp_traffic_symmetric(&t);
    cp_traffic_free(&t);
    return COLLPROF_OK;
}

void cp_a2av_free(cp_a2av_t *a)
{
    free(a->sendcounts);
    free(a->sdispls);
    free(a->recvcounts);
    free(a->rdispls);
    free(a->bcounts);
    free(a->bdispls);
    memset(a, 0, sizeof(*a));
}
