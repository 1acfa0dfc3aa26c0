#include "config.h"

/*
 * The screen's attribution (screen.h), pure: node and link faults from the judged pairs,
 * the confirmation and recheck rounds, and the evidence in words; the verdict from them is
 * screen_verdict.c's.
 */

#include "screen/screen.h"
#include "screen/screen_attr_int.h"

#include "screen/links.h"
#include "base/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- attribution ------------------------------------------------------------------------- */

/* The other end of pair p seen from node, or -1 when node is not in it. */
int cp_attr_other(const cp_screen_pair_t *p, int node)
{
    return p->a == node ? p->b : p->b == node ? p->a : -1;
}

/* 1 when p ran in a random or a re-pairing round (what the attribution counts). */
int cp_attr_early(const cp_screen_pair_t *p)
{
    return p->phase == CP_SCREEN_RANDOM || p->phase == CP_SCREEN_REPAIR;
}

/* 1 when p is judged: measured, or wrong data (only those tell anything of a node). */
int cp_attr_judged(const cp_screen_pair_t *p)
{
    return cp_screen_outcome_judged(p->outcome);
}

/* Node's judged random-round and re-pairing pairs with reachable partners (*meas), the slow
 * ones (*slow). */
void cp_attr_node_counts(const cp_screen_t *s, int node, int *meas, int *slow)
{
    *meas = *slow = 0;
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        int o = cp_attr_other(p, node);
        if (o < 0 || !cp_attr_early(p) || !s->reach[o] || !cp_attr_judged(p)) {
            continue;
        }
        (*meas)++;
        *slow += p->slow;
    }
}

/* node_counts of every node at once into meas[n] and slow[n] (one pass over the pairs: per node
 * it is O(pairs), O(nodes x pairs) over a screen of 4,096 nodes). */
void cp_attr_all_counts(const cp_screen_t *s, int *meas, int *slow)
{
    memset(meas, 0, sizeof(int) * (size_t)s->n);
    memset(slow, 0, sizeof(int) * (size_t)s->n);
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (!cp_attr_early(p) || !cp_attr_judged(p)) {
            continue;
        }
        if (s->reach[p->b]) {
            meas[p->a]++;
            slow[p->a] += p->slow;
        }
        if (s->reach[p->a]) {
            meas[p->b]++;
            slow[p->b] += p->slow;
        }
    }
}

void cp_screen_node_stats(const cp_screen_t *s, int node, int *meas, int *slow, double *score)
{
    cp_attr_node_counts(s, node, meas, slow);
    double v[64];
    int m = 0;
    for (size_t i = 0; i < s->npairs && m < 64; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (cp_attr_other(p, node) >= 0 && cp_attr_judged(p)) {
            v[m++] = p->score;
        }
    }
    *score = cp_stats_median(v, (size_t)m);
}

/* 1 when node met peer in any pair so far. */
static int met(const cp_screen_t *s, int node, int peer)
{
    for (size_t i = 0; i < s->npairs; i++) {
        if (cp_attr_other(&s->pairs[i], node) == peer) {
            return 1;
        }
    }
    return 0;
}

/* Record the slow random-round pairs between reachable non-suspects as suspect links. */
static int find_links(cp_screen_t *s)
{
    size_t cap = s->npairs ? s->npairs : 1;
    s->link_a = malloc(cap * sizeof(int));
    s->link_b = malloc(cap * sizeof(int));
    s->link_verdict = malloc(cap * sizeof(int));
    if (s->link_a == NULL || s->link_b == NULL || s->link_verdict == NULL) {
        return -1;
    }
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (cp_attr_early(p) && p->slow && s->reach[p->a] && s->reach[p->b] && !s->suspect[p->a] &&
            !s->suspect[p->b]) {
            s->link_a[s->nlinks] = p->a;
            s->link_b[s->nlinks] = p->b;
            s->link_verdict[s->nlinks++] = CP_SCREEN_INCONCLUSIVE;
        }
    }
    return 0;
}

/* Marks of each node for the confirmation's planning, MARK_GOOD and MARK_PROVEN (NULL when out
 * of memory).  Good: it can confirm a suspect: reachable, and not a suspect or (cleared) a
 * suspect its own confirmation found healthy.  Proven: it has a measured pair clearly at the
 * reference's level (score at least sqrt(thr)): faults only slow a pair down, so such a pair
 * proves both its ends good, whoever else they met; a node that met only slow ones proves
 * nothing either way.  Computed once per plan: each reads every pair. */
