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
/* CF_VAR: a variable op or reduce-scatter (matched per name, replay_check_var.c); CF_BYTES:
 * its row has bytes > 0 */
enum { CF_ASYNC = 1, CF_COAL = 2, CF_SIZED = 4, CF_VAR = 8, CF_BYTES = 16 };

/** A hash table of two-word keys to a value (open addressing, never shrinks). */
typedef struct hent {
    uint64_t a, b;
    int64_t v; /**< -1: free */
} hent_t;

typedef struct htab {
    hent_t *e;
    size_t mask;
} htab_t;

/** A table for about n keys: 0, or -1 out of memory. */
int cp_ckht_init(htab_t *h, size_t n);
/** The entry of (a, b): found, or the free one where it goes (v -1). */
hent_t *cp_ckht_at(const htab_t *h, uint64_t a, uint64_t b);

/** One op of the trace, as much as the check needs (48 bytes). */
typedef struct crow {
    int64_t seq, req, coal;
    union {
        uint64_t size; /**< its bytes as the replay issues it */
        int64_t var;   /**< CF_VAR (no size compared): its record in chk_t's v */
    };
    int32_t rank, group;
    union {
        int32_t peer; /**< a send or recv: its peer */
        int32_t root; /**< a collective: its root (-1: not rooted) */
    };
    int16_t opc; /**< collprof_op_t of a collective; -1 else */
    uint8_t kind, flags;
} crow_t;

/** What the check keeps of a variable op's row besides its crow_t. */
typedef struct cvar {
    uint64_t in, out; /**< in_count, out_count */
    int64_t soff;     /**< split_off in the trace's /trace_splits */
    int32_t nsplit;
    int32_t grank; /**< its rank's place in its group */
} cvar_t;

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
    cvar_t *v;       /**< the variable ops' records */
    size_t nv, vcap;
    int oom;
    size_t budget; /**< rows at most (an eighth of MemAvailable); 0: no limit known */
} chk_t;

/** The op's name for a message: "allgather", "send to 3", "recv from 0". */
void cp_check_opname(const crow_t *c, char *s, size_t len);
/** The variable ops and reduce-scatters (CF_VAR), matched as the replay matches them: the
 *  k-th op of that name in the group on every member; one the replay skips on every member
 *  (a member without it, all-to-all-v's splits disagreeing, no counts at all) becomes CK_SKIP;
 *  refused: a reduce-scatter a member lacks, roots differing, members that disagree on
 *  skipping it.  0, -1 (err), -2 out of memory. */
int cp_check_vars(chk_t *c, const cp_trace_t *t, char *err, size_t len);
/** Simulate the blocking schedule of c's ops: 0, or -1 with the cycle in err. */
int cp_check_sim(chk_t *c, const cp_trace_t *t, char *err, size_t len);

#endif /* COLLPROF_RUNNER_REPLAY_CHECK_INT_H */
