/*
 * The replay report's cross-rank figures (docs/replay.md, "The report"), on rank 0 from every
 * rank's op rows of one backend: each collective's issue skew across its group and its
 * straggler, and the critical path through the groups' dependencies.
 *
 * Rank 0 does not hold every rank's rows for it: the model of the replay runs over per-rank
 * cursors, each a buffer of a few of its rank's records that rank 0 refills from the ranks
 * as the model reaches its end (cp_path_run's pull), and keeps of what has passed only what
 * the report needs: per rank its model state, per group its pending instance and every
 * instance's skew and straggler (12 bytes an instance), and the chains of ops that can still
 * become the path (the path's ops alone once the groups have met).
 */
#ifndef COLLPROF_RUN_REPLAY_PATH_H
#define COLLPROF_RUN_REPLAY_PATH_H

#include <collprof/schema.h>

#include <stddef.h>
#include <stdint.h>

/** What the model does with an op row. */
enum {
    CP_PREC_SKIP = 0, /**< no issue time, or not an op row: not in the model */
    CP_PREC_OWN = 1,  /**< point-to-point, or a group of one: its rank's chain alone */
    CP_PREC_COLL = 2  /**< a collective of a group of more: a member of an instance */
};

/** What the path needs of an op row (24 bytes: the records the ranks send rank 0). */
typedef struct cp_prec {
    int32_t group, kind;
    double time_p50_us, issue_us;
} cp_prec_t;

/** A rank's count of its CP_PREC_COLL rows in one group (sent to rank 0 before the model). */
typedef struct cp_gcount {
    int32_t group, pad;
    int64_t count;
} cp_gcount_t;

/** The record of op row r. */
void cp_prec_of(const collprof_replay_row_t *r, cp_prec_t *p);

typedef struct cp_path cp_path_t;

/** A model of nranks ranks, rank r with rows[r] op rows, its cursor per records at a time.
 *  NULL when out of memory. */
cp_path_t *cp_path_new(int nranks, const uint64_t *rows, size_t per);
/** Rank's counts c[m] (before cp_path_run).  0, or -1 when out of memory. */
int cp_path_counts(cp_path_t *p, int rank, const cp_gcount_t *c, size_t m);
/** How many records rank is to send in the next round (its next ones): 0 when none. */
size_t cp_path_want(const cp_path_t *p, int rank);
/** Rank's next m records (m: what cp_path_want said).  0, or -1 when out of memory. */
int cp_path_feed(cp_path_t *p, int rank, const cp_prec_t *recs, size_t m);

/** One round of the pull: feed every rank its cp_path_want's records.  0, or -1. */
typedef int (*cp_path_pull_fn)(void *arg, cp_path_t *p);

/**
 * Run the model: every instance's skew and straggler, the critical path.  Returns the path's
 * length in us (0: nothing replayed), -1 when out of memory or a pull failed.
 */
double cp_path_run(cp_path_t *p, cp_path_pull_fn pull, void *arg);

/**
 * Op row r, the idx-th of rank's rows, rec its record, k its index among rank's CP_PREC_COLL
 * rows of its group: its skew_us and straggler (a collective of a group of more: the spread
 * of its members' issue times, the member that issued it last, -1 in a group of one), its
 * critical_us (its cost on the path, 0 when not on it, -1 not in the model).
 */
void cp_path_row(const cp_path_t *p, int rank, uint64_t idx, const cp_prec_t *rec, int64_t k,
                 collprof_replay_row_t *r);
void cp_path_free(cp_path_t *p);

#endif /* COLLPROF_RUN_REPLAY_PATH_H */
