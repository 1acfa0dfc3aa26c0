/*
 * nccl-tests' results: the JSON file of -J (format version 3, NVIDIA/nccl-tests
 * src/util.cu) and the text table every run prints.  Each line of results
 * (a size) gives two cells, out-of-place and in-place (in_place 1), each with
 * nccl-tests' time (us: the average over the iterations), its algBW and busBW
 * (checked against collprof's own formulas) and #wrong.  Where the run timed
 * each iteration (-I), the minimum, maximum and percentiles of the iterations
 * (the max over the processes of each one, as collprof's) fill those columns.
 */
#include "config.h"

#include "report/import/import.h"
#include "report/import/json.h"

#include <collprof/vocab.h>

#include "colls/data.h"
#include "base/util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One half of a line: the figures of the out-of-place or the in-place run. */
typedef struct half {
    double time, algbw, busbw, wrong; /* wrong < 0: not checked (N/A) */
    double min, max, p50, p95, p99;   /* 0: not timed per iteration */
} half_t;

/* The fields common to both halves of a line. */
typedef struct line {
    int no;
    double size, count;
    const char *type, *redop;
    double root;
} line_t;

/* The operation of a program name: ".../all_reduce_perf" or "all_reduce_perf_mpi". */
static int op_of_program(const char *prog, char *op, size_t len)
{
    const char *base = strrchr(prog, '/');
    char name[64];
    snprintf(name, sizeof(name), "%s", base != NULL ? base + 1 : prog);
    char *perf = strstr(name, "_perf");
    if (perf != NULL) {
        *perf = '\0';
    }
    int id = cp_import_op(name);
    if (id >= 0) {
        snprintf(op, len, "%s", collprof_op_name(id));
    }
    return id;
}

static int whole(double v, double most)
{
    return v >= 0 && v <= most && v == floor(v);
}

static int add_cell(cp_import_t *im, const char *op, const line_t *l, int in_place, const half_t *h)
{
    collprof_result_row_t *r = cp_import_row(im, l->no);
    if (r == NULL) {
        return -1;
    }
    if (!whole(l->size, 1e15) || !whole(l->count, 1e15) || !(fabs(l->root) < 1e6) ||
        l->root != floor(l->root)) {
        return cp_import_fail(im, l->no, "size, count or root is not a whole number in range");
    }
    int dt = cp_dtype_from_name(l->type);
    snprintf(r->op, sizeof(r->op), "%s", op);
    snprintf(r->dtype, sizeof(r->dtype), "%s", dt >= 0 ? collprof_dtype_name(dt) : l->type);
    if (strcmp(l->redop, "none") != 0) {
        snprintf(r->redop, sizeof(r->redop), "%s", l->redop);
    }
    r->root = l->root < 0 ? 0 : (int32_t)l->root; /* -1: not a rooted operation */
    r->in_place = in_place;
    r->bytes = (uint64_t)l->size;
    /* collprof's count is the largest buffer's; nccl-tests prints the parameter's */
    r->count = dt >= 0 ? r->bytes / collprof_dtype_size(dt) : (uint64_t)l->count;
    r->time_mean_us = h->time;
    r->time_min_us = h->min;
    r->time_max_us = h->max;
    r->time_p50_us = h->p50;
    r->time_p95_us = h->p95;
    r->time_p99_us = h->p99;
    if (h->wrong < 0) {
        snprintf(r->check, sizeof(r->check), "none");
    } else if (!whole(h->wrong, 1e18)) {
        return cp_import_fail(im, l->no, "#wrong %g is not a count", h->wrong);
    }
    r->wrong = h->wrong > 0 ? (uint64_t)h->wrong : 0;
    snprintf(r->memory, sizeof(r->memory), "device");
    /* nccl-tests' method: after a barrier, -n operations back to back timed as one sample,
     * divided by -n: collprof's --sync batch:N -n 1 (docs/metrics.md) */
    snprintf(r->sync, sizeof(r->sync), "batch");
    r->batch = im->iterations;
    r->iterations = im->iterations > 0 ? 1 : 0;
    r->rotate = 1;
    return cp_import_finish(im, r, l->no, h->algbw, h->busbw);
}

