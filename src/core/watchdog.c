#include "config.h"

#include "core/watchdog.h"

#include "core/log.h"
#include "core/timeouts.h"
#include "core/util.h"

#include <collprof/status.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY_REC   "cp.wd.rec"
#define KEY_DONE  "cp.wd.done"
#define KEY_FILES "cp.wd.files"
/* 1: this deputy acts for a silent rank 0 (0: it found itself cut off and withdrew). */
#define KEY_LEAD "cp.wd.lead"

static struct {
    pthread_mutex_t mu; /* the beat */
    pthread_mutex_t writer;
    pthread_t thread;
    int running;
    atomic_int stop; /* set by cp_wd_stop, read by the thread every tick */
    cp_wd_hooks_t hooks;
    const cp_boot_t *boot; /* under mu: set by the main thread once booted */
    int held; /* under mu: a report took boot and ends the process (cp_wd_set_boot waits) */
    /* the beat */
    int phase, cell, iter, warmup;
    double last_s, timeout_s;
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER, .writer = PTHREAD_MUTEX_INITIALIZER};

static double now_s(void)
{
    return cp_now_us() * 1e-6;
}

static void signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

void cp_wd_block_signals(void)
{
    sigset_t set;
    signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void cp_wd_beat(cp_wd_phase_t phase, int cell, int iter, int warmup, double timeout_s)
{
    double t = now_s();
    pthread_mutex_lock(&wd.mu);
    wd.phase = (int)phase;
    wd.cell = cell;
    wd.iter = iter;
    wd.warmup = warmup;
    wd.last_s = t;
    wd.timeout_s = timeout_s;
    pthread_mutex_unlock(&wd.mu);
}

void cp_wd_lock(void)
{
    pthread_mutex_lock(&wd.writer);
}

void cp_wd_unlock(void)
{
    pthread_mutex_unlock(&wd.writer);
}

/* The watchdog's take of the writer lock: bounded, in case the main thread
 * is the one stuck (in a write to a hung file system).  1 when held. */
static int lock_for_good(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)CP_TMO_WD_CLOSE_WAIT_S / 2;
    if (pthread_mutex_timedlock(&wd.writer, &until) != 0) {
        cp_log(CP_LOG_ERROR, "watchdog: the outputs are busy (a write does not return); leaving "
                             "them as the last completed cell left them");
        return 0;
    }
    return 1;
}

void cp_wd_set_boot(const cp_boot_t *boot)
{
    pthread_mutex_lock(&wd.mu);
    int held = wd.held && boot == NULL;
    if (!held) {
        wd.boot = boot;
    }
    pthread_mutex_unlock(&wd.mu);
    /* a report reads the tables the caller is about to free, and ends the process with _exit:
     * wait for that instead of freeing them under it */
    while (held) {
        pause();
    }
}

/* The job's tables for a report that ends the process (wd.held: they are not freed under
 * it).  Under mu. */
static const cp_boot_t *hold_boot(void)
{
    wd.held = wd.boot != NULL;
    return wd.boot;
}

/* ---------------------------------------------------------------------- */
/* Attribution (pure). */

void cp_wd_ranks(const int *ranks, int n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o < len; i++) {
        int j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) {
            j++;
        }
        int w = j > i ? snprintf(buf + o, len - o, "%s%d-%d", o ? "," : "", ranks[i], ranks[j])
                      : snprintf(buf + o, len - o, "%s%d", o ? "," : "", ranks[i]);
        if (w < 0) {
            break;
        }
        o += (size_t)w;
        i = j;
    }
}

/* A position for ordering: (cell, stage, iteration, step). */
typedef struct pos {
    long long cell, stage, iter, step;
} pos_t;

static pos_t position(const cp_wd_rec_t *r)
{
    pos_t p = {r->cell, 0, 0, 0};
    switch ((cp_wd_phase_t)r->phase) {
    case CP_WD_START: p.cell = -1; break;
    case CP_WD_SETUP: p.stage = 0; break;
    case CP_WD_SYNC: p.stage = 1, p.iter = r->iter, p.step = 0; break;
    case CP_WD_OP: p.stage = 1, p.iter = r->iter, p.step = 1; break;
    case CP_WD_OP_DONE: p.stage = 1, p.iter = r->iter, p.step = 2; break;
    case CP_WD_FILL: p.stage = 1, p.iter = r->iter, p.step = -1; break;
    case CP_WD_VERIFY: p.stage = 1, p.iter = r->iter, p.step = 3; break;
    case CP_WD_CHECK: p.stage = 2; break;
    case CP_WD_GATHER: p.stage = 3; break;
    case CP_WD_WRITE: p.stage = 4; break;
    case CP_WD_FINISH:
    default: p.cell = LLONG_MAX; break;
    }
    return p;
}

