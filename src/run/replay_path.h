/*
 * The replay report's cross-rank figures (docs/replay.md, "The report"), on rank 0 from every
 * rank's op rows of one backend: each collective's issue skew across its group and its
 * straggler, and the critical path through the groups' dependencies.
 */
#ifndef COLLPROF_RUN_REPLAY_PATH_H
#define COLLPROF_RUN_REPLAY_PATH_H

#include <collprof/schema.h>

#include <stddef.h>

/**
 * all[n]: the op rows of one backend, rank after rank, each rank's in seq order.  Sets every
 * replayed collective's skew_us (the spread of its group's members' issue_us for it) and
 * straggler (the member that issued it last; -1 in a group of one), and each op's
 * critical_us (its cost on the critical path, 0 when not on it; -1 not replayed).  Returns
 * the critical path's length in us (0: nothing replayed), -1 when out of memory.
 */
double cp_replay_path(collprof_replay_row_t *all, size_t n);

#endif /* COLLPROF_RUN_REPLAY_PATH_H */
