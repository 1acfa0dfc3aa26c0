#include "config.h"

/*
 * The screen's pairs (screen_pairs_int.h), a node leader's side: a pair's own channel and
 * backend context, its latency and bandwidth tests alone on it, and the leaders other than
 * rank 0 following rank 0's plans.  Rank 0's side is screen_pairs.c.
 */

#include "screen/run/screen_pairs_int.h"

#include "screen/run/screen_valid.h"

#include "boot/boot.h"
#include "collprof/status.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/timeouts.h"
#include "base/util.h"
#include "wd/watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill_end(const cp_result_t *res, end_rec_t *e)
{
    memset(e, 0, sizeof(*e));
    e->status = res->fig.status;
    e->iters = res->iters;
    e->wrong = res->fig.wrong;
    snprintf(e->reason, sizeof(e->reason), "%s", res->fig.reason);
    if ((res->fig.status == COLLPROF_CELL_OK || res->fig.status == COLLPROF_CELL_WRONG) &&
        res->samples != NULL && res->iters > 0) {
        double *v = malloc(sizeof(double) * (size_t)res->iters);
        if (v != NULL) {
            memcpy(v, res->samples, sizeof(double) * (size_t)res->iters);
            cp_stats_t st;
            cp_stats_compute(v, res->iters, &st);
            e->p50 = st.p50, e->mean = st.mean, e->min = st.min;
        }
        free(v);
    }
}

void cp_pairs_failed_ends(end_rec_t rec[2], int status, const char *why)
{
    for (int k = 0; k < 2; k++) {
        memset(&rec[k], 0, sizeof(rec[k]));
        rec[k].status = status;
        snprintf(rec[k].reason, sizeof(rec[k].reason), "%s", why);
    }
}

/* The sign of life of a rank at work: to rank 0, or from rank 0 to every leader it reaches
 * (force: now, else at most every CP_TMO_SCREEN_BEAT_S). */
void cp_pairs_alive_now(cp_pairs_run_t *pr, int force)
{
    double now = cp_now_s();
    if (!force && now - pr->last_alive < CP_TMO_SCREEN_BEAT_S) {
        return;
    }
    pr->last_alive = now;
    screen_msg_t m;
    memset(&m, 0, sizeof(m));
    m.type = MSG_ALIVE;
    const cp_boot_t *b = pr->r->boot;
    if (b->rank != 0) {
        cp_oob_side_up(&m, sizeof(m));
        return;
    }
    for (int nd = 0; nd < b->nnodes; nd++) {
        int q = pr->lead[nd];
        if (q > 0 && pr->gone[nd] == 0 && cp_oob_side_down(q, &m, sizeof(m)) != COLLPROF_OK) {
            pr->gone[nd] = 2; /* marked where rank 0 next deals with it */
        }
    }
}

void cp_pairs_alive(void *arg)
{
    cp_pairs_alive_now(arg, 0);
}

/* ---- a pair's own context ---------------------------------------------- */

static int from_root(cp_pairs_run_t *pr, screen_msg_t *m);

/* A pair's end after its latency test lat: on to its bandwidth test once every pair of the
 * round is past its latency test (rank 0: its bulk_go; a leader: LAT to rank 0, then its
 * BULK), so that no pair's latency probe waits behind another pair's bulk on a shared path (a
 * spine); 0.  -1: no bandwidth test (bw says why): the latency test failed (the pair is
 * broken: this end reports now, and rank 0 takes its RESULT for its LAT), or rank 0 went
 * away. */
static int lat_then_bulk(cp_pairs_run_t *pr, const end_rec_t *lat, end_rec_t *bw)
{
    screen_msg_t m;
    memset(&m, 0, sizeof(m));
    m.type = MSG_LAT;
    m.round = pr->round;
    if (lat->status != COLLPROF_CELL_OK && lat->status != COLLPROF_CELL_WRONG) {
        *bw = *lat;
        snprintf(bw->reason, sizeof(bw->reason), "not run: the latency test failed");
        return -1;
    }
    if (pr->r->boot->rank == 0) {
        pr->bulk_go(pr);
        return 0;
    }
    if (cp_oob_side_up(&m, sizeof(m)) == COLLPROF_OK && from_root(pr, &m) == 0 &&
        m.type == MSG_BULK) {
        return 0;
    }
    memset(bw, 0, sizeof(*bw));
    bw->status = COLLPROF_CELL_NOSETUP;
    snprintf(bw->reason, sizeof(bw->reason), "not run: rank 0 went away");
    return -1;
}