static int pos_cmp(pos_t a, pos_t b)
{
    if (a.cell != b.cell) {
        return a.cell < b.cell ? -1 : 1;
    }
    if (a.stage != b.stage) {
        return a.stage < b.stage ? -1 : 1;
    }
    if (a.iter != b.iter) {
        return a.iter < b.iter ? -1 : 1;
    }
    return a.step < b.step ? -1 : a.step > b.step;
}

/* Where a rank is, in words; with_cell adds its cell. */
static void where(const cp_wd_rec_t *r, int with_cell, char *buf, size_t len)
{
    char it[64] = "";
    if (r->iter >= 0 && r->iter < r->warmup) {
        snprintf(it, sizeof(it), "warm-up iteration %d", r->iter + 1);
    } else if (r->iter >= 0) {
        snprintf(it, sizeof(it), "iteration %d", r->iter - r->warmup + 1);
    }
    const char *what = "";
    char tmp[128];
    switch ((cp_wd_phase_t)r->phase) {
    case CP_WD_START: what = "starting up (boot, backend initialisation)"; break;
    case CP_WD_SETUP: what = "setting up the cell"; break;
    case CP_WD_SYNC:
        snprintf(tmp, sizeof(tmp), "in the barrier before %s", it);
        what = tmp;
        break;
    case CP_WD_OP:
        snprintf(tmp, sizeof(tmp), "in the operation, %s", it);
        what = tmp;
        break;
    case CP_WD_OP_DONE:
        snprintf(tmp, sizeof(tmp), "past the operation of %s", it);
        what = tmp;
        break;
    case CP_WD_CHECK: what = "in the exact-check run"; break;
    case CP_WD_FILL:
        snprintf(tmp, sizeof(tmp), "filling fresh inputs before %s (--check)", it);
        what = tmp;
        break;
    case CP_WD_VERIFY:
        snprintf(tmp, sizeof(tmp), "checking the output of %s (--check)", it);
        what = tmp;
        break;
    case CP_WD_GATHER: /* the TCP tree, PMIx fences where it could not open, or none */
        what = "gathering results over the control channel";
        break;
    case CP_WD_WRITE: what = "writing results"; break;
    case CP_WD_FINISH:
    default: what = "finishing (closing the backends)"; break;
    }
    if (with_cell && r->cell >= 0 && r->phase != CP_WD_START && r->phase != CP_WD_FINISH) {
        snprintf(buf, len, "in cell %d, %s", r->cell, what);
    } else {
        snprintf(buf, len, "%s", what);
    }
}

static void append(char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *msg, size_t len, const char *fmt, ...)
{
    size_t o = strlen(msg);
    if (o + 1 >= len) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + o, len - o, fmt, ap);
    va_end(ap);
}

/* The rank furthest ahead (-1: none answered) and the longest stall. */
static int find_front(const cp_wd_rec_t *recs, int n, double *stalled)
{
    int front = -1;
    *stalled = 0;
    for (int q = 0; q < n; q++) {
        if (!recs[q].valid) {
            continue;
        }
        if (front < 0 || pos_cmp(position(&recs[q]), position(&recs[front])) > 0) {
            front = q;
        }
        if (recs[q].stalled_s > *stalled) {
            *stalled = recs[q].stalled_s;
        }
    }
    return front;
}

/* " Did not arrive: rank q (host) last seen ...;" for the nbehind ranks behind f. */
static void explain_behind(const cp_wd_rec_t *recs, int n, const char (*hosts)[256],
                           const cp_wd_rec_t *f, int nbehind, char *msg, size_t len)
{
    pos_t fp = position(f);
    append(msg, len, " Did not arrive:");
    int shown = 0, last = -1; /* last: the rank furthest behind */
    for (int q = 0; q < n; q++) {
        if (recs[q].valid && (last < 0 || pos_cmp(position(&recs[q]), position(&recs[last])) < 0)) {
            last = q;
        }
    }
    for (int q = 0; q < n; q++) {
        if (!recs[q].valid || pos_cmp(position(&recs[q]), fp) == 0) {
            continue;
        }
        if (shown == 8) {
            append(msg, len, " and %d more;", nbehind - shown);
            break;
        }
        char w[160];
        where(&recs[q], recs[q].cell != f->cell, w, sizeof(w));
        int furthest = nbehind > 1 && pos_cmp(position(&recs[q]), position(&recs[last])) == 0;
        append(msg, len, " rank %d (%s) last seen %s%s;", q, hosts ? hosts[q] : "?", w,
               furthest ? " (furthest behind)" : "");
        shown++;
    }
    msg[strlen(msg) - 1] = '.';
}

