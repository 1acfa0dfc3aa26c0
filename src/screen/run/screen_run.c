#include "config.h"

#include "screen/run/screen_run.h"

#include "collprof/status.h"
#include "runner/agree.h"
#include "base/log.h"
#include "screen/screen.h"
#include "screen/run/screen_run_int.h"
#include "screen/run/screen_valid.h"
#include "screen/screen_out.h"

#include <stdlib.h>
#include <string.h>

void cp_screen_out_free(cp_screen_out_t *out)
{
    cp_sweep_rows_free(&out->pairs);
    free(out->rows);
    memset(out, 0, sizeof(*out));
}

/* One round of pairing nodes[] at both sizes; rank 0 adds its pairs to s. */
static int run_round(cp_runner_t *r, const cp_cell_t *lat, const cp_cell_t *bw, const int *lead,
                     const int *nodes, cp_screen_t *s, int phase, const char *what,
                     cp_screen_out_t *out, FILE *progress)
{
    size_t from = out->pairs.nrows;
    int round = s->rounds_run++;
    int rc = cp_sweep_round(r, lat, lead, nodes, round, "screen", what, &out->pairs, progress);
    int rc2 = cp_sweep_round(r, bw, lead, nodes, round, "screen", what, &out->pairs, progress);
    if (rc < 0 || rc2 < 0) {
        return -1;
    }
    if (r->boot->rank == 0 && cp_screen_add_round(s, &out->pairs, from, phase, round) != 0) {
        return -1;
    }
    return rc | rc2;
}

/* Rank 0: plan the confirmation (recheck 0), the recheck round (1) or re-pairing round k - 2
 * (k >= 2, planned 0 after the cap) into nodes[] (-1 after its own failure: out of memory);
 * every rank: receive the count planned and the pairing.  The same answer everywhere. */
static int agree_confirm(cp_runner_t *r, cp_screen_t *s, int *nodes, int failed, int recheck)
{
    int planned = failed ? -1 : 0;
    if (r->boot->rank == 0 && !failed && recheck >= 2) {
        planned = cp_screen_plan_repair(s, nodes);
        planned = planned > 0 && cp_screen_repair_capped(recheck - 2, planned) ? 0 : planned;
    } else if (r->boot->rank == 0 && !failed) {
        cp_screen_judge_opt(s);
        planned = recheck ? cp_screen_plan_recheck(s, nodes) : cp_screen_plan_confirm(s, nodes);
    }
    if (cp_oob_bcast(&planned, sizeof(planned), 0) != 0) {
        return -1;
    }
    if (planned > 0 && cp_oob_bcast(nodes, sizeof(int) * (size_t)s->n, 0) != 0) {
        return -1;
    }
    return planned;
}

/* Rank 0: the verdict's rows, the host name of each node being its leader's. */
static int verdict_rows(cp_runner_t *r, const cp_cell_t *lat, cp_screen_t *s, const int *lead,
                        cp_screen_out_t *out)
{
    const char **names = calloc((size_t)s->n + 1, sizeof(char *));
    if (names == NULL) {
        return -1;
    }
    for (int nd = 0; nd < s->n; nd++) {
        names[nd] = lead[nd] >= 0 ? cp_boot_host(r->boot, lead[nd]) : "";
    }
    cp_screen_judge_opt(s);
    cp_screen_decide(s);
    int rc = cp_screen_rows(s, r->plugins[lat->plugin].name, names, &out->rows, &out->nrows);
    free(names);
    return rc;
}

/* Rank 0: the screen being run, for the watchdog (cp_screen_hang_verdict). */
static struct {
    cp_runner_t *r;
    const cp_cell_t *lat;
    cp_screen_t *s;
    const int *lead;
    cp_screen_out_t *out;
} live;

cp_screen_out_t *cp_screen_hang_verdict(const unsigned char *silent, int n)
{
    if (live.s == NULL || live.s->verdict == NULL) {
        return NULL;
    }
    const cp_boot_t *b = live.r->boot;
    for (int q = 0; q < n && q < b->nranks; q++) {
        if (silent[q]) {
            cp_screen_unreachable(live.s, b->node_ids[q]);
        }
    }
    if (live.s->link_a == NULL) { /* stopped in a random round: the suspects so far */
        int *scratch = malloc(sizeof(int) * (size_t)(live.s->n > 0 ? live.s->n : 1));
        cp_screen_judge_opt(live.s);
        if (scratch == NULL || cp_screen_plan_confirm(live.s, scratch) < 0) {
            free(scratch);
            return NULL;
        }
        free(scratch);
    }
    cp_screen_t *s = live.s;
    live.s = NULL; /* once */
    return verdict_rows(live.r, live.lat, s, live.lead, live.out) == 0 ? live.out : NULL;
}

/* The rounds as cells of the job (a backend whose pairs cannot run on contexts of their own):
 * the random rounds, the re-pairing rounds, the confirmation and recheck rounds; *worst as
 * run_round's; the last plan's result (negative: the rounds could not go on). */
