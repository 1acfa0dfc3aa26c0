/*
 * Reading a trace file (collprof-report import --trace; docs/replay.md) for collprof
 * --replay: its four tables whole, into memory.
 */
#ifndef COLLPROF_SCHEMA_TRACE_READ_H
#define COLLPROF_SCHEMA_TRACE_READ_H

#include <collprof/schema.h>
#include <stddef.h>

/** A trace in memory: every rank's ops, the groups, their members, the split sizes. */
typedef struct cp_trace {
    collprof_trace_op_row_t *ops;
    size_t nops;
    collprof_trace_group_row_t *groups;
    size_t ngroups;
    collprof_trace_member_row_t *members;
    size_t nmembers;
    collprof_trace_split_row_t *splits;
    size_t nsplits;
    int nranks;      /**< 1 + the largest rank among the ops and the members */
    int shrunk_from; /**< collprof --replay --shrink: the ranks it was recorded on; 0: not shrunk */
} cp_trace_t;

/** Read and check path's trace tables into t.  0, or -1 and a one-line reason in err. */
int cp_trace_read(const char *path, cp_trace_t *t, char *err, size_t errlen);
void cp_trace_free(cp_trace_t *t);

#endif /* COLLPROF_SCHEMA_TRACE_READ_H */
