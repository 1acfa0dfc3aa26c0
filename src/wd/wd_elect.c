#include "config.h"

/*
 * The watchdog's exchange (watchdog.h, wd_int.h): the ranks' records over the PMIx key
 * store, the deputies that act for a silent rank 0, who reports and who waits.
 */

#include "wd/wd_int.h"

#include "base/log.h"
#include "base/timeouts.h"

#include <collprof/status.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const cp_wd_io_t default_io = {cp_oob_post, cp_oob_fetch_all};
static const cp_wd_io_t *io = &default_io;

const cp_wd_io_t *cp_wd_io(void)
{
    return io;
}

void cp_wd_set_io(const cp_wd_io_t *x)
{
    io = x != NULL ? x : &default_io;
}

/* One round's wait: what is left of the time, at most CP_TMO_WD_FETCH_WAIT_S (and a little at
 * least). */
static double round_wait(double deadline)
{
    double left = deadline - cp_wd_now_s();
    return left > CP_TMO_WD_FETCH_WAIT_S ? CP_TMO_WD_FETCH_WAIT_S : left > 0.05 ? left : 0.05;
}

/* rank's value of key, asked once a round until it comes or timeout_s passes (0: once);
 * 0 when it came. */
int cp_wd_fetch_one(int rank, const char *key, void *dst, size_t len, double timeout_s)
{
    double deadline = cp_wd_now_s() + timeout_s;
    for (;;) {
        int got = 0;
        io->fetch_all(&rank, 1, key, dst, len, round_wait(deadline), &got);
        if (got) {
            return 0;
        }
        if (cp_wd_now_s() >= deadline) {
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

int cp_wd_dep_index(int rank, const int *dep, int ndep)
{
    for (int i = 0; i < ndep; i++) {
        if (dep[i] == rank) {
            return i;
        }
    }
    return -1;
}

/* The first deputy after rank 0 that says it acts (-1: none), one request to each. */
int cp_wd_deputy_acting(const int *dep, int ndep)
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
    int i = cp_wd_dep_index(me, dep, ndep);
    if (i <= 0) {
        return i == 0 ? me : -1;
    }
    /* the deputies before me, all at once each round: one that answers reports, or leaves
     * the report to one before it */
    cp_wd_rec_t in[CP_WD_DEPUTIES];
    int got[CP_WD_DEPUTIES];
    double deadline = cp_wd_now_s() + wait_s;
    for (;;) {
        io->fetch_all(dep, i, KEY_REC, in, sizeof(in[0]), round_wait(deadline), got);
        for (int j = 0; j < i; j++) {
            if (got[j]) {
                return dep[j];
            }
        }
        if (cp_wd_now_s() >= deadline) {
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
    double deadline = cp_wd_now_s() + wait_s;
    int missing = 0;
    for (int q = 0; q < n; q++) {
        missing += q != me && !recs[q].valid;
    }
    int *ask = malloc(sizeof(int) * (size_t)n), *got = malloc(sizeof(int) * (size_t)n);
    cp_wd_rec_t *in = malloc(sizeof(*in) * (size_t)n);
    while (ask && got && in && missing > 0 && cp_wd_now_s() < deadline) {
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
        if (missing > 0 && cp_wd_now_s() < deadline) {
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
    double start = cp_wd_now_s(), deadline = start + wait_s;
    for (int round = 0, next = 1; ndep > 0; round++) {
        /* rank 0, which reports unless it is silent, every round until a deputy could have
         * reported (so a rank leaves as soon as rank 0 is done: the launcher may kill the
         * ranks still there when rank 0 exits), then every other round */
        int q = 0, one, got = 0;
        if (ndep > 1 && cp_wd_now_s() - start > CP_TMO_WD_DEPUTY_WAIT_S && round % 2) {
            next = next % (ndep - 1) + 1;
            q = dep[next] != me ? dep[next] : 0;
        }
        io->fetch_all(&q, 1, KEY_DONE, &one, sizeof(one), round_wait(deadline), &got);
        if (got) {
            return q;
        }
        if (cp_wd_now_s() >= deadline) {
            break;
        }
        usleep(100000);
    }
    return -1;
}

int cp_wd_gave_up(int me, const int *dep, int ndep, double wait_s)
{
    int ask[CP_WD_DEPUTIES], got[CP_WD_DEPUTIES], k = 0;
    cp_wd_rec_t in[CP_WD_DEPUTIES];
    for (int i = 0; i < ndep && i < CP_WD_DEPUTIES; i++) {
        if (dep[i] != me) {
            ask[k++] = dep[i];
        }
    }
    /* a record is posted once, by a rank whose own watchdog fired: it ends whatever comes */
    double deadline = cp_wd_now_s() + wait_s;
    while (k > 0) {
        io->fetch_all(ask, k, KEY_REC, in, sizeof(in[0]), round_wait(deadline), got);
        for (int j = 0; j < k; j++) {
            if (got[j]) {
                return ask[j];
            }
        }
        if (cp_wd_now_s() >= deadline) {
            break;
        }
        usleep(100000);
    }
    return -1;
}
