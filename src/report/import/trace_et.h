/*
 * The PyTorch execution-trace readers' shared state (trace_et.c reads the
 * nodes, trace_et_end.c puts a rank's ops in order and hands them on).  A
 * rank's communication ops are held until its file ends: the observer gives
 * a node its id when the op starts and writes it when the op ends, so the
 * issue order is the order of the ids, not of the file, and a wait names the
 * op it completes by a sequence number that only the whole file resolves.
 * Memory: the rank's op table, as the trace model allows.
 */
#ifndef COLLPROF_REPORT_TRACE_ET_H
#define COLLPROF_REPORT_TRACE_ET_H

#include "report/import/trace.h"

#include <stdint.h>

typedef struct et_op {
    int64_t id, parent;              /* the node and its ctrl_deps */
    int64_t seq;                     /* the c10d sequence number (with p2p: of a p2p op) */
    int64_t req, t_issue_ns, dur_ns; /* -1: none */
    uint64_t in_count, out_count, bytes;
    uint64_t *split; /* [2 * nsplit] elements: in, then out; NULL: none */
    const char *op,
        *dtype; /* collprof's names (static strings); op "": dropped; dtype NULL: none */
    int group, nsplit, line, grank; /* grank: root or peer as a group rank; -1: none */
    uint32_t name;       /* the source's name of the op, cut to the row's field: in et_file names */
    uint8_t p2p, waited; /* waited: a wait already names it */
} et_op_t; /* the row (collprof_trace_op_row_t) is made from it as the ops go out: half its size */

typedef struct et_link {
    int64_t parent, id; /* a GPU kernel's launcher, or an nccl:* host op's parent */
    int64_t ts_ns, end_ns;
} et_link_t;

typedef struct et_file {
    cp_trace_t *t;
    int rank, times; /* times: chakra-json (the kernels' times are read) */
    et_op_t *ops;
    size_t nops, opcap, nsplits; /* nsplits: ops whose split is held (allocated) */
    et_link_t *gpu, *alias;      /* kernels; nccl:* host ops (id, parent) */
    size_t ngpu, gpucap, nalias, aliascap;
    int64_t *counts;   /* [0] waits without their op, [1] ops without a kernel */
    cp_strset_t names; /* the ops' source names (a few) */
    long last;         /* the id of the last op's name (a node's name is mostly the last's) */
} et_file_t;

/** Append to a growing array of elements of size sz: a pointer to the new element, or NULL
 *  (the error recorded). */
void *cp_et_grow(cp_trace_t *t, int line, void **arr, size_t *n, size_t *cap, size_t sz);

/** The file's ops in id order, waits matched, kernels' times attached, roots and peers made
 *  global: handed to cp_trace_add and freed (trace_et_end.c).  0, or -1. */
int cp_et_finish(et_file_t *f);

/** Free what f holds. */
void cp_et_free(et_file_t *f);

#endif /* COLLPROF_REPORT_TRACE_ET_H */
