/*
 * The path check (collprof --counters, docs/metrics.md "Path check"): for one cell, the bytes
 * each node's NICs moved between the two readings against the bytes the operation must move
 * between nodes (an algorithm-independent lower bound per node), which interfaces carried
 * them, and a verdict: ok, other-nic (an interface other than the expected one carried a
 * meaningful share), excess (far more than the bound plus protocol overhead) or unknown (no
 * byte counters, or they saw less than half the bound).  Pure: over the /counters rows of the
 * cell and the cell's facts; no reading, no allocation.
 */
#ifndef COLLPROF_COUNTERS_PATH_CHECK_H
#define COLLPROF_COUNTERS_PATH_CHECK_H

#include <collprof/schema.h>
#include <stddef.h>
#include <stdint.h>

/* An interface carries the bytes when its share is at least this fraction of the node's ... */
#define CP_PATH_SHARE 0.10
/* ... and at least this many bytes per operation (control-channel chatter is below it) */
#define CP_PATH_FLOOR 256.0
/* protocol overhead allowed above the bound: this fraction of it (Ethernet, IP and TCP
 * headers of 1500-byte frames: 66 of 1514 bytes, 4.4 %, and the ACKs) plus CP_PATH_FIXED
 * bytes per operation (small messages' headers, the barrier before each iteration) */
#define CP_PATH_OVERHEAD 0.06
#define CP_PATH_FIXED    2048.0
/* excess: more than this factor times (bound x (1 + CP_PATH_OVERHEAD) + CP_PATH_FIXED) */
#define CP_PATH_EXCESS 2.0
/* unknown: the counted interfaces saw less than this fraction of a non-zero bound */
#define CP_PATH_MISSING 0.5

#define CP_PATH_VIA 4 /* carrying interfaces kept per node */

typedef enum {
    CP_PATH_UNKNOWN = 0,
    CP_PATH_OK,
    CP_PATH_EXCESS_V,
    CP_PATH_OTHER_NIC
} cp_path_verdict_t; /* in order of gravity */

/** The facts of a cell the check needs. */
typedef struct cp_path_cell {
    const char *op;       /**< collprof op name: allreduce, allgather, ... */
    uint64_t bytes;       /**< count x dtype size (the /results count: the largest buffer) */
    int nodes;            /**< nodes the cell ran on */
    int ppn;              /**< ranks per node (the largest node's) */
    int root_node;        /**< node of the root rank (rooted ops) */
    const char *expected; /**< comma-separated interfaces the backend was meant to use; NULL
                               or "": not known (other-nic is then not judged) */
    int pair; /**< a pair of nodes exchanging bytes each way at once (the screen's pairs,
                   op sendrecv): the bound is bytes per operation, each direction */
} cp_path_cell_t;

/** One node's check. */
typedef struct cp_path_node {
    int node;
    cp_path_verdict_t verdict;
    int64_t ops;
    double nic;   /**< bytes: max(sum of tx, sum of rx) over the counted interfaces */
    double bound; /**< bytes per operation */
    double ratio; /**< nic per op / bound; 0 when the bound is 0 */
    int nvia;
    char via[CP_PATH_VIA][64]; /**< interfaces that carried the bytes, the largest first */
    double via_bytes[CP_PATH_VIA];
    int other; /**< 1 when a carrier is not an expected interface */
} cp_path_node_t;

/** The lower bound of the bytes per operation a node must send or receive to or from other
 *  nodes (docs/metrics.md), given whether the node holds the root; 0 for one node, barrier
 *  and the variable ops; bytes for a pair (c->pair). */
double cp_path_bound(const cp_path_cell_t *c, int is_root_node);

/** Check node of the cell whose rows are rows[0..n) (rows of other nodes and sources are
 *  skipped).  The verdict. */
cp_path_verdict_t cp_path_check(const cp_path_cell_t *c, const collprof_counter_row_t *rows,
                                size_t n, int node, cp_path_node_t *out);

/** "ok", "other-nic", "excess", "unknown"; cp_path_verdict_of() the reverse (-1: none). */
const char *cp_path_verdict_name(cp_path_verdict_t v);
int cp_path_verdict_of(const char *s);

/** The rows of source "path" for node's check into out (room for CP_PATH_ROWS): verdict
 *  (unit: the verdict, delta: the ratio), nic, bound, via/IFACE and expected/IFACE.  The
 *  number written. */
#define CP_PATH_ROWS (3 + CP_PATH_VIA + 4)
int cp_path_rows(const cp_path_cell_t *c, const cp_path_node_t *p, const char *host,
                 collprof_counter_row_t *out);

/** The interfaces the backend was meant to use, comma-separated, into buf: COLLPROF_PATH_IFACE,
 *  else the backend's own variable (gloo GLOO_SOCKET_IFNAME; ofi FI_TCP_IFACE, FI_SOCKETS_IFACE;
 *  mpi OMPI_MCA_btl_tcp_if_include; nccl NCCL_SOCKET_IFNAME without a ^ or = prefix), else
 *  COLLPROF_OOB_IFACE; "" when none is set.  A subnet A.B.C.D/BITS among them (Open MPI's
 *  if_include form) stands for this node's interface with an address in it.  buf. */
const char *cp_path_expected(const char *backend, char *buf, size_t len);

#endif /* COLLPROF_COUNTERS_PATH_CHECK_H */
