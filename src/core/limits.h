/*
 * The machine's own limit beside each figure: the host memory-copy
 * bandwidth at the cell's buffer size, with one thread and with as many
 * threads as the node has ranks (they copy at once, each between its own
 * two buffers).  Measured once per run and size, on rank 0's node, while
 * every rank waits; the summary prints busBW as a percentage of it.
 */
#ifndef COLLPROF_CORE_LIMITS_H
#define COLLPROF_CORE_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "boot/boot.h"
#include "core/plan.h"

/** Bytes copied per second (1e9 B/s) by threads threads, each copying bytes; 0 on failure. */
double cp_copy_gbs(size_t bytes, int threads);

typedef struct cp_limits {
    int n;
    uint64_t *bytes; /**< the distinct buffer sizes of the plan's host-memory cells */
    double *one;     /**< GB/s with one thread */
    double *all;     /**< GB/s with `threads` threads at once */
    int threads;     /**< ranks on rank 0's node */
} cp_limits_t;

/** Collective over the job (barriers on either side of rank 0's measurement).  The table
 *  is filled on rank 0 only; 0, or -1 when the out-of-band channel failed. */
int cp_limits_measure(const cp_plan_t *plan, const cp_boot_t *b, cp_limits_t *out);
/** The limits of a buffer of bytes (0 when not measured). */
void cp_limits_of(const cp_limits_t *l, uint64_t bytes, double *one, double *all);
void cp_limits_free(cp_limits_t *l);

#endif /* COLLPROF_CORE_LIMITS_H */
