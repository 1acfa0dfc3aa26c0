/*
 * `best FILE|DIR... [--csv|--json]`: which backend and variant wins, per
 * cell, from one or several files (a Gloo run and an NCCL run made in
 * different jobs, say).  The tables and their rules are those of
 * src/format/best.c, which the run's text summary and `summary` also
 * print: nothing here is computed twice.  Files of different world sizes
 * are refused: their times are not comparable.
 */
#include "config.h"

#include "report/report.h"

#include "format/best.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report best FILE|DIR... [--csv|--json] [-o OUT]\n"
               "Which backend and variant is fastest, from the ok cells of one or several\n"
               "result files of the same world size (a DIR stands for its collprof_*.h5\n"
               "files).  Three tables, the same that end the text summary:\n"
               "  - per cell (op and its attributes, dtype, count): the fastest\n"
               "    backend/variant with its time and busBW, the runner-up, and how much\n"
               "    faster the fastest is; 'tie' when the two are within noise (their\n"
               "    p5-p95 ranges of per-iteration times overlap);\n"
               "  - per pair of backends: the ratio of their fastest variants' times;\n"
               "  - per backend: its fastest variant against its default variant.\n"
               "Time is the mean over iterations of the max over ranks.  A backend/variant\n"
               "with several results on one cell (several files) is represented by its\n"
               "median result, and its noise range spans them all.\n"
               "\n"
               "Replays of one trace (collprof --replay, on several backends) are ranked by\n"
               "op x size x group and for the whole trace instead (text only).\n"
               "\n"
               "  --csv         one comma-separated table, a 'table' column first\n"
               "                (best, pair or gain), a header line first\n"
               "  --json        an object: files, world_size, and the arrays best,\n"
               "                backend_vs_backend and variant_vs_default\n"
               "  -o, --output OUT  write to OUT instead of standard output\n"
               "  -h, --help    this help\n"
               "\n"
               "Exit status: 0 success, 2 bad usage, a file that cannot be read, or files\n"
               "of different world sizes (then nothing is written).\n");
}

/* ---- --csv and --json: one record per table row ----------------------------------- */

enum { OUT_TEXT, OUT_CSV, OUT_JSON };
enum { EMIT_HEADER, EMIT_CSV, EMIT_JSON };

typedef struct emit {
    FILE *out;
    int mode;
    int first;
} emit_t;

static void field(emit_t *e, const char *name)
{
    if (e->mode == EMIT_JSON) {
        fputs(e->first ? "" : ", ", e->out);
        cp_report_json_string(e->out, name);
        fputs(": ", e->out);
    } else if (!e->first) {
        fputc(',', e->out);
    }
    if (e->mode == EMIT_HEADER) {
        fputs(name, e->out);
    }
    e->first = 0;
}

static void put_str(emit_t *e, const char *name, const char *s)
{
    field(e, name);
    if (e->mode == EMIT_JSON) {
        cp_report_json_string(e->out, s ? s : "");
    } else if (e->mode == EMIT_CSV) {
        cp_report_csv_field(e->out, s ? s : "");
    }
}

/* num NULL: none (null in JSON, an empty CSV field) */
static void put_num(emit_t *e, const char *name, const char *num)
{
    field(e, name);
    if (e->mode != EMIT_HEADER) {
        fputs(num ? num : e->mode == EMIT_JSON ? "null" : "", e->out);
    }
}

static void put_double(emit_t *e, const char *name, double d, int have)
{
    char num[64];
    cp_report_fmt_double(d, num, sizeof(num));
    put_num(e, name, have ? num : NULL);
}

static void put_int(emit_t *e, const char *name, long long v, int have)
{
    char num[32];
    snprintf(num, sizeof(num), "%lld", v);
    put_num(e, name, have ? num : NULL);
}

