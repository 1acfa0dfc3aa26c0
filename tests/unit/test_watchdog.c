/* The watchdog's attribution (which ranks did not arrive, and where) and who
 * reports (rank 0, else its first deputy that answers: exactly one, with
 * O(n) requests a round), over forked ranks and a key store in shared memory. */
#include "config.h"

#include "base/util.h"
#include "wd/watchdog.h"
#include "oob_shm.h"
#include "tap.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void describe(void *arg, int cell, char *buf, size_t len)
{
    (void)arg;
    snprintf(buf, len, "desc-of-%d", cell);
}

static cp_wd_rec_t rec(int phase, int cell, int iter)
{
    cp_wd_rec_t r;
    memset(&r, 0, sizeof(r));
    r.valid = 1;
    r.phase = phase;
    r.cell = cell;
    r.iter = iter;
    r.warmup = 2;
    r.stalled_s = 3.5;
    return r;
}

/* ---- who reports: forked ranks, the watchdog's exchange over shared memory ---- */

#define W_MAX 48

/* What each rank posted, who may reach whom, and what each rank did. */
typedef struct world {
    int n, silent[W_MAX], node[W_MAX], cut[W_MAX]; /* cut: ranks on a node cut off */
    struct {
        int has_rec, has_lead, has_done, lead;
        cp_wd_rec_t rec;
    } kv[W_MAX];
    int asks[W_MAX], max_ask[W_MAX], acted[W_MAX], reported[W_MAX];
    int released[W_MAX]; /* 1 + the rank whose "done" released it */
} world_t;
static world_t *W;

static int w_post(const char *key, const void *buf, size_t len)
{
    int me = oob_shm_rank;
    if (!strcmp(key, "cp.wd.rec") && len == sizeof(cp_wd_rec_t)) {
        memcpy(&W->kv[me].rec, buf, len);
        __atomic_store_n(&W->kv[me].has_rec, 1, __ATOMIC_RELEASE);
    } else if (!strcmp(key, "cp.wd.lead") && len == sizeof(int)) {
        memcpy(&W->kv[me].lead, buf, len);
        __atomic_store_n(&W->kv[me].has_lead, 1, __ATOMIC_RELEASE);
    } else if (!strcmp(key, "cp.wd.done")) {
        __atomic_store_n(&W->kv[me].has_done, 1, __ATOMIC_RELEASE);
    }
    return 0;
}

/* One request per rank asked, counted; a silent rank, or one across the cut, never answers. */
static int w_fetch_all(const int *ranks, int nr, const char *key, void *dst, size_t len,
                       double wait_s, int *got)
{
    (void)wait_s;
    int me = oob_shm_rank, n = 0;
    W->asks[me] += nr;
    W->max_ask[me] = nr > W->max_ask[me] ? nr : W->max_ask[me];
    for (int i = 0; i < nr; i++) {
        int q = ranks[i];
        got[i] = 0;
        if (W->silent[q] || W->cut[q] != W->cut[me]) {
            continue;
        }
        char *d = (char *)dst + (size_t)i * len;
        if (!strcmp(key, "cp.wd.rec") && __atomic_load_n(&W->kv[q].has_rec, __ATOMIC_ACQUIRE)) {
            memcpy(d, &W->kv[q].rec, len);
            got[i] = 1;
        } else if (!strcmp(key, "cp.wd.lead") &&
                   __atomic_load_n(&W->kv[q].has_lead, __ATOMIC_ACQUIRE)) {
            memcpy(d, &W->kv[q].lead, len);
            got[i] = 1;
        } else if (!strcmp(key, "cp.wd.done") &&
                   __atomic_load_n(&W->kv[q].has_done, __ATOMIC_ACQUIRE)) {
            got[i] = 1;
        }
        n += got[i];
    }
    return n;
}

