/*
 * The screen's pure parts (collprof --screen, collprof-report screen): which
 * node meets which in each round, how a pair's figures are judged, and how
 * slow pairs are attributed to nodes or to links.  No I/O and no
 * communication: the runner (src/screen/run/screen_run.c), the text summary,
 * collprof-report and the simulator of tests/unit/test_screen.c all use it.
 *
 * The method (docs/screen.md):
 *  1. r rounds (default 3) of random perfect matchings: a seeded shuffle of
 *     the nodes, then r distinct rounds of the circle schedule over the
 *     shuffled order (src/screen/links.h), so that no two nodes meet twice
 *     and, with an odd count, a different node sits out each round.
 *  2. Every pair is judged against a robust reference from the healthy end (faults only
 *     slow): the median over the healthy-end nodes of each one's median pair with healthy-end
 *     partners (or a baseline), a pair being slow when its bandwidth (or inverse latency) is
 *     below thr x the reference AND more than z robust deviations below it, judged in
 *     logarithms (noise is a factor): -ln(score) > z x 1.4826 x spread, the spread being that
 *     of the pairs between the nodes at the reference's level (screen.c core_spread).  Up to
 *     CP_SCREEN_SMALL_NODES nodes one more random round.  Where a tree topology puts the pairs in
 *     several path classes (same-switch, cross-switch: src/screen/path.h), each class with
 *     CP_SCREEN_CLASS_MIN_PAIRS measured pairs has a reference of its own, and its pairs are
 *     judged against it (a slower spine is no fault); a smaller class against every pair's.
 *  3. A node slow with two or more different partners is a node suspect; a
 *     slow pair whose two ends are not suspects is a link suspect.  Suspects
 *     are taken one at a time, the one slow with the largest share of its
 *     partners first, and a pair with a suspect no longer counts against its
 *     other end: a good node that met a bad one is not blamed for it.
 *  4. A confirmation round pairs each node suspect with a known-good node it
 *     has not met, and re-runs each suspect link: only what is slow again is
 *     flagged ("two independent failures").  When a node suspect is cleared,
 *     its slow pairs whose other end is good become link suspects, re-run in
 *     one more round (cp_screen_plan_recheck).
 *  A node whose median pair (three or more with partners that are not suspects) is slow is
 *  slow too, unless a pair at the reference's level proves it good; with a baseline and no
 *  node proven good, whoever it met: a cluster slow as a whole has no good node left.
 *  Suspects left without a good partner in the confirmation round meet one in the recheck
 *  rounds.  More than CP_SCREEN_LARGE_SLOW of the judged nodes slow against the screen's own
 *  reference: "a large part of the allocation is slow: judge against a baseline" (exit 2).
 *  5. A node that did not answer within a pair's deadline is unreachable; it
 *     is never a reference and its partners are not blamed.
 *  6. Only a measured pair is judged (cp_screen_outcome_t; wrong data counts as slow): a
 *     pair that could not be set up, timed out or lost an end says nothing of either end.
 *     After the random rounds, the nodes that lost pairs to a set-up failure meet other
 *     partners in up to CP_SCREEN_REPAIR_ROUNDS re-pairing rounds (cp_screen_plan_repair);
 *     a node with no judged pair is untested, never slow.
 */
#ifndef COLLPROF_CORE_SCREEN_H
#define COLLPROF_CORE_SCREEN_H

#include "screen/path.h"

#include <stddef.h>
#include <stdint.h>

/** The smallest count of measured random-round pairs of a path class that gets a reference
 * of its own when the screen's pairs are of several classes; a class with fewer is judged
 * against the reference of every pair (class "any"). */
#define CP_SCREEN_CLASS_MIN_PAIRS 6

/** Up to this many nodes a screen runs one more random round (cp_screen_random_rounds): with
 * few nodes a round has few pairs, too few to tell a pair's noise from a node at 0.7x. */
#define CP_SCREEN_SMALL_NODES 12

/** Above this share of its judged nodes slow, a screen against its own reference says "a large
 * part of the allocation is slow: judge against a baseline" (exit status 2) instead of naming
 * them: faults are one-sided, so the healthy end still stands up to half the nodes slow, but a
 * majority slow leaves only the screen's word that the fast part is the healthy one. */
#define CP_SCREEN_LARGE_SLOW 0.5

/** The reference of one path class (cp_screen_ref_t.cls). */
typedef struct cp_screen_cref {
    double bw_gbs, bw_mad; /**< as in cp_screen_ref_t, over the class's pairs */
    double lat_us, lat_mad;
    int pairs; /**< measured pairs of the class (0 for a baseline) */
    int own;   /**< 1: the class's pairs are judged against it; 0: against the "any" figures */
} cp_screen_cref_t;

