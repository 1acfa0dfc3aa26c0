#include "config.h"

/*
 * The screen's verdict (screen.h), pure: every node's and link's verdict once the rounds ran
 * (cp_screen_decide), a record judged again (cp_screen_schedule_check, cp_screen_replay) and a
 * link sweep's verdict (cp_screen_decide_sweep), from the attribution's suspects and
 * confirmations (screen_attr.c).
 */

#include "screen/screen.h"
#include "screen/screen_attr_int.h"

#include "screen/links.h"
#include "base/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Node's median score over its judged pairs (the confirmation included), *m of them.  A node
 * that is not a suspect is judged by its pairs with partners that are not suspects, where it
 * has any: a pair with a suspect is explained by the suspect, as in next_suspect, and with
 * few nodes a good node may meet a bad one twice (a random round and the confirmation), half
 * of its pairs.  A suspect, and a node that met only suspects (a cluster slow as a whole), by
 * all of its pairs.
 */
static double judged_median(const cp_screen_t *s, int node, int strict, int *m)
{
    /* room for every pair of the screen: no cap on a node's pairs (there was one at 64, unsaid);
     * without the room, no pair judged: the node is not slow (the safe side) */
    double *v = malloc(sizeof(double) * (s->npairs > 0 ? s->npairs : 1));
    *m = 0;
    for (int all = s->suspect[node] && !strict; v != NULL && all < 2 - strict; all++) {
        *m = 0;
        for (size_t i = 0; i < s->npairs; i++) {
            const cp_screen_pair_t *p = &s->pairs[i];
            int o = cp_attr_other(p, node);
            if (o >= 0 && s->reach[o] && cp_attr_judged(p) && (all || !s->suspect[o])) {
                v[(*m)++] = p->score;
            }
        }
        if (*m > 0) {
            break;
        }
    }
    double med = *m > 0 ? cp_stats_median(v, (size_t)*m) : 0;
    free(v);
    return med;
}

/*
 * A node whose median pair is slow is slow, unless a pair proves it good (proven).  Against a
 * baseline, with no node proven good, whoever it met: a cluster slow as a whole has no good
 * partner to confirm with, and needs none; else, and against the screen's own reference, its
 * median over pairs with partners that are not suspects (the confirmation's included), two or
 * more against a baseline, three or more against its own: each pair with another partner, so
 * as many independent failures, where one or two pairs cannot tell a node at 0.7x from a noisy
 * one with a small screen's few pairs behind its spread.  The median of m pairs spreads about
 * 1.25 / sqrt(m) times less than a pair; the wider of the two fields' spreads.
 */
static void median_verdicts(cp_screen_t *s)
{
    int own = !s->opt.has_baseline && s->ref.pairs > 0;
    double mad = fmax(s->ref.bw_mad, s->ref.lat_mad);
    unsigned char *pv = (s->opt.has_baseline || own) ? cp_attr_marks(s, 0) : NULL;
    int any = 0; /* a node proven good: the cluster is not slow as a whole */
    for (int i = 0; pv != NULL && i < s->n; i++) {
        any |= (pv[i] & MARK_PROVEN) != 0;
    }
    for (int i = 0; pv != NULL && i < s->n; i++) {
        int meas;
        double score = judged_median(s, i, own || any, &meas);
        double spread = 1.25 / sqrt(meas > 0 ? meas : 1) * mad;
        if (s->reach[i] && !(pv[i] & MARK_PROVEN) && meas >= (own ? 3 : 2) && score > 0 &&
            score < s->opt.thr && -log(score) > s->opt.z * 1.4826 * spread) {
            s->verdict[i] = CP_SCREEN_SLOW;
        }
    }
    free(pv);
}

/* The exit status of the verdicts: 1 something flagged, 2 something inconclusive, else 0. */
static int verdict_status(const cp_screen_t *s, int unsure)
{
    int flagged = 0;
    for (int l = 0; l < s->nlinks; l++) {
        flagged |= s->link_verdict[l] == CP_SCREEN_SLOW;
        unsure |= s->link_verdict[l] == CP_SCREEN_INCONCLUSIVE;
    }
    for (int i = 0; i < s->n; i++) {
        flagged |= s->verdict[i] == CP_SCREEN_SLOW || s->verdict[i] == CP_SCREEN_UNREACHABLE;
        unsure |= s->verdict[i] == CP_SCREEN_INCONCLUSIVE || s->verdict[i] == CP_SCREEN_UNTESTED;
    }
    return flagged ? 1 : unsure ? 2 : 0;
}

