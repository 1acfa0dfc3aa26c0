/*
 * The watchdog: one thread per rank that turns a hang into a report, and
 * SIGINT/SIGTERM/SIGHUP into an orderly stop.
 *
 * The main thread beats (cp_wd_beat) as it moves through the run: at each
 * phase of each cell and before every timed operation, giving the timeout
 * that applies until its next beat.  A rank that gets no beat for that long
 * is stalled.  In a hung job every rank stalls: the ranks inside the
 * collective wait for a peer, and that peer is stuck somewhere else (or all
 * of them are stuck inside the library).  Each stalled rank publishes where
 * it is through PMIx (cp_oob_post: no fence, so it works while other ranks
 * are blocked); rank 0 collects the records, names the ranks that did not
 * arrive and their hosts, has the outputs record the cell as `timeout` and
 * close, and every rank exits with CP_EXIT_TIMEOUT.  The hung backend is
 * never asked anything.
 *
 * Signals are blocked in every thread (cp_wd_block_signals, called before
 * PMIx and the backends start their threads) and taken by the watchdog with
 * sigtimedwait: rank 0 closes its outputs with status "incomplete" (every
 * completed cell is already on disk), and each rank exits with 128 + signal.
 */
#ifndef COLLPROF_CORE_WATCHDOG_H
#define COLLPROF_CORE_WATCHDOG_H

#include <stddef.h>
#include <stdint.h>

#include "boot/boot.h"

/** Exit status of a run stopped by the watchdog (as timeout(1)). */
#define CP_EXIT_TIMEOUT 124

/** Where the main thread is (its place in a cell: position() in watchdog.c). */
typedef enum cp_wd_phase {
    CP_WD_START = 0, /**< boot, plan, backend initialisation */
    CP_WD_SETUP,     /**< a cell's variant, buffers, agreement */
    CP_WD_SYNC,      /**< the barrier before iteration `iter` */
    CP_WD_OP,        /**< the operation of iteration `iter` */
    CP_WD_CHECK,     /**< the exact-check run */
    CP_WD_GATHER,    /**< gathering records and samples */
    CP_WD_WRITE,     /**< writing the cell's results */
    CP_WD_FINISH,    /**< after the last cell: closing backends */
    CP_WD_OP_DONE,   /**< the operation of iteration `iter` returned on this rank */
    CP_WD_FILL,      /**< --check every|sample:K: fresh inputs before iteration `iter` */
    CP_WD_VERIFY,    /**< --check every|sample:K: the check of iteration `iter`'s output */
    CP_WD_NPHASES
} cp_wd_phase_t;

/** One rank's position, as published when it stalls. */
typedef struct cp_wd_rec {
    int32_t valid; /**< 0: this rank did not answer */
    int32_t phase; /**< cp_wd_phase_t */
    int32_t cell;  /**< -1 outside cells */
    int32_t iter;  /**< iteration counting warm-up ones from 0, -1 when none */
    int32_t warmup;
    int32_t pad;
    double stalled_s; /**< seconds since its last beat */
} cp_wd_rec_t;

typedef struct cp_wd_hooks {
    /** Rank 0, watchdog thread, writer lock held: record cell (-1: none)
     *  as timed out with msg, close the outputs as incomplete. */
    void (*on_timeout)(void *arg, int cell, const char *msg);
    /** Rank 0, watchdog thread, writer lock held: close the outputs as
     *  incomplete after signal sig. */
    void (*on_signal)(void *arg, int sig, int cell);
    /** Rank 0, watchdog thread, writer lock held, just before on_timeout (may be NULL):
     *  silent[q] is 1 for each rank q of n that did not answer (stopped, dead, cut off). */
    void (*on_silent)(void *arg, const unsigned char *silent, int n);
    /** A cell for messages: "mpi/default allreduce float32 count 1048576". */
    void (*describe)(void *arg, int cell, char *buf, size_t len);
    void *arg;
} cp_wd_hooks_t;

/** Block SIGINT, SIGTERM and SIGHUP in this thread and the threads it starts. */
void cp_wd_block_signals(void);

/** Start the thread (before cp_boot_init: signals are handled from here on).
 *  0, or -1 when the thread could not start (the run goes on without). */
int cp_wd_start(const cp_wd_hooks_t *hooks);

/** The job is known: attribution can name ranks and hosts. */
void cp_wd_set_boot(const cp_boot_t *boot);

/** The main thread is now at (phase, cell, iter) and should move on within
 *  timeout_s (<= 0: no limit until the next beat). */
