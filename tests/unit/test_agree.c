/*
 * The core's exchanges when one rank finds no memory: 3 forked ranks over the shared-memory
 * channel of oob_shm.h, each in turn with every calloc failing during an agreement
 * (cp_agree_over) and during the provenance gather (cp_prov_gather).  Every rank must make the
 * same calls and come to the same answer: the channel stays in step (the next agreement
 * passes on every rank), nothing hangs (each rank has an alarm).
 */
#include "config.h"

#include "runner/prov.h"
#include "runner/runner.h"
#include "oob_shm.h"
#include "tap.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define NR 3

/* per rank: the outcome of each case, for the parent to print */
typedef struct outcome {
    int ncases;
    struct {
        int ok;
        char what[200];
    } c[32];
} outcome_t;

static outcome_t *outs;
static int me;
static volatile int no_calloc; /* this process's callocs fail while set */

/* malloc, through a pointer the compiler cannot see through (malloc and memset it would make
 * a call of calloc: this one) */
static void *(*volatile plain_malloc)(size_t) = malloc;

/* calloc for the whole test program (libcpoutput is linked in): NULL while no_calloc is set,
 * else malloc's memory zeroed */
void *calloc(size_t n, size_t size)
{
    if (no_calloc || (size != 0 && n > SIZE_MAX / size)) {
        return NULL;
    }
    void *p = plain_malloc(n * size);
    if (p != NULL) {
        memset(p, 0, n * size);
    }
    return p;
}

__attribute__((format(printf, 2, 3))) static void record(int cond, const char *fmt, ...)
{
    outcome_t *o = &outs[me];
    if (o->ncases >= 32) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->c[o->ncases].what, sizeof(o->c[0].what), fmt, ap);
    va_end(ap);
    o->c[o->ncases++].ok = cond;
}

static const cp_oob_t oob = {.allgather = oob_shm_allgather,
                             .gather = oob_shm_gather,
                             .bcast = oob_shm_bcast,
                             .barrier = oob_shm_barrier};

/* Rank bad without calloc in an agreement in which rank 1 fails: every rank hears rank 1. */
static void agree_case(int bad)
{
    cp_agreement_t a;
    no_calloc = me == bad;
    cp_agree_result_t ar = cp_agree_over(&oob, NR, me == 1 ? COLLPROF_ERR_IO : COLLPROF_OK,
                                         me == 1 ? "disk full on h1" : "fine", &a);
    no_calloc = 0;
    record(ar == CP_AGREE_FAILED && a.rank == 1 && a.status == COLLPROF_ERR_IO &&
               strcmp(a.msg, "disk full on h1") == 0,
           "agreement, no calloc on rank %d: rank 1's failure on every rank (%d, rank %d, '%s')",
           bad, (int)ar, a.rank, a.msg);
}

/* Rank bad without calloc in the provenance gather: -1 and no provenance on every rank. */
static void prov_case(const collprof_backend_t *be, int bad)
{
    cp_plugin_t pl;
    memset(&pl, 0, sizeof(pl));
    snprintf(pl.name, sizeof(pl.name), "fake");
    pl.be = be;
    pl.ctx = &pl;
    cp_cell_t cell;
    memset(&cell, 0, sizeof(cell));
    cell.memtype = COLLPROF_MEM_HOST;
    cell.pre_status = COLLPROF_CELL_PENDING;
    cp_plan_t plan = {.cells = &cell, .ncells = 1};
    no_calloc = me == bad;
    int rc = cp_prov_gather(&pl, 1, &plan, &oob, me, NR);
    no_calloc = 0;
    int none = bad < 0 ? pl.prov[COLLPROF_MEM_HOST] != NULL : pl.prov[COLLPROF_MEM_HOST] == NULL;
    record((bad < 0 ? rc == 0 : rc == -1) && none,
           "provenance, no calloc on rank %d: %d on every rank (got %d, %s)", bad, bad < 0 ? 0 : -1,
           rc, pl.prov[COLLPROF_MEM_HOST] ? "gathered" : "none");
    cp_prov_free(&pl, 1);
}

/* The channel in step after a case: an agreement where every rank passes. */
static void in_step(const char *after)
{
    cp_agreement_t a;
    cp_agree_result_t ar = cp_agree_over(&oob, NR, COLLPROF_OK, "fine", &a);
    record(ar == CP_AGREE_OK && a.rank == -1, "in step after %s (%d, rank %d)", after, (int)ar,
           a.rank);
}

static int rank_entry(int rank, void *arg)
{
    (void)arg;
    me = rank;
    collprof_backend_t be = {.size = sizeof(be), .name = "fake", .describe = collprof_no_describe};
    char what[64];
    for (int bad = 0; bad < NR; bad++) {
        agree_case(bad);
        snprintf(what, sizeof(what), "the agreement without calloc on rank %d", bad);
        in_step(what);
    }
    for (int bad = 0; bad < NR; bad++) {
        prov_case(&be, bad);
        snprintf(what, sizeof(what), "the provenance without calloc on rank %d", bad);
        in_step(what);
    }
    prov_case(&be, -1);
    return 0;
}

int main(void)
{
    outs = mmap(NULL, sizeof(outcome_t) * NR, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                -1, 0);
    if (outs == MAP_FAILED || oob_shm_create(NR) != 0) {
        perror("mmap");
        return 1;
    }
    int st[NR], failed = 0, ncases = 0;
    oob_shm_fork(rank_entry, NULL, 60, st);
    for (int r = 0; r < NR; r++) {
        failed += !WIFEXITED(st[r]) || WEXITSTATUS(st[r]) != 0;
        ncases = outs[r].ncases > ncases ? outs[r].ncases : ncases;
    }
    ok(failed == 0, "3 ranks exited 0 (a rank that hangs ends on its alarm)");
    ok(ncases == 13, "13 cases on some rank (%d)", ncases);
    for (int k = 0; k < ncases; k++) {
        int all = 1, from = 0;
        for (int r = 0; r < NR; r++) {
            all &= k < outs[r].ncases && outs[r].c[k].ok;
            from = k < outs[r].ncases ? r : from;
        }
        ok(all, "%s", outs[from].c[k].what);
    }
    return tap_done();
}
