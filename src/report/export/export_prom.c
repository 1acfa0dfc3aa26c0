/*
 * `export --prom|--openmetrics`: result files as Prometheus metrics.
 *
 * --prom writes the text format that the node exporter's textfile collector
 * reads (no timestamps: it refuses them); --openmetrics writes OpenMetrics
 * with each sample stamped with its run's time and `# EOF` at the end, what
 * `promtool tsdb create-blocks-from openmetrics` imports as history.
 *
 * The metric families and their labels (docs/metrics.md lists them for
 * users) are in one table, families[].  Each file gives samples; they are
 * sorted by family, label set and time, so that every family is one block
 * and every series ascends in time.  --prom keeps the newest sample of each
 * series (the file that ran last, among equal times the later row),
 * --openmetrics keeps one per series and time.  Label values are escaped
 * as both formats want (backslash, double quote, line feed); the reader has
 * already refused text that is not UTF-8 or holds control characters.
 */
#include "config.h"

#include "format/cflags.h"
#include "report/links_data.h"
#include "report/report.h"

#include <collprof/vocab.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* clang-format off */
#define CP_PROM_FAMILIES(X)                                                                        \
    X(LAST_RUN, "last_run_timestamp_seconds", "seconds",                                          \
      "Time the newest run of these labels was created, seconds since 1970-01-01 UTC")            \
    X(BUSBW, "cell_busbw_bytes_per_second", "bytes_per_second",                                    \
      "Bus bandwidth of a cell (algorithm bandwidth times the operation's bus factor)")            \
    X(ALGBW, "cell_algbw_bytes_per_second", "bytes_per_second",                                    \
      "Algorithm bandwidth of a cell: bytes over its mean time")                                   \
    X(TIME, "cell_time_seconds", "seconds",                                                         \
      "Time of a cell's collective (per iteration the slowest rank): stat mean, p50 or p99")       \
    X(FAILED, "cell_failed", "",                                                                   \
      "1 when a cell went wrong (wrong, error, timeout, incomplete), 0 when it passed")             \
    X(NODE_TIME, "node_time_ratio", "ratio",                                                       \
      "A node's ranks' fastest iteration over the cell's median rank, mean over the run's cells")  \
    X(NODE_LINK_BW, "node_link_bandwidth_bytes_per_second", "bytes_per_second",                    \
      "Link sweep: median over a node's pairs of the best iteration's bandwidth, each way")        \
    X(NODE_LINK_LAT, "node_link_latency_seconds", "seconds",                                       \
      "Link sweep: median over a node's pairs of the small message's median time")                 \
    X(NODE_SCREEN, "node_screen_verdict", "",                                                      \
      "Screen verdict of a node: 1 for its verdict, 0 for the others")                             \
    X(NODE_SCORE, "node_screen_score_ratio", "ratio",                                              \
      "Screen score of a node: median of its pairs' min(bandwidth/reference, reference/latency)")  \
    X(COUNTER_FLAG, "cell_counter_flagged", "",                                                    \
      "A counter the summary flags around a cell: its increase, or a gauge's value (--counters)")
/* clang-format on */

#define CP_PROM_ENUM(id, name, unit, help) FAM_##id,
enum { CP_PROM_FAMILIES(CP_PROM_ENUM) NFAMILIES };

typedef struct family {
    const char *name, *unit, *help;
} family_t;

#define CP_PROM_ROW(id, name, unit, help) {"collprof_" name, unit, help},
static const family_t families[] = {CP_PROM_FAMILIES(CP_PROM_ROW)};

static const char *const verdicts[] = {"healthy", "slow", "unreachable", "inconclusive",
                                       "untested"};
#define NVERDICTS (sizeof(verdicts) / sizeof(verdicts[0]))

typedef struct sample {
    int fam;
    char *labels; /* name="value",... escaped */
    double value;
    double ts;  /* the run's time, seconds */
    size_t seq; /* order of appearance: the later wins among equals */
} sample_t;

struct cp_report_prom {
    sample_t *s;
    size_t n, cap;
    const char **host; /* the file being added: each node's host, NULL when no rank names it */
    int openmetrics;
    int oom;
};

/* ---- building ----------------------------------------------------------------------- */