/* NCCL's version code (22809 or, before 2.9, 2708) as text. */
static void nccl_version(double code, char *buf, size_t len)
{
    long c = (long)code;
    if (!whole(code, 1e7) || c == 0) {
        buf[0] = '\0';
    } else if (c >= 10000) {
        snprintf(buf, len, "NCCL %ld.%ld.%ld", c / 10000, c % 10000 / 100, c % 100);
    } else {
        snprintf(buf, len, "NCCL %ld.%ld.%ld", c / 1000, c % 1000 / 100, c % 100);
    }
}

/* ==== the JSON file ===================================================================== */

/* Member key of o as a number (a string "nan" is NaN, refused): 0, or -1 after the error. */
static int jnum(cp_import_t *im, const cp_json_t *o, const char *key, int need, double *out)
{
    const cp_json_t *v = cp_json_get(o, key);
    if (v == NULL || v->type == CP_JSON_NULL) {
        return need ? cp_import_fail(im, o->line, "'%s' is missing", key) : 0;
    }
    if (v->type == CP_JSON_STR) { /* "root": "    -1", and NaN as "nan" */
        char *end;
        double d = strtod(v->str, &end);
        if (*end == '\0' && end != v->str && isfinite(d) &&
            strspn(v->str, " -0123456789") == strlen(v->str)) {
            *out = d;
            return 0;
        }
    }
    if (v->type != CP_JSON_NUM) {
        return cp_import_fail(im, v->line, "'%s' is not a number", key);
    }
    *out = v->num;
    return 0;
}

static const char *jstr(cp_import_t *im, const cp_json_t *o, const char *key)
{
    const cp_json_t *v = cp_json_get(o, key);
    if (v == NULL || v->type != CP_JSON_STR) {
        cp_import_fail(im, v ? v->line : o->line, "'%s' is %s", key,
                       v ? "not a string" : "missing");
        return NULL;
    }
    return v->str;
}

/* One half ("out_of_place", "in_place") of a result: 1 when present, 0 absent, -1 error. */
static int jhalf(cp_import_t *im, const cp_json_t *res, const char *key, half_t *h)
{
    const cp_json_t *o = cp_json_get(res, key);
    memset(h, 0, sizeof(*h));
    if (o == NULL || o->type == CP_JSON_NULL) {
        return 0;
    }
    if (o->type != CP_JSON_OBJ) {
        return cp_import_fail(im, o->line, "'%s' is not an object", key);
    }
    const char *tk = cp_json_get(o, "time") != NULL ? "time" : "cpu_time";
    const cp_json_t *w = cp_json_get(o, "nwrong");
    h->wrong = w == NULL || w->type == CP_JSON_NULL ? -1 : 0;
    if (jnum(im, o, tk, 1, &h->time) != 0 || jnum(im, o, "alg_bw", 1, &h->algbw) != 0 ||
        jnum(im, o, "bus_bw", 1, &h->busbw) != 0 ||
        (h->wrong == 0 && jnum(im, o, "nwrong", 1, &h->wrong) != 0)) {
        return -1;
    }
    char pk[64];
    snprintf(pk, sizeof(pk), "%s_per_iter", key);
    const cp_json_t *p = cp_json_get(res, pk);
    if (p != NULL && p->type == CP_JSON_OBJ &&
        (jnum(im, p, "min_us", 0, &h->min) != 0 || jnum(im, p, "max_us", 0, &h->max) != 0 ||
         jnum(im, p, "p50_us", 0, &h->p50) != 0 || jnum(im, p, "p95_us", 0, &h->p95) != 0 ||
         jnum(im, p, "p99_us", 0, &h->p99) != 0)) {
        return -1;
    }
    return 1;
}

