/*
 * The screen's pairs, each on a backend context of its own (cp_screen_pairs_usable): no cell
 * of the whole job, no barrier of every rank, and a node that stops answering does not stop
 * the screen.
 *
 * Each round, rank 0 sends every node leader its partner (side messages over the TCP control
 * channel, cp_oob_side_*).  The lower rank of each pair opens a channel of the two
 * (cp_oob_pair_*: proven with the run's secret, every wait bounded by the pair deadline) and
 * sends rank 0 its address, which rank 0 hands to the higher rank as soon as it arrives, each
 * pair on its own (a member 0 that stops costs its own pair alone: its partner gets no
 * partner when rank 0's silence limit for it passes, and a member 0 accepts for as long,
 * timeouts.h cp_tmo_screen_accept); the two join, start a
 * context of the backend on the pair (COLLPROF_BACKEND_LOCAL_GROUPS: init over the pair's
 * channel alone, failing within the deadline), run the latency and the bandwidth tests alone
 * (cp_runner_t.alone: a paired sendrecv, timed and checked on each end; the bandwidth tests
 * once every pair is past its latency test, bulk_go), close it, and each
 * end sends rank 0 its figures.  A rank in a pair sends rank 0 signs of life; rank 0 sends the
 * waiting ranks signs of its own, which their watchdog counts as beats.  A node rank 0 did
 * not hear from for its silence limit (cp_tmo_screen_silent) while it had something to
 * do, or whose connection closed, is unreachable: it gets no partner from then on, its pairs
 * are timeouts, and the screen goes on with the others.  At the end rank 0 tells every leader
 * it reaches whether the job is whole; when it is not, no collective of the whole job follows
 * (rank 0 closes its outputs and has the launcher end the job's ranks).
 */

#include "screen/run/screen_run.h"

#include "boot/boot.h"
#include "collprof/status.h"
#include "base/log.h"
#include "screen/screen.h"
#include "screen/screen_out.h"
#include "screen/run/screen_pairs_int.h"
#include "screen/run/screen_run_int.h"
#include "screen/run/screen_valid.h"
#include "base/stats.h"
#include "base/timeouts.h"
#include "base/util.h"
#include "wd/watchdog.h"

#include <stdlib.h>
#include <string.h>

int cp_screen_pairs_usable(const cp_runner_t *r, const cp_cell_t *lat)
{
    const cp_plugin_t *p = &r->plugins[lat->plugin];
    unsigned need = COLLPROF_BACKEND_GROUPS | COLLPROF_BACKEND_LOCAL_GROUPS;
    return (p->be->flags & need) == need && r->host != NULL &&
           cp_tmo_screen_pair(r->opt->timeout_s) > 0 && cp_oob_side_ok(r->boot->rank) &&
           r->boot->nnodes > 1;
}

/* ---- rank 0 ------------------------------------------------------------ */

static void mark_gone(cp_pairs_run_t *pr, int nd, const char *why)
{
    if (pr->gone[nd] == 1) {
        return;
    }
    pr->gone[nd] = 1;
    pr->nunreach++;
    cp_screen_unreachable(pr->s, nd);
    cp_log(CP_LOG_WARN, "screen: node %s (rank %d) is unreachable: %s; the screen goes on",
           cp_boot_host(pr->r->boot, pr->lead[nd]), pr->lead[nd], why);
}

/* Send leader q of node nd message m; its node unreachable when that fails. */
static int send_to(cp_pairs_run_t *pr, int nd, const screen_msg_t *m)
{
    if (pr->gone[nd] == 2 || cp_oob_side_down(pr->lead[nd], m, sizeof(*m)) != COLLPROF_OK) {
        mark_gone(pr, nd, "its connection to rank 0 closed");
        return -1;
    }
    return 0;
}

/* Rank 0: group g's members but member 0 told where to join: at, member 0's channel, or
 * nowhere (NULL or "": partner -1, they sit the run out and blame nobody). */
