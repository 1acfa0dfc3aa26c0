/*
 * The watchdog's hooks (rank 0): what it needs to describe a cell and to
 * close the outputs when the run times out or is stopped by a signal, and
 * the state they read (the open summary, the plan, the cells written).
 */
#include "config.h"

#include "run/wd_hooks.h"

#include "runner/runner.h"
#include "screen/run/screen_run.h"
#include "wd/watchdog.h"
#include "output/result_row.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

/* ---- what the watchdog needs to close the outputs (rank 0) ---------- */
static struct {
    cp_summary_t *sum; /* NULL once closed */
    const cp_plan_t *plan;
    const cp_plugin_t *plugins;
    int done; /* cells written; written under the writer lock (cp_wd_lock) */
} g_run;

static void wd_describe(void *arg, int cell, char *buf, size_t len)
{
    (void)arg;
    if (g_run.plan == NULL || cell < 0 || cell >= g_run.plan->ncells) {
        snprintf(buf, len, "?");
        return;
    }
    const cp_cell_t *c = &g_run.plan->cells[cell];
    snprintf(buf, len, "%s/%s %s %s count %llu", g_run.plugins[c->plugin].name, c->variant,
             collprof_op_name(c->op), collprof_dtype_info(c->dtype)->name,
             (unsigned long long)c->count);
}

/* The cell a stop falls on: between cells (rank 0 wrote cell k and has not begun k+1, which
 * the other ranks may have) it is the next one to write, if there is one. */
static int stopped_cell(int cell)
{
    return cell < g_run.done && g_run.plan != NULL && g_run.done < g_run.plan->ncells ? g_run.done
                                                                                      : cell;
}

/* A row for the cell the run stopped in, unless it is written already (or none). */
static void record_stopped(int cell, collprof_cell_status_t status, const char *msg)
{
    if (cell >= g_run.done && g_run.plan != NULL && cell < g_run.plan->ncells) {
        const cp_cell_t *c = &g_run.plan->cells[cell];
        cp_result_t res;
        collprof_result_row_t row;
        memset(&res, 0, sizeof(res));
        res.fig.status = status;
        res.nranks = g_run.plan->nranks;
        snprintf(res.fig.reason, sizeof(res.fig.reason), "%s", msg);
        cp_result_row(&g_run.plugins[c->plugin], c, &res, cell, &row);
        cp_summary_cell(g_run.sum, &row, &res);
    }
}

/* A screen stopped by a node that no longer answers: its verdict so far, that node
 * unreachable, before the timeout row and the close. */
static void wd_silent(void *arg, const unsigned char *silent, int n)
{
    (void)arg;
    cp_screen_out_t *o = g_run.sum != NULL ? cp_screen_hang_verdict(silent, n) : NULL;
    if (o != NULL) {
        cp_summary_links(g_run.sum, o->pairs.rows, o->pairs.nrows);
        cp_summary_screen(g_run.sum, o->rows, o->nrows, o->pairs.rows, o->pairs.nrows);
    }
}

static void wd_timeout(void *arg, int cell, const char *msg)
{
    (void)arg;
    if (g_run.sum == NULL) {
        return;
    }
    char next[768];
    if (stopped_cell(cell) != cell) {
        /* rank 0 stopped after writing cell k: the others wait in cell k+1 */
        char desc[256];
        wd_describe(NULL, g_run.done, desc, sizeof(desc));
        snprintf(next, sizeof(next),
                 "cell %d (%s) timed out: rank 0 was stopped or frozen after writing cell %d",
                 g_run.done, desc, g_run.done - 1);
        cell = g_run.done;
        msg = next;
    }
    record_stopped(cell, COLLPROF_CELL_TIMEOUT, msg);
    cp_summary_stop(g_run.sum, CP_EXIT_TIMEOUT, "an operation timed out (see the timeout row)");
    g_run.sum = NULL;
}

static void wd_signal(void *arg, int sig, int cell)
{
    (void)arg;
    char why[128];
    snprintf(why, sizeof(why), "stopped by signal %d (%s) after %d of %d cells", sig,
             strsignal(sig), g_run.done, g_run.plan ? g_run.plan->ncells : 0);
    fprintf(stderr, "collprof: %s; completed cells are kept\n", why);
    if (g_run.sum != NULL) {
        record_stopped(stopped_cell(cell), COLLPROF_CELL_INCOMPLETE, why);
        cp_summary_stop(g_run.sum, 128 + sig, why);
        g_run.sum = NULL;
    }
}

cp_wd_hooks_t cp_wdh_hooks(void)
{
    return (cp_wd_hooks_t){.on_timeout = wd_timeout,
                           .on_signal = wd_signal,
                           .on_silent = wd_silent,
                           .describe = wd_describe,
                           .arg = NULL};
}

void cp_wdh_outputs(cp_summary_t *sum, const cp_plan_t *plan, const cp_plugin_t *plugins)
{
    g_run.sum = sum;
    g_run.plan = plan;
    g_run.plugins = plugins;
}

void cp_wdh_closed(void)
{
    g_run.sum = NULL;
}

void cp_wdh_set_done(int ncells)
{
    g_run.done = ncells;
}

int cp_wdh_done(void)
{
    return g_run.done;
}