/* One rank's watchdog after a stall, as take_timeout runs it (printing and exits aside). */
static int w_rank(int me, void *arg)
{
    (void)arg;
    static const cp_wd_io_t wio = {w_post, w_fetch_all};
    cp_wd_set_io(&wio);
    oob_shm_barrier(); /* every rank stalls at once */
    if (W->silent[me]) {
        return 0;
    }
    cp_wd_rec_t recs[W_MAX];
    memset(recs, 0, sizeof(recs));
    recs[me] = rec(CP_WD_OP, 1, 4);
    w_post("cp.wd.rec", &recs[me], sizeof(recs[me]));
    int dep[CP_WD_DEPUTIES], ndep = cp_wd_deputies(W->node, W->n, dep), one = 1;
    if (me == 0 || cp_wd_elect(me, dep, ndep, 1.0) == me) {
        W->acted[me] = 1;
        cp_wd_collect(recs, W->n, me, me == 0 ? 0.6 : 0.3);
        if (me == 0 || cp_wd_may_report(recs, W->node, W->n, me)) {
            W->reported[me] = 1;
            w_post("cp.wd.done", &one, sizeof(one));
            return 0;
        }
    }
    W->released[me] = 1 + cp_wd_wait_done(me, dep, ndep, 1.5);
    return 0;
}

/* Run one case: n ranks, per_node on each node, the silent and the cut-off ranks listed
 * (-1 ends each list); the ranks that reported into who (count returned), the largest
 * round into *round (every rank's largest request added up). */
static int w_case(int n, int per_node, const int *silent, const int *cut, int *who, int *round,
                  int *others_max)
{
    memset(W, 0, sizeof(*W));
    W->n = n;
    for (int q = 0; q < n; q++) {
        W->node[q] = q / per_node;
    }
    for (int i = 0; silent[i] >= 0; i++) {
        W->silent[silent[i]] = 1;
    }
    for (int i = 0; cut[i] >= 0; i++) {
        W->cut[cut[i]] = 1;
    }
    oob_shm->nranks = n;
    int status[W_MAX], nrep = 0;
    oob_shm_fork(w_rank, NULL, 30, status);
    *round = *others_max = 0;
    for (int q = 0; q < n; q++) {
        if (W->reported[q]) {
            who[nrep++] = q;
        }
        *round += W->max_ask[q];
        if (!W->acted[q] && W->max_ask[q] > *others_max) {
            *others_max = W->max_ask[q];
        }
    }
    return nrep;
}

static void test_deputies(void)
{
    int dep[CP_WD_DEPUTIES], nd;
    int two_by_two[4] = {0, 0, 1, 1}, cyclic[4] = {0, 1, 0, 1}, one[8] = {0};
    int many[W_MAX];
    for (int q = 0; q < W_MAX; q++) {
        many[q] = q / 4;
    }
    nd = cp_wd_deputies(two_by_two, 4, dep);
    ok(nd == 4 && dep[0] == 0 && dep[1] == 2 && dep[2] == 1 && dep[3] == 3,
       "deputies on 2 nodes x 2: 0, then rank 2 (first of the next node), then 1 and 3");
    nd = cp_wd_deputies(cyclic, 4, dep);
    ok(nd == 4 && dep[0] == 0 && dep[1] == 1 && dep[2] == 2 && dep[3] == 3,
       "deputies, ranks placed round-robin: 0,1,2,3");
    nd = cp_wd_deputies(one, 8, dep);
    ok(nd == 4 && dep[1] == 1 && dep[2] == 2 && dep[3] == 3, "deputies on one node: 0,1,2,3");
    nd = cp_wd_deputies(many, W_MAX, dep);
    ok(nd == 4 && dep[1] == 4 && dep[2] == 8 && dep[3] == 12,
       "deputies on 12 nodes: the first rank of nodes 0-3 (%d,%d,%d,%d)", dep[0], dep[1], dep[2],
       dep[3]);
    nd = cp_wd_deputies(NULL, 2, dep);
    ok(nd == 2 && dep[0] == 0 && dep[1] == 1, "2 ranks: 2 deputies");
}