unsigned char *cp_attr_marks(const cp_screen_t *s, int cleared)
{
    unsigned char *m = calloc((size_t)s->n + 1, 1);
    for (size_t i = 0; m != NULL && i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (s->reach[p->a] && s->reach[p->b] && p->outcome == CP_SCREEN_MEASURED && !p->slow &&
            p->score >= sqrt(s->opt.thr)) {
            m[p->a] |= MARK_PROVEN;
            m[p->b] |= MARK_PROVEN;
        }
    }
    for (int g = 0; m != NULL && g < s->n; g++) {
        int good =
            s->reach[g] &&
            (!s->suspect[g] || (cleared && s->confirm_with[g] >= 0 &&
                                cp_attr_confirmed(s, g, s->confirm_with[g]) == CP_SCREEN_HEALTHY));
        m[g] |= good ? MARK_GOOD : 0;
    }
    return m;
}

/* A confirmation partner for suspect node: a good node (marks), free in this round, proven
 * good and not met before where there is one, then proven, then not met (else one met
 * before: few nodes); searched from node + 1 on, so that suspects spread over the good nodes.
 * Where most nodes are slow, a node that is no suspect may be a slow one whose slow pairs
 * other suspects explained: a proven one cannot be.  -1: none (m NULL: none either). */
static int good_partner(const cp_screen_t *s, int node, const int *partner, const unsigned char *m)
{
    int pick[4] = {-1, -1, -1, -1}; /* proven and not met, proven, not met, any */
    for (int k = 1; m != NULL && k < s->n && pick[0] < 0; k++) {
        int g = (node + k) % s->n, p = (m[g] & MARK_PROVEN) != 0;
        if (!(m[g] & MARK_GOOD) || partner[g] >= 0 || (!p && pick[2] >= 0)) {
            continue; /* (met() only where the pick could change: it reads every pair) */
        }
        int at = (p ? 0 : 2) + met(s, node, g);
        pick[at] = pick[at] < 0 ? g : pick[at];
    }
    return pick[0] >= 0 ? pick[0] : pick[1] >= 0 ? pick[1] : pick[2] >= 0 ? pick[2] : pick[3];
}

/* A node that is not a suspect yet and was slow with every partner it met, two or more,
 * suspects included: where many nodes are slow, a slow node may have met only slow ones,
 * whose suspicion explains its pairs away; its confirmation with a good node decides. -1: none. */
static int all_slow_node(const cp_screen_t *s)
{
    int *meas = calloc((size_t)s->n + 1, sizeof(int)),
        *slow = calloc((size_t)s->n + 1, sizeof(int));
    int found = -1;
    if (meas != NULL && slow != NULL) {
        cp_attr_all_counts(s, meas, slow);
    }
    for (int i = 0; meas != NULL && slow != NULL && i < s->n && found < 0; i++) {
        if (!s->suspect[i] && s->reach[i] && meas[i] >= 2 && slow[i] == meas[i]) {
            found = i;
        }
    }
    free(meas);
    free(slow);
    return found;
}

/* The node that explains most of the slow pairs not yet explained by a suspect: the highest
 * share of slow pairs among its pairs with partners that are not suspects, two or more of
 * them (or all, when it has one); -1 when none is left.  meas and slow are scratch [n]. */
static int next_suspect(const cp_screen_t *s, int *meas, int *slow)
{
    memset(meas, 0, sizeof(int) * (size_t)s->n);
    memset(slow, 0, sizeof(int) * (size_t)s->n);
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (!cp_attr_early(p) || !cp_attr_judged(p) || !s->reach[p->a] || !s->reach[p->b]) {
            continue;
        }
        if (!s->suspect[p->b]) { /* a pair with a suspect is explained by the suspect */
            meas[p->a]++;
            slow[p->a] += p->slow;
        }
        if (!s->suspect[p->a]) {
            meas[p->b]++;
            slow[p->b] += p->slow;
        }
    }
    int best = -1;
    for (int i = 0; i < s->n; i++) {
        if (s->suspect[i] || slow[i] == 0 || (slow[i] < 2 && slow[i] < meas[i])) {
            continue;
        }
        /* slow[i] / meas[i] > slow[best] / meas[best], ties to the more slow pairs */
        long lhs = (long)slow[i] * (best >= 0 ? meas[best] : 1);
        long rhs = best >= 0 ? (long)slow[best] * meas[i] : 0;
        if (best < 0 || lhs > rhs || (lhs == rhs && slow[i] > slow[best])) {
            best = i;
        }
    }
    return best >= 0 ? best : all_slow_node(s);
}