/* " rank 3 on n2, ranks 4-7 on n3." : the silent ranks grouped by host, in
 * rank order of each host's first; past SILENT_HOSTS hosts, a count. */
#define SILENT_HOSTS 4
static void explain_silent(const int *silent, int nsilent, const char (*hosts)[256], char *msg,
                           size_t len)
{
    int *mine = calloc((size_t)nsilent, sizeof(int)), *done = calloc((size_t)nsilent, sizeof(int));
    int nhosts = 0, left = nsilent;
    char list[256];
    for (int i = 0; i < nsilent && mine != NULL && done != NULL; i++) {
        if (done[i]) {
            continue;
        }
        int n = 0;
        for (int j = i; j < nsilent; j++) {
            if (!done[j] && (hosts == NULL || !strcmp(hosts[silent[j]], hosts[silent[i]]))) {
                mine[n++] = silent[j];
                done[j] = 1;
            }
        }
        if (nhosts == SILENT_HOSTS) {
            append(msg, len, " and %d more rank%s on other nodes,", left, left > 1 ? "s" : "");
            break;
        }
        cp_wd_ranks(mine, n, list, sizeof(list));
        append(msg, len, " rank%s %s", n > 1 ? "s" : "", list);
        if (hosts != NULL) {
            append(msg, len, " on %s", hosts[silent[i]]);
        }
        append(msg, len, ",");
        nhosts++;
        left -= n;
    }
    free(mine);
    free(done);
    if (msg[0] != '\0' && msg[strlen(msg) - 1] == ',') {
        msg[strlen(msg) - 1] = '.';
    } else {
        append(msg, len, ".");
    }
}

/* The ranks at the front (waiting) and those that did not answer (silent). */
static void explain_rest(const int *waiting, int nwait, const int *silent, int nsilent, int n,
                         int nbehind, const char *fw, const char (*hosts)[256], char *msg,
                         size_t len)
{
    char list[256];
    if (nwait > 0) {
        cp_wd_ranks(waiting, nwait, list, sizeof(list));
        if (nbehind == 0 && nsilent == 0) {
            append(msg, len, " All %d ranks are %s: the backend did not complete it.", n, fw);
        } else {
            append(msg, len, " Waiting (%s): rank%s %s.", fw, nwait > 1 ? "s" : "", list);
        }
    }
    if (nsilent > 0) {
        append(msg, len, " No answer (stopped, dead, or cut off from PMIx):");
        explain_silent(silent, nsilent, hosts, msg, len);
    }
}

/* " Waiting: ranks 0,3 in the operation, iteration 5; rank 1 in the operation,
 * iteration 4." : with ranks that do not answer, those that do are waiting
 * for them wherever they are (a collective left half done by a stopped rank
 * leaves its peers at different places): none is blamed. */
static void explain_groups(const cp_wd_rec_t *recs, int n, int cell, char *msg, size_t len)
{
    int *mine = calloc((size_t)n, sizeof(int)), *done = calloc((size_t)n, sizeof(int));
    int groups = 0;
    char list[256], w[160];
    append(msg, len, " Waiting:");
    for (int q = 0; q < n && mine != NULL && done != NULL; q++) {
        if (!recs[q].valid || done[q]) {
            continue;
        }
        int m = 0;
        for (int j = q; j < n; j++) {
            if (recs[j].valid && !done[j] && pos_cmp(position(&recs[j]), position(&recs[q])) == 0) {
                mine[m++] = j;
                done[j] = 1;
            }
        }
        if (groups++ == 8) {
            append(msg, len, " and others;");
            break;
        }
        cp_wd_ranks(mine, m, list, sizeof(list));
        where(&recs[q], recs[q].cell != cell, w, sizeof(w));
        append(msg, len, " rank%s %s %s;", m > 1 ? "s" : "", list, w);
    }
    free(mine);
    free(done);
    msg[strlen(msg) - 1] = '.';
}