static void put_label(FILE *m, const char *name, const char *value)
{
    static const char *const esc[256] = {['\\'] = "\\\\", ['"'] = "\\\"", ['\n'] = "\\n"};
    fprintf(m, "%s%s=\"", ftell(m) > 0 ? "," : "", name);
    cp_report_put_escaped(m, value, esc, 0);
    fputc('"', m);
}

static void put_label_num(FILE *m, const char *name, unsigned long long v)
{
    char num[32];
    snprintf(num, sizeof(num), "%llu", v);
    put_label(m, name, num);
}

/* Add a sample whose labels m holds (an open memstream, closed here). */
static void add(cp_report_prom_t *p, int fam, FILE *m, char **buf, double value, double ts)
{
    int bad = m == NULL || ferror(m);
    if (m != NULL && fclose(m) != 0) {
        bad = 1;
    }
    if (!bad && p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        sample_t *s = realloc(p->s, cap * sizeof(*s));
        bad = s == NULL;
        p->s = bad ? p->s : s;
        p->cap = bad ? p->cap : cap;
    }
    if (bad || *buf == NULL) {
        free(*buf);
        p->oom = 1;
        return;
    }
    p->s[p->n] = (sample_t){fam, *buf, value, ts, p->n};
    p->n++;
}

/* A new label set holding the run's labels (partition, and the size of the run). */
static FILE *run_labels(const cp_report_file_t *f, char **buf, size_t *len, int sized)
{
    *buf = NULL; /* stays NULL when the stream cannot be made: add() sees it */
    FILE *m = open_memstream(buf, len);
    if (m != NULL) {
        put_label(m, "partition", cp_report_slurm(f, "partition"));
        if (sized) {
            put_label_num(m, "nodes", (unsigned long long)f->root.node_count);
            put_label_num(m, "ranks", (unsigned long long)f->root.world_size);
        }
    }
    return m;
}

/* A new label set for row r of f, with the run's labels. */
static FILE *cell_labels(const cp_report_file_t *f, const collprof_result_row_t *r, char **buf,
                         size_t *len)
{
    FILE *m = run_labels(f, buf, len, 1);
    if (m != NULL) {
        put_label(m, "backend", r->backend);
        put_label(m, "variant", r->variant);
        put_label(m, "op", r->op);
        put_label(m, "dtype", r->dtype);
        put_label(m, "redop", r->redop);
        put_label(m, "memory", r->memory);
        put_label_num(m, "bytes", (unsigned long long)r->bytes);
        /* what else tells two cells of a run, or of two runs, apart: each a label, so that a
         * series is one cell (an empty value is no label, as Prometheus reads it) */
        put_label_num(m, "root", (unsigned long long)(r->root > 0 ? r->root : 0));
        put_label_num(m, "in_place", (unsigned long long)(r->in_place != 0));
        const char *name[] = {"imbalance", "split", "sync", "alloc"};
        const char *value[] = {r->imbalance, r->split, r->sync, r->allocation};
        for (int k = 0; k < 4; k++) {
            if (value[k][0] != '\0') {
                put_label(m, name[k], value[k]);
            }
        }
        put_label_num(m, "batch", (unsigned long long)(r->batch > 0 ? r->batch : 0));
        put_label_num(m, "rotate", (unsigned long long)(r->rotate > 0 ? r->rotate : 0));
    }
    return m;
}

