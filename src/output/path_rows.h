/*
 * The path check's rows of a cell (counters/path_check.h), on rank 0 just before the cell is
 * recorded: one check per node that has counter rows, its rows (source "path") after the
 * cell's own in /counters.
 */
#ifndef COLLPROF_OUTPUT_PATH_ROWS_H
#define COLLPROF_OUTPUT_PATH_ROWS_H

#include "chan/oob.h"
#include "runner/runner.h"

#include <collprof/schema.h>
#include <stddef.h>

/** The interfaces the backend was meant to use, comma-separated, into buf: COLLPROF_PATH_IFACE,
 *  else the backend's own variable (gloo GLOO_SOCKET_IFNAME; ofi FI_TCP_IFACE, FI_SOCKETS_IFACE;
 *  mpi OMPI_MCA_btl_tcp_if_include; nccl NCCL_SOCKET_IFNAME without a ^ or = prefix), else
 *  COLLPROF_OOB_IFACE; "" when none is set.  A subnet A.B.C.D/BITS among them (Open MPI's
 *  if_include form) stands for this node's interface with an address in it.  buf. */
const char *cp_path_expected(const char *backend, char *buf, size_t len);

/** A copy of res->counters with the path rows of every node after them (malloc'ed, *n rows),
 *  or NULL (*n = 0) when the cell has no counters, ran on one node, or out of memory. */
collprof_counter_row_t *cp_path_add_rows(const collprof_result_row_t *row, const cp_result_t *res,
                                         const cp_boot_t *b, int *n);

#endif /* COLLPROF_OUTPUT_PATH_ROWS_H */