/* The host functions take no context: the pair this rank is in now. */
static cp_oob_pair_t *cur;
static int pair_allgather(const void *in, void *out, size_t len)
{
    return cp_oob_pair_allgather(cur, in, out, len);
}
static int pair_bcast(void *buf, size_t len, int root)
{
    return cp_oob_pair_bcast(cur, buf, len, root);
}
static int pair_alltoall(const void *in, void *out, size_t len)
{
    return cp_oob_pair_alltoall(cur, in, out, len);
}
static int pair_barrier(void)
{
    return cp_oob_pair_barrier(cur);
}

/* This rank's part on the joined group channel pp: the backend's context of the group, the
 * pair's latency then bandwidth cells (or the validation's allreduce) alone, the bandwidth
 * test after every pair of the round is past its latency test (lat_then_bulk), the context
 * closed. */
static void group_tests(cp_pairs_run_t *pr, cp_oob_pair_t *pp, int what, end_rec_t rec[2])
{
    const cp_cell_t *lat = pr->cell[0];
    const cp_plugin_t *p = &pr->r->plugins[lat->plugin];
    int me, n;
    const int *ranks = cp_oob_pair_ranks(pp, &me, &n);
    collprof_host_t h = *pr->r->host;
    h.rank = me;
    h.nranks = n;
    h.world_ranks = ranks;
    h.world_nranks = pr->r->boot->nranks;
    h.oob_allgather = pair_allgather;
    h.oob_bcast = pair_bcast;
    h.oob_barrier = pair_barrier;
    h.oob_alltoall = pair_alltoall;
    cur = pp;
    cp_pairs_alive_now(pr, 1);
    void *ctx = NULL;
    int rc = p->be->init(&h, &ctx);
    cp_pairs_alive_now(pr, 1);
    if (rc != COLLPROF_OK) {
        char why[160];
        snprintf(why, sizeof(why), "%s on a group of %d: %s", p->name, n, p->be->last_error(NULL));
        cp_pairs_failed_ends(rec, COLLPROF_CELL_NOSETUP, why); /* no context: not set up */
        cur = NULL;
        return;
    }
    cp_runner_t rr = *pr->r;
    rr.alone = 1;
    rr.ctx = ctx;
    rr.gn = n;
    rr.grank = me;
    rr.tmo = pr->deadline + CP_TMO_SCREEN_WD_MARGIN_S;
    rr.on_iter = cp_pairs_alive;
    rr.on_iter_arg = pr;
    for (int k = 0; k < (what == RUN_VALID ? 1 : 2); k++) {
        cp_cell_t c = what == RUN_VALID ? cp_screen_valid_cell(pr->cell[1], n, me) : *pr->cell[k];
        if (what == RUN_PAIR) {
            c.sweep = 1;
            c.peer = 1 - me;
        }
        cp_result_t res;
        rr.read_counters = what == RUN_PAIR && k == 1; /* the bandwidth test's path check */
        cp_run_cell(&rr, &c, &res);
        fill_end(&res, &rec[k]);
        if (rr.read_counters && res.fig.status == COLLPROF_CELL_OK) {
            cp_pairs_path_end(pr, &c, &res, &rec[k]);
        }
        cp_result_free(&res);
        if (what == RUN_PAIR && k == 0 && lat_then_bulk(pr, &rec[0], &rec[1]) != 0) {
            break;
        }
    }
    p->be->finalize(ctx);
    cur = NULL;
}

void cp_pairs_join_and_test(cp_pairs_run_t *pr, cp_oob_pair_t *pp, const char *addr, int what,
                            end_rec_t rec[2])
{
    char why[256] = "";
    if (cp_oob_pair_join(pp, pr->r->boot, addr, why, sizeof(why)) != COLLPROF_OK) {
        char msg[300];
        snprintf(msg, sizeof(msg), "no channel with the %s: %s",
                 what == RUN_PAIR ? "partner" : "group", why);
        cp_pairs_failed_ends(rec, COLLPROF_CELL_NOSETUP, msg);
        return;
    }
    if (cp_fault_nopair(pr->r->boot->rank)) { /* the channel closed at once: set-up failed */
        cp_log(CP_LOG_WARN, "COLLPROF_FAULT: rank %d closes its pair channel", pr->r->boot->rank);
        cp_pairs_failed_ends(rec, COLLPROF_CELL_NOSETUP, "COLLPROF_FAULT=nopair: channel closed");
        return;
    }
    group_tests(pr, pp, what, rec);
}

