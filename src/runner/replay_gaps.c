#include "config.h"

#include "runner/replay_gaps.h"

#include "base/stats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* The sleep ends spin_ns before a target, a spin on the clock does the rest: SPIN_NS at first,
 * then twice the latest wake-up seen so late that the spin could not absorb it (spin_max at
 * most): a host whose timer wakes late (a virtual machine's: 60-400 us at p99 and above, one
 * rank alone on an idle 2-core VM) gets a longer spin, and its issues stay on target.  Only
 * where each of the node's ranks has a CPU (cp_gaps_cores): more ranks than CPUs that spin
 * longer take the CPUs from each other (4 ranks on 2 CPUs: p99 1 ms against 0.1 ms). */
#define SPIN_NS     80000
#define SPIN_MAX_NS 1000000
static int64_t spin_ns = SPIN_NS, spin_max = SPIN_NS;
/* The replay's start: this long after the barrier that starts it (the first op's buffers are
 * filled in it, so that an op recorded at offset 0 is not late by its fill). */
#define LEAD_NS 1000000
/* compute: the memory-bandwidth loop's buffer (at least; 4 x the LLC where that is more), and
 * the elements it touches between two looks at the clock (32 KiB). */
#define WORK_BYTES (64u << 20)
#define WORK_CHUNK 4096

static struct {
    int mode;
    double scale;
    const cp_trace_t *t;
    int rank, iters, it;
    int64_t origin;   /* ns, the first recorded issue of the replayed ops, every rank's */
    int64_t *loc;     /* [t->nops]: the op's index among this rank's, -1 when another's */
    size_t nmine;     /* this rank's ops */
    double *err;      /* [nmine * iters] |issue - target| in us, -1: not timed */
    double *lateness; /* [nmine * iters] us an op was late by, 0: on time */
    double *span;     /* [iters] us from the start to the last op's end */
    int64_t start, prev_end, prev_rec_end;
    uint64_t *buf; /* compute's buffer */
    size_t nbuf, at;
    size_t ndev, nhost; /* compute: the gaps filled on the device, on the host (this backend) */
    int dev_off;        /* compute: the device's work failed, the host's from here */
    char how[32];       /* compute: the device's work, in the plugin's words */
    int slack_set;
    long slack_old;
} G = {.mode = CP_GAPS_NONE};

static volatile uint64_t sink; /* keeps the bandwidth loop's work */

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int is_coll(const collprof_trace_op_row_t *r)
{
    return strcmp(r->op, "send") != 0 && strcmp(r->op, "recv") != 0 && strcmp(r->op, "wait") != 0;
}

/* Does the range keep each group's collectives alike on all its members, where the whole
 * trace has them alike (all, kept: [group * nr + rank])?  0, else -1 and why (a cut
 * collective would hang). */
static int cuts_check(const cp_trace_t *t, const int64_t *all, const int64_t *kept, size_t nr,
                      const char *range, char *err, size_t len)
{
    for (size_t g = 0; all != NULL && g < t->ngroups; g++) {
        const collprof_trace_group_row_t *gr = &t->groups[g];
        for (int m = 1; m < gr->size; m++) {
            size_t a = (size_t)t->members[gr->member_off].rank,
                   b = (size_t)t->members[gr->member_off + m].rank;
            if (a < nr && b < nr && all[g * nr + a] == all[g * nr + b] &&
                kept[g * nr + a] != kept[g * nr + b]) {
                snprintf(err, len,
                         "--replay-ops %s: keeps %lld collectives of group %zu on rank %zu and "
                         "%lld on rank %zu: the range cuts a collective between its members",
                         range, (long long)kept[g * nr + a], g, a, (long long)kept[g * nr + b], b);
                return -1;
            }
        }
    }
    return 0;
}