static void send_go(cp_pairs_run_t *pr, int g, int round, const char *at)
{
    int o = pr->m0[g];
    int up = at != NULL && at[0] != '\0' && pr->gone[o] != 1;
    for (int nd = pr->gnext[o]; nd >= 0; nd = pr->gnext[nd]) {
        if (pr->lead[nd] <= 0 || pr->gone[nd] == 1) {
            continue;
        }
        screen_msg_t go;
        memset(&go, 0, sizeof(go));
        go.type = MSG_GO;
        go.round = round;
        go.partner = up ? pr->lead[o] : -1;
        snprintf(go.addr, sizeof(go.addr), "%s", up ? at : "");
        send_to(pr, nd, &go);
    }
}

/* Rank 0, waiting for the member 0s' channels: node nd's wait ended (its PUB, a RESULT
 * instead, or it went unreachable): its group's other members get their GO now, whatever the
 * other groups do, so that a member 0 that stops costs its own group alone. */
static void pub_done(cp_pairs_run_t *pr, int nd, int round)
{
    int g = pr->group[nd];
    if (g < 0 || pr->m0[g] != nd || pr->gsize[g] < 2) {
        return;
    }
    const screen_msg_t *m = &pr->got[nd];
    pr->lost_idle = pr->gone[nd] == 1 ? nd : pr->lost_idle;
    send_go(pr, g, round, pr->gone[nd] != 1 && m->type == MSG_PUB ? m->addr : NULL);
}

/* Rank 0: the ranks of pr->wait whose node is unreachable, or silent past the silence limit,
 * no longer waited for (each PUB's group told at once); how many are still waited for. */
static int still_waiting(cp_pairs_run_t *pr, int want, int round)
{
    const cp_boot_t *b = pr->r->boot;
    const double silent = cp_tmo_screen_silent(pr->deadline), now = cp_now_s();
    int waiting = 0;
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
            if (want == MSG_PUB) {
                pub_done(pr, nd, round);
            }
            continue;
        }
        waiting++;
    }
    return waiting;
}

/* Rank 0: wait until no rank in pr->wait is left: each sent a message of type want (kept in
 * got[its node]; a RESULT ends a wait for a PUB too), or its node is unreachable.  Waiting
 * for PUBs (round: the plan's), each group's GO goes out as its member 0's wait ends. */
static void collect(cp_pairs_run_t *pr, int want, int round)
{
    const cp_boot_t *b = pr->r->boot;
    const double silent = cp_tmo_screen_silent(pr->deadline);
    double start = cp_now_s(); /* each gets a whole window from here: what waited is read first */
    for (int q = 1; q < b->nranks; q++) {
        pr->heard[q] = pr->wait[q] && pr->heard[q] < start ? start : pr->heard[q];
    }
    while (still_waiting(pr, want, round) > 0) {
        cp_wd_beat(CP_WD_GATHER, pr->r->index, -1, 0, silent + CP_TMO_SCREEN_WD_MARGIN_S);
        cp_pairs_alive(pr); /* the leaders that wait for their next message */
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
        pr->heard[q] = cp_now_s();
        if (m.type == MSG_PUB && want == MSG_PUB && m.addr[0] != '\0') {
            /* it accepts its members now, silent for up to its accept: its silence limit
             * counts from where the accept would have ended for the pair deadline */
            pr->heard[q] += cp_tmo_screen_accept(pr->deadline) - pr->deadline;
        }
        if (m.type == want || m.type == MSG_RESULT) {
            pr->got[nd] = m;
            pr->wait[q] = 0;
            if (want == MSG_PUB) {
                pub_done(pr, nd, round);
            }
        }
    }
}

/* Rank 0: each group's size and member 0, each node's index in its group (pr->group[node],
 * -1 none; members by ascending leader rank, so rank 0 is always member 0 of its group). */
