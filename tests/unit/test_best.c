/* Which backend and variant wins (src/format/best.c): winners, ties, ratios on known cells. */
#include "config.h"

#include "format/best.h"
#include "format/format.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

#define MAXROWS 32

static collprof_result_row_t rows[MAXROWS];
static cp_best_cell_t cells[MAXROWS];
static size_t nrows;

/* A result of backend/variant on op (float32, count elements) with mean time us and noise
 * range [p5, p95] (p5 < 0: unknown, min stands in). */
static collprof_result_row_t *add(const char *backend, const char *variant, const char *op,
                                  uint64_t count, double us, double p5, double p95)
{
    collprof_result_row_t *r = &rows[nrows];
    memset(r, 0, sizeof(*r));
    r->cell = (int)nrows;
    snprintf(r->backend, sizeof(r->backend), "%s", backend);
    snprintf(r->variant, sizeof(r->variant), "%s", variant);
    snprintf(r->op, sizeof(r->op), "%s", op);
    snprintf(r->dtype, sizeof(r->dtype), "float32");
    snprintf(r->redop, sizeof(r->redop), "sum");
    snprintf(r->memory, sizeof(r->memory), "host");
    snprintf(r->status, sizeof(r->status), "ok");
    r->count = count;
    r->bytes = count * 4;
    r->iterations = 20;
    r->time_mean_us = us;
    r->time_min_us = us * 0.5;
    r->time_p95_us = p95;
    r->busbw_gbs = (double)r->bytes / us / 1e3;
    cells[nrows].row = r;
    cells[nrows].p5_us = p5;
    nrows++;
    return r;
}

#define M (UINT64_C(1) << 20)

static void fill(void)
{
    /* A: allreduce 1M, three candidates, clear winner */
    add("mpi", "default", "allreduce", M, 100, 90, 110);
    add("mpi", "ring", "allreduce", M, 50, 45, 55);
    add("gloo", "default", "allreduce", M, 200, 190, 210);
    /* faster, but not ok: never counted */
    add("gloo", "ring", "allreduce", M, 1, 1, 1)->status[0] = 'X';
    snprintf(add("gloo", "bcube", "allreduce", M, 2, 2, 2)->status, 16, "wrong");
    /* B: allreduce 4M, ranges overlap: a tie */
    add("mpi", "default", "allreduce", 4 * M, 100, 80, 120);
    add("gloo", "default", "allreduce", 4 * M, 105, 95, 115);
    /* C: allgather 1M, one candidate */
    add("mpi", "default", "allgather", M, 70, 60, 80);
    /* D: allreduce 1M in place: another cell than A */
    add("gloo", "default", "allreduce", M, 10, 9, 11)->in_place = 1;
    /* E: allreduce 16M, gloo/default repeated (300 and 500): the lower middle (300) stands
     * for it, its range spans both (290..520) and overlaps ring's */
    add("gloo", "default", "allreduce", 16 * M, 500, 480, 520);
    add("gloo", "ring", "allreduce", 16 * M, 320, 315, 325);
    add("gloo", "default", "allreduce", 16 * M, 300, 290, 310);
    /* F: broadcast 1M, p5 unknown: ring's minimum (15) overlaps default's p95 (16) */
    add("mpi", "default", "broadcast", M, 12, 10, 16);
    add("mpi", "ring", "broadcast", M, 30, -1, 60);
    /* G: gather 1M, gloo's default is its fastest */
    add("gloo", "default", "gather", M, 10, 9, 11);
    add("gloo", "ring", "gather", M, 30, 28, 32);
    /* H: scatter 1M, mpi without a default cell */
    add("mpi", "ring", "scatter", M, 10, 9, 11);
    add("mpi", "bruck", "scatter", M, 20, 19, 21);
}

static const cp_best_row_t *row_of(const cp_best_t *b, const char *op, uint64_t count, int in_place)
{
    for (size_t i = 0; i < b->nrows; i++) {
        const collprof_result_row_t *r = b->rows[i].d.fast.row;
        if (!strcmp(r->op, op) && r->count == count && r->in_place == in_place) {
            return &b->rows[i];
        }
    }
    return NULL;
}

static int named(const cp_best_cand_t *c, const char *backend, const char *variant)
{
    return c->row != NULL && !strcmp(c->row->backend, backend) && !strcmp(c->row->variant, variant);
}