/** The reference a pair is judged against. */
typedef struct cp_screen_ref {
    double bw_gbs, bw_mad;  /**< median bandwidth (0: none), MAD of its natural logarithm */
    double lat_us, lat_mad; /**< the same for latency */
    int pairs;              /**< measured pairs behind it (0 for a baseline) */
    int source;             /**< 0: the screen's own pairs, 1: a baseline */
    double healthy;         /**< the screen's own: the share of node medians at its healthy end */
    /** Per path class (cp_path_class_t, src/screen/path.h): a pair of a class with .own set is
     *  judged against that class's figures, any other against the ones above.  The screen's
     *  own: set when its random rounds' pairs are of two classes or more, for each class with
     *  CP_SCREEN_CLASS_MIN_PAIRS measured pairs; a baseline's: each class it has rows of. */
    cp_screen_cref_t cls[CP_PATH_NCLASSES];
} cp_screen_ref_t;

/** The screen's knobs. */
typedef struct cp_screen_opts {
    int rounds;               /**< random rounds before the confirmation (default 3) */
    int small_round;          /**< 1 (default): one more random round up to
                                   CP_SCREEN_SMALL_NODES nodes; 0: as collprof wrote files
                                   before it (collprof-report reading such a file) */
    uint64_t seed;            /**< the matchings' seed (the same on every rank) */
    double thr;               /**< slow below thr x the reference (default 0.8) */
    double z;                 /**< and more than z robust deviations below it (default 3) */
    int has_baseline;         /**< judge against baseline, not the screen's own median */
    cp_screen_ref_t baseline; /**< (src/schema/baseline.h) */
} cp_screen_opts_t;

/** Defaults: 3 rounds, thr 0.8, z 3, seed 1. */
void cp_screen_opts_default(cp_screen_opts_t *o);

/**
 * What a pair test gave: its outcome, the one vocabulary of the runtime, the file's /links rows
 * (cp_screen_outcome_of maps a row's status to it), the simulator and the attribution.  Only
 * a MEASURED pair is judged slow or fast and a WRONG one counts as slow; the others say
 * nothing of either end's speed (infrastructure is not slowness): a node whose pairs are all
 * of them is "untested".
 */
typedef enum cp_screen_outcome {
    CP_SCREEN_MEASURED = 0,    /**< measured, data exact (row status "ok") */
    CP_SCREEN_WRONG = 1,       /**< measured, wrong data ("wrong"): counts as slow */
    CP_SCREEN_TIMEOUT = 2,     /**< did not finish by its deadline ("timeout") */
    CP_SCREEN_NOSETUP = 3,     /**< its channel or backend context could not be set up, or it
                                    gave no figure ("nosetup"; "error", "skipped", any other) */
    CP_SCREEN_PARTNER_GONE = 4 /**< an end stopped answering ("unreachable") */
} cp_screen_outcome_t;

/** The outcome a /links row's status names (the cell vocabulary, include/collprof/vocab.h):
 *  "ok", "wrong", "timeout", "unreachable"; "nosetup" and every other status (an "error" of a
 *  file before 1.11, "skipped", "unsupported") CP_SCREEN_NOSETUP. */
int cp_screen_outcome_of(const char *status);
/** The status a /links row of the outcome stores: "ok", "wrong", "timeout", "nosetup",
 *  "unreachable" (cell statuses, include/collprof/vocab.h); "?" out of range. */
const char *cp_screen_outcome_status(int outcome);
/** The outcome's words in evidence: "measured", "wrong data", "timeout", "not set up",
 *  "unreachable"; "?" out of range. */
const char *cp_screen_outcome_words(int outcome);
/** 1 when a pair of this outcome is judged (MEASURED or WRONG). */
int cp_screen_outcome_judged(int outcome);

/** The phase a pair ran in. */
typedef enum cp_screen_phase {
    CP_SCREEN_RANDOM = 0,  /**< a random round */
    CP_SCREEN_CONFIRM = 1, /**< the confirmation round */
    CP_SCREEN_REPEAT = 3,  /**< a random round's pair measured again where the rounds went
                                round the circle twice (4 nodes or fewer): folded into its first
                                measurement by cp_screen_judge, not judged by itself */
    CP_SCREEN_REPAIR = 2,  /**< a re-pairing round (cp_screen_plan_repair): attributed as a
                                random round's pair, not in the reference */
} cp_screen_phase_t;

/** Re-pairing rounds at most after the random rounds (cp_screen_plan_repair). */
#define CP_SCREEN_REPAIR_ROUNDS 2

