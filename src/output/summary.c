#include "config.h"

#include "output/summary.h"

#include "cli/bopts.h"
#include "colls/data.h"
#include "screen/screen_out.h"
#include "base/log.h"
#include "runner/prov.h"
#include "runner/repeat.h"
#include "base/util.h"
#include "format/cflags.h"
#include "format/best.h"
#include "format/format.h"
#include "format/overlap.h"
#include "format/replay_print.h"
#include "format/study.h"
#include "format/world.h"
#include "slurm/slurm_meta.h"
#ifdef CP_HAVE_HDF5
#include "output/h5writer.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

extern char **environ;

struct cp_summary {
    FILE *f;
    char path[4096];
    char h5path[4096];
#ifdef CP_HAVE_HDF5
    cp_h5_t *h5;
#endif
    const cp_run_info_t *ri;
    cp_format_state_t fmt;
    int counts[COLLPROF_CELL_STATUS_COUNT]; /* per collprof_cell_status_t (--replay: per op row) */
    uint64_t wrong;
    char error[256];              /* the first write error, "" when none */
    collprof_result_row_t *study; /* the rows of the studies backends declare */
    size_t nstudy, capstudy;
    collprof_result_row_t *ok; /* the ok rows, for the tables of which backend wins */
    collprof_result_row_t *nb; /* the measured rows of non-blocking ops, for their table */
    size_t nnb, capnb;
    double *ok_p5; /* [nok] the p5 of each one's per-iteration times */
    size_t nok, capok;
    char quiet[16][32]; /* backends whose skipped cells the console shows once */
    int nquiet;
    int nlinks, links_failed;    /* link sweep rows written, and those not ok */
    int screened, screen_status; /* a screen's verdict was written; its status (0, 1, 2) */
    cp_cflag_tally_t cflags;     /* --counters: the cells each kind of trouble touched */
    int counted;                 /* cells with counter rows */
};

/* Does a backend in use declare a study of row's op? */
static int is_study_row(const cp_run_info_t *ri, const collprof_result_row_t *row)
{
    int op = collprof_op_from_name(row->op);
    for (int i = 0; op >= 0 && i < ri->nplugins; i++) {
        const cp_plugin_t *p = &ri->plugins[i];
        if (p->be != NULL && !strcmp(p->name, row->backend) &&
            (p->be->study_ops & COLLPROF_BIT(op))) {
            return 1;
        }
    }
    return 0;
}

/* Append row to a growable table of rows (the study and overlap tables). */
static void push_row(collprof_result_row_t **v, size_t *n, size_t *cap,
                     const collprof_result_row_t *row)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        collprof_result_row_t *g = realloc(*v, c * sizeof(*g));
        if (g == NULL) {
            return; /* the table is a convenience: the rows are in the file */
        }
        *v = g;
        *cap = c;
    }
    (*v)[(*n)++] = *row;
}

static void keep_study_row(cp_summary_t *s, const collprof_result_row_t *row)
{
    if (is_study_row(s->ri, row)) {
        push_row(&s->study, &s->nstudy, &s->capstudy, row);
    }
}

/* A measured row of a non-blocking op, for the overlap table. */
static void keep_nb_row(cp_summary_t *s, const collprof_result_row_t *row)
{
    if (cp_overlap_row(row)) {
        push_row(&s->nb, &s->nnb, &s->capnb, row);
    }
}

/* An ok row and the p5 of its per-iteration times, for the tables of which backend wins. */
static void keep_ok_row(cp_summary_t *s, const collprof_result_row_t *row, const cp_result_t *r)
{
    if (strcmp(row->status, "ok") != 0) {
        return;
    }
    if (s->nok == s->capok) {
        size_t cap = s->capok ? s->capok * 2 : 64;
        collprof_result_row_t *g = realloc(s->ok, cap * sizeof(*g));
        s->ok = g ? g : s->ok;
        double *p = g ? realloc(s->ok_p5, cap * sizeof(*p)) : NULL;
        if (p == NULL) {
            return; /* the tables are a convenience: collprof-report best has the file */
        }
        s->ok_p5 = p;
        s->capok = cap;
    }
    double *iter_max = r->samples ? malloc(sizeof(double) * ((size_t)r->iters + 1)) : NULL;
    s->ok_p5[s->nok] = -1;
    if (iter_max != NULL) {
        cp_stats_iter_max(r->samples, r->nranks, r->iters, iter_max);
        s->ok_p5[s->nok] = cp_best_p5(iter_max, r->iters);
    }
    free(iter_max);
    s->ok[s->nok++] = *row;
}