int cp_wd_explain(const cp_wd_rec_t *recs, int n, const char (*hosts)[256],
                  void (*describe)(void *arg, int cell, char *buf, size_t len), void *arg,
                  char *msg, size_t len)
{
    double stalled;
    int front = find_front(recs, n, &stalled);
    msg[0] = '\0';
    if (front < 0) {
        snprintf(msg, len, "no progress, and no rank answered the watchdog");
        return -1;
    }
    const cp_wd_rec_t *f = &recs[front];
    pos_t fp = position(f);
    int cell = (f->phase == CP_WD_START || f->phase == CP_WD_FINISH) ? -1 : f->cell;
    char desc[256] = "";
    if (cell >= 0 && describe != NULL) {
        describe(arg, cell, desc, sizeof(desc));
    }
    int *waiting = calloc((size_t)n, sizeof(int)), *silent = calloc((size_t)n, sizeof(int));
    int nwait = 0, nbehind = 0, nsilent = 0;
    if (waiting == NULL || silent == NULL) {
        free(waiting);
        free(silent);
        snprintf(msg, len, "no progress for %.1f s (out of memory explaining it)", stalled);
        return cell;
    }
    for (int q = 0; q < n; q++) {
        if (!recs[q].valid) {
            silent[nsilent++] = q;
        } else if (pos_cmp(position(&recs[q]), fp) == 0) {
            waiting[nwait++] = q;
        } else {
            nbehind++;
        }
    }
    char fw[160];
    where(f, 0, fw, sizeof(fw));
    if (cell >= 0) {
        snprintf(msg, len, "cell %d (%s) timed out: no progress for %.1f s.", cell, desc, stalled);
    } else {
        snprintf(msg, len, "no progress for %.1f s.", stalled);
    }
    if (nbehind > 0 && nsilent > 0) {
        explain_groups(recs, n, cell, msg, len);
        explain_rest(waiting, 0, silent, nsilent, n, nbehind, fw, hosts, msg, len);
    } else {
        if (nbehind > 0) {
            explain_behind(recs, n, hosts, f, nbehind, msg, len);
        }
        explain_rest(waiting, nwait, silent, nsilent, n, nbehind, fw, hosts, msg, len);
    }
    free(waiting);
    free(silent);
    return cell;
}

/* ---------------------------------------------------------------------- */
/* The exchange, and who reports. */

static const cp_wd_io_t default_io = {cp_oob_post, cp_oob_fetch_all};
static const cp_wd_io_t *io = &default_io;

void cp_wd_set_io(const cp_wd_io_t *x)
{
    io = x != NULL ? x : &default_io;
}

/* One round's wait: what is left of the time, at most CP_TMO_WD_FETCH_WAIT_S (and a little at
 * least). */
static double round_wait(double deadline)
{
    double left = deadline - now_s();
    return left > CP_TMO_WD_FETCH_WAIT_S ? CP_TMO_WD_FETCH_WAIT_S : left > 0.05 ? left : 0.05;
}

/* rank's value of key, asked once a round until it comes or timeout_s passes (0: once);
 * 0 when it came. */
static int fetch_one(int rank, const char *key, void *dst, size_t len, double timeout_s)
{
    double deadline = now_s() + timeout_s;
    for (;;) {
        int got = 0;
        io->fetch_all(&rank, 1, key, dst, len, round_wait(deadline), &got);
        if (got) {
            return 0;
        }
        if (now_s() >= deadline) {
            return -1;
        }
        usleep(100000);
    }
}

int cp_wd_deputies(const int *node_ids, int n, int *dep)
{
    int nd = 0, next = 1;
    if (n > 0) {
        dep[nd++] = 0;
    }
    /* the first rank of each next node: a node lost whole takes one deputy only */
    for (int q = 1; q < n && nd < CP_WD_DEPUTIES && node_ids != NULL; q++) {
        if (node_ids[q] >= next) {
            dep[nd++] = q;
            next = node_ids[q] + 1;
        }
    }
    for (int q = 1; q < n && nd < CP_WD_DEPUTIES; q++) {
        int listed = 0;
        for (int i = 0; i < nd; i++) {
            listed |= dep[i] == q;
        }
        if (!listed) {
            dep[nd++] = q;
        }
    }
    return nd;
}

static int dep_index(int rank, const int *dep, int ndep)
{
    for (int i = 0; i < ndep; i++) {
        if (dep[i] == rank) {
            return i;
        }
    }
    return -1;
}

/* The first deputy after rank 0 that says it acts (-1: none), one request to each. */
static int deputy_acting(const int *dep, int ndep)
{
    int lead[CP_WD_DEPUTIES], got[CP_WD_DEPUTIES];
    if (ndep < 2) {
        return -1;
    }
    io->fetch_all(dep + 1, ndep - 1, KEY_LEAD, lead, sizeof(lead[0]), CP_TMO_WD_FETCH_WAIT_S, got);
    for (int j = 0; j < ndep - 1; j++) {
        if (got[j] && lead[j] == 1) {
            return dep[j + 1];
        }
    }
    return -1;
}