/** One pair test: filled by the runner (or the simulator), judged by cp_screen_judge. */
typedef struct cp_screen_pair {
    int a, b;         /**< node indices, a < b */
    int phase, round; /**< cp_screen_phase_t; the round, counted over the whole screen */
    int outcome;      /**< cp_screen_outcome_t */
    double lat_us;    /**< small message: time of one exchange (0: not measured) */
    double bw_gbs;    /**< large message: bandwidth each way (0: not measured) */
    double score;     /**< min(bw / ref_bw, ref_lat / lat): 1 = as the reference */
    int slow;         /**< judged slow (a WRONG pair is slow; one not judged never is) */
    int path;         /**< cp_path_class_t of the two nodes (CP_PATH_ANY: no topology) */
} cp_screen_pair_t;

/** A node's or a link's verdict. */
typedef enum cp_screen_verdict {
    CP_SCREEN_HEALTHY = 0,
    CP_SCREEN_SLOW = 1,         /**< flagged: slow, confirmed */
    CP_SCREEN_UNREACHABLE = 2,  /**< did not answer within a deadline */
    CP_SCREEN_INCONCLUSIVE = 3, /**< suspect, but no good node was left to confirm it */
    CP_SCREEN_UNTESTED = 4,     /**< no judged pair: its pairs could not be set up, timed out,
                                     or its partners were unreachable; never drained */
} cp_screen_verdict_t;

/** "healthy", "slow", "unreachable", "inconclusive", "untested"; "?" out of range. */
const char *cp_screen_verdict_name(int v);

/** The screen's state and verdict over n nodes (cp_screen_init / cp_screen_free). */
typedef struct cp_screen {
    int n;
    cp_screen_opts_t opt;
    cp_screen_ref_t ref;
    cp_screen_pair_t *pairs; /**< every pair test so far */
    size_t npairs, cap;
    int *verdict;           /**< [n] cp_screen_verdict_t */
    unsigned char *suspect; /**< [n] node suspect after the random rounds */
    unsigned char *reach;   /**< [n] 0 once the node missed a deadline */
    int *confirm_with;      /**< [n] the confirmation partner, -1: none */
    int rounds_run;         /**< rounds so far, the confirmation included */
    int nlinks;             /**< suspect links */
    int *link_a, *link_b;   /**< [nlinks] their ends */
    int *link_verdict;      /**< [nlinks] CP_SCREEN_SLOW or HEALTHY (cleared) */
    int *perm;              /**< [n] the seeded shuffle: position p holds node perm[p] */
    int *order;             /**< [the circle's rounds] those rounds in a seeded order */
} cp_screen_t;

/** 0, or -1 when out of memory (the schedule is drawn here: nothing later allocates but
 * cp_screen_add, cp_screen_plan_confirm and cp_screen_judge). */
int cp_screen_init(cp_screen_t *s, int n, const cp_screen_opts_t *o);
void cp_screen_free(cp_screen_t *s);

/** Random rounds the schedule has for n nodes: min(opt rounds, the circle's rounds). */
int cp_screen_random_rounds(const cp_screen_t *s);

/**
 * The partner of every node in random round k (0 <= k < cp_screen_random_rounds) into
 * partner[n] (-1: sits out; everybody outside that range).  The same on every rank for the
 * same seed.
 */
void cp_screen_matching(const cp_screen_t *s, int k, int *partner);

/** Append a pair test (a and b in any order); -1 when out of memory. */
int cp_screen_add(cp_screen_t *s, const cp_screen_pair_t *p);

/** A node missed a deadline: unreachable from now on. */
void cp_screen_unreachable(cp_screen_t *s, int node);

/**
 * The reference from the random rounds' measured pairs (median, MAD), unless ref is given
 * (a baseline); per path class too where the pairs are of several classes (cp_screen_ref_t
 * .cls); then every pair's score and slow flag, against its class's figures where the class
 * has them, else against every pair's.  Returns the pairs behind the
 * reference, or 0 when there is none (fewer than 3 measured pairs and no baseline: nothing
 * can be judged, the screen is inconclusive).
 */
int cp_screen_judge(cp_screen_t *s, const cp_screen_ref_t *baseline);
/** cp_screen_judge against the options' baseline when they have one. */
int cp_screen_judge_opt(cp_screen_t *s);

/**
 * After the random rounds: the node and link suspects, and the confirmation round's partners
 * into partner[n] (-1: sits out); each suspect node meets a reachable node that is not a
 * suspect and not in a suspect link, one it has not met where there is one; each suspect
 * link's ends meet again.
 * Returns the pairs planned (0: nothing to confirm), -1 when out of memory.
 */
int cp_screen_plan_confirm(cp_screen_t *s, int *partner);

/**
 * After the confirmation round (added and judged): a suspect node that its confirmation
 * cleared leaves its slow random-round pairs unexplained; each whose other end is not slow
 * becomes a suspect link.  The partners of a recheck round (its pairs added as
 * CP_SCREEN_CONFIRM) into partner[n]: every suspect link not run again yet whose ends are
 * free.  Call it again after each recheck round until it plans nothing (a node with k such
 * links needs k rounds).  Returns the pairs planned.
 */