static void group_places(cp_pairs_run_t *pr)
{
    int n = pr->r->boot->nnodes;
    for (int g = 0; g < n; g++) {
        pr->gsize[g] = 0;
        pr->m0[g] = -1;
    }
    for (int i = 0; i < n; i++) {
        int nd = pr->order[i], g = pr->group[nd];
        pr->gidx[nd] = -1;
        if (g >= 0 && g < n) {
            pr->gidx[nd] = pr->gsize[g]++;
        }
    }
    for (int i = n - 1; i >= 0; i--) { /* each group's members as a list from its member 0 */
        int nd = pr->order[i], g = pr->group[nd];
        pr->gnext[nd] = -1;
        if (g >= 0 && g < n) {
            pr->gnext[nd] = pr->m0[g];
            pr->m0[g] = nd;
        }
    }
}

/* Rank 0: cp_pairs_run_t.bulk_go. */
static void bulk_go(cp_pairs_run_t *pr)
{
    if (!pr->lat_phase) {
        return;
    }
    pr->lat_phase = 0;
    const cp_boot_t *b = pr->r->boot;
    for (int nd = 0; nd < b->nnodes; nd++) { /* the leaders in a pair: their LAT, or RESULT */
        int q = pr->lead[nd], g = pr->group[nd];
        if (q > 0 && pr->gone[nd] != 1 && g >= 0 && pr->gsize[g] >= 2) {
            pr->wait[q] = 1;
        }
    }
    collect(pr, MSG_LAT, pr->round);
    screen_msg_t go;
    memset(&go, 0, sizeof(go));
    go.type = MSG_BULK;
    go.round = pr->round;
    for (int nd = 0; nd < b->nnodes; nd++) {
        if (pr->lead[nd] > 0 && pr->gone[nd] != 1 && pr->got[nd].type == MSG_LAT) {
            send_to(pr, nd, &go);
        }
    }
}

/* Rank 0: run the groups of pr->group[] (what: RUN_PAIR, RUN_VALID): the plans out, the member
 * 0s' channels in, the others told where to join; rank 0's own part; every result in
 * (pr->got[node]).  A node unreachable, or in a group of one, sits out. */
static void run_groups(cp_pairs_run_t *pr, int run, int round, const char *what)
{
    const cp_boot_t *b = pr->r->boot;
    int n = b->nnodes, me = b->node_ids[0];
    for (int nd = 0; nd < n; nd++) { /* nobody meets an unreachable node */
        pr->group[nd] = pr->gone[nd] == 1 || pr->lead[nd] < 0 ? -1 : pr->group[nd];
    }
    group_places(pr);
    pr->lost_idle = -1;
    memset(pr->got, 0, sizeof(screen_msg_t) * (size_t)n);
    memset(pr->wait, 0, (size_t)b->nranks);
    double now = cp_now_s();
    for (int nd = 0; nd < n; nd++) {
        int q = pr->lead[nd], g = pr->group[nd];
        if (q <= 0 || pr->gone[nd] == 1) {
            continue;
        }
        screen_msg_t m;
        memset(&m, 0, sizeof(m));
        m.type = MSG_PLAN;
        m.round = round;
        m.run = run;
        m.gsize = g >= 0 && pr->gsize[g] >= 2 ? pr->gsize[g] : 0;
        m.gidx = g >= 0 ? pr->gidx[nd] : 0;
        m.partner = run == RUN_PAIR && pr->partner[nd] >= 0 ? pr->lead[pr->partner[nd]] : -1;
        snprintf(m.what, sizeof(m.what), "%s", what);
        if (send_to(pr, nd, &m) == 0) {
            pr->heard[q] = now;
            pr->wait[q] = m.gsize >= 2 && m.gidx == 0; /* member 0 sends its channel */
        }
    }
    int g0 = pr->group[me], mine = g0 >= 0 && pr->gsize[g0] >= 2;
    char why[256] = "", addr0[80] = "";
    cp_oob_pair_t *pp = mine ? cp_oob_pair_new(b, 0, pr->gsize[g0], pr->deadline, addr0,
                                               sizeof(addr0), why, sizeof(why))
                             : NULL;
    collect(pr, MSG_PUB, round); /* every other group's GO as its member 0 publishes */
    if (mine) {                  /* rank 0's own group: now, as rank 0 joins it */
        send_go(pr, g0, round, pp != NULL ? addr0 : NULL);
    }
    pr->round = round;
    pr->lat_phase = run == RUN_PAIR; /* the pairs' bandwidth tests after every latency test */
    screen_msg_t *own = &pr->got[me];
    memset(own, 0, sizeof(*own));
    own->partner = run == RUN_PAIR && pr->partner[me] >= 0 ? pr->lead[pr->partner[me]] : -1;
    if (mine && pp == NULL) {
        cp_pairs_failed_ends(own->rec, COLLPROF_CELL_NOSETUP, why);
    } else if (mine) {
        cp_pairs_join_and_test(pr, pp, NULL, run, own->rec);
    }
    cp_oob_pair_free(pp);
    bulk_go(pr); /* when rank 0's own pair did not (it had none, or it failed) */
    for (int nd = 0; nd < n; nd++) { /* every leader that is reachable: its result */
        int q = pr->lead[nd];
        if (q > 0 && pr->gone[nd] != 1 && pr->got[nd].type != MSG_RESULT) {
            pr->wait[q] = 1;
        }
    }
    collect(pr, MSG_RESULT, round);
}