/* The candidate's fields, prefixed "fast_" or "slow_". */
static void put_cand(emit_t *e, const char *prefix, const cp_best_cand_t *c)
{
    static const char *const names[] = {"backend", "variant", "time_us", "busbw_gbs",
                                        "p5_us",   "p95_us",  "repeats"};
    char n[7][32];
    const collprof_result_row_t *r = c->row;
    for (int i = 0; i < 7; i++) {
        snprintf(n[i], sizeof(n[i]), "%s%s", prefix, names[i]);
    }
    put_str(e, n[0], r ? r->backend : NULL);
    put_str(e, n[1], r ? r->variant : NULL);
    put_double(e, n[2], r ? r->time_mean_us : 0, r != NULL);
    put_double(e, n[3], r ? r->busbw_gbs : 0, r != NULL);
    put_double(e, n[4], c->lo_us, r != NULL); /* the noise range: p5 (or the minimum) */
    put_double(e, n[5], c->hi_us, r != NULL);
    put_int(e, n[6], c->repeats, r != NULL);
}

/* One record: which table (CSV only), the backends it is about, the cell, the duel. */
static void record(emit_t *e, const char *table, const char *backends, const cp_best_duel_t *d,
                   const char *verdict)
{
    const collprof_result_row_t *r = d->fast.row;
    char count[32];
    e->first = 1;
    if (e->mode != EMIT_JSON) {
        put_str(e, "table", table);
    }
    put_str(e, "backends", backends);
    put_str(e, "op", r->op);
    put_str(e, "dtype", r->dtype);
    put_str(e, "redop", r->redop);
    put_int(e, "root", r->root, 1);
    put_int(e, "in_place", r->in_place, 1);
    put_str(e, "imbalance", r->imbalance);
    put_str(e, "memory", r->memory);
    snprintf(count, sizeof(count), "%llu", (unsigned long long)r->count);
    put_num(e, "count", count);
    snprintf(count, sizeof(count), "%llu", (unsigned long long)r->bytes);
    put_num(e, "bytes", count);
    put_cand(e, "fast_", &d->fast);
    put_cand(e, "slow_", &d->slow);
    put_double(e, "ratio", d->ratio, d->slow.row != NULL);
    put_num(e, "tie",
            d->slow.row == NULL    ? NULL
            : e->mode == EMIT_JSON ? (d->tie ? "true" : "false")
                                   : (d->tie ? "1" : "0"));
    put_str(e, "verdict", verdict);
}

/* Every record of b: table k = 0 best, 1 pair, 2 gain; JSON arrays get their separators. */
static void records(emit_t *e, const cp_best_t *b, int k)
{
    size_t n = k == 0 ? b->nrows : k == 1 ? b->npairs : b->ngains;
    for (size_t i = 0; i < n; i++) {
        char verdict[160], who[80] = "";
        const cp_best_duel_t *d;
        if (k == 0) {
            d = &b->rows[i].d;
            cp_best_row_verdict(&b->rows[i], verdict, sizeof(verdict));
        } else if (k == 1) {
            d = &b->pairs[i].d;
            snprintf(who, sizeof(who), "%s vs %s", b->pairs[i].a, b->pairs[i].b);
            cp_best_pair_verdict(&b->pairs[i], verdict, sizeof(verdict));
        } else {
            d = &b->gains[i].d;
            snprintf(who, sizeof(who), "%s", d->fast.row->backend);
            cp_best_gain_verdict(&b->gains[i], verdict, sizeof(verdict));
        }
        if (e->mode == EMIT_JSON) {
            fputs(i ? ",\n    {" : "\n    {", e->out);
        }
        record(e, k == 0 ? "best" : k == 1 ? "pair" : "gain", who, d, verdict);
        fputs(e->mode == EMIT_JSON ? "}" : "\n", e->out);
    }
}

typedef struct settings {
    int format; /* OUT_TEXT, OUT_CSV or OUT_JSON (the option indices) */
    const char *output;
} settings_t;

typedef struct loaded {
    int format;
    cp_report_file_t **files;
    int n;
    const cp_best_t *b;
} loaded_t;

static void write_csv(FILE *out, const loaded_t *l)
{
    emit_t e = {out, EMIT_HEADER, 1};
    cp_best_duel_t none;
    memset(&none, 0, sizeof(none));
    collprof_result_row_t blank;
    memset(&blank, 0, sizeof(blank));
    none.fast.row = &blank;
    record(&e, "", "", &none, ""); /* the names */
    fputc('\n', out);
    e.mode = EMIT_CSV;
    for (int k = 0; k < 3; k++) {
        records(&e, l->b, k);
    }
}

