#include "config.h"

#include "format/best.h"

#include "base/stats.h"
#include "base/util.h"
#include "format/format.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cp_best_p5(const double *iter_max, int iters)
{
    if (iter_max == NULL || iters < 1) {
        return -1;
    }
    double *v = malloc(sizeof(double) * (size_t)iters);
    if (v == NULL) {
        return -1;
    }
    memcpy(v, iter_max, sizeof(double) * (size_t)iters);
    qsort(v, (size_t)iters, sizeof(double), cmp_double);
    double p = cp_stats_percentile(v, iters, 0.05);
    free(v);
    return p;
}

/* ---- what a cell is: every column but these -------------------------------------- */

/* columns that name a result, measure it or say how it was measured (F64 columns are all
 * measurements and are left out by kind) */
static const char *const not_identity[] = {
    "cell",  "backend", "variant",    "iterations", "warmup",  "wrong", "status",
    "error", "timer",   "allocation", "device",     "repeats", "check"};

static int identity(const char *column)
{
    for (size_t i = 0; i < sizeof(not_identity) / sizeof(not_identity[0]); i++) {
        if (!strcmp(column, not_identity[i])) {
            return 0;
        }
    }
    return 1;
}

#define BEST_KEY_STR(n)                                                                            \
    if (identity(#n) && (c = strcmp(a->n, b->n)) != 0) {                                           \
        return c;                                                                                  \
    }
#define BEST_KEY_NUM(n)                                                                            \
    if (identity(#n) && a->n != b->n) {                                                            \
        return a->n < b->n ? -1 : 1;                                                               \
    }
#define BEST_KEY_I32(n) BEST_KEY_NUM(n)
#define BEST_KEY_I64(n) BEST_KEY_NUM(n)
#define BEST_KEY_U64(n) BEST_KEY_NUM(n)
#define BEST_KEY_F64(n)
#define BEST_KEY(name, kind, size, opt, unit, doc) BEST_KEY_##kind(name)

int cp_best_key_cmp(const collprof_result_row_t *a, const collprof_result_row_t *b)
{
    int c;
    COLLPROF_RESULT_COLUMNS(BEST_KEY)
    return 0;
}

/* ---- candidates ----------------------------------------------------------------- */

typedef struct item {
    const cp_best_cell_t *c;
    size_t idx; /* input order, the last tie-break: the tables do not depend on qsort */
} item_t;

static int same_cand(const collprof_result_row_t *x, const collprof_result_row_t *y)
{
    return !strcmp(x->backend, y->backend) && !strcmp(x->variant, y->variant);
}

/* by cell, backend, variant, then time */
static int cmp_item(const void *pa, const void *pb)
{
    const item_t *a = pa, *b = pb;
    const collprof_result_row_t *x = a->c->row, *y = b->c->row;
    int c = cp_best_key_cmp(x, y);
    if (c == 0 && (c = strcmp(x->backend, y->backend)) == 0 &&
        (c = strcmp(x->variant, y->variant)) == 0) {
        if (x->time_mean_us != y->time_mean_us) {
            return x->time_mean_us < y->time_mean_us ? -1 : 1;
        }
        return a->idx < b->idx ? -1 : a->idx > b->idx;
    }
    return c;
}

/* by time, then name */
static int cmp_cand(const void *pa, const void *pb)
{
    const collprof_result_row_t *x = ((const cp_best_cand_t *)pa)->row,
                                *y = ((const cp_best_cand_t *)pb)->row;
    int c;
    if (x->time_mean_us != y->time_mean_us) {
        return x->time_mean_us < y->time_mean_us ? -1 : 1;
    }
    if ((c = strcmp(x->backend, y->backend)) != 0) {
        return c;
    }
    return strcmp(x->variant, y->variant);
}

/* The candidate of the results it[0..n) of one backend/variant on one cell, sorted by time. */
static cp_best_cand_t make_cand(const item_t *it, size_t n)
{
    cp_best_cand_t c;
    c.row = it[(n - 1) / 2].c->row;
    c.repeats = (int)n;
    for (size_t k = 0; k < n; k++) {
        const collprof_result_row_t *r = it[k].c->row;
        /* an imported row may lack any of them (0): the next wider figure, or the mean */
        double lo = it[k].c->p5_us >= 0  ? it[k].c->p5_us
                    : r->time_min_us > 0 ? r->time_min_us
                                         : r->time_mean_us;
        double hi = r->time_p95_us > 0   ? r->time_p95_us
                    : r->time_max_us > 0 ? r->time_max_us
                                         : r->time_mean_us;
        c.lo_us = k == 0 || lo < c.lo_us ? lo : c.lo_us;
        c.hi_us = k == 0 || hi > c.hi_us ? hi : c.hi_us;
    }
    return c;
}

/* The work area: the candidates of each cell, and the backends in run order. */
typedef struct work {
    cp_best_cand_t *cand; /* cell g's are cand[gstart[g] .. gstart[g + 1]), by time */
    size_t *gstart;
    size_t ngroups;
    const char **backend;
    int nbackends;
} work_t;

/* The backends of the ok cells, in the order they first appear. */
static int list_backends(const item_t *it, size_t n, work_t *w)
{
    w->backend = calloc(n + 1, sizeof(char *));
    if (w->backend == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const char *name = it[i].c->row->backend;
        int k = 0;
        while (k < w->nbackends && strcmp(w->backend[k], name) != 0) {
            k++;
        }
        if (k == w->nbackends) {
            w->backend[w->nbackends++] = name;
        }
    }
    return 0;
}

/* it[0..n) in input order: fill w (sorts it). */
static int build(item_t *it, size_t n, work_t *w)
{
    memset(w, 0, sizeof(*w));
    if (list_backends(it, n, w) != 0) {
        return -1;
    }
    qsort(it, n, sizeof(*it), cmp_item);
    w->cand = calloc(n + 1, sizeof(*w->cand));
    w->gstart = calloc(n + 2, sizeof(*w->gstart));
    if (w->cand == NULL || w->gstart == NULL) {
        return -1;
    }
    size_t nc = 0;
    for (size_t i = 0; i < n;) {
        size_t e = i + 1;
        while (e < n && cp_best_key_cmp(it[i].c->row, it[e].c->row) == 0 &&
               same_cand(it[i].c->row, it[e].c->row)) {
            e++;
        }
        if (i == 0 || cp_best_key_cmp(it[i - 1].c->row, it[i].c->row) != 0) {
            w->gstart[w->ngroups++] = nc;
        }
        w->cand[nc++] = make_cand(&it[i], e - i);
        i = e;
    }
    w->gstart[w->ngroups] = nc;
    for (size_t g = 0; g < w->ngroups; g++) {
        qsort(&w->cand[w->gstart[g]], w->gstart[g + 1] - w->gstart[g], sizeof(*w->cand), cmp_cand);
    }
    return 0;
}

static void free_work(work_t *w)
{
    free(w->cand);
    free(w->gstart);
    free(w->backend);
}

/* ---- the three tables ------------------------------------------------------------ */

static cp_best_duel_t duel(const cp_best_cand_t *x, const cp_best_cand_t *y)
{
    cp_best_duel_t d;
    memset(&d, 0, sizeof(d));
    d.fast = *x;
    if (y == NULL) {
        return d;
    }
    d.slow = *y;
    if (y->row->time_mean_us < x->row->time_mean_us) {
        d.fast = *y;
        d.slow = *x;
    }
    double tf = d.fast.row->time_mean_us, ts = d.slow.row->time_mean_us;
    d.ratio = tf > 0 ? ts / tf : 1.0;
    d.tie = d.fast.lo_us <= d.slow.hi_us && d.slow.lo_us <= d.fast.hi_us;
    return d;
}

/* The fastest candidate of backend on cell g after skip of them, or NULL. */
static const cp_best_cand_t *of_backend(const work_t *w, size_t g, const char *backend, int skip)
{
    for (size_t k = w->gstart[g]; k < w->gstart[g + 1]; k++) {
        if (!strcmp(w->cand[k].row->backend, backend) && skip-- == 0) {
            return &w->cand[k];
        }
    }
    return NULL;
}

static void fill_rows(const work_t *w, cp_best_t *b)
{
    for (size_t g = 0; g < w->ngroups; g++) {
        size_t n = w->gstart[g + 1] - w->gstart[g];
        const cp_best_cand_t *c = &w->cand[w->gstart[g]];
        cp_best_row_t *r = &b->rows[b->nrows++];
        r->d = duel(&c[0], n > 1 ? &c[1] : NULL);
        r->ncand = (int)n;
        b->comparisons += n > 1;
    }
}

static void fill_pairs(const work_t *w, cp_best_t *b)
{
    for (int i = 0; i < w->nbackends; i++) {
        for (int j = i + 1; j < w->nbackends; j++) {
            for (size_t g = 0; g < w->ngroups; g++) {
                const cp_best_cand_t *x = of_backend(w, g, w->backend[i], 0),
                                     *y = of_backend(w, g, w->backend[j], 0);
                if (x != NULL && y != NULL) {
                    cp_best_pair_t *p = &b->pairs[b->npairs++];
                    p->a = w->backend[i];
                    p->b = w->backend[j];
                    p->d = duel(x, y);
                }
            }
        }
    }
}

static void fill_gains(const work_t *w, cp_best_t *b)
{
    for (int i = 0; i < w->nbackends; i++) {
        for (size_t g = 0; g < w->ngroups; g++) {
            const cp_best_cand_t *best = of_backend(w, g, w->backend[i], 0), *dflt = NULL;
            if (of_backend(w, g, w->backend[i], 1) == NULL) {
                continue; /* one variant: nothing to gain */
            }
            for (int k = 0; (dflt = of_backend(w, g, w->backend[i], k)) != NULL; k++) {
                if (!strcmp(dflt->row->variant, "default")) {
                    break;
                }
            }
            cp_best_gain_t *r = &b->gains[b->ngains++];
            r->default_fastest = dflt == best;
            r->d = duel(best, dflt == best ? of_backend(w, g, w->backend[i], 1) : dflt);
        }
    }
}

/* b's tables from w. */
static int fill(const work_t *w, cp_best_t *b)
{
    size_t nb = (size_t)w->nbackends, ng = w->ngroups;
    b->rows = calloc(ng + 1, sizeof(*b->rows));
    b->pairs = calloc(ng * (nb * (nb - (nb > 0)) / 2) + 1, sizeof(*b->pairs));
    b->gains = calloc(ng * nb + 1, sizeof(*b->gains));
    if (b->rows == NULL || b->pairs == NULL || b->gains == NULL) {
        return -1;
    }
    fill_rows(w, b);
    fill_pairs(w, b);
    fill_gains(w, b);
    b->nbackends = w->nbackends;
    return 0;
}

int cp_best_compute(const cp_best_cell_t *cells, size_t n, cp_best_t *out)
{
    cp_best_t b;
    work_t w;
    size_t nok = 0;
    int rc = -1;
    memset(&b, 0, sizeof(b));
    item_t *it = calloc(n + 1, sizeof(*it));
    if (it == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(cells[i].row->status, "ok")) {
            it[nok++] = (item_t){&cells[i], i};
        }
    }
    if (build(it, nok, &w) == 0 && fill(&w, &b) == 0) {
        *out = b;
        rc = 0;
    } else {
        cp_best_free(&b);
    }
    free_work(&w);
    free(it);
    return rc;
}

void cp_best_free(cp_best_t *b)
{
    free(b->rows);
    free(b->pairs);
    free(b->gains);
    memset(b, 0, sizeof(*b));
}

/* ---- text ------------------------------------------------------------------------ */

void cp_best_row_verdict(const cp_best_row_t *r, char *buf, size_t len)
{
    if (r->d.slow.row == NULL) {
        snprintf(buf, len, "only candidate");
    } else if (r->d.tie) {
        snprintf(buf, len, "tie (%.2fx)", r->d.ratio);
    } else {
        snprintf(buf, len, "%.2fx faster", r->d.ratio);
    }
}

void cp_best_pair_verdict(const cp_best_pair_t *p, char *buf, size_t len)
{
    if (p->d.tie) {
        snprintf(buf, len, "tie (%.2fx)", p->d.ratio);
    } else {
        snprintf(buf, len, "%s %.2fx faster", p->d.fast.row->backend, p->d.ratio);
    }
}

void cp_best_gain_verdict(const cp_best_gain_t *g, char *buf, size_t len)
{
    if (g->d.slow.row == NULL) {
        snprintf(buf, len, "no default cell");
    } else if (g->d.tie) {
        snprintf(buf, len, "tie (%.2fx)", g->d.ratio);
    } else if (g->default_fastest) {
        snprintf(buf, len, "default is fastest (%.2fx over %s)", g->d.ratio,
                 g->d.slow.row->variant);
    } else {
        snprintf(buf, len, "%.2fx over default", g->d.ratio);
    }
}

const char *cp_best_fmt_count(uint64_t count, char *buf, size_t len)
{
    static const char unit[] = "KMGT";
    int u = -1;
    while (u < 3 && count >= 1024 && count % 1024 == 0) {
        count /= 1024;
        u++;
    }
    if (u < 0) {
        snprintf(buf, len, "%llu", (unsigned long long)count);
    } else {
        snprintf(buf, len, "%llu%c", (unsigned long long)count, unit[u]);
    }
    return buf;
}

/* A text table: cells as strings, printed with the widths they need. */
#define TAB_COLS 10
#define TAB_CELL 128
typedef char tab_row_t[TAB_COLS][TAB_CELL];

typedef struct tab {
    unsigned right; /* bit c: column c is right-aligned */
    tab_row_t *row;
    size_t n;
} tab_t;

static void tab_print(FILE *f, const tab_t *t)
{
    int w[TAB_COLS] = {0};
    for (size_t i = 0; i < t->n; i++) {
        for (int c = 0; c < TAB_COLS; c++) {
            int l = (int)strlen(t->row[i][c]);
            w[c] = l > w[c] ? l : w[c];
        }
    }
    for (size_t i = 0; i < t->n; i++) {
        for (int c = 0; c < TAB_COLS - 1; c++) {
            fprintf(f, (t->right >> c) & 1 ? "  %*s" : "  %-*s", w[c], t->row[i][c]);
        }
        fprintf(f, "  %s\n", t->row[i][TAB_COLS - 1]); /* the last column is not padded */
    }
}

/* Columns 0-3 of a row: the cell (op with its attributes, dtype, count, bytes). */
static void cell_cols(tab_row_t v, const collprof_result_row_t *r)
{
    char b[32];
    cp_format_label(r, v[0], TAB_CELL);
    snprintf(v[1], TAB_CELL, "%s", r->dtype);
    cp_best_fmt_count(r->count, v[2], TAB_CELL);
    snprintf(v[3], TAB_CELL, "%s", cp_fmt_bytes(r->bytes, b, sizeof(b)));
}

/* "name" and the time of a candidate into two cells; "-" for none. */
static void cand_cols(char *name, char *time, const cp_best_cand_t *c, int with_backend)
{
    if (c->row == NULL) {
        snprintf(name, TAB_CELL, "-");
        snprintf(time, TAB_CELL, "-");
        return;
    }
    snprintf(name, TAB_CELL, "%s%s%s", with_backend ? c->row->backend : "", with_backend ? "/" : "",
             c->row->variant);
    snprintf(time, TAB_CELL, "%.1f", c->row->time_mean_us);
}

/* Start t with its header line; right: the right-aligned columns (bits). */
static void tab_start(tab_t *t, const char *const *head, unsigned right)
{
    for (int c = 0; c < TAB_COLS; c++) {
        snprintf(t->row[0][c], TAB_CELL, "%s", head[c]);
    }
    t->n = 1;
    t->right = right;
}

/* A new line of t about the cell of row, its columns 0-3 filled. */
static char (*tab_add(tab_t *t, const collprof_result_row_t *row))[TAB_CELL]
{
    char(*v)[TAB_CELL] = t->row[t->n++];
    cell_cols(v, row);
    return v;
}

static void print_rows(FILE *f, const cp_best_t *b, tab_t *t)
{
    static const char *const head[TAB_COLS] = {"op",       "dtype",    "count",       "bytes",
                                               "fastest",  "time(us)", "busBW(GB/s)", "runner-up",
                                               "time(us)", "verdict"};
    fprintf(f, "\n== fastest backend/variant per cell (ok cells) ==\n");
    fprintf(f, "time: the mean over iterations of the max over ranks; tie: the two fastest are\n"
               "within noise (their p5-p95 ranges of per-iteration times overlap)\n");
    if (b->comparisons == 0) {
        fprintf(f, "every cell was measured by one backend/variant only: nothing to compare\n");
        return;
    }
    tab_start(t, head, 1u << 2 | 1u << 3 | 1u << 5 | 1u << 6 | 1u << 8);
    for (size_t i = 0; i < b->nrows; i++) {
        const cp_best_row_t *r = &b->rows[i];
        char(*v)[TAB_CELL] = tab_add(t, r->d.fast.row);
        cand_cols(v[4], v[5], &r->d.fast, 1);
        snprintf(v[6], TAB_CELL, "%.2f", r->d.fast.row->busbw_gbs);
        cand_cols(v[7], v[8], &r->d.slow, 1);
        cp_best_row_verdict(r, v[9], TAB_CELL);
    }
    tab_print(f, t);
}

static void print_pairs(FILE *f, const cp_best_t *b, tab_t *t)
{
    static const char *const head[TAB_COLS] = {"op", "dtype",    "count", "bytes",    "A vs B",
                                               "A",  "time(us)", "B",     "time(us)", "verdict"};
    fprintf(f, "\n== backend vs backend (each backend's fastest variant per cell) ==\n");
    if (b->nbackends < 2 || b->npairs == 0) {
        fprintf(f, "%s: nothing to compare\n",
                b->nbackends < 2 ? "one backend" : "no cell was measured by two backends");
        return;
    }
    tab_start(t, head, 1u << 2 | 1u << 3 | 1u << 6 | 1u << 8);
    for (size_t i = 0; i < b->npairs; i++) {
        const cp_best_pair_t *p = &b->pairs[i];
        int a_fast = !strcmp(p->d.fast.row->backend, p->a);
        char(*v)[TAB_CELL] = tab_add(t, p->d.fast.row);
        snprintf(v[4], TAB_CELL, "%s vs %s", p->a, p->b);
        cand_cols(v[5], v[6], a_fast ? &p->d.fast : &p->d.slow, 1);
        cand_cols(v[7], v[8], a_fast ? &p->d.slow : &p->d.fast, 1);
        cp_best_pair_verdict(p, v[9], TAB_CELL);
    }
    tab_print(f, t);
}

static void print_gains(FILE *f, const cp_best_t *b, tab_t *t)
{
    static const char *const head[TAB_COLS] = {"op",       "dtype",   "count",    "bytes",
                                               "backend",  "fastest", "time(us)", "against",
                                               "time(us)", "verdict"};
    fprintf(f, "\n== fastest variant against the default, per backend ==\n");
    if (b->ngains == 0) {
        fprintf(f, "no backend ran a cell in two variants or more: nothing to compare\n");
        return;
    }
    tab_start(t, head, 1u << 2 | 1u << 3 | 1u << 6 | 1u << 8);
    for (size_t i = 0; i < b->ngains; i++) {
        const cp_best_gain_t *g = &b->gains[i];
        char(*v)[TAB_CELL] = tab_add(t, g->d.fast.row);
        snprintf(v[4], TAB_CELL, "%s", g->d.fast.row->backend);
        cand_cols(v[5], v[6], &g->d.fast, 0);
        cand_cols(v[7], v[8], &g->d.slow, 0);
        cp_best_gain_verdict(g, v[9], TAB_CELL);
    }
    tab_print(f, t);
}

void cp_best_print(FILE *f, const cp_best_t *b)
{
    size_t most = b->nrows > b->npairs ? b->nrows : b->npairs;
    most = b->ngains > most ? b->ngains : most;
    tab_t t = {0, calloc(most + 1, sizeof(tab_row_t)), 0};
    if (t.row == NULL) {
        fprintf(f, "\n(the comparison tables: out of memory)\n");
        return;
    }
    print_rows(f, b, &t);
    print_pairs(f, b, &t);
    print_gains(f, b, &t);
    free(t.row);
}

void cp_best_print_summary(FILE *f, const cp_best_cell_t *cells, size_t n)
{
    cp_best_t b;
    if (cp_best_compute(cells, n, &b) != 0) {
        fprintf(f, "\n(the comparison tables: out of memory)\n");
        return;
    }
    if (b.nrows > 0) {
        cp_best_print(f, &b);
    }
    cp_best_free(&b);
}