int cp_wd_elect(int me, const int *dep, int ndep, double wait_s)
{
    int i = dep_index(me, dep, ndep);
    if (i <= 0) {
        return i == 0 ? me : -1;
    }
    /* the deputies before me, all at once each round: one that answers reports, or leaves
     * the report to one before it */
    cp_wd_rec_t in[CP_WD_DEPUTIES];
    int got[CP_WD_DEPUTIES];
    double deadline = now_s() + wait_s;
    for (;;) {
        io->fetch_all(dep, i, KEY_REC, in, sizeof(in[0]), round_wait(deadline), got);
        for (int j = 0; j < i; j++) {
            if (got[j]) {
                return dep[j];
            }
        }
        if (now_s() >= deadline) {
            break;
        }
        usleep(100000);
    }
    /* every one before me silent: unless a deputy after me already acts (it stalled so much
     * earlier that it found me silent too), I do */
    int lead[CP_WD_DEPUTIES];
    if (i + 1 < ndep) {
        io->fetch_all(dep + i + 1, ndep - i - 1, KEY_LEAD, lead, sizeof(lead[0]),
                      CP_TMO_WD_FETCH_WAIT_S, got);
        for (int j = 0; j < ndep - i - 1; j++) {
            if (got[j] && lead[j] == 1) {
                return dep[i + 1 + j];
            }
        }
    }
    int one = 1;
    io->post(KEY_LEAD, &one, sizeof(one));
    return me;
}

int cp_wd_collect(cp_wd_rec_t *recs, int n, int me, double wait_s)
{
    double deadline = now_s() + wait_s;
    int missing = 0;
    for (int q = 0; q < n; q++) {
        missing += q != me && !recs[q].valid;
    }
    int *ask = malloc(sizeof(int) * (size_t)n), *got = malloc(sizeof(int) * (size_t)n);
    cp_wd_rec_t *in = malloc(sizeof(*in) * (size_t)n);
    while (ask && got && in && missing > 0 && now_s() < deadline) {
        int k = 0;
        for (int q = 0; q < n; q++) {
            if (q != me && !recs[q].valid) {
                ask[k++] = q;
            }
        }
        /* every missing rank at once, waited for together: a node cut off from PMIx, whose
         * ranks never answer, costs one wait per round, not one per rank */
        io->fetch_all(ask, k, KEY_REC, in, sizeof(*in), round_wait(deadline), got);
        for (int i = 0; i < k; i++) {
            if (got[i]) {
                recs[ask[i]] = in[i];
                missing--;
            }
        }
        if (missing > 0 && now_s() < deadline) {
            usleep(100000);
        }
    }
    free(ask);
    free(got);
    free(in);
    return missing;
}

int cp_wd_may_report(const cp_wd_rec_t *recs, const int *node_ids, int n, int me)
{
    int one_node = 1;
    for (int q = 0; q < n && node_ids != NULL; q++) {
        if (node_ids[q] != node_ids[me]) {
            one_node = 0;
            if (recs[q].valid) {
                return 1;
            }
        }
    }
    return one_node;
}

int cp_wd_wait_done(int me, const int *dep, int ndep, double wait_s)
{
    double start = now_s(), deadline = start + wait_s;
    for (int round = 0, next = 1; ndep > 0; round++) {
        /* rank 0, which reports unless it is silent, every round until a deputy could have
         * reported (so a rank leaves as soon as rank 0 is done: the launcher may kill the
         * ranks still there when rank 0 exits), then every other round */
        int q = 0, one, got = 0;
        if (ndep > 1 && now_s() - start > CP_TMO_WD_DEPUTY_WAIT_S && round % 2) {
            next = next % (ndep - 1) + 1;
            q = dep[next] != me ? dep[next] : 0;
        }
        io->fetch_all(&q, 1, KEY_DONE, &one, sizeof(one), round_wait(deadline), &got);
        if (got) {
            return q;
        }
        if (now_s() >= deadline) {
            break;
        }
        usleep(100000);
    }
    return -1;
}

/* ---------------------------------------------------------------------- */
/* The thread. */

/* This rank's position, as its record. */
static cp_wd_rec_t my_record(const cp_boot_t **boot, double *late_s)
{
    cp_wd_rec_t mine;
    memset(&mine, 0, sizeof(mine));
    pthread_mutex_lock(&wd.mu);
    mine.valid = 1;
    mine.phase = wd.phase;
    mine.cell = wd.cell;
    mine.iter = wd.iter;
    mine.warmup = wd.warmup;
    mine.stalled_s = now_s() - wd.last_s;
    *late_s = mine.stalled_s - wd.timeout_s;
    *boot = hold_boot();
    pthread_mutex_unlock(&wd.mu);
    return mine;
}

