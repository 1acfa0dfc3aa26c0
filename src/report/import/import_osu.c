/*
 * The OSU micro-benchmarks' collective latency tests (osu_allreduce, osu_bcast,
 * ...; OMB 7.x, also 5.x and 6.x): text only.  A test starts with its banner
 * "# OSU MPI Allreduce Latency Test v7.3", may say "# Datatype: MPI_FLOAT.",
 * then a header names the columns: "# Size", "Avg Latency(us)", with -f also
 * "Min Latency(us)", "Max Latency(us)" and "Iterations", with -c "Validation",
 * with -z one "Pnn Tail Lat(us)" per percentile.  Each row is one message size
 * (bytes): one cell.  Several tests may follow one another in one file.
 *
 * OSU's figures are not collprof's: Avg is the mean over the ranks of each
 * rank's mean latency; Min and Max the least and greatest of those means (not
 * iterations); the tail latencies are percentiles of the per-iteration
 * latency averaged over the ranks.  They go into time_mean_us, time_min_us,
 * time_max_us and time_p50_us/time_p95_us/time_p99_us (docs/hdf5-schema.md).
 */
#include "config.h"

#include "report/import/import.h"

#include <collprof/vocab.h>

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { O_SIZE, O_AVG, O_MIN, O_MAX, O_ITERS, O_VALID, O_P50, O_P95, O_P99, O_N };

typedef struct test {
    char op[16], dtype[16];
    int have_header;
    int col[O_N];
    int ncols;
} test_t;