static int near(double a, double b)
{
    return a > b - 1e-9 && a < b + 1e-9;
}

static void test_rows(const cp_best_t *b)
{
    ok(b->nrows == 8, "8 cells with an ok result (got %zu)", b->nrows);
    ok(b->nbackends == 2 && b->comparisons == 6, "2 backends, 6 cells with a runner-up");
    const cp_best_row_t *r = row_of(b, "allreduce", M, 0);
    ok(r && r->ncand == 3 && named(&r->d.fast, "mpi", "ring") &&
           named(&r->d.slow, "mpi", "default") && near(r->d.ratio, 2.0) && !r->d.tie,
       "allreduce 1M: mpi/ring wins over mpi/default, 2x; wrong and failed cells do not count");
    r = row_of(b, "allreduce", 4 * M, 0);
    ok(r && named(&r->d.fast, "mpi", "default") && r->d.tie && near(r->d.ratio, 1.05),
       "allreduce 4M: overlapping p5-p95 ranges are a tie (1.05x)");
    r = row_of(b, "allgather", M, 0);
    ok(r && r->ncand == 1 && r->d.slow.row == NULL && named(&r->d.fast, "mpi", "default"),
       "allgather 1M: one candidate, no runner-up");
    r = row_of(b, "allreduce", M, 1);
    ok(r && r->ncand == 1 && named(&r->d.fast, "gloo", "default"),
       "allreduce 1M in place is a cell of its own");
    r = row_of(b, "allreduce", 16 * M, 0);
    ok(r && named(&r->d.fast, "gloo", "default") && r->d.fast.repeats == 2 &&
           near(r->d.fast.row->time_mean_us, 300) && near(r->d.fast.lo_us, 290) &&
           near(r->d.fast.hi_us, 520) && r->d.tie,
       "repeats: the lower middle stands for them, the range spans them (a tie)");
    r = row_of(b, "broadcast", M, 0);
    ok(r && r->d.tie && near(r->d.slow.lo_us, 15), "no p5: the minimum stands in (a tie)");
}

static const cp_best_gain_t *gain_of(const cp_best_t *b, const char *backend, const char *op,
                                     uint64_t count)
{
    for (size_t i = 0; i < b->ngains; i++) {
        const collprof_result_row_t *r = b->gains[i].d.fast.row;
        if (!strcmp(r->backend, backend) && !strcmp(r->op, op) && r->count == count) {
            return &b->gains[i];
        }
    }
    return NULL;
}

static void test_pairs_gains(const cp_best_t *b)
{
    ok(b->npairs == 2, "2 cells measured by both backends (got %zu)", b->npairs);
    const cp_best_pair_t *p = &b->pairs[0];
    ok(!strcmp(p->a, "mpi") && !strcmp(p->b, "gloo") && named(&p->d.fast, "mpi", "ring") &&
           named(&p->d.slow, "gloo", "default") && near(p->d.ratio, 4.0) && !p->d.tie,
       "mpi vs gloo, allreduce 1M: the best variants, mpi/ring 4x faster");
    ok(p[1].d.tie && p[1].d.fast.row->count == 4 * M, "mpi vs gloo, allreduce 4M: a tie");
    ok(b->ngains == 5, "5 (backend, cell) pairs with two variants or more (got %zu)", b->ngains);
    const cp_best_gain_t *g = gain_of(b, "mpi", "allreduce", M);
    ok(g && named(&g->d.fast, "mpi", "ring") && named(&g->d.slow, "mpi", "default") &&
           near(g->d.ratio, 2.0) && !g->default_fastest,
       "mpi allreduce 1M: ring 2x over default");
    g = gain_of(b, "gloo", "gather", M);
    ok(g && g->default_fastest && named(&g->d.slow, "gloo", "ring") && near(g->d.ratio, 3.0),
       "gloo gather: the default is fastest, 3x over ring");
    g = gain_of(b, "mpi", "scatter", M);
    ok(g && g->d.slow.row == NULL, "mpi scatter: no default cell");
}

static char *render(const cp_best_t *b)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cp_best_print(f, b);
    fclose(f);
    return buf;
}