/* Rank 0: a round of the pairing in pr->partner, as groups of two. */
static void run_pairs(cp_pairs_run_t *pr, int round, const char *what)
{
    for (int nd = 0; nd < pr->r->boot->nnodes; nd++) {
        int o = pr->partner[nd];
        pr->group[nd] = o >= 0 ? (o < nd ? o : nd) : -1;
    }
    run_groups(pr, RUN_PAIR, round, what);
}

/* Rank 0: one level of the validation (cp_valid_by_t): the groups of group_of[] run their
 * allreduce, each on its own context; a group fails when a member's failed, ran nothing, or is
 * unreachable (one that hangs in the allreduce: the halving names it); its bus bandwidth from
 * its slowest member's median (cp_screen_valid_busbw, as on every backend).  A member 0 found
 * unreachable before it published (a node stopped while idle) stops the level (-1, why): it
 * is unreachable, never a culprit, and its group's others are not blamed. */
static int valid_level(void *arg, const int *group_of, int level, int groups, cp_halve_t *h,
                       char *why, size_t wl)
{
    cp_pairs_run_t *pr = arg;
    const cp_boot_t *b = pr->r->boot;
    int n = b->nnodes;
    memcpy(pr->group, group_of, sizeof(int) * (size_t)n);
    char what[48];
    snprintf(what, sizeof(what), "validation level %d", level);
    run_groups(pr, RUN_VALID, -1 - level, what);
    if (pr->lost_idle >= 0) {
        snprintf(why, wl, "level %d: %s became unreachable before its group ran: not judged", level,
                 cp_boot_host(b, pr->lead[pr->lost_idle]));
        return -1;
    }
    for (int k = 0; k < groups; k++) {
        int m = 0, failed = 0;
        uint64_t wrong = 0;
        double worst = 0;
        for (int nd = 0; nd < n; nd++) {
            if (group_of[nd] != k) {
                continue;
            }
            const end_rec_t *e = &pr->got[nd].rec[0];
            m++;
            failed |= pr->gone[nd] == 1 || pr->group[nd] != k ||
                      (e->status != COLLPROF_CELL_OK && e->status != COLLPROF_CELL_WRONG);
            wrong += e->wrong;
            worst = e->p50 > worst ? e->p50 : worst;
        }
        cp_cell_t c = cp_screen_valid_cell(pr->cell[1], m > 0 ? m : 1, 0);
        double busbw = failed ? 0 : cp_screen_valid_busbw((double)(c.count * 4), m, worst);
        cp_halve_set(h, k, failed, wrong, busbw);
    }
    return 0;
}