/* The tables of which backend and variant wins, as collprof-report summary prints them. */
static void print_best(cp_summary_t *s)
{
    cp_best_cell_t *cells = calloc(s->nok + 1, sizeof(*cells));
    if (cells == NULL) {
        return;
    }
    for (size_t i = 0; i < s->nok; i++) {
        cells[i] = (cp_best_cell_t){&s->ok[i], s->ok_p5[i]};
    }
    cp_best_print_summary(s->f, cells, s->nok);
    free(cells);
}

/* The study tables the backends in use declare, as collprof-report summary prints them. */
static void print_study(cp_summary_t *s)
{
    const cp_run_info_t *ri = s->ri;
    collprof_backend_row_t *rows = calloc((size_t)ri->nplugins + 1, sizeof(*rows));
    if (rows == NULL || s->nstudy == 0) {
        free(rows);
        return;
    }
    for (int i = 0; i < ri->nplugins; i++) {
        cp_run_backend_row(ri, i, &rows[i]);
    }
    cp_study_print_all(s->f, s->study, s->nstudy, rows, (size_t)ri->nplugins, ri->opt->link_gbps);
    free(rows);
}

/*
 * The cells of a backend that could not initialise are all "skipped" with
 * the same reason: the files get every row, the console one line.  Returns
 * 1 when the row is not to be printed on its own.
 */
static int console_once(cp_summary_t *s, const collprof_result_row_t *row)
{
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "backend %s is not initialised", row->backend);
    if (strcmp(row->status, "skipped") != 0 || strncmp(row->error, prefix, strlen(prefix)) != 0) {
        return 0;
    }
    for (int i = 0; i < s->nquiet; i++) {
        if (!strcmp(s->quiet[i], row->backend)) {
            return 1;
        }
    }
    if (s->nquiet < (int)(sizeof(s->quiet) / sizeof(s->quiet[0]))) {
        snprintf(s->quiet[s->nquiet++], sizeof(s->quiet[0]), "%s", row->backend);
        printf("  %-7s (every cell skipped, listed in the summary: %s)\n", row->backend,
               row->error);
        return 1;
    }
    return 0;
}

/* Remember the first write failure (errno-based). */
static void write_error(cp_summary_t *s, const char *what, const char *path)
{
    if (s->error[0] == '\0') {
        snprintf(s->error, sizeof(s->error), "%s %s: %s", what, path,
                 errno ? strerror(errno) : "I/O error");
    }
}

const char *cp_summary_error(const cp_summary_t *s)
{
    return s->error[0] ? s->error : "no error";
}

static void print_header(cp_summary_t *s)
{
    const cp_run_info_t *ri = s->ri;
    const cp_boot_t *b = ri->boot;
    cp_summary_print_head(s->f, ri);
    fprintf(s->f, "\n");
    fflush(s->f);

    char ch[400];
    printf("# collprof %s: %d ranks on %d node(s), launcher %s, control channel %s\n",
           PACKAGE_VERSION, b->nranks, b->nnodes, b->launcher, cp_oob_channel(ch, sizeof(ch)));
    if (ri->opt->replay[0] != '\0') { /* the matrix's policies do not apply */
        char rp[256];
        printf("# replay: %s\n", cp_summary_replay_policy(ri->opt, rp, sizeof(rp)));
        fflush(stdout);
        return;
    }
    char batch[16] = "";
    if (ri->opt->sync == CP_SYNC_BATCH) {
        snprintf(batch, sizeof(batch), ":%d", ri->opt->batch);
    }
    char check[32];
    printf("# time = mean over %s of the max over ranks; --sync %s%s --alloc %s "
           "--rotate-buffers %d --check %s\n",
           ri->opt->sync == CP_SYNC_BATCH ? "samples (a batch / its size)" : "iterations",
           cp_sync_name(ri->opt->sync), batch, cp_alloc_name(ri->opt->alloc), ri->opt->rotate,
           cp_check_name(cp_check_applied(ri->opt->check, ri->opt->check_mode), ri->opt->check_k,
                         check, sizeof(check)));
    if (!ri->opt->link_sweep) {
        cp_format_table_header(stdout);
    }
    fflush(stdout);
}