static void test_reporter(void)
{
    int who[W_MAX], round, others, nrep, none[] = {-1};
    int n = 40, per = 10; /* 4 nodes x 10: deputies 0, 10, 20, 30 */
    /* a round: the reporter asks the n - 1 others, each other rank one deputy, deputy k the
     * k before it (the old watchdog: every rank asked every missing one, n^2) */
    int bound = 2 * n + CP_WD_DEPUTIES * CP_WD_DEPUTIES;
    nrep = w_case(n, per, none, none, who, &round, &others);
    ok(nrep == 1 && who[0] == 0, "every rank answers: rank 0 alone reports (%d reports)", nrep);
    int by0 = 0;
    for (int q = 1; q < n; q++) {
        by0 += W->released[q] == 1;
    }
    ok(by0 == n - 1, "every rank answers: rank 0's 'done' released the %d others (%d)", n - 1, by0);
    ok(round <= bound && others <= CP_WD_DEPUTIES - 1,
       "every rank answers: %d requests in the largest round (at most 2n + %d = %d), at most %d "
       "by a rank that does not report",
       round, CP_WD_DEPUTIES * CP_WD_DEPUTIES, bound, others);
    int s0[] = {0, -1};
    nrep = w_case(n, per, s0, none, who, &round, &others);
    ok(nrep == 1 && who[0] == 10,
       "rank 0 silent: its first deputy, rank 10, alone reports (%d: %d)", nrep,
       nrep ? who[0] : -1);
    ok(round <= bound && others <= CP_WD_DEPUTIES - 1,
       "rank 0 silent: %d requests in the largest round, at most %d by a non-reporter", round,
       others);
    int s01[] = {0, 10, -1};
    nrep = w_case(n, per, s01, none, who, &round, &others);
    ok(nrep == 1 && who[0] == 20,
       "ranks 0 and 10 silent: deputy 2, rank 20, alone reports (%d: %d)", nrep,
       nrep ? who[0] : -1);
    ok(round <= bound, "ranks 0 and 10 silent: %d requests in the largest round", round);
    int node1[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, -1};
    nrep = w_case(n, per, none, node1, who, &round, &others);
    ok(nrep == 1 && who[0] == 0 && W->acted[10],
       "node 1 cut off: rank 0 alone reports; its deputy 10 acts, hears no other node, and "
       "withdraws (%d reports)",
       nrep);
    int s1[] = {0, 1, -1};
    nrep = w_case(8, 8, s1, none, who, &round, &others);
    ok(nrep == 1 && who[0] == 2, "one node, ranks 0 and 1 silent: rank 2 alone reports (%d: %d)",
       nrep, nrep ? who[0] : -1);
}

/* ---- a rank stopped past its timeout and resumed: the real thread, in a child ---- */

static struct resumed {
    int timeout_cell; /* 1 + the cell on_timeout recorded (0: none) */
    int signalled, go_on;
    char msg[768];
} * R;

static void r_timeout(void *arg, int cell, const char *msg)
{
    (void)arg;
    snprintf(R->msg, sizeof(R->msg), "%s", msg);
    __atomic_store_n(&R->timeout_cell, 1 + cell, __ATOMIC_RELEASE);
}

static void r_signal(void *arg, int sig, int cell)
{
    (void)arg;
    (void)cell;
    R->signalled = sig;
}

/* Rank 0 of 2 (rank 1: its first deputy) beats without pause, as a main thread does that
 * finishes an operation its peer had fed before the stop: once resumed, it beats before the
 * watchdog looks.  The parent stops it past its timeout (1 s), resumes it, and lets it end. */
