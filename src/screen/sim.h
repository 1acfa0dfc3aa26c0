/*
 * The screen on a model cluster, no processes (collprof-report simulate screen,
 * tests/unit/test_screen.c): N nodes, each with a bandwidth factor (1: healthy), slow links,
 * nodes that stop answering, nodes whose pairs cannot be set up, optionally two leaf switches
 * with a slower spine; every pair's bandwidth and latency the healthy figures (12 GB/s,
 * 20 us) times the slower end's factor, the link's and the spine's, each times its own uniform
 * noise in [1 - P, 1 + P].
 *
 * cp_sim_screen runs the real judgement (src/screen/screen.h, src/screen/halve.h) in the order
 * the runtime runs it (src/screen/run/screen_pairs.c, run0; screen_valid.c): the random
 * rounds' matchings of the seed, nobody paired with a node found unreachable, at most
 * CP_SCREEN_REPAIR_ROUNDS re-pairing rounds (cp_screen_plan_repair), the judgement,
 * the confirmation round and at most one recheck round per random round, the verdict, then
 * the validation collective over the survivors (level 0, its levels and witnesses, a group's
 * bus bandwidth that of a ring allreduce limited by its slowest member, link and spine, times
 * noise; a group with a member that cannot be set up fails as a backend error), merged into the
 * verdict as the runtime merges it into its rows (culprits slow, named links slow, the
 * validation failed or inconclusive), and the exit status by cp_screen_status over those rows.
 * Rounds are counted as the rows count them: the pair rounds, plus the validation's levels.
 *
 * A pair with a node whose pairs cannot be set up is CP_SCREEN_NOSETUP, as the runtime
 * reports it (never slow: the node ends untested, its partners re-paired); a node that stops
 * answering gives its pairs CP_SCREEN_PARTNER_GONE and is unreachable from then on.  The
 * validation's time budget is not modelled (no level stops for time).
 *
 * cp_sim_case_run runs one case over a range of seeds and counts what the verdicts got right.
 */
#ifndef COLLPROF_CORE_SIM_H
#define COLLPROF_CORE_SIM_H

#include "screen/halve.h"
#include "screen/screen.h"

#include <stdint.h>

#define CP_SIM_BW_GBS    12.0      /**< a healthy pair's bandwidth */
#define CP_SIM_LAT_US    20.0      /**< a healthy pair's latency */
#define CP_SIM_BYTES     4194304.0 /**< the bandwidth message, the validation's allreduce */
#define CP_SIM_MAX_LINKS 8         /**< slow links of one model cluster */

/** A model cluster (cp_sim_init / cp_sim_free). */
typedef struct cp_sim {
    int n;
    double *node_f;         /**< [n] bandwidth factor of each node (1: healthy) */
    unsigned char *hung;    /**< [n] stops answering: its pairs time out */
    unsigned char *nosetup; /**< [n] its pairs and groups cannot be set up */
    int flaky;              /**< a node at 0.2x in the random rounds only (-1: none) */
    int nlinks;             /**< slow links */
    int link_a[CP_SIM_MAX_LINKS], link_b[CP_SIM_MAX_LINKS];
    double link_f[CP_SIM_MAX_LINKS];
    double noise; /**< each figure times uniform [1 - noise, 1 + noise] */
    uint64_t x;   /**< the noise's generator */
    int *sw;      /**< [n] each node's leaf switch (NULL: one switch) */
    double spine; /**< a cross-switch pair's or group's figures times this (1: none) */
    int classes;  /**< the pairs carry their path class (else "any": no topology known) */
    /** 1: each pair runs its bandwidth test right after its own latency test, as collprof did
     *  before 2026-12-06, so that a cross-switch pair's latency probe may wait behind another
     *  cross-switch pair's bulk on a spine slower than the leaves (with each other such pair
     *  of the round, half the time: then one bandwidth message's time on the spine is added to
     *  its latency); 0: every latency probe of a round before any pair's bandwidth test, as the
     *  runtime runs them (src/screen/run/screen_leader.c lat_then_bulk): none waits. */
    int lat_with_bulk;
} cp_sim_t;

/** n healthy nodes, noise, the noise drawn from seed; 0, or -1 when out of memory. */
int cp_sim_init(cp_sim_t *c, int n, double noise, uint64_t seed);
void cp_sim_free(cp_sim_t *c);

/** Two leaf switches (nodes 0 .. n/2 - 1 under the first) with a spine of factor spine; the
 *  pairs carry their path class when classes.  0, or -1 when out of memory. */
int cp_sim_switches(cp_sim_t *c, double spine, int classes);

/** A slow link a-b at factor f; 0, or -1 when CP_SIM_MAX_LINKS are set already. */
int cp_sim_link(cp_sim_t *c, int a, int b, double f);