int cp_summary_open(const cp_run_info_t *ri, cp_summary_t **out, char *err, size_t errlen)
{
    cp_summary_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->ri = ri;
    char ts[32], base[512];
    cp_utc_compact(ts, sizeof(ts));
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    const char *task = getenv("SLURM_ARRAY_TASK_ID");
    int o = snprintf(base, sizeof(base), "collprof_%s_w%d", ts, ri->boot->nranks);
    if (job != NULL && o > 0 && (size_t)o < sizeof(base)) {
        o += snprintf(base + o, sizeof(base) - (size_t)o, "_j%.32s", job);
        if (task != NULL && (size_t)o < sizeof(base)) {
            o += snprintf(base + o, sizeof(base) - (size_t)o, "_a%.16s", task);
        }
        if (step != NULL && (size_t)o < sizeof(base)) {
            snprintf(base + o, sizeof(base) - (size_t)o, "_s%.16s", step);
        }
    }
    const char *dir = cp_output_dir(ri->opt);
    int fd = cp_output_create(dir, base, s->path, sizeof(s->path), s->h5path, sizeof(s->h5path));
    if (fd < 0 || (s->f = fdopen(fd, "w")) == NULL) {
        snprintf(err, errlen, "cannot create %s: %s", s->path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(s->path);
            unlink(s->h5path);
        }
        free(s);
        return -1;
    }
#ifdef CP_HAVE_HDF5
    if (cp_h5_open(s->h5path, ri, &s->h5, err, errlen) != 0) {
        fclose(s->f);
        unlink(s->path);
        unlink(s->h5path);
        free(s);
        return -1;
    }
#endif
    print_header(s);
    *out = s;
    return 0;
}

/*
 * HDF5 1.10 cannot take ENOSPC in the middle of a write: the file's last
 * good state is lost with it.  So a cell is written only when the file
 * system has room for it with a wide margin; otherwise the run stops with
 * every earlier cell intact.  (A disk filled by someone else between two
 * cells can still hit the write error path.)
 */
static int room_for(cp_summary_t *s, const cp_result_t *r)
{
    struct statvfs v;
    if (s->h5path[0] == '\0' || statvfs(s->h5path, &v) != 0) {
        return 1; /* cannot tell: try */
    }
    double avail = (double)v.f_bavail * (double)v.f_frsize;
    double need = 64.0 * 1024 + (double)r->nranks * ((double)r->iters + 8.0) * 8.0;
    if (avail >= 4.0 * need + 256.0 * 1024) {
        return 1;
    }
    snprintf(s->error, sizeof(s->error),
             "the file system of %s is full or nearly so (%.0f KiB free, the next cell needs "
             "about %.0f KiB with margin)",
             s->h5path, avail / 1024, (4.0 * need + 256.0 * 1024) / 1024);
    return 0;
}

/* No room for a cell's raw data: its row alone (a few KiB), marked
 * incomplete, so that the file names the cell the run stopped in as the
 * text summary does; nothing when even that could fill the disk. */
#define ROW_ONLY_ROOM (128.0 * 1024)
static void h5_row_only(cp_summary_t *s, const collprof_result_row_t *row, const cp_result_t *r)
{
    struct statvfs v;
    if (statvfs(s->h5path, &v) != 0 || (double)v.f_bavail * (double)v.f_frsize < ROW_ONLY_ROOM) {
        return;
    }
    collprof_result_row_t lean = *row;
    cp_result_t bare = *r;
    bare.samples = NULL;
    bare.rank_mean = NULL;
    snprintf(lean.status, sizeof(lean.status), "%s",
             collprof_cell_status_name(COLLPROF_CELL_INCOMPLETE));
    snprintf(lean.error, sizeof(lean.error),
             "not stored: the file system is full (the text summary has its figures)");
    if (cp_h5_cell(s->h5, &lean, &bare) != 0) {
        cp_h5_close(s->h5, "incomplete");
        s->h5 = NULL;
    }
}

/* A cell whose repeats stopped at --max-time before --target-ci was reached says so. */
static void target_note(const cp_options_t *opt, const cp_result_t *r, FILE *f)
{
    if (opt->target_ci_pct <= 0 || r->repeats == 0 || r->fig.status != COLLPROF_CELL_OK) {
        return;
    }
    double pct = cp_repeat_ci_pct(&r->ci);
    if (r->ci.coverage < CP_STATS_CI_LEVEL || pct < 0 || pct > opt->target_ci_pct) {
        fprintf(f, "    --target-ci %g%% not reached within --max-time %g s (%d repeats)\n",
                opt->target_ci_pct, opt->max_time_s, r->repeats);
    }
}