static int has_line(const char *text, const char *a, const char *b)
{
    for (const char *l = text; l != NULL && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)n, l);
        if (strstr(line, a) != NULL && strstr(line, b) != NULL) {
            return 1;
        }
    }
    return 0;
}

static void test_text(const cp_best_t *b)
{
    char *t = render(b);
    ok(has_line(t, "mpi/ring", "2.00x faster") && has_line(t, "AllReduce", "tie (1.05x)") &&
           has_line(t, "AllGather", "only candidate"),
       "best-of lines: winner and ratio, tie, only candidate");
    ok(has_line(t, "mpi vs gloo", "mpi 4.00x faster"), "backend vs backend line");
    ok(has_line(t, "ring", "2.00x over default") &&
           has_line(t, "gloo", "default is fastest (3.00x over ring)") &&
           has_line(t, "Scatter", "no default cell"),
       "variant against default lines");
    free(t);
}

static void test_helpers(void)
{
    double v[100];
    for (int i = 0; i < 100; i++) {
        v[i] = 100 - i;
    }
    ok(near(cp_best_p5(v, 100), 5) && near(cp_best_p5(v, 20), 81) && v[0] == 100 &&
           cp_best_p5(NULL, 0) < 0,
       "p5: nearest rank of the per-iteration times, input untouched");
    char buf[32];
    ok(!strcmp(cp_best_fmt_count(M, buf, sizeof(buf)), "1M") &&
           !strcmp(cp_best_fmt_count(3 * 1024, buf, sizeof(buf)), "3K") &&
           !strcmp(cp_best_fmt_count(1000, buf, sizeof(buf)), "1000"),
       "counts: 1M, 3K, 1000");
    collprof_result_row_t a = rows[0], c = rows[0];
    snprintf(c.backend, sizeof(c.backend), "x");
    c.time_mean_us = 1;
    c.iterations = 3;
    ok(cp_best_key_cmp(&a, &c) == 0, "backend, variant and measurements are not the cell");
    c.copy_gbs = 3.5; /* a measurement added later (an F64 column) */
    ok(cp_best_key_cmp(&a, &c) == 0, "a later measurement column is not the cell either");
    snprintf(c.split, sizeof(c.split), "node");
    ok(cp_best_key_cmp(&a, &c) != 0, "a later dimension (split) is part of the cell");
    c = a;
    snprintf(c.memory, sizeof(c.memory), "device");
    ok(cp_best_key_cmp(&a, &c) != 0, "memory is part of the cell");
}

/* The console's "# cells:" counts (format.h): only the statuses that occurred, by name. */
static void check_status_counts(void)
{
    int c[COLLPROF_CELL_STATUS_COUNT] = {0};
    char buf[160];
    cp_format_status_counts(c, buf, sizeof(buf));
    ok(strcmp(buf, "none") == 0, "no cells: %s", buf);
    c[COLLPROF_CELL_OK] = 3;
    c[COLLPROF_CELL_UNSUPPORTED] = 1;
    c[COLLPROF_CELL_TIMEOUT] = 2;
    cp_format_status_counts(c, buf, sizeof(buf));
    ok(strcmp(buf, "3 ok, 1 unsupported, 2 timeout") == 0,
       "zero counts left out, the vocabulary's names and order: %s", buf);
    c[COLLPROF_CELL_OK] = 0;
    cp_format_status_counts(c, buf, 12);
    ok(strlen(buf) == 11 && strncmp(buf, "1 unsupport", 11) == 0, "cut to its room: %s", buf);
}

int main(void)
{
    check_status_counts();
    cp_best_t b;
    fill();
    ok(cp_best_compute(cells, nrows, &b) == 0, "compute");
    test_rows(&b);
    test_pairs_gains(&b);
    test_text(&b);
    cp_best_free(&b);
    test_helpers();
    /* one candidate everywhere: one line says so */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cp_best_print_summary(f, cells, 1);
    cp_best_print_summary(f, cells + 3, 2); /* neither ok: nothing at all */
    fclose(f);
    ok(strstr(buf, "one backend/variant only: nothing to compare") != NULL &&
           strstr(buf, "one backend: nothing to compare") != NULL &&
           strstr(buf, "== totals") == NULL,
       "single candidates: the tables say there is nothing to compare");
    free(buf);
    return tap_done();
}