static int r_child(void)
{
    static const cp_wd_io_t wio = {w_post, w_fetch_all};
    static char names[1][256] = {"n1"};
    static int node_ids[2] = {0, 0};
    cp_boot_t b;
    memset(&b, 0, sizeof(b));
    b.nranks = 2;
    b.nnodes = 1;
    b.node_names = names;
    b.node_ids = node_ids;
    oob_shm_rank = 0;
    cp_wd_set_io(&wio);
    cp_wd_hooks_t h = {.on_timeout = r_timeout, .on_signal = r_signal, .describe = describe};
    if (cp_wd_start(&h) != 0) {
        return 99;
    }
    cp_wd_set_boot(&b);
    double prev = cp_now_s(), hurry = 0.0;
    for (int i = 0; !__atomic_load_n(&R->go_on, __ATOMIC_ACQUIRE); i++) {
        cp_wd_beat(CP_WD_OP, 1, i, 2, 1.0);
        /* 20 us between beats, spent without the beat's lock (the watchdog takes it too); for
         * 0.1 s after a stop none, so that the beat comes before the watchdog looks */
        double t = cp_now_s();
        hurry = t - prev > 0.3 ? t + 0.1 : hurry;
        while (t < hurry ? 0 : cp_now_s() - t < 20e-6) {
        }
        prev = t;
    }
    cp_wd_set_boot(NULL);
    cp_wd_stop();
    return 0;
}

/* The child's exit status (-1: not exited normally) after a stop of stop_s, the deputy having
 * given up on it (its record and its "I act" posted) or not (the whole job stopped). */
static int r_case(int gave_up, double stop_s)
{
    memset(W, 0, sizeof(*W));
    memset(R, 0, sizeof(*R));
    W->n = 2;
    if (gave_up) {
        W->kv[1].rec = rec(CP_WD_OP, 1, 4);
        W->kv[1].lead = 1;
        W->kv[1].has_rec = W->kv[1].has_lead = 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30);
        _exit(r_child());
    }
    usleep(300000);
    kill(pid, SIGSTOP);
    usleep((useconds_t)(stop_s * 1e6));
    kill(pid, SIGCONT);
    usleep(2500000); /* the resumed child asks for 1 s at most, then acts */
    __atomic_store_n(&R->go_on, 1, __ATOMIC_RELEASE);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_resumed(void)
{
    int rc = r_case(1, 3.0);
    ok(rc == CP_EXIT_TIMEOUT && R->timeout_cell == 2 && R->signalled == 0,
       "rank 0 stopped 3 s past its 1 s timeout, its deputy acting, its main thread beating "
       "first once resumed: cell 1 recorded as timed out, exit 124 (exit %d, cell %d: %s)",
       rc, R->timeout_cell - 1, R->msg);
    rc = r_case(0, 3.0);
    ok(rc == 0 && R->timeout_cell == 0,
       "every rank stopped 3 s and resumed together (no deputy gave up): no timeout, the run "
       "goes on (exit %d, cell %d: %s)",
       rc, R->timeout_cell - 1, R->msg);
}