/* Rank 0, resumed after it was stopped past its timeout (sig: the signal
 * that the launcher ending the job woke it with, or 0), or stalled after a
 * deputy (> 0) took it for silent: the cell it was in timed out, whoever
 * reported it.  Writer lock held. */
static void writer_resumed(int sig, int cell, double stalled, int deputy)
{
    char desc[256] = "?", msg[768], how[96] = "";
    if (cell >= 0 && wd.hooks.describe != NULL) {
        wd.hooks.describe(wd.hooks.arg, cell, desc, sizeof(desc));
    }
    if (sig > 0) {
        snprintf(how, sizeof(how), ", then ended by signal %d (%s)", sig, strsignal(sig));
    }
    if (deputy > 0) {
        snprintf(msg, sizeof(msg),
                 "cell %d (%s) timed out: no progress for %.1f s; reported by rank %d in place "
                 "of rank 0%s",
                 cell, desc, stalled, deputy, how);
        fprintf(stderr,
                "collprof: error: timeout: rank 0 stalled after rank %d had found it silent and "
                "reported in its place: the cell it was in is recorded as timed out\n",
                deputy);
    } else {
        snprintf(msg, sizeof(msg),
                 "cell %d (%s) timed out: no progress for %.1f s; rank 0 was stopped or "
                 "frozen%s",
                 cell, desc, stalled, how);
        fprintf(stderr,
                "collprof: error: timeout: rank 0 resumed after %.1f s without progress (it "
                "was stopped or frozen): the cell it was in is recorded as timed out\n",
                stalled);
    }
    if (wd.hooks.on_timeout != NULL) {
        wd.hooks.on_timeout(wd.hooks.arg, cell, msg);
    }
}

static int boot_deputies(const cp_boot_t *b, int *dep)
{
    return cp_wd_deputies(b ? b->node_ids : NULL, b ? b->nranks : 1, dep);
}

/* gap: how long the thread was away before it took sig (long: the process
 * was stopped meanwhile, whatever the main thread did once resumed). */
static void take_signal(int sig, double gap)
{
    pthread_mutex_lock(&wd.mu);
    const cp_boot_t *b = hold_boot();
    pthread_mutex_unlock(&wd.mu);
    int rank = b ? b->rank : 0, n = b ? b->nranks : 1, dep[CP_WD_DEPUTIES];
    int ndep = boot_deputies(b, dep);
    if (rank == 0) {
        /* for good: the main thread writes no more */
        if (lock_for_good()) {
            pthread_mutex_lock(&wd.mu);
            int cell = wd.cell;
            double stalled = now_s() - wd.last_s, tmo = wd.timeout_s;
            pthread_mutex_unlock(&wd.mu);
            /* woken by the launcher ending the job: past its limit, and (on a loaded machine
             * the stall can be short of the margin) a deputy has reported in its place */
            if (tmo > 0 && (stalled > tmo + CP_TMO_WD_FROZEN_S || gap > tmo + CP_TMO_WD_FROZEN_S ||
                            (stalled > tmo && n > 1 && deputy_acting(dep, ndep) > 0))) {
                writer_resumed(sig, cell, stalled > gap ? stalled : gap, -1);
            } else if (wd.hooks.on_signal != NULL) {
                wd.hooks.on_signal(wd.hooks.arg, sig, cell);
            }
        }
        if (n > 1) {
            int one = 1;
            io->post(KEY_DONE, &one, sizeof(one));
        }
    } else if (b != NULL) {
        int one;
        fetch_one(0, KEY_DONE, &one, sizeof(one), CP_TMO_WD_SIGNAL_WAIT_S);
    }
    _exit(128 + sig);
}

/* What the reporter adds when rank 0, which writes the outputs, is silent. */
static void writer_lost(const cp_boot_t *b, int cell, const int *dep, int ndep, char *msg,
                        size_t len)
{
    char files[CP_WD_FILES_LEN] = "", list[64];
    fetch_one(0, KEY_FILES, files, sizeof(files), 0);
    files[sizeof(files) - 1] = '\0';
    append(msg, len,
           " Rank 0 (%s), which writes the result files, does not answer: unless it resumes to "
           "close them, they hold ",
           b->hostnames[0]);
    if (cell > 0) {
        append(msg, len, "only the cells before cell %d, with no row for this one", cell);
    } else {
        append(msg, len, "no row for this cell");
    }
    append(msg, len, "%s%s.", files[0] ? ": " : "", files);
    int i = dep_index(b->rank, dep, ndep);
    if (i == 1) {
        append(msg, len, " Reported in its place by rank %d, its first deputy.", b->rank);
    } else if (i > 1) {
        cp_wd_ranks(dep + 1, i - 1, list, sizeof(list));
        append(msg, len,
               " Reported in its place by rank %d, deputy %d: the deputies before it (rank%s "
               "%s) do not answer either.",
               b->rank, i, i > 2 ? "s" : "", list);
    }
}