int cp_screen_plan_recheck(cp_screen_t *s, int *partner);

/**
 * After the random rounds (and after each re-pairing round), before the judgement: the
 * partners of a re-pairing round (its pairs added as CP_SCREEN_REPAIR) into partner[n].  A
 * reachable node with a pair that could not be set up (CP_SCREEN_NOSETUP) and fewer judged
 * pairs (random and re-pairing rounds, cp_screen_outcome_judged) than it had random-round pairs
 * with reachable partners meets a reachable node it has not met, free in this round: one
 * without a set-up failure where there is one.  Pure: the same pairs give the same plan
 * (collprof-report finds the re-pairing rounds of a file by it, cp_screen_replay).  The runner
 * calls it at most CP_SCREEN_REPAIR_ROUNDS times, and once more to log the nodes the cap left
 * short.  Returns the pairs planned (0: none), -1 when out of memory.
 */
int cp_screen_plan_repair(const cp_screen_t *s, int *partner);

/**
 * Pairs read back from a file (rounds from random on added as CP_SCREEN_CONFIRM): the rounds
 * right after the random ones that are the re-pairing cp_screen_plan_repair plans from the
 * pairs before them, at most CP_SCREEN_REPAIR_ROUNDS, marked CP_SCREEN_REPAIR.  Returns the
 * rounds found, -1 when out of memory.
 */
int cp_screen_mark_repairs(cp_screen_t *s, int random);

/**
 * After the confirmation round (added and judged): every node's and link's verdict.  Only
 * judged pairs (measured or wrong data) make a node slow or healthy; a reachable node with none
 * is untested.  Returns 0 healthy, 1 something flagged (slow or unreachable, whatever else),
 * 2 inconclusive (nothing flagged, and a node or link inconclusive or untested, or no
 * reference), -1 when out of memory.
 */
int cp_screen_decide(cp_screen_t *s);

/**
 * The first random round (below cp_screen_random_rounds) whose pairs are not the schedule's
 * matching for the seed (a pair that cp_screen_matching does not give), or -1 when every one
 * is: pairs read back from a file are checked this way before they are judged again, so that
 * a confirmation round is never taken for a random one.
 */
int cp_screen_schedule_check(const cp_screen_t *s);

/**
 * A recorded screen judged again (collprof-report screen --baseline): after its pairs are
 * added with their phases and judged against the new reference (cp_screen_judge), the suspects
 * and the confirmation are planned as the run plans them; each suspect then takes the
 * confirmation the record holds: the planned partner's pair when it ran, else a confirmation
 * pair with another reachable node that is not a suspect (the run planned from its own
 * verdict, which may differ).  Then the recheck's links (cp_screen_plan_recheck) and
 * cp_screen_decide.  Returns as cp_screen_decide, -1 when out of memory.
 */
int cp_screen_replay(cp_screen_t *s);

/**
 * A link sweep's verdict (collprof-report links --baseline): every pair of nodes measured once,
 * all added as CP_SCREEN_RANDOM, no confirmation round.  After cp_screen_judge: the suspects
 * as cp_screen_plan_confirm takes them; a suspect slow with two or more partners and with more
 * than half of those it met is slow (the sweep's pairs are the independent failures a
 * confirmation round would give); a cleared suspect's slow pairs whose other end is not slow,
 * and the slow pairs between nodes that are not suspects, are slow links; against a baseline,
 * a node whose median pair is slow is slow, as in cp_screen_decide.  Returns as
 * cp_screen_decide, -1 when out of memory.
 */
int cp_screen_decide_sweep(cp_screen_t *s);

/** Node's random-round pairs with reachable partners (*meas), the slow ones (*slow), and the
 * median score of its judged pairs, the confirmation included (*score; 0 when none): one slow
 * partner does not pull a healthy node's down. */
void cp_screen_node_stats(const cp_screen_t *s, int node, int *meas, int *slow, double *score);

/** 1 when the reference has figures of its own for some path class (pairs are judged by
 * class; the evidence names each pair's class). */
int cp_screen_by_class(const cp_screen_ref_t *ref);

/** The per-class figures of ref in words into buf ("" when none): "same-switch 0.52 GB/s
 * 80.1 us (6 pairs), cross-switch 0.26 GB/s 95.3 us (6 pairs)"; a class judged against every
 * pair's figures ends "(3 pairs: any)". */
void cp_screen_class_words(const cp_screen_ref_t *ref, char *buf, size_t len);

/** The evidence of node's verdict in buf (partners and scores), e.g. "0.48x with n3, ...";
 * judged by class, each pair's class too ("0.48x with n3 (random, cross-switch)"). */
void cp_screen_evidence(const cp_screen_t *s, int node, const char *const *names, char *buf,
                        size_t len);

#endif /* COLLPROF_CORE_SCREEN_H */