int cp_summary_cell(cp_summary_t *s, const collprof_result_row_t *row, const cp_result_t *r)
{
    FILE *f = s->f;
    s->counts[r->fig.status]++;
    s->wrong += r->fig.wrong;
#ifdef CP_HAVE_HDF5
    /* the HDF5 file first: once the text summary shows a cell, the result
     * file holds it too (a run killed in between keeps both consistent) */
    errno = 0;
    if (s->h5 != NULL && s->error[0] == '\0' && !room_for(s, r)) {
        /* reported by the caller, which stops the run */
        h5_row_only(s, row, r);
    } else if (s->h5 != NULL && cp_h5_cell(s->h5, row, r) != 0) {
        write_error(s, "writing", s->h5path);
        cp_log(CP_LOG_ERROR, "writing cell %d to %s failed", row->cell, s->h5path);
        cp_h5_close(s->h5, "incomplete");
        s->h5 = NULL;
    }
#endif
    cp_format_summary_row(&s->fmt, row, f);
    target_note(s->ri->opt, r, f);
    cp_cflag_notes(r->counters, (size_t)r->ncounters, f);
    cp_cflag_tally_add(&s->cflags, row->cell, r->counters, (size_t)r->ncounters);
    s->counted += r->ncounters > 0;
    keep_study_row(s, row);
    keep_ok_row(s, row, r);
    keep_nb_row(s, row);
    if (r->send_bytes != NULL && r->recv_bytes != NULL) {
        fprintf(f, "    bytes sent/received per rank:");
        for (int q = 0; q < r->nranks; q++) {
            fprintf(f, " r%d %llu/%llu", q, (unsigned long long)r->send_bytes[q],
                    (unsigned long long)r->recv_bytes[q]);
        }
        fprintf(f, "\n");
    }
    errno = 0;
    if (fflush(f) != 0 || ferror(f)) {
        write_error(s, "writing", s->path);
    }
    if (!console_once(s, row)) {
        cp_format_table_row(row, stdout);
    }
    fflush(stdout);
    return s->error[0] ? -1 : 0;
}

#ifdef CP_HAVE_HDF5
/* After an HDF5 table was written (rc): a failure said once, the file closed as incomplete. */
static void h5_written(cp_summary_t *s, int rc)
{
    if (rc != 0) {
        write_error(s, "writing", s->h5path);
        cp_h5_close(s->h5, "incomplete");
        s->h5 = NULL;
    }
}
#endif

/* The text summary flushed (a failure said), and the console. */
static int flushed(cp_summary_t *s)
{
    errno = 0;
    if (fflush(s->f) != 0 || ferror(s->f)) {
        write_error(s, "writing", s->path);
    }
    fflush(stdout);
    return s->error[0] ? -1 : 0;
}

int cp_summary_links(cp_summary_t *s, const collprof_link_row_t *rows, size_t n)
{
    errno = 0;
#ifdef CP_HAVE_HDF5
    h5_written(s, s->h5 != NULL ? cp_h5_links(s->h5, rows, n) : 0);
#endif
    for (size_t i = 0; i < n; i++) {
        s->nlinks++;
        s->links_failed += strcmp(rows[i].status, "ok") != 0;
    }
    if (!s->ri->opt->screen) { /* the screen's pairs are few of a matrix: its verdict says */
        cp_summary_print_links(s->f, s->ri, rows, n);
        cp_summary_print_links(stdout, s->ri, rows, n);
    }
    return flushed(s);
}

int cp_summary_screen(cp_summary_t *s, const collprof_screen_row_t *rows, size_t n,
                      const collprof_link_row_t *links, size_t nlinks)
{
    errno = 0;
#ifdef CP_HAVE_HDF5
    h5_written(s, s->h5 != NULL ? cp_h5_screen(s->h5, rows, n) : 0);
#endif
    s->screen_status = cp_screen_status(rows, n);
    s->screened = 1;
    cp_screen_print(s->f, rows, n, links, nlinks);
    cp_screen_print(stdout, rows, n, links, nlinks);
    return flushed(s);
}

int cp_summary_replay(cp_summary_t *s, const collprof_replay_row_t *rows, size_t n, uint64_t at)
{
#ifdef CP_HAVE_HDF5
    h5_written(s, s->h5 != NULL && at != CP_REPLAY_PRINT ? cp_h5_replay(s->h5, at, rows, n) : 0);
#endif
    for (size_t i = 0; at != CP_REPLAY_PRINT && i < n; i++) { /* the totals: each op once */
        int st = collprof_cell_status_from_name(rows[i].status);
        if (!strcmp(rows[i].what, "op") && st >= 0 && st < COLLPROF_CELL_STATUS_COUNT) {
            s->counts[st]++;
            s->wrong += rows[i].wrong;
        }
    }
    for (int k = 0; at == CP_REPLAY_PRINT && k < 2; k++) {
        cp_replay_print(k ? stdout : s->f, rows, n, COLLPROF_SCHEMA_VERSION_MINOR);
    }
    return flushed(s);
}