/* Each suspect not paired yet (no confirmation partner, free in this round) meets a good node
 * (good_partner; cleared: a suspect its own confirmation cleared is good too); the pairs
 * planned.  In the confirmation round, and in the recheck rounds for the suspects that found
 * no good partner free there (more suspects than good nodes: up to half the nodes slow). */
static int confirm_suspects(cp_screen_t *s, int *partner, int cleared)
{
    int planned = 0;
    unsigned char *pv = cp_attr_marks(s, cleared);
    for (int i = 0; i < s->n; i++) {
        if (s->suspect[i] && s->reach[i] && s->confirm_with[i] < 0 && partner[i] < 0) {
            int g = good_partner(s, i, partner, pv);
            if (g >= 0) {
                partner[i] = g;
                partner[g] = i;
                s->confirm_with[i] = g;
                planned++;
            }
        }
    }
    free(pv);
    return planned;
}

int cp_screen_plan_confirm(cp_screen_t *s, int *partner)
{
    int *meas = malloc(sizeof(int) * (size_t)(s->n > 0 ? s->n : 1));
    int *slow = malloc(sizeof(int) * (size_t)(s->n > 0 ? s->n : 1));
    if (meas == NULL || slow == NULL) {
        free(meas);
        free(slow);
        return -1;
    }
    for (int i = 0; i < s->n; i++) {
        partner[i] = -1;
        s->suspect[i] = 0;
        s->confirm_with[i] = -1;
    }
    for (int b; (b = next_suspect(s, meas, slow)) >= 0;) {
        s->suspect[b] = 1;
    }
    free(meas);
    free(slow);
    if (find_links(s) != 0) {
        return -1;
    }
    int planned = 0;
    for (int l = 0; l < s->nlinks; l++) { /* each end is in at most one: else it is a suspect */
        if (partner[s->link_a[l]] < 0 && partner[s->link_b[l]] < 0) {
            partner[s->link_a[l]] = s->link_b[l];
            partner[s->link_b[l]] = s->link_a[l];
            planned++;
        }
    }
    return planned + confirm_suspects(s, partner, 0);
}

/* The confirmation pair of a and b, or NULL. */
const cp_screen_pair_t *cp_attr_confirm_pair(const cp_screen_t *s, int a, int b)
{
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase == CP_SCREEN_CONFIRM && cp_attr_other(p, a) == b) {
            return p;
        }
    }
    return NULL;
}

/* The verdict of a suspect from its confirmation pair with peer (peer < 0: none). */
int cp_attr_confirmed(const cp_screen_t *s, int node, int peer)
{
    const cp_screen_pair_t *p = peer >= 0 ? cp_attr_confirm_pair(s, node, peer) : NULL;
    if (!s->reach[node]) {
        return CP_SCREEN_UNREACHABLE;
    }
    if (p == NULL || !cp_attr_judged(p)) {
        return CP_SCREEN_INCONCLUSIVE;
    }
    return p->slow ? CP_SCREEN_SLOW : CP_SCREEN_HEALTHY;
}

/* 1 when (a, b) is a suspect link already. */
int cp_attr_is_link(const cp_screen_t *s, int a, int b)
{
    for (int l = 0; l < s->nlinks; l++) {
        if ((s->link_a[l] == a && s->link_b[l] == b) || (s->link_a[l] == b && s->link_b[l] == a)) {
            return 1;
        }
    }
    return 0;
}

int cp_screen_plan_recheck(cp_screen_t *s, int *partner)
{
    int planned = 0;
    for (int i = 0; i < s->n; i++) {
        partner[i] = -1;
    }
    planned += confirm_suspects(s, partner, 1);
    for (size_t i = 0; i < s->npairs && s->link_a != NULL; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (!cp_attr_early(p) || !p->slow || !s->reach[p->a] || !s->reach[p->b] ||
            cp_attr_is_link(s, p->a, p->b)) {
            continue;
        }
        /* a slow pair of a suspect its confirmation cleared, whose other end is not slow */
        int va = s->suspect[p->a] ? cp_attr_confirmed(s, p->a, s->confirm_with[p->a]) : -1;
        int vb = s->suspect[p->b] ? cp_attr_confirmed(s, p->b, s->confirm_with[p->b]) : -1;
        if ((va == CP_SCREEN_HEALTHY && vb != CP_SCREEN_SLOW) ||
            (vb == CP_SCREEN_HEALTHY && va != CP_SCREEN_SLOW)) {
            s->link_a[s->nlinks] = p->a;
            s->link_b[s->nlinks] = p->b;
            s->link_verdict[s->nlinks++] = CP_SCREEN_INCONCLUSIVE;
        }
    }
    for (int l = 0; l < s->nlinks; l++) { /* every link not run again yet, where both are free */
        int a = s->link_a[l], b = s->link_b[l];
        if (cp_attr_confirm_pair(s, a, b) == NULL && s->reach[a] && s->reach[b] && partner[a] < 0 &&
            partner[b] < 0) {
            partner[a] = b;
            partner[b] = a;
            planned++;
        }
    }
    return planned;
}