/* The run's time: its `created` attribute, else its first cell's start; 0 when neither. */
static double run_time(const cp_report_file_t *f)
{
    struct tm tm = {0};
    char z = 0;
    if (sscanf(f->root.created, "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &z) == 7 &&
        z == 'Z') {
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        if (t > 0) {
            return (double)t;
        }
    }
    double first = 0;
    for (size_t i = 0; i < f->nrows; i++) {
        double st = f->rows[i].start_time;
        first = st > 0 && (first == 0 || st < first) ? st : first;
    }
    return first;
}

static void add_cell(cp_report_prom_t *p, const cp_report_file_t *f, const collprof_result_row_t *r,
                     double ts)
{
    int st = collprof_cell_status_from_name(r->status);
    if (st == COLLPROF_CELL_UNSUPPORTED || st == COLLPROF_CELL_SKIPPED) {
        return; /* nothing ran */
    }
    char *buf;
    size_t len;
    add(p, FAM_FAILED, cell_labels(f, r, &buf, &len), &buf, st != COLLPROF_CELL_OK, ts);
    if (!cp_report_measured(r)) {
        return;
    }
    if (r->bytes > 0) { /* a barrier has a time, no bandwidth */
        add(p, FAM_BUSBW, cell_labels(f, r, &buf, &len), &buf, r->busbw_gbs * 1e9, ts);
        add(p, FAM_ALGBW, cell_labels(f, r, &buf, &len), &buf, r->algbw_gbs * 1e9, ts);
    }
    const char *stat[] = {"mean", "p50", "p99"};
    double us[] = {r->time_mean_us, r->time_p50_us, r->time_p99_us};
    for (int k = 0; k < 3; k++) {
        FILE *m = cell_labels(f, r, &buf, &len);
        if (m != NULL) {
            put_label(m, "stat", stat[k]);
        }
        add(p, FAM_TIME, m, &buf, us[k] * 1e-6, ts);
    }
}

/* The counter rows the summary flags (src/format/cflags.c), each with its cell's labels and the
 * node's host, the source, the counter and why: a few series, not every counter of every cell. */
static void add_counters(cp_report_prom_t *p, const cp_report_file_t *f, double ts)
{
    for (size_t i = 0; i < f->ncounters; i++) {
        const collprof_counter_row_t *c = &f->counters[i];
        const char *why = cp_cflag(c);
        size_t k = 0;
        while (k < f->nrows && f->rows[k].cell != c->cell) {
            k++;
        }
        if (why == NULL || k == f->nrows) {
            continue;
        }
        char *buf;
        size_t len;
        FILE *m = cell_labels(f, &f->rows[k], &buf, &len);
        if (m != NULL) {
            put_label(m, "host", c->host);
            put_label(m, "source", c->source);
            put_label(m, "counter", c->name);
            put_label(m, "unit", c->unit);
            put_label(m, "why", why);
        }
        add(p, FAM_COUNTER_FLAG, m, &buf, c->delta, ts);
    }
}

/* Nodes of f: node indices run from 0 to this less 1 (also in a file without node_count). */
static int nodes_of(const cp_report_file_t *f)
{
    long long nn = f->root.node_count > 0 ? f->root.node_count : 1;
    for (int q = 0; q < f->nranks; q++) {
        nn = f->ranks[q].node_id >= nn ? f->ranks[q].node_id + 1LL : nn;
    }
    return (int)nn;
}

/* A new label set for node k of f (its host name; "node<k>" when no rank names it). */
static FILE *node_labels(const cp_report_prom_t *p, const cp_report_file_t *f, const char *backend,
                         int k, char **buf, size_t *len)
{
    FILE *m = run_labels(f, buf, len, 0);
    const char *host = p->host[k];
    char name[32];
    snprintf(name, sizeof(name), "node%d", k);
    if (m != NULL) {
        if (backend != NULL) {
            put_label(m, "backend", backend);
        }
        put_label(m, "host", host != NULL && host[0] ? host : name);
    }
    return m;
}

/* Per node: its ranks' fastest iteration over the cell's median rank, mean over the cells. */
static int add_node_times(cp_report_prom_t *p, const cp_report_file_t *f, double ts)
{
    int nn = nodes_of(f), n = f->nranks;
    double *sum = calloc((size_t)nn + 1, sizeof(double)), *tmp = calloc((size_t)n + 1, 8);
    long *cnt = calloc((size_t)nn + 1, sizeof(long));
    if (sum == NULL || tmp == NULL || cnt == NULL) {
        p->oom = 1;
    }
    for (size_t i = 0; !p->oom && n >= 2 && i < f->nrows; i++) {
        const double *m = f->cells[i].rank_min;
        if (m == NULL || !cp_report_measured(&f->rows[i])) {
            continue;
        }
        memcpy(tmp, m, sizeof(double) * (size_t)n);
        double med = cp_report_median(tmp, (size_t)n);
        for (int q = 0; q < n && med > 0; q++) {
            sum[f->ranks[q].node_id] += m[q] / med;
            cnt[f->ranks[q].node_id]++;
        }
    }
    for (int k = 0; !p->oom && k < nn; k++) {
        char *buf;
        size_t len;
        if (cnt[k] > 0) {
            add(p, FAM_NODE_TIME, node_labels(p, f, NULL, k, &buf, &len), &buf, sum[k] / cnt[k],
                ts);
        }
    }
    free(sum);
    free(tmp);
    free(cnt);
    return p->oom ? -1 : 0;
}

/* The screen's node rows: a verdict set and a score per backend and node. */
static void add_screen(cp_report_prom_t *p, const cp_report_file_t *f, double ts)
{
    int nn = nodes_of(f);
    for (size_t i = 0; i < f->nscreen; i++) {
        const collprof_screen_row_t *r = &f->screen[i];
        char *buf;
        size_t len;
        if (strcmp(r->what, "node") != 0 || r->node_a < 0 || r->node_a >= nn) {
            continue; /* a link, the validation, or a node no rank names (node_count absent) */
        }
        for (size_t v = 0; v < NVERDICTS; v++) {
            FILE *m = node_labels(p, f, r->backend, r->node_a, &buf, &len);
            if (m != NULL) {
                put_label(m, "verdict", verdicts[v]);
            }
            add(p, FAM_NODE_SCREEN, m, &buf, !strcmp(r->verdict, verdicts[v]), ts);
        }
        add(p, FAM_NODE_SCORE, node_labels(p, f, r->backend, r->node_a, &buf, &len), &buf, r->score,
            ts);
    }
}

/* ---- the link sweep, per node ------------------------------------------------------- */

/* The figure of a /links row of its kind: bandwidth in B/s, latency in s; < 0: none. */
static double link_value(const collprof_link_row_t *r, int bw)
{
    if (strcmp(r->status, "ok") != 0) {
        return -1;
    }
    return bw ? r->bw_best_gbs * 1e9 : r->time_p50_us * 1e-6;
}

/* Backend b's pairs of one kind at the sweep's size: per node the median over its pairs. */
static void add_links_kind(cp_report_prom_t *p, const cp_report_file_t *f, const char *b, int bw,
                           size_t *off, double *vals, double ts)
{
    unsigned long long bytes = cp_report_links_bytes(f, b, bw ? "bandwidth" : "latency");
    int nn = nodes_of(f);
    memset(off, 0, sizeof(size_t) * ((size_t)nn + 1));
    for (int pass = 0; pass < 2; pass++) { /* count per node, then place (counting sort) */
        for (size_t i = 0; i < f->nlinks; i++) {
            const collprof_link_row_t *r = &f->links[i];
            double v = link_value(r, bw);
            if (v < 0 || r->node_b >= nn || strcmp(r->backend, b) != 0 || r->bytes != bytes ||
                strcmp(r->kind, bw ? "bandwidth" : "latency") != 0) {
                continue;
            }
            int ends[2] = {r->node_a, r->node_b};
            for (int e = 0; e < 2; e++) {
                if (pass == 0) {
                    off[ends[e] + 1]++;
                } else {
                    vals[off[ends[e]]++] = v;
                }
            }
        }
        for (int k = 0; pass == 0 && k < nn; k++) {
            off[k + 1] += off[k]; /* off[k]: where node k's values start */
        }
    }
    for (int k = 0; k < nn; k++) { /* off[k] now ends node k: its start is off[k - 1] */
        size_t start = k > 0 ? off[k - 1] : 0, cnt = off[k] - start;
        char *buf;
        size_t len;
        if (cnt > 0) {
            add(p, bw ? FAM_NODE_LINK_BW : FAM_NODE_LINK_LAT, node_labels(p, f, b, k, &buf, &len),
                &buf, cp_report_median(vals + start, cnt), ts);
        }
    }
}

static int add_links(cp_report_prom_t *p, const cp_report_file_t *f, double ts)
{
    size_t *off = calloc((size_t)nodes_of(f) + 2, sizeof(size_t));
    double *vals = calloc(2 * f->nlinks + 1, sizeof(double));
    for (size_t i = 0; off != NULL && vals != NULL && i < f->nlinks; i++) {
        size_t j = 0;
        while (j < i && strcmp(f->links[j].backend, f->links[i].backend) != 0) {
            j++;
        }
        for (int bw = 0; bw < 2 && j == i; bw++) { /* the first row of its backend */
            add_links_kind(p, f, f->links[i].backend, bw, off, vals, ts);
        }
    }
    p->oom |= off == NULL || vals == NULL;
    free(off);
    free(vals);
    return p->oom ? -1 : 0;
}

/* ---- the whole set ------------------------------------------------------------------ */

static int add_file(cp_report_prom_t *p, const cp_report_file_t *f)
{
    double ts = run_time(f);
    free(p->host);
    if ((p->host = calloc((size_t)nodes_of(f), sizeof(*p->host))) == NULL) {
        cp_report_error("export: out of memory");
        return -1;
    }
    for (int q = f->nranks - 1; q >= 0; q--) { /* the node's first rank names it */
        p->host[f->ranks[q].node_id] = f->ranks[q].hostname;
    }
    if (p->openmetrics && ts <= 0) {
        cp_report_error("export: %s: no time of the run (no 'created' attribute, no cell start): "
                        "it cannot go into a history",
                        f->path);
        return -1;
    }
    char *buf;
    size_t len;
    if (ts > 0) {
        add(p, FAM_LAST_RUN, run_labels(f, &buf, &len, 0), &buf, ts, ts);
    }
    for (size_t i = 0; i < f->nrows; i++) {
        add_cell(p, f, &f->rows[i], ts);
    }
    add_screen(p, f, ts);
    add_counters(p, f, ts);
    if (add_node_times(p, f, ts) != 0 || add_links(p, f, ts) != 0 || p->oom) {
        cp_report_error("export: out of memory");
        return -1;
    }
    return 0;
}

static int by_series(const void *a, const void *b)
{
    const sample_t *x = a, *y = b;
    int c = x->fam - y->fam;
    c = c ? c : strcmp(x->labels, y->labels);
    c = c ? c : (x->ts > y->ts) - (x->ts < y->ts);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

cp_report_prom_t *cp_report_prom_build(cp_report_file_t *const *files, int n, int openmetrics)
{
    cp_report_prom_t *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        cp_report_error("export: out of memory");
        return NULL;
    }
    p->openmetrics = openmetrics;
    for (int i = 0; i < n; i++) {
        if (add_file(p, files[i]) != 0) {
            cp_report_prom_free(p);
            return NULL;
        }
    }
    if (p->n > 0) {
        qsort(p->s, p->n, sizeof(*p->s), by_series);
    }
    return p;
}

void cp_report_prom_free(cp_report_prom_t *p)
{
    for (size_t i = 0; p != NULL && i < p->n; i++) {
        free(p->s[i].labels);
    }
    if (p != NULL) {
        free(p->s);
        free(p->host);
    }
    free(p);
}

/* ---- writing ------------------------------------------------------------------------ */

static void put_family(FILE *out, const cp_report_prom_t *p, int fam)
{
    const family_t *d = &families[fam];
    fprintf(out, "# HELP %s %s.\n# TYPE %s gauge\n", d->name, d->help, d->name);
    if (p->openmetrics && d->unit[0]) {
        fprintf(out, "# UNIT %s %s\n", d->name, d->unit);
    }
}

void cp_report_prom_write(FILE *out, const void *data)
{
    const cp_report_prom_t *p = data;
    int fam = -1;
    for (size_t i = 0; i < p->n; i++) {
        const sample_t *s = &p->s[i], *next = i + 1 < p->n ? &p->s[i + 1] : NULL;
        /* the later of equal series (--prom) or of equal series and times (--openmetrics) */
        if (next != NULL && next->fam == s->fam && !strcmp(next->labels, s->labels) &&
            (!p->openmetrics || next->ts == s->ts)) {
            continue;
        }
        if (s->fam != fam) {
            put_family(out, p, s->fam);
            fam = s->fam;
        }
        char v[64], t[64];
        cp_report_fmt_double(s->value, v, sizeof(v));
        fprintf(out, "%s{%s} %s", families[s->fam].name, s->labels, v);
        if (p->openmetrics) {
            cp_report_fmt_double(s->ts, t, sizeof(t));
            fprintf(out, " %s", t);
        }
        fputc('\n', out);
    }
    if (p->openmetrics) {
        fputs("# EOF\n", out);
    }
}