/* The reporting rank (0, or the deputy acting for it): the message, the outputs closed
 * (rank 0), the others released. */
static void report_timeout(cp_wd_rec_t *recs, int n, int me, int nsilent, const cp_boot_t *b)
{
    char *msg = malloc(4096);
    if (msg == NULL) {
        cp_log(CP_LOG_ERROR, "watchdog: no progress for %.1f s; out of memory", recs[me].stalled_s);
        _exit(CP_EXIT_TIMEOUT);
    }
    int cell = cp_wd_explain(recs, n, b ? (const char(*)[256])b->hostnames : NULL,
                             wd.hooks.describe, wd.hooks.arg, msg, 4096);
    if (me != 0) {
        int dep[CP_WD_DEPUTIES], ndep = boot_deputies(b, dep);
        writer_lost(b, cell, dep, ndep, msg, 4096);
    }
    /* host names come from other ranks' gethostname(): printable text only */
    char *raw = msg;
    msg = malloc(4096);
    if (msg != NULL) {
        cp_text_sanitize(raw, msg, 4096);
        free(raw);
    } else {
        msg = raw;
    }
    fprintf(stderr, "collprof: error: timeout: %s\n", msg);
    fflush(stderr);
    if (me == 0 && lock_for_good()) {
        unsigned char *silent = wd.hooks.on_silent != NULL ? calloc((size_t)n, 1) : NULL;
        for (int q = 0; silent != NULL && q < n; q++) {
            silent[q] = q != me && !recs[q].valid;
        }
        if (silent != NULL) {
            wd.hooks.on_silent(wd.hooks.arg, silent, n);
        }
        free(silent);
        if (wd.hooks.on_timeout != NULL) {
            wd.hooks.on_timeout(wd.hooks.arg, cell, msg);
        }
    }
    if (n > 1) {
        int one = 1;
        io->post(KEY_DONE, &one, sizeof(one));
    }
    if (nsilent > 0) {
        /* a stopped or cut-off rank would keep the launcher (srun) waiting:
         * have it end the whole job */
        cp_oob_abort(CP_EXIT_TIMEOUT, "collprof: timeout; ranks did not answer the watchdog");
    }
    _exit(CP_EXIT_TIMEOUT);
}

/* Rank 0, stalled: it reports, unless a deputy already acts in its place (rank 0 was
 * stopped, or stalled long after the others): then it records the cell's row alone. */
static void rank0_timeout(cp_wd_rec_t *recs, int n, double late, const cp_boot_t *b)
{
    int frozen = late > CP_TMO_WD_FROZEN_S, dep[CP_WD_DEPUTIES], ndep = boot_deputies(b, dep);
    int deputy = n > 1 ? deputy_acting(dep, ndep) : -1;
    if (deputy > 0) {
        if (lock_for_good()) {
            writer_resumed(0, recs[0].cell, recs[0].stalled_s, frozen ? -1 : deputy);
        }
        int one = 1;
        io->post(KEY_DONE, &one, sizeof(one));
        _exit(CP_EXIT_TIMEOUT);
    }
    if (frozen) {
        cp_log(CP_LOG_WARN, "watchdog: this rank itself was stopped or starved for %.1f s", late);
    }
    report_timeout(recs, n, 0, cp_wd_collect(recs, n, 0, CP_TMO_WD_COLLECT_MAX_S), b);
}

/* A deputy acting for a silent rank 0: it collects and reports, unless it hears no other
 * node (then it is the one cut off, and the ranks that reach rank 0 have their report). */