static void test_explain(void)
{
    char hosts[6][256] = {"n0", "n1", "n2", "n3", "n4", "n5"};
    cp_wd_hosts_t H = {(const char(*)[256])hosts, NULL};
    char msg[2048], list[128];

    int r1[] = {0, 2, 3, 4, 7};
    cp_wd_ranks(r1, 5, list, sizeof(list));
    ok(!strcmp(list, "0,2-4,7"), "rank ranges: %s", list);
    int r2[] = {5};
    cp_wd_ranks(r2, 1, list, sizeof(list));
    ok(!strcmp(list, "5"), "one rank: %s", list);

    /* rank 1 stuck before the operation every other rank is in */
    cp_wd_rec_t a[4] = {rec(CP_WD_OP, 3, 6), rec(CP_WD_SYNC, 3, 6), rec(CP_WD_OP, 3, 6),
                        rec(CP_WD_OP, 3, 6)};
    int cell = cp_wd_explain(a, 4, &H, describe, NULL, msg, sizeof(msg));
    ok(cell == 3, "stuck cell is 3 (%d)", cell);
    ok(strstr(msg, "cell 3 (desc-of-3) timed out: no progress for 3.5 s") != NULL, "%s", msg);
    ok(strstr(msg, "Did not arrive: rank 1 (n1) last seen in the barrier before iteration 5.") !=
           NULL,
       "names rank 1, its host and position (iteration counted after 2 warm-ups)");
    ok(strstr(msg, "Waiting (in the operation, iteration 5): ranks 0,2-3.") != NULL,
       "the waiting ranks");

    /* everybody in the same operation: the library hangs */
    cp_wd_rec_t b[3] = {rec(CP_WD_OP, 0, 1), rec(CP_WD_OP, 0, 1), rec(CP_WD_OP, 0, 1)};
    cp_wd_explain(b, 3, &H, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "All 3 ranks are in the operation, warm-up iteration 2: the backend did not "
                   "complete it.") != NULL,
       "a hang inside the backend: %s", msg);

    /* a rank that never answered, one still writing the previous cell */
    cp_wd_rec_t c[4] = {rec(CP_WD_WRITE, 4, -1), rec(CP_WD_SETUP, 5, -1), rec(CP_WD_SETUP, 5, -1),
                        rec(CP_WD_SETUP, 5, -1)};
    c[3].valid = 0;
    cell = cp_wd_explain(c, 4, &H, describe, NULL, msg, sizeof(msg));
    ok(cell == 5, "the cell the job waits in is 5 (%d)", cell);
    ok(strstr(msg, "Waiting: rank 0 in cell 4, writing results; ranks 1-2 setting up the "
                   "cell.") != NULL &&
           strstr(msg, "Did not arrive") == NULL,
       "with a silent rank, rank 0 behind in the previous cell waits, unblamed: %s", msg);
    ok(strstr(msg, "No answer (stopped, dead, or cut off from PMIx): rank 3 on n3.") != NULL,
       "silent rank named with its host");

    /* ranks drifting apart (broadcast without barriers): the one furthest behind is marked */
    cp_wd_rec_t f[3] = {rec(CP_WD_OP, 0, 8), rec(CP_WD_OP_DONE, 0, 7), rec(CP_WD_OP, 0, 9)};
    cp_wd_explain(f, 3, &H, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "rank 0 (n0) last seen in the operation, iteration 7;") != NULL &&
           strstr(msg, "rank 1 (n1) last seen past the operation of iteration 6 (furthest "
                       "behind).") != NULL &&
           strstr(msg, "Waiting (in the operation, iteration 8): rank 2.") != NULL,
       "drift: %s", msg);

    /* --check every: a rank still checking iteration 7's output, or filling before 8, is
     * behind the ones in iteration 8's operation, and ahead of one past iteration 6's */
    cp_wd_rec_t v[4] = {rec(CP_WD_VERIFY, 0, 8), rec(CP_WD_OP, 0, 9), rec(CP_WD_FILL, 0, 9),
                        rec(CP_WD_OP_DONE, 0, 7)};
    cp_wd_explain(v, 4, &H, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "rank 0 (n0) last seen checking the output of iteration 7 (--check);") != NULL &&
           strstr(msg, "rank 2 (n2) last seen filling fresh inputs before iteration 8 "
                       "(--check);") != NULL &&
           strstr(msg, "rank 3 (n3) last seen past the operation of iteration 6 (furthest "
                       "behind).") != NULL &&
           strstr(msg, "Waiting (in the operation, iteration 8): rank 1.") != NULL,
       "--check every's fill and check placed in their iterations: %s", msg);

    /* results gathered over the control channel (TCP, PMIx only as its fall-back) */
    cp_wd_rec_t g[2] = {rec(CP_WD_GATHER, 6, -1), rec(CP_WD_OP_DONE, 6, 2)};
    cp_wd_explain(g, 2, &H, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "rank 1 (n1) last seen past the operation of iteration 1") != NULL &&
           strstr(msg, "Waiting (gathering results over the control channel): "
                       "rank 0.") != NULL,
       "a gather's waiters, over the control channel: %s", msg);

    /* nobody answered */
    cp_wd_rec_t d[2];
    memset(d, 0, sizeof(d));
    cell = cp_wd_explain(d, 2, NULL, describe, NULL, msg, sizeof(msg));
    ok(cell == -1 && strstr(msg, "no rank answered") != NULL, "no records: %s", msg);

    /* start-up hang: no cell */
    cp_wd_rec_t e[2] = {rec(CP_WD_START, -1, -1), rec(CP_WD_SETUP, 0, -1)};
    cell = cp_wd_explain(e, 2, &H, describe, NULL, msg, sizeof(msg));
    ok(cell == 0 && strstr(msg, "rank 0 (n0) last seen starting up") != NULL, "%s", msg);

    /* a short buffer is cut, never overrun */
    char small[40];
    memset(small, 'x', sizeof(small));
    cp_wd_explain(a, 4, &H, describe, NULL, small, 32);
    ok(strlen(small) < 32 && small[39] == 'x', "output bounded by its length");
}