/* cuts_check on t's ops (every rank's). */
static int cuts_none(const cp_trace_t *t, int64_t lo, int64_t hi, const char *range, char *err,
                     size_t len)
{
    size_t nr = (size_t)(t->nranks > 0 ? t->nranks : 1), cells = t->ngroups * nr;
    int64_t *all = calloc(2 * cells + 1, sizeof(int64_t)), *kept = all + cells;
    if (all == NULL) {
        return 0; /* (only a check) */
    }
    for (size_t i = 0; i < t->nops; i++) {
        const collprof_trace_op_row_t *r = &t->ops[i];
        if (is_coll(r) && r->group >= 0 && (size_t)r->group < t->ngroups && r->rank >= 0 &&
            (size_t)r->rank < nr) {
            all[(size_t)r->group * nr + (size_t)r->rank]++;
            kept[(size_t)r->group * nr + (size_t)r->rank] +=
                r->seq >= lo && (hi < 0 || r->seq <= hi);
        }
    }
    int rc = cuts_check(t, all, kept, nr, range, err, len);
    free(all);
    return rc;
}

/* Keep the ops of t whose seq is in [lo, hi] (hi -1: no end); a partial read (sc) kept only
 * those, and saw the rest.  0, or -1 and why. */
static int select_ops(cp_trace_t *t, const cp_trace_scan_t *sc, const char *range, char *err,
                      size_t len)
{
    int64_t lo = 0, hi = -1, top = -1;
    if (range[0] == '\0') {
        return 0;
    }
    if (cp_replay_ops_parse(range, &lo, &hi, err, len) != 0) {
        return -1;
    }
    for (size_t i = 0; sc == NULL && i < t->nops; i++) {
        top = t->ops[i].seq > top ? t->ops[i].seq : top;
    }
    top = sc != NULL ? sc->top : top;
    if (lo > top || hi > top) {
        snprintf(err, len, "--replay-ops %s: outside the trace, whose ops are seq 0 to %" PRId64,
                 range, top);
        return -1;
    }
    if (sc != NULL) {
        return cuts_check(t, sc->all, sc->kept, sc->nr, range, err, len);
    }
    if (cuts_none(t, lo, hi, range, err, len) != 0) {
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < t->nops; i++) {
        if (t->ops[i].seq >= lo && (hi < 0 || t->ops[i].seq <= hi)) {
            t->ops[k++] = t->ops[i];
        }
    }
    t->nops = k;
    return 0;
}

/* The origin (the first recorded issue of t's ops, every rank's) into G.origin; 0, or -1
 * when none. */
static int find_origin(const cp_trace_t *t, const cp_trace_scan_t *sc)
{
    G.origin = sc != NULL ? sc->first_ns : -1;
    for (size_t i = 0; sc == NULL && i < t->nops; i++) {
        int64_t s = t->ops[i].t_issue_ns;
        if (s >= 0 && (G.origin < 0 || s < G.origin)) {
            G.origin = s;
        }
    }
    return G.origin >= 0 ? 0 : -1;
}

/* compute's buffer: larger than the last-level cache, its pages touched. */
static int work_buffer(void)
{
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    size_t bytes = WORK_BYTES;
    if (llc > 0 && (size_t)llc * 4 > bytes) {
        bytes = (size_t)llc * 4;
    }
    G.nbuf = bytes / sizeof(uint64_t) / WORK_CHUNK * WORK_CHUNK;
    G.buf = calloc(G.nbuf, sizeof(uint64_t));
    if (G.buf == NULL) {
        return -1;
    }
    memset(G.buf, 1, G.nbuf * sizeof(uint64_t));
    G.at = 0;
    return 0;
}