static void deputy_timeout(cp_wd_rec_t *recs, int n, int me, const cp_boot_t *b)
{
    int missing = cp_wd_collect(recs, n, me, CP_TMO_WD_DEPUTY_COLLECT_S);
    if (cp_wd_may_report(recs, b ? b->node_ids : NULL, n, me)) {
        report_timeout(recs, n, me, missing, b);
    }
    int zero = 0, dep[CP_WD_DEPUTIES], ndep = boot_deputies(b, dep);
    io->post(KEY_LEAD, &zero, sizeof(zero));
    cp_log(CP_LOG_ERROR, "watchdog: neither rank 0, nor the deputies before this rank, nor any "
                         "rank on another node answers: this node looks cut off; the report is "
                         "left to the ranks that reach rank 0");
    cp_wd_wait_done(me, dep, ndep, CP_TMO_WD_COLLECT_MAX_S + CP_TMO_WD_CLOSE_WAIT_S);
    _exit(CP_EXIT_TIMEOUT);
}

static void take_timeout(void)
{
    const cp_boot_t *b;
    double late;
    cp_wd_rec_t mine = my_record(&b, &late);
    /* the watchdog looks every tick: so late, the whole process was stopped */
    int frozen = late > CP_TMO_WD_FROZEN_S;
    int rank = b ? b->rank : 0, n = b ? b->nranks : 1;
    if (n > 1) {
        io->post(KEY_REC, &mine, sizeof(mine));
    }
    cp_wd_rec_t *recs = calloc((size_t)n, sizeof(*recs));
    if (recs == NULL) {
        cp_log(CP_LOG_ERROR, "watchdog: no progress for %.1f s; out of memory", mine.stalled_s);
        _exit(CP_EXIT_TIMEOUT);
    }
    recs[rank] = mine;
    if (rank == 0) {
        rank0_timeout(recs, n, late, b);
    }
    char w[160];
    where(&mine, 1, w, sizeof(w));
    cp_log(CP_LOG_ERROR, "watchdog: no progress for %.1f s (%s)%s; reporting to rank 0",
           mine.stalled_s, w, frozen ? ": this rank was stopped or frozen and has resumed" : "");
    int dep[CP_WD_DEPUTIES], ndep = boot_deputies(b, dep);
    if (cp_wd_elect(rank, dep, ndep, CP_TMO_WD_DEPUTY_WAIT_S) == rank) {
        deputy_timeout(recs, n, rank, b);
    }
    /* rank 0 or a deputy reports: released when it is done (or the launcher ends the job) */
    cp_wd_wait_done(rank, dep, ndep,
                    CP_TMO_WD_DEPUTY_WAIT_S + CP_TMO_WD_COLLECT_MAX_S + CP_TMO_WD_CLOSE_WAIT_S);
    _exit(CP_EXIT_TIMEOUT);
}

void cp_wd_publish_files(const char *files)
{
    char buf[CP_WD_FILES_LEN];
    snprintf(buf, sizeof(buf), "%s", files);
    cp_oob_post(KEY_FILES, buf, sizeof(buf));
}

static void *wd_main(void *unused)
{
    (void)unused;
    sigset_t set;
    signal_set(&set);
    const struct timespec tick = {0, CP_TMO_WD_TICK_NS};
    /* how long the thread was away lately: a stop anywhere in the loop (the
     * tick's wait may run out during it) shows as a long span between two
     * returns of the wait, before the signal that woke the process is taken */
    double last = now_s(), away = 0.0, away_at = 0.0;
    while (!atomic_load(&wd.stop)) {
        int sig = sigtimedwait(&set, NULL, &tick);
        double t = now_s(), span = t - last;
        last = t;
        if (span > CP_TMO_WD_FROZEN_S) {
            away = span;
            away_at = t;
        }
        if (sig > 0) {
            take_signal(sig, t - away_at < 5.0 ? away : span);
        }
        pthread_mutex_lock(&wd.mu);
        int stalled = wd.timeout_s > 0 && now_s() - wd.last_s > wd.timeout_s;
        pthread_mutex_unlock(&wd.mu);
        if (stalled && !atomic_load(&wd.stop)) {
            take_timeout();
        }
    }
    return NULL;
}

int cp_wd_start(const cp_wd_hooks_t *hooks)
{
    wd.hooks = *hooks;
    atomic_store(&wd.stop, 0);
    wd.last_s = now_s();
    wd.timeout_s = 0;
    wd.cell = -1;
    wd.iter = -1;
    if (pthread_create(&wd.thread, NULL, wd_main, NULL) != 0) {
        cp_log(CP_LOG_WARN, "watchdog thread could not start: no timeouts, signals end the run");
        sigset_t set;
        signal_set(&set);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        return -1;
    }
    wd.running = 1;
    return 0;
}

void cp_wd_stop(void)
{
    if (!wd.running) {
        return;
    }
    atomic_store(&wd.stop, 1);
    pthread_join(wd.thread, NULL);
    wd.running = 0;
}
