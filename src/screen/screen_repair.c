#include "config.h"

/*
 * The screen's re-pairing (screen.h, cp_screen_plan_repair), pure: a pair that could not be
 * set up tells nothing of either end, so after the random rounds each node that lost pairs
 * that way meets another partner, and a node that cannot be set up with anyone ends
 * "untested" while its partners are judged on as many pairs as the others.  A file's
 * re-pairing rounds are found by planning them again (cp_screen_mark_repairs).
 */

#include "screen/screen.h"

#include <stdlib.h>
#include <string.h>

/* 1 when a and b met in a random or a re-pairing round. */
static int met_early(const cp_screen_t *s, int a, int b)
{
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if ((p->phase == CP_SCREEN_RANDOM || p->phase == CP_SCREEN_REPAIR) &&
            ((p->a == a && p->b == b) || (p->a == b && p->b == a))) {
            return 1;
        }
    }
    return 0;
}

/* Per node, over the random and re-pairing rounds' pairs between reachable nodes: want[] the
 * random-round pairs, have[] the judged ones, bad[] 1 with a pair not set up. */
static void shortfall(const cp_screen_t *s, int *want, int *have, unsigned char *bad)
{
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if ((p->phase != CP_SCREEN_RANDOM && p->phase != CP_SCREEN_REPAIR) || !s->reach[p->a] ||
            !s->reach[p->b]) {
            continue;
        }
        int ends[2] = {p->a, p->b};
        for (int e = 0; e < 2; e++) {
            want[ends[e]] += p->phase == CP_SCREEN_RANDOM;
            have[ends[e]] += cp_screen_outcome_judged(p->outcome);
            bad[ends[e]] |= p->outcome == CP_SCREEN_NOSETUP;
        }
    }
}

int cp_screen_plan_repair(const cp_screen_t *s, int *partner)
{
    int n = s->n, planned = 0;
    int *want = calloc((size_t)n + 1, sizeof(int)), *have = calloc((size_t)n + 1, sizeof(int));
    unsigned char *bad = calloc((size_t)n + 1, 1);
    for (int i = 0; i < n; i++) {
        partner[i] = -1;
    }
    if (want == NULL || have == NULL || bad == NULL) {
        free(want), free(have), free(bad);
        return -1;
    }
    shortfall(s, want, have, bad);
    /* pass 0: partners without a set-up failure (they can be set up); pass 1: any */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            if (!s->reach[i] || !bad[i] || have[i] >= want[i] || partner[i] >= 0) {
                continue;
            }
            for (int k = 1; k < n; k++) {
                int g = (i + k) % n;
                if (s->reach[g] && partner[g] < 0 && (pass == 1 || !bad[g]) &&
                    !met_early(s, i, g)) {
                    partner[i] = g;
                    partner[g] = i;
                    planned++;
                    break;
                }
            }
        }
    }
    free(want), free(have), free(bad);
    return planned;
}

int cp_screen_mark_repairs(cp_screen_t *s, int random)
{
    int *partner = malloc(sizeof(int) * (size_t)(s->n > 0 ? s->n : 1)), found = 0;
    for (int k = 0; partner != NULL && k < CP_SCREEN_REPAIR_ROUNDS; k++) {
        int round = random + k, in = 0, fits = 1;
        if (cp_screen_plan_repair(s, partner) <= 0) {
            break;
        }
        for (size_t i = 0; i < s->npairs; i++) { /* the round ran the plan (less the gone) */
            const cp_screen_pair_t *p = &s->pairs[i];
            if (p->round == round && p->phase == CP_SCREEN_CONFIRM) {
                in++;
                fits &= partner[p->a] == p->b;
            }
        }
        if (in == 0 || !fits) {
            break;
        }
        for (size_t i = 0; i < s->npairs; i++) {
            if (s->pairs[i].round == round && s->pairs[i].phase == CP_SCREEN_CONFIRM) {
                s->pairs[i].phase = CP_SCREEN_REPAIR;
            }
        }
        found++;
    }
    int ret = partner == NULL ? -1 : found;
    free(partner);
    return ret;
}