/** A uniform double in [0, 1) from the generator state *x (splitmix64). */
double cp_sim_uniform(uint64_t *x);

/** One pair test of a and b as the runtime reports it: partner unreachable when an end is
 *  hung, not set up when an end cannot be set up, else measured. */
cp_screen_pair_t cp_sim_pair(cp_sim_t *c, int a, int b, int phase, int round);

/** One round of partner[] (a pair with an unreachable node does not run: both sit out), its
 *  pairs added to s; a hung node with a partner becomes unreachable; with lat_with_bulk, the
 *  cross-switch pairs' latency probes behind each other's bulk on the spine. */
void cp_sim_round(cp_sim_t *c, cp_screen_t *s, int *partner, int phase);

/** A baseline of c's healthy figures: 12 GB/s and 20 us, the MAD of their logarithms half the
 *  noise (that of a uniform factor in [1 - P, 1 + P]); on two switches with classes known, a
 *  row per class too (same-switch those figures, cross-switch the spine's), as a baseline of
 *  quiet healthy runs has. */
void cp_sim_baseline(const cp_sim_t *c, cp_screen_ref_t *ref);

/** One screen on the model (cp_sim_screen / cp_sim_run_free). */
typedef struct cp_sim_run {
    cp_screen_t s;     /**< the pair rounds and their verdict (cp_screen_decide's) */
    cp_halve_t h;      /**< the validation (valid: it ran) */
    int valid;         /**< 1: the validation's level 0 ran */
    int screen_status; /**< cp_screen_decide's return */
    int status;        /**< the run's exit status: the rows with the validation merged */
    int rounds;        /**< the pair rounds, plus the validation's levels when it ran */
    int *verdict;      /**< [n] each node's verdict, the validation's culprits slow */
} cp_sim_run_t;

/**
 * The whole screen of c with options o (the seed of the matchings in o->seed, a baseline in
 * o->baseline), and the validation when validate.  0, or -1 when out of memory (free r
 * anyway).
 */
int cp_sim_screen(cp_sim_t *c, const cp_screen_opts_t *o, int validate, cp_sim_run_t *r);
void cp_sim_run_free(cp_sim_run_t *r);

/** 1 when r names the link a-b slow (the screen's confirmation or the validation). */
int cp_sim_link_named(const cp_sim_run_t *r, int a, int b);

/* ---- a case over seeds ------------------------------------------------------------------ */

/** What a fault of a case is. */
typedef enum cp_sim_kind {
    CP_SIM_SLOW = 0,        /**< node a at factor f */
    CP_SIM_LINK = 1,        /**< link a-b at factor f */
    CP_SIM_HUNG = 2,        /**< node a stops answering */
    CP_SIM_NOSETUP = 3,     /**< node a's pairs cannot be set up */
    CP_SIM_LINK_PAIRED = 4, /**< the link of node a and its partner in a random round (which:
                                 the seed's), at factor f: a link the screen's rounds cover */
} cp_sim_kind_t;

typedef struct cp_sim_fault {
    int kind; /**< cp_sim_kind_t */
    int a, b;
    double f;
} cp_sim_fault_t;

/** A case: a cluster, its faults, the seeds it runs. */
typedef struct cp_sim_case {
    int n;
    const cp_sim_fault_t *faults;
    int nfaults;
    int slow_count; /**< and this many nodes at factor, drawn from each seed */
    double factor;
    double noise;
    int baseline;      /**< judged against cp_sim_baseline */
    double spine;      /**< two leaf switches with this spine, classes known (0: one switch) */
    int lat_with_bulk; /**< cp_sim_t.lat_with_bulk: the pairs' tests as before 2026-12-06 */
    int validate;      /**< run the validation collective (as the runtime does by default) */
    uint64_t seed_lo, seed_hi;
} cp_sim_case_t;

/** What a case's runs gave (each count over runs, untested over nodes). */
typedef struct cp_sim_counts {
    int runs;
    int exact;          /**< every bad node and link named as it should be, nothing else, and
                             the exit status it should have */
    int missed;         /**< a slow node not slow, a hung one not unreachable, a link not
                             named */
    int false_positive; /**< a healthy node or link named, or a node whose pairs could not be
                             set up named slow */
    int inconclusive;   /**< exit status 2 */
    int setup_slow;     /**< a node whose pairs could not be set up named slow */
    long untested;      /**< nodes with verdict untested, summed */
    long rounds_sum;
    int rounds_max;
    int status[3]; /**< exit statuses 0, 1, 2 */
} cp_sim_counts_t;

/** Run case k over its seeds into *out; 0, or -1 when out of memory or a fault names a node
 *  outside the cluster. */
int cp_sim_case_run(const cp_sim_case_t *k, cp_sim_counts_t *out);

#endif /* COLLPROF_CORE_SIM_H */