/* This rank's ops: G.loc, G.nmine and the per-op, per-replay arrays. */
static int my_arrays(const cp_trace_t *t)
{
    G.loc = malloc((t->nops + 1) * sizeof(*G.loc));
    if (G.loc == NULL) {
        return -1;
    }
    G.nmine = 0;
    for (size_t i = 0; i < t->nops; i++) {
        G.loc[i] = t->ops[i].rank == G.rank ? (int64_t)G.nmine++ : -1;
    }
    size_t n = G.nmine * (size_t)G.iters + 1;
    G.err = malloc(n * sizeof(double));
    G.lateness = calloc(n, sizeof(double));
    G.span = calloc((size_t)G.iters + 1, sizeof(double));
    return G.err != NULL && G.lateness != NULL && G.span != NULL ? 0 : -1;
}

int cp_gaps_setup(const char *gaps, const char *range, cp_trace_t *t, const cp_trace_scan_t *sc,
                  int rank, int iters, char *err, size_t len)
{
    cp_gaps_free();
    if (cp_gaps_parse(gaps, &G.mode, &G.scale, err, len) != 0 ||
        select_ops(t, sc, range, err, len) != 0) {
        return -1;
    }
    if (G.mode != CP_GAPS_NONE && find_origin(t, sc) != 0) {
        snprintf(err, len,
                 "--gaps %s: the trace has no issue times (t_issue_ns)%s: replay it with --gaps "
                 "none (an NCCL Inspector trace has them when recorded with "
                 "NCCL_INSPECTOR_DUMP_VERBOSE=1)",
                 gaps, range[0] ? " in --replay-ops" : "");
        G.mode = CP_GAPS_NONE;
        return -1;
    }
    G.t = t;
    G.rank = rank;
    G.iters = iters > 0 ? iters : 1;
    if (G.mode == CP_GAPS_NONE) {
        return 0;
    }
    if (my_arrays(t) != 0 || (G.mode == CP_GAPS_COMPUTE && work_buffer() != 0)) {
        snprintf(err, len, "--gaps %s: out of memory", gaps);
        cp_gaps_free();
        return -1;
    }
    int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0); /* wake-ups to the ns, not the 50 us */
    if (old > 0 && prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) == 0) {
        G.slack_set = 1;
        G.slack_old = old;
    }
    return 0;
}

void cp_gaps_cores(int local_size)
{
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    spin_ns = SPIN_NS;
    spin_max = local_size >= 1 && local_size <= cpus ? SPIN_MAX_NS : SPIN_NS;
}

int cp_gaps_mode(void)
{
    return G.mode;
}

void cp_gaps_begin(int it)
{
    if (G.mode == CP_GAPS_NONE || it < 0 || it >= G.iters) {
        return;
    }
    if (it == 0) { /* a new backend: its own figures */
        for (size_t i = 0; i < G.nmine * (size_t)G.iters; i++) {
            G.err[i] = -1;
            G.lateness[i] = 0;
        }
    }
    if (it == 0) {
        G.ndev = G.nhost = 0;
        G.dev_off = 0;
        G.how[0] = '\0';
    }
    G.it = it;
    G.start = mono_ns() + LEAD_NS;
    G.prev_end = G.start;
    G.prev_rec_end = -1;
}

/* Sleep (absolute) to spin_ns before target, then spin on the clock; a wake-up later than
 * half the spin lengthens the spin for the next. */
static void sleep_until(int64_t target)
{
    int64_t wake = target - spin_ns;
    if (wake > mono_ns()) {
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000),
                              .tv_nsec = (long)(wake % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
        int64_t over = mono_ns() - wake;
        if (2 * over > spin_ns) {
            spin_ns = 2 * over < spin_max ? 2 * over : spin_max;
        }
    }
    while (mono_ns() < target) {
    }
}

/* Read and write the buffer, 32 KiB between looks at the clock, until target. */
static void work_until(int64_t target)
{
    uint64_t s = 0;
    while (mono_ns() < target) {
        uint64_t *b = G.buf + G.at;
        for (size_t k = 0; k < WORK_CHUNK; k++) {
            b[k] = b[k] * 3 + k;
            s += b[k];
        }
        G.at = (G.at + WORK_CHUNK) % G.nbuf;
    }
    sink += s;
}