static int job_rounds(cp_runner_t *r, const cp_cell_t *lat, const cp_cell_t *bw, const int *lead,
                      int *nodes, cp_screen_t *s, cp_screen_out_t *out, FILE *progress, int *worst)
{
    int failed = 0; /* rank 0 could not keep a round's pairs: the rounds go on, no verdict */
    int nr = cp_screen_random_rounds(s);
    for (int k = 0; k < nr; k++) {
        char what[48];
        snprintf(what, sizeof(what), "round %d/%d (random)", k + 1, nr);
        cp_screen_matching(s, k, nodes);
        int rc = run_round(r, lat, bw, lead, nodes, s, CP_SCREEN_RANDOM, what, out, progress);
        failed |= rc < 0;
        *worst |= rc > 0;
    }
    /* pairs that could not be set up: other partners, at most CP_SCREEN_REPAIR_ROUNDS rounds */
    for (int k = 0, m; *worst == 0 && (m = agree_confirm(r, s, nodes, failed, 2 + k)) != 0; k++) {
        char what[48];
        snprintf(what, sizeof(what), "re-pairing round %d/%d", k + 1, CP_SCREEN_REPAIR_ROUNDS);
        int rc = m < 0
                     ? -1
                     : run_round(r, lat, bw, lead, nodes, s, CP_SCREEN_REPAIR, what, out, progress);
        failed |= rc < 0;
        *worst |= rc > 0;
        if (m < 0) {
            break;
        }
    }
    int planned = *worst == 0 ? agree_confirm(r, s, nodes, failed, 0) : 0;
    /* the confirmation round, then recheck rounds while a cleared suspect leaves slow pairs
     * to run again (at most one per random round) */
    for (int k = 0; planned > 0 && k <= nr; k++) {
        int rc = run_round(r, lat, bw, lead, nodes, s, CP_SCREEN_CONFIRM,
                           k == 0 ? "confirmation round" : "recheck round", out, progress);
        planned = rc < 0 ? -1 : agree_confirm(r, s, nodes, 0, 1);
        planned = k < nr ? planned : cp_screen_recheck_cap(planned, nr, r->boot->rank == 0);
        *worst |= rc > 0;
    }
    return planned;
}

int cp_screen_backend(cp_runner_t *r, const cp_cell_t *lat, const cp_cell_t *bw, int rounds,
                      double thr, uint64_t seed, const cp_screen_ref_t *baseline,
                      cp_screen_out_t *out, FILE *progress)
{
    const cp_boot_t *b = r->boot;
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.rounds = rounds;
    o.seed = seed;
    o.thr = thr;
    if (baseline != NULL) {
        o.has_baseline = 1;
        o.baseline = *baseline;
    }
    cp_screen_t s = {.n = 0};
    int *lead = cp_sweep_leaders(b);
    int *nodes = malloc(sizeof(int) * (size_t)(b->nnodes > 0 ? b->nnodes : 1));
    cp_agreement_t ag; /* a rank without room for the schedule stops every rank here */
    int local = lead == NULL || nodes == NULL || cp_screen_init(&s, b->nnodes, &o) != 0;
    int worst = cp_agree(b->nranks, local ? COLLPROF_ERR_NO_MEMORY : COLLPROF_OK,
                         "no memory for the screen's schedule", &ag) == CP_AGREE_OK
                    ? 0
                    : -1;
    if (worst == 0 && b->rank == 0) {
        live.r = r, live.lat = lat, live.s = &s, live.lead = lead, live.out = out;
    }
    int alone = worst == 0 && cp_screen_pairs_usable(r, lat); /* the same on every rank */
    /* the validation collective (src/screen/run/screen_valid.h) */
    cp_screen_valid_t val = {.ran = 0};
    if (alone) { /* rounds and validation, every group on a context of its own */
        worst = cp_screen_pairs(r, lat, bw, &s, lead, out, &val, progress);
    }
    int planned =
        worst == 0 && !alone ? job_rounds(r, lat, bw, lead, nodes, &s, out, progress, &worst) : 0;
    /* the validation of the healthy nodes, as cells of the job (the pairs ran theirs) */
    if (!alone && planned >= 0 && worst >= 0 &&
        cp_screen_validate(r, bw, &s, lead, &val, progress) != 0) {
        worst = -1;
    }
    live.s = NULL;
    size_t first = out != NULL ? out->nrows : 0;
    if (planned < 0 || worst < 0 ||
        (b->rank == 0 && (verdict_rows(r, lat, &s, lead, out) != 0 ||
                          cp_screen_valid_rows(&val, lead, b, out, first) != 0))) {
        worst = -1;
    }
    cp_screen_valid_free(&val);
    cp_screen_free(&s);
    free(lead);
    free(nodes);
    return worst;
}