int cp_screen_decide(cp_screen_t *s)
{
    /* no reference (fewer than 3 measured pairs, no baseline): a node that met others was not
     * judged, and is never called healthy */
    int judged = s->ref.pairs > 0 || s->ref.source != 0;
    int *meas = calloc((size_t)s->n + 1, sizeof(int)),
        *slow = calloc((size_t)s->n + 1, sizeof(int));
    if (meas == NULL || slow == NULL) {
        free(meas);
        free(slow);
        return -1;
    }
    cp_attr_all_counts(s, meas, slow);
    for (int i = 0; i < s->n; i++) {
        s->verdict[i] = !s->reach[i]    ? CP_SCREEN_UNREACHABLE
                        : s->suspect[i] ? cp_attr_confirmed(s, i, s->confirm_with[i])
                        : meas[i] == 0  ? CP_SCREEN_UNTESTED
                        : judged        ? CP_SCREEN_HEALTHY
                                        : CP_SCREEN_INCONCLUSIVE;
    }
    free(meas);
    free(slow);
    median_verdicts(s);
    for (int l = 0; l < s->nlinks; l++) {
        int a = s->link_a[l], b = s->link_b[l];
        int v = cp_attr_confirmed(s, a, b);
        s->link_verdict[l] = v == CP_SCREEN_UNREACHABLE ? CP_SCREEN_INCONCLUSIVE : v;
        if (!s->reach[b]) {
            s->link_verdict[l] = CP_SCREEN_INCONCLUSIVE;
        }
        if (s->verdict[a] == CP_SCREEN_SLOW || s->verdict[b] == CP_SCREEN_SLOW) {
            s->link_verdict[l] = CP_SCREEN_HEALTHY; /* a slow end explains it */
        }
    }
    return verdict_status(s, s->ref.pairs == 0 && s->ref.source == 0);
}

/* ---- a record judged again --------------------------------------------------------------- */

int cp_screen_schedule_check(const cp_screen_t *s)
{
    int n = s->n, nr = cp_screen_random_rounds(s), bad = -1;
    int *pos = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (pos == NULL) {
        return -2;
    }
    for (int p = 0; p < n; p++) {
        pos[s->perm[p]] = p; /* where each node sits in the shuffled order */
    }
    /* the circle's second pass (4 nodes): each of its rounds a whole matching, n / 2 pairs
     * (a file written before it has its confirmation there: one pair a suspect, or a few) */
    int avail = cp_links_rounds(n), second[64] = {0};
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase == CP_SCREEN_RANDOM && p->round >= avail && p->round < nr &&
            p->round - avail < 64) {
            second[p->round - avail]++;
        }
    }
    for (int k = avail; k < nr && k - avail < 64 && bad < 0; k++) {
        bad = second[k - avail] != n / 2 && second[k - avail] > 0 ? k : bad;
    }
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase != CP_SCREEN_RANDOM) {
            continue;
        }
        int q = p->round >= 0 && p->round < nr
                    ? cp_links_partner(n, s->order[p->round % cp_links_rounds(n)], pos[p->a])
                    : -1;
        int r = p->round < 0 ? 0 : p->round;
        if ((q < 0 || s->perm[q] != p->b) && (bad < 0 || r < bad)) {
            bad = r;
        }
    }
    free(pos);
    return bad;
}

int cp_screen_replay(cp_screen_t *s)
{
    int *partner = malloc(sizeof(int) * (size_t)(s->n > 0 ? s->n : 1));
    if (partner == NULL || cp_screen_plan_confirm(s, partner) < 0) {
        free(partner);
        return -1;
    }
    for (int i = 0; i < s->n; i++) {
        int w = s->confirm_with[i];
        if (!s->suspect[i] || (w >= 0 && cp_attr_confirm_pair(s, i, w) != NULL)) {
            continue;
        }
        for (size_t k = 0; k < s->npairs; k++) { /* the confirmation the record holds */
            const cp_screen_pair_t *p = &s->pairs[k];
            int o = cp_attr_other(p, i);
            if (p->phase == CP_SCREEN_CONFIRM && o >= 0 && s->reach[o] && !s->suspect[o] &&
                cp_attr_judged(p)) {
                s->confirm_with[i] = o;
                break;
            }
        }
    }
    cp_screen_plan_recheck(s, partner); /* the links a cleared suspect leaves */
    free(partner);
    return cp_screen_decide(s);
}

int cp_screen_decide_sweep(cp_screen_t *s)
{
    int *partner = malloc(sizeof(int) * (size_t)(s->n > 0 ? s->n : 1));
    if (partner == NULL || cp_screen_plan_confirm(s, partner) < 0) {
        free(partner);
        return -1;
    }
    free(partner);
    for (int i = 0; i < s->n; i++) {
        int meas, slow;
        cp_attr_node_counts(s, i, &meas, &slow);
        s->confirm_with[i] = -1; /* no confirmation round: the sweep's pairs are the evidence */
        s->verdict[i] = !s->reach[i]                                    ? CP_SCREEN_UNREACHABLE
                        : meas == 0                                     ? CP_SCREEN_UNTESTED
                        : s->suspect[i] && slow >= 2 && 2 * slow > meas ? CP_SCREEN_SLOW
                                                                        : CP_SCREEN_HEALTHY;
    }
    median_verdicts(s);
    s->nlinks = 0; /* the slow pairs that no slow node explains (room: one per pair) */
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase == CP_SCREEN_RANDOM && p->slow && s->reach[p->a] && s->reach[p->b] &&
            s->verdict[p->a] != CP_SCREEN_SLOW && s->verdict[p->b] != CP_SCREEN_SLOW &&
            !cp_attr_is_link(s, p->a, p->b)) {
            s->link_a[s->nlinks] = p->a;
            s->link_b[s->nlinks] = p->b;
            s->link_verdict[s->nlinks++] = CP_SCREEN_SLOW;
        }
    }
    return verdict_status(s, s->ref.pairs == 0 && s->ref.source == 0);
}
