#include "config.h"

/*
 * The watchdog's thread (watchdog.h): the main thread's beats, the signals, and what a rank
 * does when it stalls: rank 0 or a deputy collects every rank's record and reports
 * (attribution: wd_explain.c; the exchange and the election: wd_elect.c).
 */

#include "wd/watchdog.h"
#include "wd/wd_int.h"

#include "base/log.h"
#include "base/timeouts.h"
#include "base/util.h"

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

static struct {
    pthread_mutex_t mu; /* the beat */
    pthread_mutex_t writer;
    pthread_t thread;
    int running;
    atomic_int stop; /* set by cp_wd_stop, read by the thread every tick */
    cp_wd_hooks_t hooks;
    const cp_boot_t *boot; /* under mu: set by the main thread once booted */
    int held;       /* under mu: a report took boot and ends the process (cp_wd_set_boot waits) */
    int own_writer; /* the thread's alone: it holds the writer lock */
    /* the beat */
    int phase, cell, iter, warmup;
    double last_s, timeout_s;
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER, .writer = PTHREAD_MUTEX_INITIALIZER};

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
    double t = cp_wd_now_s();
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
    if (wd.own_writer) {
        return 1;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)CP_TMO_WD_CLOSE_WAIT_S / 2;
    if (pthread_mutex_timedlock(&wd.writer, &until) != 0) {
        cp_log(CP_LOG_ERROR, "watchdog: the outputs are busy (a write does not return); leaving "
                             "them as the last completed cell left them");
        return 0;
    }
    wd.own_writer = 1;
    return 1;
}

void cp_wd_set_boot(const cp_boot_t *boot)
{
    for (;;) {
        pthread_mutex_lock(&wd.mu);
        int held = wd.held && boot == NULL;
        if (!held) {
            wd.boot = boot;
        }
        pthread_mutex_unlock(&wd.mu);
        if (!held) {
            return;
        }
        /* a report reads the tables the caller is about to free, and ends the process with
         * _exit: wait for that instead of freeing them under it (the check after a stop lets
         * them go again) */
        usleep(20000);
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
    mine.stalled_s = cp_wd_now_s() - wd.last_s;
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
            double stalled = cp_wd_now_s() - wd.last_s, tmo = wd.timeout_s;
            pthread_mutex_unlock(&wd.mu);
            /* woken by the launcher ending the job: past its limit, and (on a loaded machine
             * the stall can be short of the margin) a deputy has reported in its place */
            if (tmo > 0 && (stalled > tmo + CP_TMO_WD_FROZEN_S || gap > tmo + CP_TMO_WD_FROZEN_S ||
                            (stalled > tmo && n > 1 && cp_wd_deputy_acting(dep, ndep) > 0))) {
                writer_resumed(sig, cell, stalled > gap ? stalled : gap, -1);
            } else if (wd.hooks.on_signal != NULL) {
                wd.hooks.on_signal(wd.hooks.arg, sig, cell);
            }
        }
        if (n > 1) {
            int one = 1;
            cp_wd_io()->post(KEY_DONE, &one, sizeof(one));
        }
    } else if (b != NULL) {
        int one;
        cp_wd_fetch_one(0, KEY_DONE, &one, sizeof(one), CP_TMO_WD_SIGNAL_WAIT_S);
    }
    _exit(128 + sig);
}