/* "MPI_FLOAT" as collprof's element type; "" when unknown. */
static const char *mpi_type(const char *t)
{
    static const char *const map[][2] = {
        {"MPI_CHAR", "int8"},     {"MPI_SIGNED_CHAR", "int8"}, {"MPI_UNSIGNED_CHAR", "uint8"},
        {"MPI_BYTE", "uint8"},    {"MPI_INT", "int32"},        {"MPI_UNSIGNED", "uint32"},
        {"MPI_FLOAT", "float32"}, {"MPI_DOUBLE", "float64"},   {"MPI_LONG", "int64"},
        {"MPI_INT64_T", "int64"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (!strcmp(t, map[i][0])) {
            return map[i][1];
        }
    }
    return "";
}

/* "# OSU MPI Allreduce Latency Test v7.3": a new test. */
static int banner(cp_import_t *im, test_t *t, int no, const char *s)
{
    char stack[32], rest[160];
    if (sscanf(s, "# OSU %31s %159[^\n]", stack, rest) != 2) {
        return cp_import_fail(im, no, "a banner that does not read '# OSU <stack> <Op> ...'");
    }
    char *lat = strstr(rest, " Latency Test");
    if (lat == NULL) {
        return cp_import_fail(im, no,
                              "not a latency test (import reads OSU's collective "
                              "latency tests)");
    }
    *lat = '\0';
    const char *v = strstr(lat + 1, " v");
    if (v != NULL) {
        snprintf(im->version, sizeof(im->version), "%.*s", (int)strcspn(v + 2, " \r"), v + 2);
    }
    int op = cp_import_op(im->op != NULL ? im->op : rest);
    if (op < 0) {
        return cp_import_fail(im, no, "'%.60s' is not an operation collprof knows (give --op)",
                              rest);
    }
    memset(t, 0, sizeof(*t));
    snprintf(t->op, sizeof(t->op), "%s", collprof_op_name(op));
    /* without a Datatype line (before 7.1): the reductions ran on floats, the others on bytes */
    snprintf(t->dtype, sizeof(t->dtype), "%s",
             collprof_op_info(op)->flags & COLLPROF_OPF_REDUCES ? "float32" : "int8");
    snprintf(im->library, sizeof(im->library), "OSU %s stack", stack);
    return 0;
}

/* "# Size   Avg Latency(us)   Min Latency(us) ...": the columns, by their names. */
static int columns(cp_import_t *im, test_t *t, int no, const char *s)
{
    static const char *const names[O_N] = {
        "Size",       "Avg Latency(us)",  "Min Latency(us)",  "Max Latency(us)", "Iterations",
        "Validation", "P50 Tail Lat(us)", "P95 Tail Lat(us)", "P99 Tail Lat(us)"};
    memset(t->col, -1, sizeof(t->col));
    /* the names hold single spaces; columns are apart by two or more */
    int n = 0;
    for (const char *p = s + 1; *p != '\0';) {
        p += strspn(p, " \t");
        if (*p == '\0') {
            break;
        }
        const char *e = p;
        while (*e != '\0' && !(e[0] == ' ' && (e[1] == ' ' || e[1] == '\0')) && *e != '\t') {
            e++;
        }
        for (int k = 0; k < O_N; k++) {
            if (strlen(names[k]) == (size_t)(e - p) && !strncmp(p, names[k], (size_t)(e - p))) {
                t->col[k] = n;
            }
        }
        n++;
        p = e;
    }
    if (t->col[O_SIZE] != 0 || t->col[O_AVG] < 0) {
        return cp_import_fail(im, no, "a header without '# Size' and 'Avg Latency(us)'");
    }
    t->ncols = n;
    t->have_header = 1;
    return 0;
}

/* A row of numbers (Validation: Pass or Fail) as one cell. */
static int row(cp_import_t *im, const test_t *t, int no, char *s)
{
    char *w[32];
    int n = 0;
    for (char *tok = strtok(s, " \t\r"); tok != NULL; tok = strtok(NULL, " \t\r")) {
        if (n == 32) {
            return cp_import_fail(im, no, "too many columns");
        }
        w[n++] = tok;
    }
    if (n != t->ncols) {
        return cp_import_fail(im, no, "%d columns where the header has %d", n, t->ncols);
    }
    double v[O_N] = {0};
    for (int k = 0; k < O_N; k++) {
        if (t->col[k] < 0 || k == O_VALID) {
            continue;
        }
        if (cp_import_number(w[t->col[k]], &v[k]) != 0) {
            return cp_import_fail(im, no, "'%.40s' is not a number", w[t->col[k]]);
        }
    }
    if (v[O_SIZE] != floor(v[O_SIZE]) || v[O_SIZE] > 1e15 || v[O_ITERS] > 2e9 ||
        v[O_ITERS] != floor(v[O_ITERS])) {
        return cp_import_fail(im, no, "size or iterations out of range");
    }
    collprof_result_row_t *r = cp_import_row(im, no);
    if (r == NULL) {
        return -1;
    }
    const collprof_op_info_t *info = collprof_op_info(collprof_op_from_name(t->op));
    snprintf(r->op, sizeof(r->op), "%s", t->op);
    snprintf(r->dtype, sizeof(r->dtype), "%s", t->dtype);
    if (info->flags & COLLPROF_OPF_REDUCES) {
        snprintf(r->redop, sizeof(r->redop), "sum");
    }
    snprintf(r->memory, sizeof(r->memory), "%s", strstr(im->library, "CUDA") ? "device" : "host");
    /* OSU's size is each rank's message; collprof's count the largest buffer's */
    uint64_t size = (uint64_t)v[O_SIZE], n_ = im->nranks > 0 ? (uint64_t)im->nranks : 0;
    int per_rank = info->flags & COLLPROF_OPF_SPLIT;
    if (per_rank && n_ == 0) {
        return cp_import_fail(im, no, "%s sizes are per rank: give --ranks N", t->op);
    }
    uint64_t elsize = 1;
    for (int d = 0; d < COLLPROF_DTYPE_COUNT; d++) {
        elsize = !strcmp(collprof_dtype_name(d), t->dtype) ? collprof_dtype_size(d) : elsize;
    }
    if (per_rank && size > (uint64_t)1e15 / n_) { /* the whole buffer within the size's bound */
        return cp_import_fail(im, no, "size %" PRIu64 " x %" PRIu64 " ranks out of range", size,
                              n_);
    }
    r->bytes = per_rank ? size * n_ : size;
    r->count = r->bytes / elsize;
    r->time_mean_us = v[O_AVG];
    r->time_min_us = v[O_MIN];
    r->time_max_us = v[O_MAX];
    r->time_p50_us = v[O_P50];
    r->time_p95_us = v[O_P95];
    r->time_p99_us = v[O_P99];
    r->iterations = (int32_t)v[O_ITERS];
    /* OSU's method: one operation per timed sample, a barrier after each, the same buffers */
    snprintf(r->sync, sizeof(r->sync), "barrier");
    r->batch = 1;
    r->rotate = 1;
    if (t->col[O_VALID] >= 0) {
        const char *val = w[t->col[O_VALID]];
        if (strcmp(val, "Pass") != 0 && strcmp(val, "Fail") != 0) {
            return cp_import_fail(im, no, "Validation '%.20s' is neither Pass nor Fail", val);
        }
        r->wrong = !strcmp(val, "Fail");
    }
    return cp_import_finish(im, r, no, -1, -1);
}

static int line(cp_import_t *im, test_t *t, int no, char *s)
{
    char dt[64];
    const char *p = s + strspn(s, " \t");
    if (!strncmp(p, "# OSU ", 6)) {
        return banner(im, t, no, p);
    }
    if (sscanf(p, "# Datatype: %63[A-Za-z0-9_]", dt) == 1) {
        const char *c = mpi_type(dt);
        if (c[0] == '\0') {
            return cp_import_fail(im, no, "datatype %s: not one import knows", dt);
        }
        snprintf(t->dtype, sizeof(t->dtype), "%s", c);
        return 0;
    }
    if (!strncmp(p, "# Size", 6)) {
        return t->op[0] == '\0' ? cp_import_fail(im, no, "a header before the '# OSU' banner")
                                : columns(im, t, no, p);
    }
    if (isdigit((unsigned char)*p)) {
        return t->have_header ? row(im, t, no, s)
                              : cp_import_fail(im, no, "a result before the header line");
    }
    return 0; /* other comments, blank lines, a launcher's messages */
}

int cp_import_osu(cp_import_t *im, const char *text, size_t len)
{
    snprintf(im->tool, sizeof(im->tool), "osu");
    snprintf(im->format, sizeof(im->format), "osu-text");
    snprintf(im->backend_name, sizeof(im->backend_name), "%s", im->backend ? im->backend : "mpi");
    snprintf(im->timing, sizeof(im->timing),
             "OSU: Avg/Min/Max are the mean/least/greatest of the ranks' mean latencies; tail "
             "latencies are of the per-iteration latency averaged over the ranks");
    im->nranks = im->ranks;
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        return cp_import_fail(im, 0, "out of memory");
    }
    memcpy(copy, text, len + 1);
    test_t t;
    memset(&t, 0, sizeof(t));
    int no = 0, rc = 0;
    for (char *s = copy, *next; rc == 0 && s != NULL && *s != '\0'; s = next) {
        next = strchr(s, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }
        no++;
        s[strcspn(s, "\r")] = '\0'; /* CRLF line ends */
        rc = cp_import_valid_line(s) ? line(im, &t, no, s)
                                     : cp_import_fail(im, no, "not valid UTF-8 text");
    }
    free(copy);
    return rc;
}
