/*
 * The screen's pairs, each on a backend context of its own (cp_screen_pairs_usable): no cell
 * of the whole job, no barrier of every rank, and a node that stops answering does not stop
 * the screen.
 *
 * Each round, rank 0 sends every node leader its partner (side messages over the TCP control
 * channel, cp_oob_side_*).  The lower rank of each pair opens a channel of the two
 * (cp_oob_pair_*: proven with the run's secret, every wait bounded by the pair deadline) and
 * sends rank 0 its address, which rank 0 hands to the higher rank; the two join, start a
 * context of the backend on the pair (COLLPROF_BACKEND_LOCAL_GROUPS: init over the pair's
 * channel alone, failing within the deadline), run the latency and the bandwidth tests alone
 * (cp_runner_t.alone: a paired sendrecv, timed and checked on each end), close it, and each
 * end sends rank 0 its figures.  A rank in a pair sends rank 0 signs of life; rank 0 sends the
 * waiting ranks signs of its own, which their watchdog counts as beats.  A node rank 0 did
 * not hear from for the pair deadline plus CP_TMO_SCREEN_SILENT_S while it had something to
 * do, or whose connection closed, is unreachable: it gets no partner from then on, its pairs
 * are timeouts, and the screen goes on with the others.  At the end rank 0 tells every leader
 * it reaches whether the job is whole; when it is not, no collective of the whole job follows
 * (rank 0 closes its outputs and has the launcher end the job's ranks).
 */

#include "core/screen_run.h"

#include "boot/boot.h"
#include "collprof/status.h"
#include "core/log.h"
#include "core/screen.h"
#include "core/screen_run_int.h"
#include "core/stats.h"
#include "core/timeouts.h"
#include "core/util.h"
#include "core/watchdog.h"

#include <stdlib.h>
#include <string.h>

enum { MSG_PLAN = 1, MSG_PUB = 2, MSG_GO = 3, MSG_ALIVE = 4, MSG_RESULT = 5, MSG_END = 6 };

/* One end's figures of one size: its own samples. */
typedef struct end_rec {
    int32_t status; /* collprof_cell_status_t; 0 (pending): no result */
    int32_t iters;
    uint64_t wrong;
    double p50, mean, min; /* us */
    char reason[112];
} end_rec_t;

/* Every side message of the screen (one length, cp_oob_side_*). */
typedef struct screen_msg {
    int32_t type;
    int32_t round;    /* counted over the screen */
    int32_t partner;  /* PLAN, GO: the partner's rank, -1: none; RESULT: -1 when it ran nothing */
    int32_t broken;   /* END: a node was unreachable: no collective of the job follows */
    char what[48];    /* PLAN: "round 2/3 (random)", for the log */
    char addr[80];    /* PUB: the lower rank's pair channel ("": none); GO: where to join */
    end_rec_t rec[2]; /* RESULT: latency, bandwidth */
} screen_msg_t;

/* What one screen of pairs holds. */
typedef struct pairs_run {
    cp_runner_t *r;
    const cp_cell_t *cell[2]; /* latency, bandwidth */
    const int *lead;          /* [nnodes] each node's leader */
    double deadline;          /* the pair deadline */
    double last_alive;        /* when this rank last sent a sign of life */
    /* rank 0 */
    cp_screen_t *s;
    unsigned char *gone; /* [nnodes] 1 unreachable; 2 its connection failed, not yet marked */
    int *partner;        /* [nnodes] this round's partner node, -1: none */
    screen_msg_t *got;   /* [nnodes] this round's messages: PUB, then RESULT */
    double *heard;       /* [nranks] when rank 0 last heard from the rank */
    unsigned char *wait; /* [nranks] rank 0 waits for a message from it */
    int nunreach;
} pairs_run_t;

int cp_screen_pairs_usable(const cp_runner_t *r, const cp_cell_t *lat)
{
    const cp_plugin_t *p = &r->plugins[lat->plugin];
    unsigned need = COLLPROF_BACKEND_GROUPS | COLLPROF_BACKEND_LOCAL_GROUPS;
    return (p->be->flags & need) == need && r->host != NULL &&
           cp_tmo_screen_pair(r->opt->timeout_s) > 0 && cp_oob_side_ok(r->boot->rank) &&
           r->boot->nnodes > 1;
}