/* Op r's target on this replay's clock, ns. */
static int64_t target_of(const collprof_trace_op_row_t *r)
{
    if (G.mode == CP_GAPS_COMPUTE && G.prev_rec_end >= 0) { /* its gap after the last op */
        int64_t gap = r->t_issue_ns - G.prev_rec_end;
        return G.prev_end + (gap > 0 ? (int64_t)((double)gap * G.scale) : 0);
    }
    return G.start + (int64_t)((double)(r->t_issue_ns - G.origin) * G.scale);
}

/* compute: the gap to target on the device (fill, where given and it has not failed), the
 * rest of it (the device's work ended early) by a sleep; else all of it on the host */
static void fill_gap(int64_t target, cp_gaps_fill_fn fill, void *arg)
{
    const char *how = NULL;
    if (fill != NULL && !G.dev_off) {
        int rc = fill(arg, (double)(target - mono_ns()) / 1e3, &how);
        if (rc == 0) {
            G.ndev++;
            snprintf(G.how, sizeof(G.how), "%s", how != NULL ? how : "");
            sleep_until(target);
            return;
        }
        G.dev_off = 1; /* (fill said why where it failed) */
    }
    G.nhost++;
    work_until(target);
}

void cp_gaps_wait(const collprof_trace_op_row_t *r, cp_gaps_fill_fn fill, void *arg)
{
    if (G.mode == CP_GAPS_NONE || r->t_issue_ns < 0) {
        return; /* (an op without an issue time goes at once) */
    }
    int64_t target = target_of(r), now = mono_ns();
    size_t i = (size_t)G.loc[r - G.t->ops] * (size_t)G.iters + (size_t)G.it;
    if (now < target) {
        if (G.mode == CP_GAPS_COMPUTE) {
            fill_gap(target, fill, arg);
        } else {
            sleep_until(target);
        }
        now = mono_ns();
    } else {
        G.lateness[i] = (double)(now - target) / 1e3;
    }
    G.err[i] = (double)(now > target ? now - target : target - now) / 1e3;
    G.prev_rec_end = r->t_issue_ns + (r->dur_ns > 0 ? r->dur_ns : 0);
}

void cp_gaps_done(const collprof_trace_op_row_t *r)
{
    (void)r;
    if (G.mode != CP_GAPS_NONE) {
        G.prev_end = mono_ns();
    }
}

void cp_gaps_end(int it)
{
    if (G.mode != CP_GAPS_NONE && it >= 0 && it < G.iters) {
        G.span[it] = (double)(G.prev_end - G.start) / 1e3;
    }
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* p50, p99, max of the values >= 0 of v[n] (v reordered) into row; -1 when none. */
static void errs_into(double *v, size_t n, collprof_replay_row_t *row)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] >= 0) {
            v[k++] = v[i];
        }
    }
    row->issue_err_p50_us = row->issue_err_p99_us = row->issue_err_max_us = -1;
    if (k > 0) {
        qsort(v, k, sizeof(double), cmp_dbl);
        row->issue_err_p50_us = cp_stats_percentile(v, (int)k, 0.5);
        row->issue_err_p99_us = cp_stats_percentile(v, (int)k, 0.99);
        row->issue_err_max_us = v[k - 1];
    }
}

void cp_gaps_op_row(const collprof_trace_op_row_t *r, collprof_replay_row_t *row)
{
    row->issue_err_p50_us = row->issue_err_p99_us = row->issue_err_max_us = -1;
    row->late = 0;
    if (G.mode == CP_GAPS_NONE || G.t == NULL || r < G.t->ops || r >= G.t->ops + G.t->nops ||
        G.loc[r - G.t->ops] < 0) {
        return;
    }
    size_t at = (size_t)G.loc[r - G.t->ops] * (size_t)G.iters;
    double v[64], *w = G.iters <= 64 ? v : malloc((size_t)G.iters * sizeof(double));
    if (w == NULL) {
        return;
    }
    memcpy(w, &G.err[at], (size_t)G.iters * sizeof(double));
    errs_into(w, (size_t)G.iters, row);
    for (int it = 0; it < G.iters; it++) {
        row->late += G.lateness[at + (size_t)it] > 0;
    }
    if (w != v) {
        free(w);
    }
}