/* The pair (na, nb)'s row of size k from its two ends' figures: the slower end's. */
static int pair_row(cp_pairs_run_t *pr, int na, int nb, int k, int round, cp_sweep_rows_t *out)
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
        st = COLLPROF_CELL_UNREACHABLE; /* the pair's outcome: partner unreachable */
        snprintf(row->error, sizeof(row->error), "no answer from %s within the pair deadline",
                 cp_boot_host(pr->r->boot, pr->lead[g]));
    } else {
        /* the end that failed; one that ran nothing (its partner had no channel) after it */
        const end_rec_t *bad = ea->status != COLLPROF_CELL_OK ? ea : eb;
        if (bad == ea && eb->status != COLLPROF_CELL_OK && ea->status == COLLPROF_CELL_PENDING) {
            bad = eb;
        }
        /* neither end ran: the channel was not set up (member 0 had none) */
        st = bad->status == COLLPROF_CELL_PENDING ? COLLPROF_CELL_NOSETUP : bad->status;
        why = st == COLLPROF_CELL_OK ? ""
              : bad->reason[0]       ? bad->reason
                                     : "the pair's channel was not set up";
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
        cp_pairs_path_row(ea, eb, row);
    }
    return 0;
}

/* Rank 0: one round of the pairing in pr->partner; its rows and screen pairs. */
static int round0(cp_pairs_run_t *pr, int phase, const char *what, cp_screen_out_t *out,
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
            if (progress != NULL) { /* the figures the verdict judges: the p50s */
                int ok = cp_screen_outcome_of(row->status) == CP_SCREEN_MEASURED;
                int via = row->nic_path[0] != '\0' && strcmp(row->nic_path, "ok") != 0 &&
                          strcmp(row->nic_path, "unknown") != 0; /* a path the check flags */
                fprintf(progress, "  %s-%s %.2f GB/s %.1f us%s%s%s%s%s",
                        cp_boot_host(b, pr->lead[na]), cp_boot_host(b, pr->lead[nb]),
                        cp_screen_row_bw_gbs(row), row->time_p50_us, ok ? "" : " ",
                        ok ? "" : row->status, via ? " (" : "", via ? row->nic_path : "",
                        via ? ")" : "");
            }
        }
        if (progress != NULL) {
            fprintf(progress, "\n");
            fflush(progress);
        }
    }
    return cp_screen_add_round(pr->s, &out->pairs, from, phase, round);
}

int cp_screen_recheck_cap(int planned, int nr, int log)
{
    if (planned > 0 && log) {
        cp_log(CP_LOG_WARN,
               "screen: the recheck rounds' cap (%d, one per random round) is reached: %d "
               "pair%s not run again; their links stay inconclusive",
               nr, planned, planned == 1 ? "" : "s");
    }
    return planned < 0 ? planned : 0;
}

int cp_screen_repair_capped(int k, int m)
{
    if (k < CP_SCREEN_REPAIR_ROUNDS) {
        return 0;
    }
    cp_log(CP_LOG_WARN,
           "screen: re-pairing stopped at its cap of %d rounds with %d pair%s still to run: "
           "a node with no measured pair is untested",
           CP_SCREEN_REPAIR_ROUNDS, m, m == 1 ? "" : "s");
    return 1;
}