/* ---- words ------------------------------------------------------------------------------- */

/* Why node was not tested, into buf ("" when it has a judged pair or is unreachable): "not
 * tested: 3 pairs could not be set up, 1 partner unreachable; ".  Returns the length. */
static size_t untested_words(const cp_screen_t *s, int node, char *buf, size_t len)
{
    static const char *const why[] = {"", "", "timed out", "could not be set up",
                                      "had an unreachable partner"};
    int n[5] = {0}, any = 0, meas, slow;
    cp_attr_node_counts(s, node, &meas, &slow);
    for (size_t i = 0; i < s->npairs && meas == 0 && s->reach[node]; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (cp_attr_other(p, node) >= 0 && p->outcome >= 0 && p->outcome < 5) {
            n[p->outcome]++;
            any = 1;
        }
    }
    size_t at = 0;
    for (int k = 0; k < 5 && any && at < len; k++) {
        int w = !cp_screen_outcome_judged(k) && n[k] > 0
                    ? snprintf(buf + at, len - at, "%s%d pair%s %s",
                               at ? ", " : "not tested: ", n[k], n[k] == 1 ? "" : "s", why[k])
                    : 0;
        at += w > 0 ? (size_t)w : 0;
    }
    int w = at > 0 && at < len ? snprintf(buf + at, len - at, "; ") : 0;
    at += w > 0 ? (size_t)w : 0;
    return at < len ? at : (len > 0 ? len - 1 : 0);
}

void cp_screen_evidence(const cp_screen_t *s, int node, const char *const *names, char *buf,
                        size_t len)
{
    size_t at = untested_words(s, node, buf, len);
    int by = cp_screen_by_class(&s->ref); /* the class where the pairs were judged by it */
    if (at == 0 && len > 0) {
        buf[0] = '\0';
    }
    if (at == 0 && s->ref.pairs == 0 && s->ref.source == 0 && s->reach[node]) {
        int w = snprintf(buf, len, "not judged: %s; ",
                         s->n == 2 ? "2 nodes meet once, and one slow pair cannot say which end "
                                     "is slow without a baseline (--baseline)"
                                   : "fewer than 3 pairs measured, no reference without a "
                                     "baseline (--baseline)");
        at = w > 0 && (size_t)w < len ? (size_t)w : 0;
    }
    for (size_t i = 0, start = at; i < s->npairs && at < len; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        int o = cp_attr_other(p, node);
        if (o < 0 || p->phase == CP_SCREEN_REPEAT) { /* folded into its first pass's pair */
            continue;
        }
        const char *sep = at > start ? ", " : "";
        char who[64];
        if (names != NULL && names[o] != NULL) {
            snprintf(who, sizeof(who), "%s", names[o]);
        } else {
            snprintf(who, sizeof(who), "node %d", o);
        }
        const char *what = p->outcome != CP_SCREEN_MEASURED ? cp_screen_outcome_words(p->outcome)
                           : p->slow                        ? "slow"
                                                            : "ok";
        const char *phase = p->phase == CP_SCREEN_CONFIRM  ? what
                            : p->phase == CP_SCREEN_REPAIR ? "re-paired"
                                                           : "random";
        char score[16] = ""; /* a pair with no figure has no score */
        if (cp_attr_judged(p)) {
            snprintf(score, sizeof(score), " %.2fx", p->score);
        }
        int w = snprintf(buf + at, len - at, "%s%s%s with %s (%s%s%s)", sep,
                         p->phase == CP_SCREEN_CONFIRM ? "confirm" : what, score, who, phase,
                         by ? ", " : "", by ? cp_path_name(p->path) : "");
        at += w > 0 ? (size_t)w : 0;
    }
}