/* What a screen's status (cp_screen_status) means. */
static const char *screen_words(int status)
{
    return status == 0   ? "healthy"
           : status == 1 ? "something flagged (see the screen's verdict)"
                         : "inconclusive";
}

/* The totals block of the text summary. */
static void totals(cp_summary_t *s, const char *result, int exit_status)
{
    char iso[64];
    cp_utc_iso(iso, sizeof(iso));
    print_study(s);
    cp_overlap_print(s->f, s->nb, s->nnb);
    print_best(s);
    fprintf(s->f, "\n== totals ==\n");
    fprintf(s->f, "%s      %d ok, %d wrong, %d error, %d unsupported, %d skipped\n",
            s->ri->opt->replay[0] != '\0' ? "ops:  " : "cells:", s->counts[COLLPROF_CELL_OK],
            s->counts[COLLPROF_CELL_WRONG], s->counts[COLLPROF_CELL_ERROR],
            s->counts[COLLPROF_CELL_UNSUPPORTED], s->counts[COLLPROF_CELL_SKIPPED]);
    if (s->counts[COLLPROF_CELL_TIMEOUT] > 0) {
        fprintf(s->f, "timeouts:   %d\n", s->counts[COLLPROF_CELL_TIMEOUT]);
    }
    if (s->screened) {
        fprintf(s->f, "screen:     %s\n", screen_words(s->screen_status));
    }
    if (s->ri->opt->link_sweep) {
        fprintf(s->f, "links:      %d measured (pairs x sizes x backends), %d not ok\n", s->nlinks,
                s->links_failed);
    }
    if (s->counted > 0) {
        char buf[512];
        fprintf(s->f, "counters:   %s flagged\n",
                cp_cflag_tally_text(&s->cflags, buf, sizeof(buf)));
    }
    fprintf(s->f, "#wrong:     %llu\n", (unsigned long long)s->wrong);
    fprintf(s->f, "result:     %s (exit status %d)\n", result, exit_status);
    fprintf(s->f, "finished:   %s\n", iso);
}

/* The summary's memory, once its files are closed. */
static void summary_free(cp_summary_t *s)
{
    free(s->study);
    free(s->nb);
    free(s->ok);
    free(s->ok_p5);
    free(s);
}

void cp_summary_stop(cp_summary_t *s, int exit_status, const char *why)
{
    char result[320];
    snprintf(result, sizeof(result), "INCOMPLETE: %s", why);
    totals(s, result, exit_status);
    fclose(s->f);
#ifdef CP_HAVE_HDF5
    cp_h5_close(s->h5, "incomplete");
#endif
    fprintf(stderr, "collprof: results so far (every completed cell): %s%s%s\n", s->path,
            s->h5path[0] ? " and " : "", s->h5path);
    fflush(stdout);
    summary_free(s);
}

void cp_summary_close(cp_summary_t *s, int exit_status)
{
    totals(s, exit_status == 0 ? "PASSED" : "FAILED", exit_status);
    fclose(s->f);
#ifdef CP_HAVE_HDF5
    cp_h5_close(s->h5, "complete");
#endif
    if (s->screened) {
        printf("# screen: %d pair tests, %d not ok; %s (exit status %d)\n", s->nlinks / 2,
               s->links_failed, screen_words(s->screen_status), exit_status);
    } else if (s->ri->opt->link_sweep) {
        printf("# links: %d measured, %d not ok: %s\n", s->nlinks, s->links_failed,
               exit_status == 0 ? "PASSED" : "FAILED");
    } else {
        char counts[160]; /* only the statuses that occurred: "1 ok, 3 unsupported" */
        cp_format_status_counts(s->counts, counts, sizeof(counts));
        printf("# %s: %s; #wrong %llu: %s\n", s->ri->opt->replay[0] != '\0' ? "ops" : "cells",
               counts, (unsigned long long)s->wrong, exit_status == 0 ? "PASSED" : "FAILED");
    }
    printf("# summary: %s\n", s->path);
    if (s->h5path[0]) {
        printf("# results: %s\n", s->h5path);
    }
    fflush(stdout);
    summary_free(s);
}

const char *cp_summary_path(const cp_summary_t *s)
{
    return s->path;
}

const char *cp_summary_h5_path(const cp_summary_t *s)
{
    return s->h5path[0] ? s->h5path : NULL;
}