static int jresult(cp_import_t *im, const char *op, const cp_json_t *res)
{
    if (res->type != CP_JSON_OBJ) {
        return cp_import_fail(im, res->line, "a result is not an object");
    }
    line_t l = {res->line, 0, 0, NULL, NULL, 0};
    if (jnum(im, res, "size", 1, &l.size) != 0 || jnum(im, res, "count", 1, &l.count) != 0 ||
        jnum(im, res, "root", 1, &l.root) != 0 || (l.type = jstr(im, res, "type")) == NULL ||
        (l.redop = jstr(im, res, "redop")) == NULL) {
        return -1;
    }
    static const char *const keys[] = {"out_of_place", "in_place"};
    int any = 0;
    for (int k = 0; k < 2; k++) {
        half_t h;
        int rc = jhalf(im, res, keys[k], &h);
        if (rc < 0 || (rc > 0 && add_cell(im, op, &l, k, &h) != 0)) {
            return -1;
        }
        any |= rc;
    }
    return any ? 0 : cp_import_fail(im, res->line, "a result without figures");
}

/* The ranks the devices declare (one entry per process, each with per GPUs), counted with
 * overflow checks before any is built: 0, or -1 after the error. */
static int jranks(cp_import_t *im, const cp_json_t *cfg, const cp_json_t *dev, double per)
{
    size_t ndev = dev != NULL && dev->type == CP_JSON_ARR ? dev->n : 0;
    if (per > 1024) {
        return cp_import_fail(im, cfg->line,
                              "config out of range: nthreads x ngpus is %g GPUs a process "
                              "(at most 1024)",
                              per);
    }
    if (ndev > (size_t)CP_IMPORT_MAX_RANKS / (size_t)per) {
        return cp_import_fail(im, dev->line, "%zu devices of %g GPUs each: more than %d ranks",
                              ndev, per, CP_IMPORT_MAX_RANKS);
    }
    for (size_t i = 0; i < ndev; i++) {
        const cp_json_t *d = dev->kids[i];
        const char *host = jstr(im, d, "hostname"), *info = jstr(im, d, "device_info");
        double pid = 0, gpu = 0;
        if (host == NULL || info == NULL || jnum(im, d, "pid", 1, &pid) != 0 ||
            jnum(im, d, "device", 1, &gpu) != 0 || !whole(gpu, 1e6) || !whole(pid, 1e12)) {
            return im->err[0] ? -1 : cp_import_fail(im, d->line, "a device out of range");
        }
        for (int k = 0; k < (int)per; k++) { /* one entry per process: its GPUs */
            char name[64];
            snprintf(name, sizeof(name), "cuda:%d %s", (int)gpu + k, info);
            if (cp_import_rank(im, d->line, host, (long)pid, name) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* config: iterations, and the ranks from the devices (one entry per process). */
static int jconfig(cp_import_t *im, const cp_json_t *cfg)
{
    double it = 0, wu = 0, nt = 1, ng = 1;
    if (cfg == NULL || cfg->type != CP_JSON_OBJ) {
        return 0;
    }
    if (jnum(im, cfg, "iterations", 0, &it) != 0 || jnum(im, cfg, "warmup_iters", 0, &wu) != 0 ||
        jnum(im, cfg, "nthreads", 0, &nt) != 0 || jnum(im, cfg, "ngpus", 0, &ng) != 0 ||
        !whole(it, 1e9) || !whole(wu, 1e9) || !whole(nt, 1024) || !whole(ng, 1024) || nt * ng < 1) {
        return im->err[0] ? -1 : cp_import_fail(im, cfg->line, "config out of range");
    }
    im->iterations = (int)it;
    im->warmup = (int)wu;
    if (jranks(im, cfg, cp_json_get(cfg, "devices"), nt * ng) != 0) {
        return -1;
    }
    im->nranks = im->nrank_rows > 0 ? im->nrank_rows : im->ranks;
    return 0;
}

/* env: "NAME=VALUE" strings; those that shape communication are kept (sanitised). */
static int jenv(cp_import_t *im, const cp_json_t *env)
{
    for (size_t i = 0; env != NULL && env->type == CP_JSON_ARR && i < env->n; i++) {
        const cp_json_t *e = env->kids[i];
        char name[sizeof(im->env->name)];
        const char *value =
            e->type == CP_JSON_STR ? cp_env_captured(e->str, name, sizeof(name)) : NULL;
        if (value == NULL) {
            continue;
        }
        if (im->nenv == im->env_cap) { /* room doubles: linear on a long list */
            size_t cap = im->env_cap ? 2 * im->env_cap : 16;
            collprof_env_row_t *g =
                cap <= SIZE_MAX / sizeof(*g) ? realloc(im->env, sizeof(*g) * cap) : NULL;
            if (g == NULL) {
                return cp_import_fail(im, e->line, "out of memory");
            }
            im->env = g;
            im->env_cap = cap;
        }
        collprof_env_row_t *g = im->env;
        memset(&g[im->nenv], 0, sizeof(*g));
        snprintf(g[im->nenv].name, sizeof(g->name), "%s", name);
        snprintf(g[im->nenv].value, sizeof(g->value), "%s", value);
        im->nenv++;
    }
    return 0;
}

static int jdocument(cp_import_t *im, const cp_json_t *doc)
{
    double version = 0, code = 0;
    if (doc->type != CP_JSON_OBJ || jnum(im, doc, "version", 1, &version) != 0) {
        return im->err[0] ? -1 : cp_import_fail(im, doc->line, "not a nccl-tests JSON object");
    }
    if (version != 3) {
        return cp_import_fail(im, cp_json_get(doc, "version")->line,
                              "format version %g: import reads nccl-tests' version 3", version);
    }
    if (jnum(im, doc, "nccl_version", 0, &code) != 0) {
        return -1;
    }
    nccl_version(code, im->library, sizeof(im->library));
    char op[32] = "";
    const cp_json_t *args = cp_json_get(doc, "args");
    if (im->op != NULL) {
        snprintf(op, sizeof(op), "%s", collprof_op_name(cp_import_op(im->op)));
    } else if (args == NULL || args->type != CP_JSON_ARR || args->n == 0 ||
               args->kids[0]->type != CP_JSON_STR ||
               op_of_program(args->kids[0]->str, op, sizeof(op)) < 0) {
        return cp_import_fail(im, args ? args->line : doc->line,
                              "args[0] does not name a nccl-tests program (give --op)");
    }
    /* the results first: a file of none declaring a million ranks builds none of them */
    const cp_json_t *res = cp_json_get(doc, "results");
    if (res == NULL || res->type != CP_JSON_ARR) {
        return cp_import_fail(im, res ? res->line : doc->line, "no 'results' list");
    }
    if (res->n == 0) {
        return cp_import_fail(im, 0, "no results in it");
    }
    if (jconfig(im, cp_json_get(doc, "config")) != 0 || jenv(im, cp_json_get(doc, "env")) != 0) {
        return -1;
    }
    for (size_t i = 0; i < res->n; i++) {
        if (jresult(im, op, res->kids[i]) != 0) {
            return -1;
        }
    }
    return 0;
}

static void nccl_defaults(cp_import_t *im, const char *format)
{
    snprintf(im->tool, sizeof(im->tool), "nccl-tests");
    snprintf(im->format, sizeof(im->format), "%s", format);
    snprintf(im->backend_name, sizeof(im->backend_name), "%s", im->backend ? im->backend : "nccl");
    snprintf(im->timing, sizeof(im->timing),
             "nccl-tests: time is the mean over the iterations (per process, averaged); "
             "no per-rank samples");
}

int cp_import_nccl_json(cp_import_t *im, const char *text, size_t len)
{
    /* what jdocument reads: the rest is checked as it streams past, and dropped */
    static const char *const keep[] = {"version", "nccl_version", "args", "config",
                                       "env",     "results",      NULL};
    const cp_json_opts_t opts = {keep, 0};
    cp_json_error_t e;
    nccl_defaults(im, "nccl-tests-json 3");
    cp_json_t *doc = cp_json_parse(text, len, &opts, &e);
    if (doc == NULL) {
        return cp_import_fail(im, e.line, "%s%s",
                              e.too_large ? "too large: " : "not valid JSON: ", e.msg);
    }
    int rc = jdocument(im, doc);
    cp_json_free(doc);
    return rc;
}

/* ==== the text table ==================================================================== */

/* The columns of the table, by the header line "#  size  count  type  redop  root  time ...". */
enum { C_TIME, C_ALGBW, C_BUSBW, C_WRONG, C_MIN, C_MAX, C_P99, C_NHALF };

typedef struct table {
    int ncols, have; /* have: the header was seen */
    int size, count, type, redop, root;
    int half[2][C_NHALF]; /* column of each figure, -1 when absent */
    int timestamp;        /* a timestamp column at the end (-S): more words */
} table_t;

#define MAX_WORDS 64

/* Split line (modified) into words at blanks: their number, or -1 when too many. */
static int words(char *line, char **w)
{
    int n = 0;
    for (char *tok = strtok(line, " \t\r"); tok != NULL; tok = strtok(NULL, " \t\r")) {
        if (n == MAX_WORDS) {
            return -1;
        }
        w[n++] = tok;
    }
    return n;
}

static void header(table_t *t, char **w, int n)
{
    static const char *const names[C_NHALF] = {"time",  "algbw", "busbw", "#wrong",
                                               "i_min", "i_max", "i_p99"};
    memset(t->half, -1, sizeof(t->half));
    t->have = 1;
    t->ncols = n - 1;
    t->timestamp = 0;
    int h = -1;
    for (int i = 1; i < n; i++) {
        const char *s = w[i];
        int c = i - 1; /* column index in a data row */
        t->size = !strcmp(s, "size") ? c : t->size;
        t->count = !strcmp(s, "count") ? c : t->count;
        t->type = !strcmp(s, "type") ? c : t->type;
        t->redop = !strcmp(s, "redop") ? c : t->redop;
        t->root = !strcmp(s, "root") ? c : t->root;
        t->timestamp |= !strcmp(s, "timestamp");
        h += (!strcmp(s, "time") || !strcmp(s, "cputime")) && h < 1;
        for (int k = 0; k < C_NHALF && h >= 0; k++) {
            if (!strcmp(s, names[k]) || (k == C_TIME && !strcmp(s, "cputime"))) {
                t->half[h][k] = c;
            }
        }
    }
    t->ncols -= t->timestamp;
}

static int number_at(cp_import_t *im, int no, char **w, int col, double *out)
{
    if (col < 0) {
        *out = 0;
        return 0;
    }
    if (!strcmp(w[col], "N/A")) {
        *out = -1;
        return 0;
    }
    return cp_import_number(w[col], out) == 0
               ? 0
               : cp_import_fail(im, no, "'%.40s' is not a number", w[col]);
}

static int text_row(cp_import_t *im, const table_t *t, const char *op, int no, char **w, int n)
{
    if (n < t->ncols || (n > t->ncols && !t->timestamp)) {
        return cp_import_fail(im, no, "%d columns where the header has %d", n, t->ncols);
    }
    if (t->size < 0 || t->count < 0 || t->type < 0 || t->redop < 0 || t->root < 0 ||
        t->half[0][C_TIME] < 0) {
        return cp_import_fail(im, no,
                              "the table's header lacks size, count, type, redop, root "
                              "or time");
    }
    line_t l = {no, 0, 0, w[t->type], w[t->redop], 0};
    char *end;
    l.root = strtod(w[t->root], &end);
    if (*end != '\0' || number_at(im, no, w, t->size, &l.size) != 0 ||
        number_at(im, no, w, t->count, &l.count) != 0) {
        return im->err[0] ? -1 : cp_import_fail(im, no, "root '%.20s' is not a number", w[t->root]);
    }
    for (int k = 0; k < 2; k++) {
        const int *c = t->half[k];
        half_t h = {0};
        if (c[C_TIME] < 0) {
            continue;
        }
        double *f[C_NHALF] = {&h.time, &h.algbw, &h.busbw, &h.wrong, &h.min, &h.max, &h.p99};
        for (int j = 0; j < C_NHALF; j++) {
            if (number_at(im, no, w, c[j], f[j]) != 0) {
                return -1;
            }
        }
        h.wrong = c[C_WRONG] < 0 ? -1 : h.wrong;
        if (add_cell(im, op, &l, k, &h) != 0) {
            return -1;
        }
    }
    return 0;
}

/* "# ..." lines before the table: the version, the program, the iterations, the ranks. */
static int comment(cp_import_t *im, table_t *t, char *op, int no, char *s)
{
    char a[64], b[256];
    int x, y;
    long pid;
    const char *p;
    if (sscanf(s, "# nccl-tests version %63s nccl-headers=%*d nccl-library=%d", a, &x) == 2) {
        snprintf(im->version, sizeof(im->version), "%s", a);
        nccl_version(x, im->library, sizeof(im->library));
    } else if (sscanf(s, "# Collective test starting: %63s", a) == 1 && im->op == NULL) {
        if (op_of_program(a, op, 32) < 0) {
            return cp_import_fail(im, no, "'%s' is not a nccl-tests program collprof knows", a);
        }
    } else if ((p = strstr(s, "warmup iters: ")) != NULL &&
               sscanf(p, "warmup iters: %d iters: %d", &x, &y) == 2) {
        im->warmup = x >= 0 ? x : 0;
        im->iterations = y >= 0 ? y : 0;
    } else if (sscanf(s, "# Rank %d Group %*d Pid %ld on %63s device %d [%*[^]]] %255[^\n]", &x,
                      &pid, a, &y, b) == 5 ||
               sscanf(s, "#  Rank %d Group %*d Pid %ld on %63s device %d [%*[^]]] %255[^\n]", &x,
                      &pid, a, &y, b) == 5) {
        char dev[300];
        snprintf(dev, sizeof(dev), "cuda:%d %s", y, b);
        if (im->nrows > 0) { /* one world per file: a second run may have other ranks */
            return cp_import_fail(im, no, "the ranks of a second run: import one run per file");
        }
        return cp_import_rank(im, no, a, pid, dev);
    } else {
        char *w[MAX_WORDS];
        int n = words(s, w);
        if (n > 3 && !strcmp(w[0], "#") && !strcmp(w[1], "size") && !strcmp(w[2], "count")) {
            header(t, w, n);
        }
    }
    return 0;
}

/* Each line of text, NUL-terminated in place, to comment() or text_row(). */
static int text_lines(cp_import_t *im, char *text, char *op)
{
    table_t t = {0, 0, -1, -1, -1, -1, -1, {{0}}, 0};
    int no = 0;
    for (char *s = text, *next; s != NULL && *s != '\0'; s = next) {
        next = strchr(s, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }
        no++;
        s[strcspn(s, "\r")] = '\0'; /* CRLF line ends */
        if (!cp_import_valid_line(s)) {
            return cp_import_fail(im, no, "not valid UTF-8 text");
        }
        const char *p = s + strspn(s, " \t");
        int rc = 0;
        if (*p == '#') {
            rc = comment(im, &t, op, no, s);
        } else if (*p >= '0' && *p <= '9') { /* anything else: NCCL's INFO lines, a banner */
            char *w[MAX_WORDS];
            int n = words(s, w);
            if (!t.have) {
                return cp_import_fail(im, no, "a result before the table's header line");
            }
            if (op[0] == '\0') {
                return cp_import_fail(im, no, "the output does not name its program (give --op)");
            }
            im->nranks = im->nrank_rows > 0 ? im->nrank_rows : im->ranks;
            rc =
                n < 0 ? cp_import_fail(im, no, "too many columns") : text_row(im, &t, op, no, w, n);
        }
        if (rc != 0) {
            return -1;
        }
    }
    return 0;
}

int cp_import_nccl_text(cp_import_t *im, const char *text, size_t len)
{
    nccl_defaults(im, "nccl-tests-text");
    char op[32] = "";
    if (im->op != NULL) {
        snprintf(op, sizeof(op), "%s", collprof_op_name(cp_import_op(im->op)));
    }
    char *copy = malloc(len + 1);
    if (copy == NULL) {
        return cp_import_fail(im, 0, "out of memory");
    }
    memcpy(copy, text, len + 1);
    int rc = text_lines(im, copy, op);
    free(copy);
    if (rc == 0 && im->ranks > 0 && im->nrank_rows > 0 && im->ranks != im->nrank_rows) {
        rc = cp_import_fail(im, 0, "--ranks %d, but the output lists %d ranks", im->ranks,
                            im->nrank_rows);
    }
    return rc;
}
