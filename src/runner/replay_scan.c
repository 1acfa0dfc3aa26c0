#include "config.h"

#include "runner/replay_scan.h"

#include <collprof/plugin.h>
#include <collprof/vocab.h>
#include "runner/replay_check.h"
#include "runner/replay_gaps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cp_trace_scan_t S;
static int have;

static int in_range(const collprof_trace_op_row_t *r)
{
    return r->seq >= S.lo && (S.hi < 0 || r->seq <= S.hi);
}

static int is_coll(const collprof_trace_op_row_t *r)
{
    return strcmp(r->op, "send") != 0 && strcmp(r->op, "recv") != 0 && strcmp(r->op, "wait") != 0;
}

/* An op whose members' own records the replay reads: all-to-all-v's splits are compared
 * (replay_match.c); the variable ops take each member's block from its record (replay.c's
 * blocks_of). */
static int every_members(const collprof_trace_op_row_t *r)
{
    static const char *const v[] = {"alltoallv", "allgatherv", "gatherv", "scatterv",
                                    "reducescatter"};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        if (strcmp(r->op, v[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* This rank's ops in range, and every member's record of the ops above. */
static int keep(void *arg, const collprof_trace_op_row_t *r)
{
    (void)arg;
    return in_range(r) && (r->rank == S.rank || every_members(r));
}

/* Every row: the figures of the whole trace. */
static void see(void *arg, const cp_trace_t *t, const collprof_trace_op_row_t *r)
{
    int *oom = arg;
    if (S.all == NULL && !*oom) { /* the first row: the groups and members are read */
        S.nr = (size_t)(t->nranks > 0 ? t->nranks : 1);
        S.all = calloc(2 * t->ngroups * S.nr + 1, sizeof(int64_t));
        S.kept = S.all != NULL ? S.all + t->ngroups * S.nr : NULL;
        *oom = S.all == NULL;
    }
    S.top = r->seq > S.top ? r->seq : S.top;
    int k = in_range(r);
    if (S.all != NULL && is_coll(r) && (size_t)r->rank < S.nr) {
        S.all[(size_t)r->group * S.nr + (size_t)r->rank]++;
        S.kept[(size_t)r->group * S.nr + (size_t)r->rank] += k;
    }
    if (!k) {
        return;
    }
    S.nops++;
    if (S.rank == 0) { /* the check: once, on rank 0 (the same trace: the same answer) */
        cp_replay_check_row(t, r);
    }
    int op = collprof_op_from_name(r->op);
    S.used |= op >= 0 ? COLLPROF_BIT(op) : 0;
    if (r->t_issue_ns >= 0) {
        int64_t end = r->t_issue_ns + (r->dur_ns > 0 ? r->dur_ns : 0);
        S.first_ns = S.first_ns < 0 || r->t_issue_ns < S.first_ns ? r->t_issue_ns : S.first_ns;
        S.end_ns = end > S.end_ns ? end : S.end_ns;
    }
}

#ifdef CP_HAVE_HDF5
int cp_replay_read(const char *path, const char *range, int rank, int nranks, int shrink,
                   cp_trace_t *t, const cp_trace_scan_t **scan, char *err, size_t len)
{
    cp_replay_scan_free();
    *scan = NULL;
    char why[8];
    S = (cp_trace_scan_t){.rank = rank, .hi = -1, .top = -1, .first_ns = -1, .end_ns = -1};
    if (range[0] != '\0' && cp_replay_ops_parse(range, &S.lo, &S.hi, why, sizeof(why)) != 0) {
        S.lo = 0; /* (cp_gaps_setup says why) */
        S.hi = -1;
    }
    int oom = 0;
    cp_replay_check_begin();
    cp_trace_sel_t sel = {.keep = keep, .see = see, .arg = &oom, .whole = rank + 1};
    if (cp_trace_read_sel(path, t, &sel, err, len) != 0) {
        cp_replay_check_free();
        cp_replay_scan_free();
        return -1;
    }
    if (oom) {
        snprintf(err, len, "--replay %s: out of memory", path);
        cp_replay_check_free();
        cp_trace_free(t);
        cp_replay_scan_free();
        return -1;
    }
    if (t->nranks > nranks && shrink) { /* every rank's ops are folded: all of them */
        cp_replay_check_free();         /* (the fold's ranks are not the trace's: not checked) */
        cp_trace_free(t);
        cp_replay_scan_free();
        return cp_trace_read(path, t, err, len);
    }
    have = 1;
    *scan = &S;
    return 0;
}

#endif

const cp_trace_scan_t *cp_replay_scan(void)
{
    return have ? &S : NULL;
}

void cp_replay_scan_free(void)
{
    cp_replay_check_free();
    free(S.all);
    memset(&S, 0, sizeof(S));
    have = 0;
}
