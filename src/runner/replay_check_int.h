/*
 * What replay_check.c (the rows, the sequence and pairing checks) and replay_sim.c (the
 * simulated schedule) share.  Internal to src/runner.
 */
#ifndef COLLPROF_RUNNER_REPLAY_CHECK_INT_H
#define COLLPROF_RUNNER_REPLAY_CHECK_INT_H

#include "schema/trace_read.h"

#include <stddef.h>
#include <stdint.h>

enum { CK_SKIP = 0, CK_COLL, CK_SEND, CK_RECV, CK_WAIT };
enum { CF_ASYNC = 1, CF_COAL = 2, CF_SIZED = 4 };

/** One op of the trace, as much as the check needs. */
typedef struct crow {
    int64_t seq, req, coal;
    uint64_t size;
    int32_t rank, group, peer, root;
    int16_t opc; /**< collprof_op_t of a collective; -1 else */
    uint8_t kind, flags;
} crow_t;

typedef struct chk {
    crow_t *r;
    size_t n, cap;
    size_t *start; /**< rank k's rows: [start[k], start[k + 1]) in seq order */
    int nr;
    size_t *inst;    /**< coll, send, recv: its instance; wait: the row it completes, else -1 */
    uint8_t *waited; /**< an async op some wait completes */
    size_t ninst;    /**< instances: the collectives of each group, then the send-recv pairs */
    uint32_t *need;  /**< arrivals that complete instance x */
    size_t *owner;   /**< the first arrival's row of each instance */
    int oom;
    size_t budget; /**< rows at most (an eighth of MemAvailable); 0: no limit known */
} chk_t;

/** The op's name for a message: "allgather", "send to 3", "recv from 0". */
void cp_check_opname(const crow_t *c, char *s, size_t len);
/** Simulate the blocking schedule of c's ops: 0, or -1 with the cycle in err. */
int cp_check_sim(chk_t *c, const cp_trace_t *t, char *err, size_t len);

#endif /* COLLPROF_RUNNER_REPLAY_CHECK_INT_H */