void cp_wd_beat(cp_wd_phase_t phase, int cell, int iter, int warmup, double timeout_s);

/** Writer lock: the main thread holds it around every write to the outputs,
 *  the watchdog takes it (for good) before closing them. */
void cp_wd_lock(void);
void cp_wd_unlock(void);

/** Rank 0, once its outputs are open: their names, for the rank that
 *  reports a timeout in its place when rank 0 itself is stopped. */
#define CP_WD_FILES_LEN 1024
void cp_wd_publish_files(const char *files);

/** Stop the thread (end of a normal run). */
void cp_wd_stop(void);

/** Every rank's host name: names[node_of[rank]] (names once per node, as cp_boot_t holds
 *  them), or names[rank] where node_of is NULL. */
typedef struct cp_wd_hosts {
    const char (*names)[256];
    const int *node_of;
} cp_wd_hosts_t;

/**
 * The attribution, pure (exposed for tests): from every rank's record,
 * the message naming the cell, the ranks that did not arrive with their
 * hosts and positions, the ranks that wait, and the ranks that did not
 * answer (hosts NULL: unknown, "?").  Returns the cell the job is stuck in (-1: none).
 */
int cp_wd_explain(const cp_wd_rec_t *recs, int n, const cp_wd_hosts_t *hosts,
                  void (*describe)(void *arg, int cell, char *buf, size_t len), void *arg,
                  char *msg, size_t len);

/** Rank list as ranges: "0,2-5,9". */
void cp_wd_ranks(const int *ranks, int n, char *buf, size_t len);

/*
 * Who reports a hang, by rule (exposed for tests).  Rank 0 reports; when it
 * does not answer, the first of its deputies that does.  The deputies are a
 * fixed short list, the same on every rank: rank 0, then the first rank of
 * each next node (node_ids: nodes numbered in first-rank order), then the
 * lowest ranks not yet listed, CP_WD_DEPUTIES in all.  A deputy waits for
 * the records of the deputies before it; one that answers reports (or
 * defers in its turn), so a deputy acts only when every deputy before it is
 * silent.  The acting reporter alone asks every rank; the others ask the
 * deputies one at a time, so a round costs O(n) requests in all, not n^2.
 */
#define CP_WD_DEPUTIES 4

/** The deputies, in order, into dep[CP_WD_DEPUTIES] (node_ids NULL: one
 *  node); returns how many (min(n, CP_WD_DEPUTIES)).  dep[0] is rank 0. */
int cp_wd_deputies(const int *node_ids, int n, int *dep);

/** Rank me (not 0), stalled, its record posted: me when it acts as the
 *  reporter (every deputy before it silent for wait_s, and no deputy after
 *  it acting), else the deputy it leaves the report to (-1: me is no
 *  deputy, it asked nothing). */
int cp_wd_elect(int me, const int *dep, int ndep, double wait_s);

/** The acting reporter: the records of every silent rank into recs, asking
 *  all the missing ones each round, for wait_s at most; how many are missing. */
int cp_wd_collect(cp_wd_rec_t *recs, int n, int me, double wait_s);

/** An acting deputy (not rank 0) may report: 1 when one node holds every
 *  rank, or some rank on another node than me answered; 0 when me only
 *  hears its own node (it is the one cut off). */
int cp_wd_may_report(const cp_wd_rec_t *recs, const int *node_ids, int n, int me);

/** Rank me, which leaves the report: wait until rank 0 or a deputy says it
 *  is done, asking one rank a round (rank 0 alone for the first 2 s, while
 *  no deputy can have reported yet; then rank 0 and the other deputies in
 *  turn); its rank, or -1 after wait_s. */
int cp_wd_wait_done(int me, const int *dep, int ndep, double wait_s);

/** Rank me, resumed after a stop past its timeout: the first deputy other than me that posted
 *  its record (its watchdog fired: it reports, or waits for a report, and ends), asked once a
 *  round for wait_s; -1 when none did (the whole job was stopped and resumed together). */
int cp_wd_gave_up(int me, const int *dep, int ndep, double wait_s);

/** The key-value exchange the watchdog uses (cp_oob_post, cp_oob_fetch_all
 *  by default); tests put their own in (NULL: the default). */
typedef struct cp_wd_io {
    int (*post)(const char *key, const void *buf, size_t len);
    int (*fetch_all)(const int *ranks, int nr, const char *key, void *dst, size_t len,
                     double wait_s, int *got);
} cp_wd_io_t;
void cp_wd_set_io(const cp_wd_io_t *io);

#endif /* COLLPROF_CORE_WATCHDOG_H */
