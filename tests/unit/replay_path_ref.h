/*
 * The replay report's cross-rank figures (docs/replay.md, "The report"), on rank 0 from every
 * rank's op rows of one backend: each collective's issue skew across its group and its
 * straggler, and the critical path through the groups' dependencies.
 */
#ifndef COLLPROF_TESTS_REPLAY_PATH_REF_H
#define COLLPROF_TESTS_REPLAY_PATH_REF_H

#include <collprof/schema.h>

#include <stddef.h>
#include <stdint.h>

/** What the path needs of an op row, and what it sets (rank 0 holds one per op of the trace,
 *  not the rows: replay_loop.c). */
typedef struct cp_rpath {
    int32_t rank, group, group_size;
    int32_t timed;     /**< an op row with an issue (issue_us >= 0) */
    int32_t coll;      /**< its op is a collective (cp_coll_from_name) */
    int32_t straggler; /**< set */
    double time_p50_us, issue_us;
    double skew_us, critical_us; /**< set */
} ref_rpath_t;

/** The record of op row r. */
void ref_rpath_of(const collprof_replay_row_t *r, ref_rpath_t *p);

/**
 * all[n]: the records of the op rows of one backend, rank after rank, each rank's in seq order.
 * Sets every replayed collective's skew_us (the spread of its group's members' issue_us for it) and
 * straggler (the member that issued it last; -1 in a group of one), and each op's
 * critical_us (its cost on the critical path, 0 when not on it; -1 not replayed).  Returns
 * the critical path's length in us (0: nothing replayed), -1 when out of memory.
 */
double ref_replay_path(ref_rpath_t *all, size_t n);

#endif /* COLLPROF_TESTS_REPLAY_PATH_REF_H */
