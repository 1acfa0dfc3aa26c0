/*
 * What the format readers of `collprof-report import` share (import.h): the
 * error line, the rows and ranks they add, the figures every row gets.
 * Apart from the command (cmd_import.c) and the writer (import_write.c), so
 * that tests/fuzz/fuzz_import.c runs the readers without HDF5.
 */
#include "config.h"

#include "report/import/import.h"

#include <collprof/vocab.h>

#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp_import_fail(cp_import_t *im, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (line > 0) {
        snprintf(im->err, sizeof(im->err), "import: %s:%d: %s", im->shown, line, msg);
    } else {
        snprintf(im->err, sizeof(im->err), "import: %s: %s", im->shown, msg);
    }
    return -1;
}

collprof_result_row_t *cp_import_row(cp_import_t *im, int line)
{
    if (im->nrows >= CP_IMPORT_MAX_ROWS) {
        cp_import_fail(im, line, "more than %d results", CP_IMPORT_MAX_ROWS);
        return NULL;
    }
    if (im->nrows == im->cap) {
        size_t cap = im->cap ? im->cap * 2 : 64; /* im->cap <= 2 x CP_IMPORT_MAX_ROWS */
        collprof_result_row_t *g =
            cap <= SIZE_MAX / sizeof(*g) ? realloc(im->rows, cap * sizeof(*g)) : NULL;
        if (g == NULL) {
            cp_import_fail(im, line, "out of memory");
            return NULL;
        }
        im->rows = g;
        im->cap = cap;
    }
    collprof_result_row_t *r = &im->rows[im->nrows];
    memset(r, 0, sizeof(*r));
    r->cell = (int32_t)im->nrows++;
    snprintf(r->backend, sizeof(r->backend), "%s", im->backend_name);
    snprintf(r->variant, sizeof(r->variant), "%s", im->variant ? im->variant : "default");
    snprintf(r->redop, sizeof(r->redop), "none");
    snprintf(r->sync, sizeof(r->sync), "%s", "");
    r->warmup = im->warmup;
    return r;
}

int cp_import_op(const char *name)
{
    /* lower case, without '_', '-' and spaces: "All-to-All" is "alltoall" */
    char k[32];
    size_t n = 0;
    for (const char *p = name; *p != '\0' && n + 1 < sizeof(k); p++) {
        if (*p != '_' && *p != '-' && *p != ' ') {
            k[n++] = (char)tolower((unsigned char)*p);
        }
    }
    k[n] = '\0';
    static const char *const alias[][2] = {
        {"bcast", "broadcast"},
        {"alltoallpersonalizedexchange", "alltoall"},
        {"alltoallvpersonalizedexchange", "alltoallv"},
        {"reducescatterblock", "reducescatter"},
    };
    for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++) {
        if (!strcmp(k, alias[i][0])) {
            snprintf(k, sizeof(k), "%s", alias[i][1]);
        }
    }
    int op = collprof_op_from_name(k);
    /* the non-blocking ops measure something else (post + compute + wait) */
    const collprof_op_info_t *info = collprof_op_info(op);
    return info != NULL && !(info->flags & COLLPROF_OPF_NONBLOCKING) ? op : -1;
}

/* a and b agree within what printing either with two decimals (or 3 digits) loses */
static int agrees(double file, double ours)
{
    return fabs(file - ours) <= 0.011 + 0.02 * fabs(ours);
}