/* ---- a leader other than rank 0 ---------------------------------------- */

/* The next message from rank 0 but a sign of life (those are the watchdog's beats): 0, or -1
 * when rank 0 went away. */
static int from_root(cp_pairs_run_t *pr, screen_msg_t *m)
{
    const double tmo = pr->deadline + CP_TMO_SCREEN_WD_MARGIN_S;
    for (;;) {
        int rc = cp_oob_side_from_root(m, sizeof(*m), 1.0);
        if (rc < 0) {
            cp_log(CP_LOG_ERROR, "screen: rank 0 went away");
            return -1;
        }
        if (rc == 1) { /* no message, no beat: a silent rank 0 lets the watchdog fire */
            cp_wd_beat(CP_WD_SETUP, pr->r->index, -1, 0, tmo);
            if (m->type != MSG_ALIVE) {
                return 0;
            }
        }
    }
}

/* One plan m on a leader: its group's run, if any, and its result to rank 0. */
static int leader_round(cp_pairs_run_t *pr, const screen_msg_t *m)
{
    const cp_boot_t *b = pr->r->boot;
    screen_msg_t res;
    memset(&res, 0, sizeof(res));
    res.type = MSG_RESULT;
    res.round = m->round;
    res.partner = m->partner;
    pr->round = m->round;
    static int stopped; /* COLLPROF_FAULT=idlestop: once */
    if (m->gsize >= 2 && m->run == RUN_PAIR && !stopped &&
        cp_fault_idlestop(b->rank, m->round + 1, m->gidx)) {
        stopped = 1; /* stopped while idle: the plan unread, as a member of its pair */
        cp_fault_stop_now(b->rank, m->round + 1);
    }
    if (m->gsize >= 2) {
        if (m->run == RUN_PAIR) {
            cp_log(CP_LOG_INFO, "screen %s: with rank %d, on a context of the two", m->what,
                   m->partner);
        } else {
            cp_log(CP_LOG_INFO, "screen %s: member %d of a group of %d", m->what, m->gidx,
                   m->gsize);
        }
        char why[256] = "";
        screen_msg_t pub;
        memset(&pub, 0, sizeof(pub));
        pub.type = MSG_PUB;
        pub.round = m->round;
        cp_oob_pair_t *pp = cp_oob_pair_new(b, m->gidx, m->gsize, pr->deadline, pub.addr,
                                            sizeof(pub.addr), why, sizeof(why));
        if (m->gidx == 0 && cp_oob_side_up(&pub, sizeof(pub)) != COLLPROF_OK) {
            cp_oob_pair_free(pp);
            return -1;
        }
        if (pp == NULL) {
            cp_pairs_failed_ends(res.rec, COLLPROF_CELL_NOSETUP, why);
        } else if (m->gidx == 0) {
            cp_pairs_join_and_test(pr, pp, NULL, m->run, res.rec);
        } else {
            screen_msg_t go;
            if (from_root(pr, &go) != 0) {
                cp_oob_pair_free(pp);
                return -1;
            }
            if (go.type == MSG_GO && go.partner >= 0) {
                cp_pairs_join_and_test(pr, pp, go.addr, m->run, res.rec);
            } else {
                res.partner = -1; /* member 0 had no channel, or stopped */
            }
        }
        cp_oob_pair_free(pp);
    }
    return cp_oob_side_up(&res, sizeof(res)) == COLLPROF_OK ? 0 : -1;
}

/* Follow rank 0's plans until it says the screen ended: 1 when the job is no longer whole,
 * 0 when it is, -1 when rank 0 went away. */
int cp_pairs_leader_loop(cp_pairs_run_t *pr)
{
    for (;;) {
        screen_msg_t m;
        if (from_root(pr, &m) != 0) {
            return -1;
        }
        if (m.type == MSG_END) {
            return m.broken ? 1 : 0;
        }
        if (m.type == MSG_PLAN && leader_round(pr, &m) != 0) {
            return -1;
        }
    }
}