/* ranks that do not answer: stopped, or on a node cut off */
static void test_explain_silent(void)
{
    char hosts[6][256] = {"n0", "n1", "n2", "n3", "n4", "n5"};
    cp_wd_hosts_t H = {(const char(*)[256])hosts, NULL};
    char msg[2048];
    /* a stopped rank leaves a collective half done: its peers are at different
     * places, and none of them is blamed (issue 15) */
    cp_wd_rec_t s4[4] = {rec(CP_WD_OP_DONE, 2, 9), rec(CP_WD_OP, 2, 8), rec(CP_WD_OP, 2, 8),
                         rec(CP_WD_OP_DONE, 2, 9)};
    s4[2].valid = 0;
    cp_wd_explain(s4, 4, &H, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "Waiting: ranks 0,3 past the operation of iteration 8; rank 1 in the "
                   "operation, iteration 7. No answer (stopped, dead, or cut off from PMIx): "
                   "rank 2 on n2.") != NULL &&
           strstr(msg, "Did not arrive") == NULL,
       "a stopped middle rank: only it is named: %s", msg);

    /* a node cut off: its ranks grouped under its name */
    cp_wd_rec_t g[4] = {rec(CP_WD_OP, 2, 4), rec(CP_WD_OP, 2, 4), rec(CP_WD_OP, 2, 4),
                        rec(CP_WD_OP, 2, 4)};
    g[1].valid = g[3].valid = 0;
    static const char two[2][256] = {"n1", "n2"}; /* once per node, as cp_boot_t holds them */
    static const int node_of[4] = {0, 1, 0, 1};
    cp_wd_explain(g, 4, &(cp_wd_hosts_t){two, node_of}, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "Waiting (in the operation, iteration 3): ranks 0,2. No answer (stopped, dead, "
                   "or cut off from PMIx): ranks 1,3 on n2.") != NULL,
       "a silent node: %s", msg);
    static const char four[6][256] = {"n1", "n2", "n3", "n3", "n4", "n5"};
    cp_wd_rec_t h[6];
    memset(h, 0, sizeof(h));
    h[0] = rec(CP_WD_OP, 2, 4);
    cp_wd_explain(h, 6, &(cp_wd_hosts_t){four, NULL}, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "No answer (stopped, dead, or cut off from PMIx): rank 1 on n2, ranks 2-3 on "
                   "n3, rank 4 on n4, rank 5 on n5.") != NULL,
       "silent ranks on four nodes: %s", msg);
}

int main(void)
{
    test_explain();
    test_explain_silent();
    if (oob_shm_create(W_MAX) != 0) {
        return 99;
    }
    W = mmap(NULL, sizeof(*W), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (W == MAP_FAILED) {
        return 99;
    }
    test_deputies();
    test_reporter();
    R = mmap(NULL, sizeof(*R), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (R == MAP_FAILED) {
        return 99;
    }
    test_resumed();
    return tap_done();
}