int cp_import_finish(cp_import_t *im, collprof_result_row_t *r, int line, double algbw,
                     double busbw)
{
    double t = r->time_mean_us;
    if (!(t > 0)) {
        return cp_import_fail(im, line, "time %g us is not a positive duration", t);
    }
    if (t > 1e12 || r->bytes > (UINT64_C(1) << 50)) {
        return cp_import_fail(im, line, "time or size out of range");
    }
    r->algbw_gbs = (double)r->bytes / t * 1e-3;
    int op = collprof_op_from_name(r->op);
    r->busbw_gbs = im->nranks > 0 ? r->algbw_gbs * collprof_busbw_factor(op, im->nranks) : 0;
    if (algbw >= 0 && !agrees(algbw, r->algbw_gbs)) {
        return cp_import_fail(im, line, "algbw %g GB/s is not size / time (%.3g GB/s)", algbw,
                              r->algbw_gbs);
    }
    if (busbw >= 0 && im->nranks > 0 && !agrees(busbw, r->busbw_gbs)) {
        return cp_import_fail(im, line,
                              "busbw %g GB/s is not collprof's (%.3g GB/s for %s on %d ranks)",
                              busbw, r->busbw_gbs, r->op, im->nranks);
    }
    snprintf(r->status, sizeof(r->status), "%s", r->wrong > 0 ? "wrong" : "ok");
    r->repeats = r->iterations > 0 ? 1 : 0; /* 0: iterations not recorded (OSU without -f) */
    return 0;
}

/* Room for rank n and for a new node: 0, or -1 after the error. */
static int rank_room(cp_import_t *im, int line, int n)
{
    if ((n & (n - 1)) == 0) { /* room doubles at each power of two */
        size_t cap = n ? 2 * (size_t)n : 1;
        collprof_rank_row_t *g =
            cap <= SIZE_MAX / sizeof(*g) ? realloc(im->rank_rows, sizeof(*g) * cap) : NULL;
        int *k = cap <= SIZE_MAX / sizeof(*k) ? realloc(im->node_ranks, sizeof(*k) * cap) : NULL;
        im->rank_rows = g != NULL ? g : im->rank_rows;
        im->node_ranks = k != NULL ? k : im->node_ranks;
        if (g == NULL || k == NULL) {
            return cp_import_fail(im, line, "out of memory");
        }
    }
    return 0;
}

int cp_import_rank(cp_import_t *im, int line, const char *host, long pid, const char *device)
{
    if (im->nrank_rows >= CP_IMPORT_MAX_RANKS) {
        return cp_import_fail(im, line, "more than %d ranks", CP_IMPORT_MAX_RANKS);
    }
    int n = im->nrank_rows, added;
    if (rank_room(im, line, n) != 0) {
        return -1;
    }
    collprof_rank_row_t *r = &im->rank_rows[n];
    memset(r, 0, sizeof(*r));
    r->rank = n;
    snprintf(r->hostname, sizeof(r->hostname), "%s", host);
    snprintf(r->device, sizeof(r->device), "%s", device);
    r->pid = pid;
    /* the node by host name in O(1) (nodes <= ranks: node_ranks has the room) */
    long id = cp_strset_put(&im->hosts, r->hostname, strlen(r->hostname), &added);
    if (id < 0) {
        return cp_import_fail(im, line, "out of memory");
    }
    if (added) {
        im->node_ranks[id] = 0;
        im->nnodes++;
    }
    r->node_id = (int32_t)id;
    r->local_rank = im->node_ranks[id]++;
    im->nrank_rows++;
    return 0;
}

int cp_import_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* digits only: strtod also takes "nan", "inf" and hexadecimal */
    int plain = strspn(s, "0123456789.eE+-") == strlen(s) && s[0] != '\0';
    if (!plain || *end != '\0' || errno == ERANGE || !isfinite(v) || v < 0) {
        return -1;
    }
    *out = v;
    return 0;
}

int cp_import_valid_line(const char *line)
{
    const unsigned char *p = (const unsigned char *)line;
    size_t n = strlen(line);
    while (n > 0) {
        unsigned cp;
        int k = cp_utf8_seq(p, n, &cp);
        if (k <= 0) {
            return 0;
        }
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

void cp_import_free(cp_import_t *im)
{
    free(im->rows);
    free(im->rank_rows);
    free(im->node_ranks);
    cp_strset_free(&im->hosts);
    free(im->env);
}