static int run0(cp_pairs_run_t *pr, cp_screen_out_t *out, FILE *progress)
{
    cp_screen_t *s = pr->s;
    int nr = cp_screen_random_rounds(s), rc = 0;
    for (int k = 0; k < nr && rc == 0; k++) {
        char what[48];
        snprintf(what, sizeof(what), "round %d/%d (random)", k + 1, nr);
        cp_screen_matching(s, k, pr->partner);
        rc = round0(pr, CP_SCREEN_RANDOM, what, out, progress);
    }
    for (int k = 0; rc == 0; k++) { /* pairs that could not be set up: other partners */
        int m = cp_screen_plan_repair(s, pr->partner);
        rc = m < 0 ? -1 : 0;
        if (m <= 0 || cp_screen_repair_capped(k, m)) {
            break;
        }
        char what[48];
        snprintf(what, sizeof(what), "re-pairing round %d/%d", k + 1, CP_SCREEN_REPAIR_ROUNDS);
        rc = round0(pr, CP_SCREEN_REPAIR, what, out, progress);
    }
    cp_screen_judge_opt(s);
    int planned = rc == 0 ? cp_screen_plan_confirm(s, pr->partner) : -1;
    for (int k = 0; planned > 0 && k <= nr; k++) {
        rc = round0(pr, CP_SCREEN_CONFIRM, k == 0 ? "confirmation round" : "recheck round", out,
                    progress);
        cp_screen_judge_opt(s);
        planned = rc != 0 ? -1 : cp_screen_plan_recheck(s, pr->partner);
        planned = k < nr ? planned : cp_screen_recheck_cap(planned, nr, 1);
    }
    if (pr->val != NULL && planned >= 0) { /* the validation, each group on its own context */
        cp_valid_by_t by = {.level = valid_level, .arg = pr};
        planned =
            cp_screen_validate_by(pr->r, pr->cell[1], s, pr->lead, pr->val, progress, &by) != 0
                ? -1
                : planned;
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

/* Rank 0: the nodes by ascending leader rank (those without a leader last) into order[]. */
static void by_rank(const int *lead, int n, int *order)
{
    int k = 0;
    for (int pass = 0; pass < 2; pass++) { /* leaders first, in rank order: ranks are few */
        for (int nd = 0; nd < n; nd++) {
            if ((lead[nd] >= 0) == (pass == 0)) {
                order[k++] = nd;
            }
        }
    }
    for (int i = 1; i < n; i++) { /* insertion: nearly sorted already (node ids follow ranks) */
        int x = order[i], j = i;
        while (j > 0 && lead[x] >= 0 && lead[order[j - 1]] > lead[x]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
}

int cp_screen_pairs(cp_runner_t *r, const cp_cell_t *lat, const cp_cell_t *bw, cp_screen_t *s,
                    const int *lead, cp_screen_out_t *out, cp_screen_valid_t *val, FILE *progress)
{
    const cp_boot_t *b = r->boot;
    cp_pairs_run_t pr = {.r = r,
                         .cell = {lat, bw},
                         .lead = lead,
                         .deadline = cp_tmo_screen_pair(r->opt->timeout_s),
                         .s = s,
                         .val = val,
                         .bulk_go = bulk_go};
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
        int rc = cp_pairs_leader_loop(&pr);
        out->broken = rc != 0;
        return rc < 0 ? -1 : 0;
    }
    size_t n = (size_t)b->nnodes, nr = (size_t)b->nranks;
    pr.gone = calloc(n, 1);
    pr.partner = malloc(sizeof(int) * n);
    pr.got = calloc(n, sizeof(screen_msg_t));
    pr.heard = calloc(nr, sizeof(double));
    pr.wait = calloc(nr, 1);
    int *ints = malloc(sizeof(int) * 6 * n);
    int rc = -1;
    if (pr.gone != NULL && pr.partner != NULL && pr.got != NULL && pr.heard != NULL &&
        pr.wait != NULL && ints != NULL) {
        pr.group = ints, pr.gsize = ints + n, pr.gidx = ints + 2 * n, pr.m0 = ints + 3 * n;
        pr.order = ints + 4 * n, pr.gnext = ints + 5 * n;
        by_rank(lead, (int)n, pr.order);
        rc = run0(&pr, out, progress);
    }
    free(ints);
    out->broken = pr.nunreach > 0;
    free(pr.gone);
    free(pr.partner);
    free(pr.got);
    free(pr.heard);
    free(pr.wait);
    return rc;
}
