/* The watchdog's attribution: which ranks did not arrive, and where. */
#include "config.h"

#include "core/watchdog.h"
#include "tap.h"

#include <string.h>

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

int main(void)
{
    char hosts[6][256] = {"n0", "n1", "n2", "n3", "n4", "n5"};
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
    int cell = cp_wd_explain(a, 4, (const char(*)[256])hosts, describe, NULL, msg, sizeof(msg));
    ok(cell == 3, "stuck cell is 3 (%d)", cell);
    ok(strstr(msg, "cell 3 (desc-of-3) timed out: no progress for 3.5 s") != NULL, "%s", msg);
    ok(strstr(msg, "Did not arrive: rank 1 (n1) last seen in the barrier before iteration 5.") !=
           NULL,
       "names rank 1, its host and position (iteration counted after 2 warm-ups)");
    ok(strstr(msg, "Waiting (in the operation, iteration 5): ranks 0,2-3.") != NULL,
       "the waiting ranks");

    /* everybody in the same operation: the library hangs */
    cp_wd_rec_t b[3] = {rec(CP_WD_OP, 0, 1), rec(CP_WD_OP, 0, 1), rec(CP_WD_OP, 0, 1)};
    cp_wd_explain(b, 3, (const char(*)[256])hosts, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "All 3 ranks are in the operation, warm-up iteration 2: the backend did not "
                   "complete it.") != NULL,
       "a hang inside the backend: %s", msg);

    /* a rank that never answered, one still writing the previous cell */
    cp_wd_rec_t c[4] = {rec(CP_WD_WRITE, 4, -1), rec(CP_WD_SETUP, 5, -1), rec(CP_WD_SETUP, 5, -1),
                        rec(CP_WD_SETUP, 5, -1)};
    c[3].valid = 0;
    cell = cp_wd_explain(c, 4, (const char(*)[256])hosts, describe, NULL, msg, sizeof(msg));
    ok(cell == 5, "the cell the job waits in is 5 (%d)", cell);
    ok(strstr(msg, "Waiting: rank 0 in cell 4, writing results; ranks 1-2 setting up the "
                   "cell.") != NULL &&
           strstr(msg, "Did not arrive") == NULL,
       "with a silent rank, rank 0 behind in the previous cell waits, unblamed: %s", msg);
    ok(strstr(msg, "No answer (stopped, dead, or cut off from PMIx): rank 3 on n3.") != NULL,
       "silent rank named with its host");

    /* a stopped rank leaves a collective half done: its peers are at different
     * places, and none of them is blamed (issue 15) */
    cp_wd_rec_t s4[4] = {rec(CP_WD_OP_DONE, 2, 9), rec(CP_WD_OP, 2, 8), rec(CP_WD_OP, 2, 8),
                         rec(CP_WD_OP_DONE, 2, 9)};
    s4[2].valid = 0;
    cp_wd_explain(s4, 4, (const char(*)[256])hosts, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "Waiting: ranks 0,3 past the operation of iteration 8; rank 1 in the "
                   "operation, iteration 7. No answer (stopped, dead, or cut off from PMIx): "
                   "rank 2 on n2.") != NULL &&
           strstr(msg, "Did not arrive") == NULL,
       "a stopped middle rank: only it is named: %s", msg);

    /* a node cut off: its ranks grouped under its name */
    cp_wd_rec_t g[4] = {rec(CP_WD_OP, 2, 4), rec(CP_WD_OP, 2, 4), rec(CP_WD_OP, 2, 4),
                        rec(CP_WD_OP, 2, 4)};
    g[1].valid = g[3].valid = 0;
    static const char two[4][256] = {"n1", "n2", "n1", "n2"};
    cp_wd_explain(g, 4, two, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "Waiting (in the operation, iteration 3): ranks 0,2. No answer (stopped, dead, "
                   "or cut off from PMIx): ranks 1,3 on n2.") != NULL,
       "a silent node: %s", msg);
    static const char four[6][256] = {"n1", "n2", "n3", "n3", "n4", "n5"};
    cp_wd_rec_t h[6];
    memset(h, 0, sizeof(h));
    h[0] = rec(CP_WD_OP, 2, 4);
    cp_wd_explain(h, 6, four, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "No answer (stopped, dead, or cut off from PMIx): rank 1 on n2, ranks 2-3 on "
                   "n3, rank 4 on n4, rank 5 on n5.") != NULL,
       "silent ranks on four nodes: %s", msg);

    /* ranks drifting apart (broadcast without barriers): the one furthest behind is marked */
    cp_wd_rec_t f[3] = {rec(CP_WD_OP, 0, 8), rec(CP_WD_OP_DONE, 0, 7), rec(CP_WD_OP, 0, 9)};
    cp_wd_explain(f, 3, (const char(*)[256])hosts, describe, NULL, msg, sizeof(msg));
    ok(strstr(msg, "rank 0 (n0) last seen in the operation, iteration 7;") != NULL &&
           strstr(msg, "rank 1 (n1) last seen past the operation of iteration 6 (furthest "
                       "behind).") != NULL &&
           strstr(msg, "Waiting (in the operation, iteration 8): rank 2.") != NULL,
       "drift: %s", msg);

    /* nobody answered */
    cp_wd_rec_t d[2];
    memset(d, 0, sizeof(d));
    cell = cp_wd_explain(d, 2, NULL, describe, NULL, msg, sizeof(msg));
    ok(cell == -1 && strstr(msg, "no rank answered") != NULL, "no records: %s", msg);

    /* start-up hang: no cell */
    cp_wd_rec_t e[2] = {rec(CP_WD_START, -1, -1), rec(CP_WD_SETUP, 0, -1)};
    cell = cp_wd_explain(e, 2, (const char(*)[256])hosts, describe, NULL, msg, sizeof(msg));
    ok(cell == 0 && strstr(msg, "rank 0 (n0) last seen starting up") != NULL, "%s", msg);

    /* a short buffer is cut, never overrun */
    char small[40];
    memset(small, 'x', sizeof(small));
    cp_wd_explain(a, 4, (const char(*)[256])hosts, describe, NULL, small, 32);
    ok(strlen(small) < 32 && small[39] == 'x', "output bounded by its length");
    return tap_done();
}