/* What the reporter adds when rank 0, which writes the outputs, is silent. */
static void writer_lost(const cp_boot_t *b, int cell, const int *dep, int ndep, char *msg,
                        size_t len)
{
    char files[CP_WD_FILES_LEN] = "", list[64];
    cp_wd_fetch_one(0, KEY_FILES, files, sizeof(files), 0);
    files[sizeof(files) - 1] = '\0';
    cp_wd_append(
        msg, len,
        " Rank 0 (%s), which writes the result files, does not answer: unless it resumes to "
        "close them, they hold ",
        cp_boot_host(b, 0));
    if (cell > 0) {
        cp_wd_append(msg, len, "only the cells before cell %d, with no row for this one", cell);
    } else {
        cp_wd_append(msg, len, "no row for this cell");
    }
    cp_wd_append(msg, len, "%s%s.", files[0] ? ": " : "", files);
    int i = cp_wd_dep_index(b->rank, dep, ndep);
    if (i == 1) {
        cp_wd_append(msg, len, " Reported in its place by rank %d, its first deputy.", b->rank);
    } else if (i > 1) {
        cp_wd_ranks(dep + 1, i - 1, list, sizeof(list));
        cp_wd_append(msg, len,
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
    cp_wd_hosts_t hosts = {b ? (const char(*)[256])b->node_names : NULL, b ? b->node_ids : NULL};
    int cell =
        cp_wd_explain(recs, n, b ? &hosts : NULL, wd.hooks.describe, wd.hooks.arg, msg, 4096);
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
        cp_wd_io()->post(KEY_DONE, &one, sizeof(one));
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
    int deputy = n > 1 ? cp_wd_deputy_acting(dep, ndep) : -1;
    if (deputy > 0) {
        if (lock_for_good()) {
            writer_resumed(0, recs[0].cell, recs[0].stalled_s, frozen ? -1 : deputy);
        }
        int one = 1;
        cp_wd_io()->post(KEY_DONE, &one, sizeof(one));
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
    cp_wd_io()->post(KEY_LEAD, &zero, sizeof(zero));
    cp_log(CP_LOG_ERROR, "watchdog: neither rank 0, nor the deputies before this rank, nor any "
                         "rank on another node answers: this node looks cut off; the report is "
                         "left to the ranks that reach rank 0");
    cp_wd_wait_done(me, dep, ndep, CP_TMO_WD_COLLECT_MAX_S + CP_TMO_WD_CLOSE_WAIT_S);
    _exit(CP_EXIT_TIMEOUT);
}

/* This rank timed out at record mine, late seconds past its limit (boot b held). */
static void take_timeout_at(cp_wd_rec_t mine, double late, const cp_boot_t *b)
{
    /* the watchdog looks every tick: so late, the whole process was stopped */
    int frozen = late > CP_TMO_WD_FROZEN_S;
    int rank = b ? b->rank : 0, n = b ? b->nranks : 1;
    if (n > 1) {
        cp_wd_io()->post(KEY_REC, &mine, sizeof(mine));
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
    cp_wd_where(&mine, 1, w, sizeof(w));
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

static void take_timeout(void)
{
    const cp_boot_t *b;
    double late;
    cp_wd_rec_t mine = my_record(&b, &late);
    take_timeout_at(mine, late, b);
}

/* The beat as the thread saw it at its last tick. */
typedef struct wd_seen {
    cp_wd_rec_t rec;
    double last_s, timeout_s;
} wd_seen_t;

/* The beat into *seen; 1 when the main thread is past its limit. */
static int look(wd_seen_t *seen)
{
    pthread_mutex_lock(&wd.mu);
    double now = cp_wd_now_s();
    int stalled = wd.timeout_s > 0 && now - wd.last_s > wd.timeout_s;
    memset(&seen->rec, 0, sizeof(seen->rec));
    seen->rec.valid = 1;
    seen->rec.phase = wd.phase;
    seen->rec.cell = wd.cell;
    seen->rec.iter = wd.iter;
    seen->rec.warmup = wd.warmup;
    seen->last_s = wd.last_s;
    seen->timeout_s = wd.timeout_s;
    pthread_mutex_unlock(&wd.mu);
    return stalled;
}

/* The process was stopped (SIGSTOP, a debugger, Slurm's suspend) from stopped_at until t, the
 * beat then *pre.  Once resumed, the main thread may beat before this thread looks (it
 * finishes an operation its peers had already fed, or the write it was in), which would hide
 * a stop past the limit; so the stop is judged here, by the job: when a deputy posted its
 * record, the others gave up on this rank (they report, or wait for a report, and end), and
 * this rank times out at the place it was stopped in (rank 0: the timeout row, both files
 * closed as incomplete, whatever its main thread did meanwhile).  When none did, the whole job
 * was stopped and resumed together: the stop does not count. */
static void take_resume(const wd_seen_t *pre, double stopped_at, double t)
{
    double stalled = t - pre->last_s;
    if (pre->timeout_s <= 0 || stalled + CP_TMO_WD_FROZEN_S <= pre->timeout_s) {
        return; /* well within the limit: no peer can have given up on this stop */
    }
    pthread_mutex_lock(&wd.mu);
    const cp_boot_t *b = hold_boot();
    pthread_mutex_unlock(&wd.mu);
    int rank = b ? b->rank : 0, n = b ? b->nranks : 1, dep[CP_WD_DEPUTIES];
    int ndep = boot_deputies(b, dep), own = rank == 0 && lock_for_good();
    int q = n > 1 ? cp_wd_gave_up(rank, dep, ndep, CP_TMO_WD_RESUME_ASK_S) : -1;
    if (q >= 0) {
        cp_wd_rec_t mine = pre->rec;
        mine.stalled_s = cp_wd_now_s() - pre->last_s;
        cp_log(CP_LOG_ERROR,
               "watchdog: this rank was stopped for %.1f s, past its timeout (%.1f s), and rank %d "
               "gave up on it",
               t - stopped_at, pre->timeout_s, q);
        take_timeout_at(mine, mine.stalled_s - pre->timeout_s, b);
    }
    /* a beat from before the stop (the stop took most of the span; the thread saw the beat a
     * tick before it at most), not one since the resume: moved on by the stop's length */
    pthread_mutex_lock(&wd.mu);
    if (wd.last_s < t - 0.5 * (t - stopped_at)) {
        wd.last_s += t - stopped_at;
    }
    wd.held = 0;
    pthread_mutex_unlock(&wd.mu);
    if (own) {
        wd.own_writer = 0;
        cp_wd_unlock();
    }
    cp_log(CP_LOG_INFO,
           "watchdog: this rank was stopped for %.1f s and resumed with the rest of the job: the "
           "stop does not count against its timeout",
           t - stopped_at);
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
    double last = cp_wd_now_s(), away = 0.0, away_at = 0.0;
    wd_seen_t seen;
    look(&seen);
    while (!atomic_load(&wd.stop)) {
        int sig = sigtimedwait(&set, NULL, &tick);
        double t = cp_wd_now_s(), span = t - last;
        last = t;
        if (span > CP_TMO_WD_FROZEN_S) {
            away = span;
            away_at = t;
            /* a stop ends the wait without the signal sent along with the SIGCONT (a launcher
             * ending the job sends both): that signal comes first */
            const struct timespec none = {0, 0};
            sig = sig > 0 ? sig : sigtimedwait(&set, NULL, &none);
        }
        if (sig > 0) {
            take_signal(sig, t - away_at < 5.0 ? away : span);
        }
        if (span > CP_TMO_WD_FROZEN_S && !atomic_load(&wd.stop)) {
            take_resume(&seen, t - span, t);
        }
        if (look(&seen) && !atomic_load(&wd.stop)) {
            take_timeout();
        }
    }
    return NULL;
}

int cp_wd_start(const cp_wd_hooks_t *hooks)
{
    wd.hooks = *hooks;
    atomic_store(&wd.stop, 0);
    wd.last_s = cp_wd_now_s();
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
