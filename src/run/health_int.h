/*
 * What the health check's files share (health.h says their order).  Internal to src/run.
 */
#ifndef COLLPROF_RUN_HEALTH_INT_H
#define COLLPROF_RUN_HEALTH_INT_H

#include "cli/cli.h"

#include <stddef.h>

enum { CP_HC_OK = 0, CP_HC_FAILED = 1, CP_HC_INCONCLUSIVE = 2 };

typedef struct cp_hc {
    const cp_options_t *opt;
    int np;          /**< the ranks of the collective runs */
    double t0;       /**< cp_now_s() at the start */
    double deadline; /**< cp_now_s() by which every check has ended */
    int nchecks;     /**< checks passed */
    int status;      /**< CP_HC_*: the first failure's */
    char check[64];  /**< the check that failed or could not run */
    char what[512];  /**< what it found, one line */
    char notes[512]; /**< what was skipped and why, for the passing line */
    char dir[256];   /**< the private directory of the runs' files */
    char exe[4096];  /**< this program */
} cp_hc_t;

/* health_checks.c */
/** Record the check's outcome (the first failure wins); returns status. */
int cp_hc_fail(cp_hc_t *hc, int status, const char *check, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** Add a note for the passing line ("nics: none up"). */
void cp_hc_note(cp_hc_t *hc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** The host memory copy against --healthcheck-min-copy, checked exactly. */
void cp_hc_copy(cp_hc_t *hc);
/** The interfaces to check (--healthcheck-nics, else every one up with IPv4 but loopback), as
 *  a comma-separated list in buf; 0, or -1 after cp_hc_fail (a named one is not there). */
int cp_hc_nic_list(cp_hc_t *hc, char *buf, size_t len);
/** Is backend name built and loadable here (its plugin found)? */
int cp_hc_backend_here(const char *name);
/** The usable backends (only[] when nonly > 0, else every one found), comma-separated: those
 *  that offer host memory in host, the others (device memory alone) in device. */
void cp_hc_backends(char (*only)[64], int nonly, char *host, char *device, size_t len);
/** This node's GPUs as the NVIDIA driver lists them (/proc/driver/nvidia/gpus); 0: none. */
int cp_hc_gpus(void);

/* health_child.c */
/**
 * Run this node's ranks (collprof --np) over args (NULL-terminated: the matrix), iface "" or
 * the NIC the transport must use, watched cell by cell: each cell ok counts a check, the
 * first wrong, failed or too slow cell fails check; the deadline fails it naming the cell it
 * hung in.  Returns the cells that passed.
 */
int cp_hc_collective_run(cp_hc_t *hc, const char *check, const char *const *args,
                         const char *iface);

/* health_drain.c */
/** --healthcheck-drain: after a failure count it and drain this node at the count; after a
 *  pass reset the count.  What was done goes into note (" [drained]" and the like). */
void cp_hc_drain(const cp_hc_t *hc, char *note, size_t len);
/** --healthcheck-drain: this node's check lock (the count's file and ".lock", in path), taken
 *  for the whole check: slurmd starts the program every HealthCheckInterval whether or not the
 *  last one ended, and two checks side by side slow each other and share the count.  The
 *  descriptor (held until exit), -1 (no drain, or no lock to be had: run all the same), or -2
 *  (another check of this node holds it). */
int cp_hc_lock(const cp_hc_t *hc, char *path, size_t len);

#endif /* COLLPROF_RUN_HEALTH_INT_H */
