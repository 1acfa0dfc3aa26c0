/*
 * The machine's own limit beside each figure: the host memory-copy
 * bandwidth at the cell's buffer size, with one thread and with as many
 * threads as the node has ranks, at most one per online CPU (they copy at
 * once, each between its own two buffers).  Measured once per run and size, on rank 0's node, while
 * every rank waits; the summary prints busBW as a percentage of it.
 *
 * Cells on device memory get the device-to-device copy rate instead, from
 * their backend's optional copy_rate slot (<collprof/plugin.h>: timed on
 * rank 0's device), once per backend, memory kind and size.  A host cell
 * never gets a device rate, nor a device cell a host one.
 */
#ifndef COLLPROF_CORE_LIMITS_H
#define COLLPROF_CORE_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "boot/boot.h"
#include "plan/plan.h"
#include "plugin/loader.h"

/** Bytes copied per second (1e9 B/s) by threads threads, each copying bytes; 0 on failure. */
double cp_copy_gbs(size_t bytes, int threads);

typedef struct cp_limits {
    int n;
    uint64_t *bytes; /**< the distinct buffer sizes of the plan's host-memory cells */
    double *one;     /**< GB/s with one thread */
    double *all;     /**< GB/s with `threads` threads at once */
    int threads;     /**< ranks on rank 0's node, at most its online CPUs */
    int ndev;
    struct cp_dev_limit {
        int plugin;     /**< index in the plugins passed to cp_limits_measure */
        int memtype;    /**< COLLPROF_MEM_DEVICE */
        uint64_t bytes; /**< the cells' buffer size */
        double gbs;     /**< the backend's device-to-device copy rate; 0: none */
    } * dev;
} cp_limits_t;

/** Collective over the job (barriers on either side of rank 0's measurement).  The table
 *  is filled on rank 0 only, the device rates through the initialised backends of
 *  plugins[nplugins] (the plan's cell->plugin indices); 0, or -1 when the out-of-band
 *  channel failed. */
int cp_limits_measure(const cp_plan_t *plan, const cp_plugin_t *plugins, int nplugins,
                      const cp_boot_t *b, cp_limits_t *out);
/** The limits of a buffer of bytes (0 when not measured). */
void cp_limits_of(const cp_limits_t *l, uint64_t bytes, double *one, double *all);
/** The device copy rate of plugin's memtype at bytes (0 when not measured or none). */
double cp_limits_device(const cp_limits_t *l, int plugin, int memtype, uint64_t bytes);
void cp_limits_free(cp_limits_t *l);

#endif /* COLLPROF_CORE_LIMITS_H */
