#include "config.h"

#include "core/imbalance.h"
#include "core/util.h"

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
static int check_matrix(const weights_t *ws, int rows, int cols, const char *path, char *err,
                        size_t errlen)
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
    if (check_matrix(&ws, rows, cols, path, err, errlen) != 0) {
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

void cp_imbalance_matrix(const cp_imbalance_t *imb, int n, uint64_t count, uint64_t *matrix)
{
    if (imb->kind == CP_IMB_FILE) {
        /* scale the whole matrix so that the average row sends count elements */
        double total = 0;
        for (size_t i = 0; i < (size_t)n * (size_t)n; i++) {
            total += imb->weights[i];
        }
        for (size_t i = 0; i < (size_t)n * (size_t)n; i++) {
            matrix[i] = (uint64_t)floor(imb->weights[i] * (double)count * (double)n / total);
        }
        return;
    }
    /* generated: each row sends exactly count; rounding leftovers stay with self */
    for (int s = 0; s < n; s++) {
        double rowsum = 0;
        for (int d = 0; d < n; d++) {
            rowsum += weight(imb, n, s, d);
        }
        uint64_t given = 0;
        for (int d = 0; d < n; d++) {
            uint64_t c = (uint64_t)floor((double)count * weight(imb, n, s, d) / rowsum);
            matrix[(size_t)s * (size_t)n + (size_t)d] = c;
            given += c;
        }
        matrix[(size_t)s * (size_t)n + (size_t)s] += count > given ? count - given : 0;
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

/* scatterv: the root sends rank d its count, row root = counts (in row 0 on entry) */
static void scatterv_matrix(int n, int root, uint64_t *matrix)
{
    size_t nn = (size_t)n;
    if (root != 0) {
        memcpy(matrix + (size_t)root * nn, matrix, nn * sizeof(uint64_t));
    }
    for (int s = 0; s < n; s++) {
        if (s != root) {
            memset(matrix + (size_t)s * nn, 0, nn * sizeof(uint64_t));
        }
    }
}

int cp_imbalance_op_matrix(collprof_op_t op, const cp_imbalance_t *imb, int n, uint64_t count,
                           int root, uint64_t *matrix)
{
    if (op == COLLPROF_OP_ALLTOALLV) {
        cp_imbalance_matrix(imb, n, count, matrix);
        return 0;
    }
    if (op != COLLPROF_OP_ALLGATHERV && op != COLLPROF_OP_GATHERV && op != COLLPROF_OP_SCATTERV) {
        return -1;
    }
    if (op != COLLPROF_OP_ALLGATHERV && (root < 0 || root >= n)) {
        return -1;
    }
    /* row 0 of the matrix is a scratch for the counts until it is filled */
    cp_imbalance_counts(imb, n, count, matrix);
    if (op == COLLPROF_OP_SCATTERV) {
        scatterv_matrix(n, root, matrix);
        return 0;
    }
    /* from the last row up, so that count s is read before row s is written */
    for (int s = n - 1; s >= 0; s--) {
        uint64_t c = matrix[s];
        for (int d = 0; d < n; d++) {
            int gets = op == COLLPROF_OP_ALLGATHERV || d == root;
            matrix[(size_t)s * (size_t)n + (size_t)d] = gets ? c : 0;
        }
    }
    return 0;
}

int cp_a2av_blocks(cp_a2av_t *a, collprof_op_t op, int root)
{
    size_t n = (size_t)a->n, at = 0;
    if (op != COLLPROF_OP_GATHERV && op != COLLPROF_OP_SCATTERV) {
        return 0;
    }
    a->bcounts = calloc(n, sizeof(size_t));
    a->bdispls = calloc(n, sizeof(size_t));
    if (a->bcounts == NULL || a->bdispls == NULL) {
        return -1;
    }
    for (size_t q = 0; q < n; q++) {
        /* gatherv: rank q's count in the root's column; scatterv: in the root's row */
        a->bcounts[q] = op == COLLPROF_OP_GATHERV ? a->matrix[q * n + (size_t)root]
                                                  : a->matrix[(size_t)root * n + q];
        a->bdispls[q] = at;
        at += a->bcounts[q];
    }
    return 0;
}

int cp_a2av_build(cp_a2av_t *a, uint64_t *matrix, int n, int rank)
{
    memset(a, 0, sizeof(*a));
    a->n = n;
    a->matrix = matrix;
    a->sendcounts = calloc((size_t)n, sizeof(size_t));
    a->sdispls = calloc((size_t)n, sizeof(size_t));
    a->recvcounts = calloc((size_t)n, sizeof(size_t));
    a->rdispls = calloc((size_t)n, sizeof(size_t));
    a->sbase = calloc((size_t)n, sizeof(uint64_t));
    if (!a->sendcounts || !a->sdispls || !a->recvcounts || !a->rdispls || !a->sbase) {
        cp_a2av_free(a);
        return -1;
    }
    for (int p = 0; p < n; p++) {
        a->sendcounts[p] = matrix[(size_t)rank * (size_t)n + (size_t)p];
        a->recvcounts[p] = matrix[(size_t)p * (size_t)n + (size_t)rank];
        a->sdispls[p] = a->send_total;
        a->rdispls[p] = a->recv_total;
        a->send_total += a->sendcounts[p];
        a->recv_total += a->recvcounts[p];
    }
    a->symmetric = 1;
    for (int s = 0; s < n; s++) {
        uint64_t row = 0, col = 0;
        for (int d = 0; d < n; d++) {
            if (d == rank) {
                a->sbase[s] = row; /* s's elements before the ones it sends here */
            }
            row += matrix[(size_t)s * (size_t)n + (size_t)d];
            col += matrix[(size_t)d * (size_t)n + (size_t)s];
            if (matrix[(size_t)s * (size_t)n + (size_t)d] !=
                matrix[(size_t)d * (size_t)n + (size_t)s]) {
                a->symmetric = 0;
            }
        }
        uint64_t m = row > col ? row : col;
        a->max_rank_elems = m > a->max_rank_elems ? m : a->max_rank_elems;
    }
    return 0;
}

void cp_a2av_free(cp_a2av_t *a)
{
    free(a->matrix);
    free(a->sendcounts);
    free(a->sdispls);
    free(a->recvcounts);
    free(a->rdispls);
    free(a->sbase);
    free(a->bcounts);
    free(a->bdispls);
    memset(a, 0, sizeof(*a));
}