static double now_s(void)
{
    return cp_now_us() * 1e-6;
}

static void fill_end(const cp_result_t *res, end_rec_t *e)
{
    memset(e, 0, sizeof(*e));
    e->status = res->status;
    e->iters = res->iters;
    e->wrong = res->wrong;
    snprintf(e->reason, sizeof(e->reason), "%s", res->reason);
    if ((res->status == COLLPROF_CELL_OK || res->status == COLLPROF_CELL_WRONG) &&
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

/* Both sizes failed before they ran (status, why). */
static void failed_ends(end_rec_t rec[2], int status, const char *why)
{
    for (int k = 0; k < 2; k++) {
        memset(&rec[k], 0, sizeof(rec[k]));
        rec[k].status = status;
        snprintf(rec[k].reason, sizeof(rec[k].reason), "%s", why);
    }
}

/* The sign of life of a rank at work: to rank 0, or from rank 0 to every leader it reaches
 * (force: now, else at most every CP_TMO_SCREEN_BEAT_S). */
static void alive_now(pairs_run_t *pr, int force)
{
    double now = now_s();
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

static void alive(void *arg)
{
    alive_now(arg, 0);
}

/* ---- a pair's own context ---------------------------------------------- */

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

/* This rank's tests on the joined pair channel pp: the backend's context of the two, the
 * latency then the bandwidth cell alone, the context closed. */
static void pair_tests(pairs_run_t *pr, cp_oob_pair_t *pp, end_rec_t rec[2])
{
    const cp_cell_t *lat = pr->cell[0];
    const cp_plugin_t *p = &pr->r->plugins[lat->plugin];
    int me;
    const int *ranks = cp_oob_pair_ranks(pp, &me);
    collprof_host_t h = *pr->r->host;
    h.rank = me;
    h.nranks = 2;
    h.world_ranks = ranks;
    h.world_nranks = pr->r->boot->nranks;
    h.oob_allgather = pair_allgather;
    h.oob_bcast = pair_bcast;
    h.oob_barrier = pair_barrier;
    h.oob_alltoall = pair_alltoall;
    cur = pp;
    alive_now(pr, 1);
    void *ctx = NULL;
    int rc = p->be->init(&h, &ctx);
    alive_now(pr, 1);
    if (rc != COLLPROF_OK) {
        char why[160];
        snprintf(why, sizeof(why), "%s on the pair: %s", p->name, p->be->last_error(NULL));
        failed_ends(rec, COLLPROF_CELL_ERROR, why);
        cur = NULL;
        return;
    }
    cp_runner_t rr = *pr->r;
    rr.alone = 1;
    rr.ctx = ctx;
    rr.gn = 2;
    rr.grank = me;
    rr.tmo = pr->deadline + CP_TMO_SCREEN_WD_MARGIN_S;
    rr.on_iter = alive;
    rr.on_iter_arg = pr;
    for (int k = 0; k < 2; k++) {
        cp_cell_t c = *pr->cell[k];
        c.sweep = 1;
        c.peer = 1 - me;
        cp_result_t res;
        cp_run_cell(&rr, &c, &res);
        fill_end(&res, &rec[k]);
        cp_result_free(&res);
    }
    p->be->finalize(ctx);
    cur = NULL;
}

/* Join pp (at addr for the higher rank) and run the tests; the ends' figures into rec. */
static void join_and_test(pairs_run_t *pr, cp_oob_pair_t *pp, const char *addr, end_rec_t rec[2])
{
    char why[256] = "";
    if (cp_oob_pair_join(pp, addr, why, sizeof(why)) != COLLPROF_OK) {
        char msg[300];
        snprintf(msg, sizeof(msg), "no channel with the partner: %s", why);
        failed_ends(rec, COLLPROF_CELL_ERROR, msg);
        return;
    }
    pair_tests(pr, pp, rec);
}

/* ---- a leader other than rank 0 ---------------------------------------- */

/* The next message from rank 0 but a sign of life (those are the watchdog's beats): 0, or -1
 * when rank 0 went away. */
static int from_root(pairs_run_t *pr, screen_msg_t *m)
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

/* One round's plan m on a leader: its pair, if any, and its result to rank 0. */
static int leader_round(pairs_run_t *pr, const screen_msg_t *m)
{
    const cp_boot_t *b = pr->r->boot;
    screen_msg_t res;
    memset(&res, 0, sizeof(res));
    res.type = MSG_RESULT;
    res.round = m->round;
    res.partner = m->partner;
    if (m->partner >= 0) {
        cp_log(CP_LOG_INFO, "screen %s: with rank %d, on a context of the two", m->what,
               m->partner);
        char why[256] = "";
        screen_msg_t pub;
        memset(&pub, 0, sizeof(pub));
        pub.type = MSG_PUB;
        pub.round = m->round;
        cp_oob_pair_t *pp = cp_oob_pair_new(b, m->partner, pr->deadline, pub.addr, sizeof(pub.addr),
                                            why, sizeof(why));
        if (b->rank < m->partner && cp_oob_side_up(&pub, sizeof(pub)) != COLLPROF_OK) {
            cp_oob_pair_free(pp);
            return -1;
        }
        if (pp == NULL) {
            failed_ends(res.rec, COLLPROF_CELL_ERROR, why);
        } else if (b->rank < m->partner) {
            join_and_test(pr, pp, NULL, res.rec);
        } else {
            screen_msg_t go;
            if (from_root(pr, &go) != 0) {
                cp_oob_pair_free(pp);
                return -1;
            }
            if (go.type == MSG_GO && go.partner >= 0) {
                join_and_test(pr, pp, go.addr, res.rec);
            } else {
                res.partner = -1; /* the partner had no channel, or stopped */
            }
        }
        cp_oob_pair_free(pp);
    }
    return cp_oob_side_up(&res, sizeof(res)) == COLLPROF_OK ? 0 : -1;
}

/* Follow rank 0's plans until it says the screen ended: 1 when the job is no longer whole,
 * 0 when it is, -1 when rank 0 went away. */
static int leader_loop(pairs_run_t *pr)
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

/* ---- rank 0 ------------------------------------------------------------ */

static void mark_gone(pairs_run_t *pr, int nd, const char *why)
{
    if (pr->gone[nd] == 1) {
        return;
    }
    pr->gone[nd] = 1;
    pr->nunreach++;
    cp_screen_unreachable(pr->s, nd);
    cp_log(CP_LOG_WARN, "screen: node %s (rank %d) is unreachable: %s; the screen goes on",
           pr->r->boot->hostnames[pr->lead[nd]], pr->lead[nd], why);
}

/* Send leader q of node nd message m; its node unreachable when that fails. */
static int send_to(pairs_run_t *pr, int nd, const screen_msg_t *m)
{
    if (pr->gone[nd] == 2 || cp_oob_side_down(pr->lead[nd], m, sizeof(*m)) != COLLPROF_OK) {
        mark_gone(pr, nd, "its connection to rank 0 closed");
        return -1;
    }
    return 0;
}

/* Rank 0: wait until no rank in pr->wait is left: each sent a message of type want (kept in
 * got[its node]; a RESULT ends a wait for a PUB too), or its node is unreachable. */
static void collect(pairs_run_t *pr, int want)
{
    const cp_boot_t *b = pr->r->boot;
    const double silent = pr->deadline + CP_TMO_SCREEN_SILENT_S;
    double start = now_s(); /* each gets a whole window from here: what waited is read first */
    for (int q = 1; q < b->nranks; q++) {
        pr->heard[q] = pr->wait[q] && pr->heard[q] < start ? start : pr->heard[q];
    }
    for (;;) {
        int waiting = 0;
        double now = now_s();
        for (int nd = 0; nd < b->nnodes; nd++) {
            int q = pr->lead[nd];
            if (q <= 0 || !pr->wait[q]) {
                continue;
            }
            if (pr->gone[nd] != 0 || now - pr->heard[q] > silent) {
                char why[96];
                snprintf(why, sizeof(why), "nothing from it for %.0f s", now - pr->heard[q]);
                mark_gone(pr, nd, pr->gone[nd] == 2 ? "its connection to rank 0 closed" : why);
                pr->wait[q] = 0;
                continue;
            }
            waiting++;
        }
        if (waiting == 0) {
            return;
        }
        cp_wd_beat(CP_WD_GATHER, pr->r->index, -1, 0, silent + CP_TMO_SCREEN_WD_MARGIN_S);
        alive(pr); /* the leaders that wait for their next message */
        screen_msg_t m;
        int q = -1;
        int rc = cp_oob_side_poll(pr->wait, 0.5, &q, &m, sizeof(m));
        if (rc <= 0 || q <= 0 || q >= b->nranks) {
            continue;
        }
        int nd = b->node_ids[q];
        if (rc == 2) {
            pr->gone[nd] = 2;
            continue;
        }
        pr->heard[q] = now_s();
        if (m.type == want || m.type == MSG_RESULT) {
            pr->got[nd] = m;
            pr->wait[q] = 0;
        }
    }
}

/* Rank 0: the round's plans out, the lower ranks' channels in, the higher ranks told where to
 * join; rank 0's own pair run; every result in. */
static void run_pairs(pairs_run_t *pr, int round, const char *what)
{
    const cp_boot_t *b = pr->r->boot;
    int me = b->node_ids[0], mine = pr->partner[me];
    memset(pr->got, 0, sizeof(screen_msg_t) * (size_t)b->nnodes);
    memset(pr->wait, 0, (size_t)b->nranks);
    double now = now_s();
    for (int nd = 0; nd < b->nnodes; nd++) {
        int q = pr->lead[nd], o = pr->partner[nd];
        if (q <= 0 || pr->gone[nd] == 1) {
            continue;
        }
        screen_msg_t m;
        memset(&m, 0, sizeof(m));
        m.type = MSG_PLAN;
        m.round = round;
        m.partner = o >= 0 ? pr->lead[o] : -1;
        snprintf(m.what, sizeof(m.what), "%s", what);
        if (send_to(pr, nd, &m) == 0) {
            pr->heard[q] = now;
            pr->wait[q] = o >= 0 && q < pr->lead[o]; /* the lower rank sends its channel */
        }
    }
    char why[256] = "", addr0[80] = "";
    cp_oob_pair_t *pp = mine >= 0 ? cp_oob_pair_new(b, pr->lead[mine], pr->deadline, addr0,
                                                    sizeof(addr0), why, sizeof(why))
                                  : NULL;
    collect(pr, MSG_PUB);
    for (int nd = 0; nd < b->nnodes; nd++) { /* the higher ranks: where to join, or not */
        int q = pr->lead[nd], o = pr->partner[nd];
        if (q <= 0 || pr->gone[nd] == 1 || o < 0 || q < pr->lead[o]) {
            continue;
        }
        screen_msg_t go;
        memset(&go, 0, sizeof(go));
        go.type = MSG_GO;
        go.round = round;
        const char *at = o == me ? (pp != NULL ? addr0 : "") : pr->got[o].addr;
        int up = pr->gone[o] != 1 && at[0] != '\0' && (o == me || pr->got[o].type == MSG_PUB);
        go.partner = up ? pr->lead[o] : -1;
        snprintf(go.addr, sizeof(go.addr), "%s", up ? at : "");
        send_to(pr, nd, &go);
    }
    for (int nd = 0; nd < b->nnodes; nd++) { /* every leader that is reachable: its result */
        int q = pr->lead[nd];
        if (q > 0 && pr->gone[nd] != 1) {
            pr->wait[q] = 1;
        }
    }
    screen_msg_t *own = &pr->got[me];
    memset(own, 0, sizeof(*own));
    own->partner = mine >= 0 ? pr->lead[mine] : -1;
    if (mine >= 0 && pp == NULL) {
        failed_ends(own->rec, COLLPROF_CELL_ERROR, why);
    } else if (mine >= 0 && 0 < pr->lead[mine]) {
        join_and_test(pr, pp, NULL, own->rec);
    } else if (mine >= 0) { /* the higher rank: the partner's channel, if it has one */
        const screen_msg_t *g = &pr->got[mine];
        if (pr->gone[mine] != 1 && g->type == MSG_PUB && g->addr[0] != '\0') {
            join_and_test(pr, pp, g->addr, own->rec);
        } else {
            own->partner = -1;
        }
    }
    cp_oob_pair_free(pp);
    collect(pr, MSG_RESULT);
}

/* The pair (na, nb)'s row of size k from its two ends' figures: the slower end's. */
static int pair_row(pairs_run_t *pr, int na, int nb, int k, int round, cp_sweep_rows_t *out)
{
    if (out->nrows == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 16;
        collprof_link_row_t *g = realloc(out->rows, cap * sizeof(*g));
        if (g == NULL) {
            return -1;
        }
        out->rows = g;
        out->cap = cap;
    }
    collprof_link_row_t *row = &out->rows[out->nrows++];
    memset(row, 0, sizeof(*row));
    const cp_cell_t *cell = pr->cell[k];
    snprintf(row->backend, sizeof(row->backend), "%s", pr->r->plugins[cell->plugin].name);
    snprintf(row->kind, sizeof(row->kind), "%s", cp_sweep_kind(pr->r->opt, cell));
    row->bytes = cell->count * collprof_dtype_size(cell->dtype);
    row->node_a = na, row->node_b = nb;
    row->rank_a = pr->lead[na], row->rank_b = pr->lead[nb];
    row->round = round;
    row->iterations = cell->iters;
    snprintf(row->path, sizeof(row->path), "%s",
             cp_path_name(cp_path_of(pr->r->node_leaf, na, nb)));
    const end_rec_t *ea = &pr->got[na].rec[k], *eb = &pr->got[nb].rec[k];
    int st = COLLPROF_CELL_OK;
    const char *why = "";
    if (pr->gone[na] == 1 || pr->gone[nb] == 1) {
        int g = pr->gone[na] == 1 ? na : nb;
        st = COLLPROF_CELL_TIMEOUT;
        snprintf(row->error, sizeof(row->error), "no answer from %s within the pair deadline",
                 pr->r->boot->hostnames[pr->lead[g]]);
    } else {
        /* the end that failed; one that ran nothing (its partner had no channel) after it */
        const end_rec_t *bad = ea->status != COLLPROF_CELL_OK ? ea : eb;
        if (bad == ea && eb->status != COLLPROF_CELL_OK && ea->status == COLLPROF_CELL_PENDING) {
            bad = eb;
        }
        st = bad->status == COLLPROF_CELL_PENDING ? COLLPROF_CELL_SKIPPED : bad->status;
        why = st == COLLPROF_CELL_OK ? "" : bad->reason[0] ? bad->reason : "the pair did not run";
        snprintf(row->error, sizeof(row->error), "%s", why);
    }
    snprintf(row->status, sizeof(row->status), "%s", collprof_cell_status_name(st));
    row->wrong = ea->wrong + eb->wrong;
    if (st == COLLPROF_CELL_OK) {
        row->time_p50_us = ea->p50 > eb->p50 ? ea->p50 : eb->p50;
        row->time_mean_us = ea->mean > eb->mean ? ea->mean : eb->mean;
        row->time_min_us = ea->min > eb->min ? ea->min : eb->min;
        row->bw_gbs = row->time_mean_us > 0 ? (double)row->bytes / row->time_mean_us * 1e-3 : 0;
        row->bw_best_gbs = row->time_min_us > 0 ? (double)row->bytes / row->time_min_us * 1e-3 : 0;
    }
    return 0;
}

/* Rank 0: one round of the pairing in pr->partner; its rows and screen pairs. */
static int round0(pairs_run_t *pr, int phase, const char *what, cp_screen_out_t *out,
                  FILE *progress)
{
    const cp_boot_t *b = pr->r->boot;
    int round = pr->s->rounds_run++;
    for (int nd = 0; nd < b->nnodes; nd++) { /* nobody meets an unreachable node */
        int o = pr->partner[nd];
        if (o >= 0 && (pr->gone[o] == 1 || pr->gone[nd] == 1 || pr->lead[o] < 0)) {
            pr->partner[nd] = -1;
        }
    }
    run_pairs(pr, round, what);
    size_t from = out->pairs.nrows;
    for (int k = 0; k < 2; k++) {
        if (progress != NULL) {
            const cp_cell_t *c = pr->cell[k];
            fprintf(progress, "# screen %s %s %llu B, %s:", pr->r->plugins[c->plugin].name,
                    cp_sweep_kind(pr->r->opt, c),
                    (unsigned long long)(c->count * collprof_dtype_size(c->dtype)), what);
        }
        for (int na = 0; na < b->nnodes; na++) {
            int nb = pr->partner[na];
            if (nb <= na) {
                continue;
            }
            if (pair_row(pr, na, nb, k, round, &out->pairs) != 0) {
                return -1;
            }
            const collprof_link_row_t *row = &out->pairs.rows[out->pairs.nrows - 1];
            if (progress != NULL) {
                int ok = !strcmp(row->status, "ok");
                fprintf(progress, "  %s-%s %.2f GB/s %.1f us%s%s", b->hostnames[pr->lead[na]],
                        b->hostnames[pr->lead[nb]], row->bw_gbs, row->time_mean_us, ok ? "" : " ",
                        ok ? "" : row->status);
            }
        }
        if (progress != NULL) {
            fprintf(progress, "\n");
            fflush(progress);
        }
    }
    return cp_screen_add_round(pr->s, &out->pairs, from, phase, round);
}

static int run0(pairs_run_t *pr, cp_screen_out_t *out, FILE *progress)
{
    cp_screen_t *s = pr->s;
    int nr = cp_screen_random_rounds(s), rc = 0;
    for (int k = 0; k < nr && rc == 0; k++) {
        char what[48];
        snprintf(what, sizeof(what), "round %d/%d (random)", k + 1, nr);
        cp_screen_matching(s, k, pr->partner);
        rc = round0(pr, CP_SCREEN_RANDOM, what, out, progress);
    }
    cp_screen_judge_opt(s);
    int planned = rc == 0 ? cp_screen_plan_confirm(s, pr->partner) : -1;
    for (int k = 0; planned > 0 && k <= nr; k++) {
        rc = round0(pr, CP_SCREEN_CONFIRM, k == 0 ? "confirmation round" : "recheck round", out,
                    progress);
        cp_screen_judge_opt(s);
        planned = rc != 0 ? -1 : k < nr ? cp_screen_plan_recheck(s, pr->partner) : 0;
    }
    screen_msg_t end;
    memset(&end, 0, sizeof(end));
    end.type = MSG_END;
    end.broken = pr->nunreach > 0;
    for (int nd = 0; nd < pr->r->boot->nnodes; nd++) {
        int q = pr->lead[nd];
        if (q > 0 && pr->gone[nd] != 1) {
            cp_oob_side_down(q, &end, sizeof(end));
        }
    }
    return planned < 0 ? -1 : 0;
}

int cp_screen_pairs(cp_runner_t *r, const cp_cell_t *lat, const cp_cell_t *bw, cp_screen_t *s,
                    const int *lead, cp_screen_out_t *out, FILE *progress)
{
    const cp_boot_t *b = r->boot;
    pairs_run_t pr = {.r = r,
                      .cell = {lat, bw},
                      .lead = lead,
                      .deadline = cp_tmo_screen_pair(r->opt->timeout_s),
                      .s = s};
    if (b->rank == 0) {
        cp_log(CP_LOG_INFO, "screen: every pair on a context of its own, %.0f s deadline",
               pr.deadline);
    }
    if (b->local_rank != 0 || lead[b->node_id] != b->rank) {
        /* not a node's leader: nothing to run; no beat until the screen ends */
        cp_wd_beat(CP_WD_SETUP, r->index, -1, 0, 0.0);
        return 0;
    }
    if (b->rank != 0) {
        int rc = leader_loop(&pr);
        out->broken = rc != 0;
        return rc < 0 ? -1 : 0;
    }
    size_t n = (size_t)b->nnodes, nr = (size_t)b->nranks;
    pr.gone = calloc(n, 1);
    pr.partner = malloc(sizeof(int) * n);
    pr.got = calloc(n, sizeof(screen_msg_t));
    pr.heard = calloc(nr, sizeof(double));
    pr.wait = calloc(nr, 1);
    int rc = -1;
    if (pr.gone != NULL && pr.partner != NULL && pr.got != NULL && pr.heard != NULL &&
        pr.wait != NULL) {
        rc = run0(&pr, out, progress);
    }
    out->broken = pr.nunreach > 0;
    free(pr.gone);
    free(pr.partner);
    free(pr.got);
    free(pr.heard);
    free(pr.wait);
    return rc;
}