static void write_json(FILE *out, const loaded_t *l)
{
    static const char *const arrays[] = {"best", "backend_vs_backend", "variant_vs_default"};
    emit_t e = {out, EMIT_JSON, 1};
    fputs("{\n  \"files\": [", out);
    for (int i = 0; i < l->n; i++) {
        fputs(i ? ", " : "", out);
        cp_report_json_string(out, l->files[i]->path);
    }
    fprintf(out, "],\n  \"world_size\": %lld", l->files[0]->root.world_size);
    for (int k = 0; k < 3; k++) {
        fprintf(out, ",\n  \"%s\": [", arrays[k]);
        records(&e, l->b, k);
        size_t n = k == 0 ? l->b->nrows : k == 1 ? l->b->npairs : l->b->ngains;
        fputs(n ? "\n  ]" : "]", out);
    }
    fputs("\n}\n", out);
}

static void write_text(FILE *out, const loaded_t *l)
{
    fprintf(out, "# collprof-report best: %lld ranks, %d file%s\n", l->files[0]->root.world_size,
            l->n, l->n == 1 ? "" : "s");
    for (int i = 0; i < l->n; i++) {
        const cp_report_file_t *f = l->files[i];
        fprintf(out, "#   %s (created %s%s%s)\n", f->path,
                f->root.created[0] ? f->root.created : "?", f->root.tag[0] ? ", tag " : "",
                f->root.tag);
    }
    if (l->b->nrows == 0) {
        fprintf(out, "no cell is ok: nothing to compare\n");
        return;
    }
    cp_best_print(out, l->b);
}

static void write_out(FILE *out, const void *data)
{
    const loaded_t *l = data;
    (l->format == OUT_CSV ? write_csv : l->format == OUT_JSON ? write_json : write_text)(out, l);
}

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k != OUT_CSV && k != OUT_JSON) {
        s->output = val;
    } else if (s->format != OUT_TEXT && s->format != k) {
        cp_report_error("best: choose one of --csv and --json");
        return -1;
    } else {
        s->format = k;
    }
    return 0;
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    const settings_t *s = ctx;
    int replays = 0;
    for (int i = 0; i < n; i++) {
        replays += CP_REPORT_IS_REPLAY(files[i]);
    }
    if (replays > 0 && (replays < n || s->format != OUT_TEXT || s->output != NULL)) {
        cp_report_error("best: %s", replays < n ? "replays (collprof --replay) and matrix runs "
                                                  "cannot be ranked together"
                                                : "replays are ranked as text on standard output "
                                                  "only (no --csv, --json or -o yet)");
        return CP_REPORT_EXIT_BAD;
    }
    if (replays > 0) {
        cp_report_replay_best(files, n);
        return CP_REPORT_EXIT_OK;
    }
    for (int i = 1; i < n; i++) {
        if (files[i]->root.world_size != files[0]->root.world_size) {
            const cp_report_file_t *z = files[0]->root.world_size == 0 ? files[0] : files[i];
            char hint[4200] = ""; /* OSU does not say how many ranks ran */
            if (z->root.world_size == 0 && z->root.imported_from[0]) {
                snprintf(hint, sizeof(hint), " (%s: import it with --ranks N)", z->path);
            }
            cp_report_error("best: %s has %lld ranks, %s has %lld: only runs of one world size "
                            "are compared%s",
                            files[0]->path, files[0]->root.world_size, files[i]->path,
                            files[i]->root.world_size, hint);
            return CP_REPORT_EXIT_BAD;
        }
    }
    size_t ncells;
    cp_best_t b;
    cp_best_cell_t *cells = cp_report_best_cells(files, n, &ncells);
    if (cells == NULL) {
        return CP_REPORT_EXIT_BAD;
    }
    if (cp_best_compute(cells, ncells, &b) != 0) {
        free(cells);
        cp_report_error("out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    loaded_t l = {s->format, files, n, &b};
    int rc = cp_report_write(s->output, write_out, &l);
    cp_best_free(&b);
    free(cells);
    return rc;
}

int cp_report_cmd_best(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"csv", 0, 0}, {"json", 0, 0}, {"output", 'o', 1}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"best", usage, opts, option, NULL, CP_REPORT_FILES_ALL,
                                        run};
    settings_t s = {OUT_TEXT, NULL};
    return cp_report_run(&cmd, &s, argc, argv);
}