/* This rank's recorded window, scaled: its last timed op's target offset, us; -1: none. */
static double my_window_us(void)
{
    int64_t last = -1, dur = 0;
    for (size_t i = 0; i < G.t->nops; i++) {
        const collprof_trace_op_row_t *r = &G.t->ops[i];
        if (G.loc[i] >= 0 && r->t_issue_ns >= 0 && r->t_issue_ns >= last) {
            last = r->t_issue_ns;
            dur = r->dur_ns > 0 ? r->dur_ns : 0;
        }
    }
    return last < 0 ? -1 : ((double)(last - G.origin) * G.scale + (double)dur) / 1e3;
}

int cp_gaps_rank_row(const char *backend, collprof_replay_row_t *row)
{
    if (G.mode == CP_GAPS_NONE || G.t == NULL) {
        return 0;
    }
    memset(row, 0, sizeof(*row));
    snprintf(row->what, sizeof(row->what), "rank");
    snprintf(row->backend, sizeof(row->backend), "%s", backend);
    snprintf(row->status, sizeof(row->status), "ok");
    row->rank = G.rank;
    row->seq = -1;
    row->overlapped_us = -1; /* (the op, type and trace rows') */
    row->group = row->group_size = -1;
    row->iterations = G.iters;
    size_t n = G.nmine * (size_t)G.iters, timed = 0, untimed = 0;
    double *v = malloc((n + 1) * sizeof(double));
    if (v == NULL) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        row->late += G.lateness[i] > 0;
    }
    for (size_t i = 0; i < G.t->nops; i++) {
        timed += G.loc[i] >= 0 && G.t->ops[i].t_issue_ns >= 0;
        untimed += G.loc[i] >= 0 && G.t->ops[i].t_issue_ns < 0;
    }
    memcpy(v, G.err, n * sizeof(double));
    errs_into(v, n, row);
    row->ops = (int64_t)timed;
    memcpy(v, G.span, (size_t)G.iters * sizeof(double));
    row->time_p50_us = cp_stats_median(v, (size_t)G.iters);
    row->recorded_us = my_window_us();
    row->ratio = row->recorded_us > 0 ? row->time_p50_us / row->recorded_us : 0;
    char mode[80];
    snprintf(mode, sizeof(mode), "%s", G.mode == CP_GAPS_TRACE ? "trace" : "compute");
    if (G.scale != 1) {
        snprintf(mode + strlen(mode), sizeof(mode) - strlen(mode), ":%g", G.scale);
    }
    if (G.mode == CP_GAPS_COMPUTE && G.ndev + G.nhost > 0) { /* where the gaps' work ran */
        size_t l = strlen(mode);
        snprintf(mode + l, sizeof(mode) - l, " on the %s%s%s%s", G.ndev > 0 ? "device (" : "host",
                 G.ndev > 0 ? G.how : "", G.ndev > 0 ? ")" : "",
                 G.ndev > 0 && G.nhost > 0 ? " and the host" : "");
    }
    snprintf(row->note, sizeof(row->note),
             "gaps %s; %zu ops issued at a target and %zu at once (no issue time)", mode, timed,
             untimed);
    free(v);
    return 1;
}

void cp_gaps_free(void)
{
    if (G.slack_set) {
        prctl(PR_SET_TIMERSLACK, (unsigned long)G.slack_old, 0, 0, 0);
    }
    free(G.loc);
    free(G.err);
    free(G.lateness);
    free(G.span);
    free(G.buf);
    memset(&G, 0, sizeof(G));
    G.mode = CP_GAPS_NONE;
}
