/*
 * Reading a trace file (collprof-report import --trace; docs/replay.md) for collprof
 * --replay: its groups, members and splits whole, its ops (the large table) in blocks of
 * rows, keeping those the caller selects (collprof --replay: each rank its own).
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
    size_t nrows;    /**< /trace_ops rows in the file (ops[] holds those kept) */
    int partial;     /**< ops[] holds only the rows a selection kept */
    char format[32]; /**< the format imported (the root's imported_format, e.g.
                      *   nccl-inspector-jsonl); "": not recorded */
} cp_trace_t;

/** A selective read: keep(arg, row) says whether ops[] keeps a row (NULL: every row, whose
 *  ranks' seqs must all be consecutive),
 *  see(arg, t, row) is shown every row of /trace_ops once checked, in file order, after the
 *  groups and members are in t (NULL: none); rows per read (0: 16384). */
typedef struct cp_trace_sel {
    int (*keep)(void *arg, const collprof_trace_op_row_t *r);
    void (*see)(void *arg, const cp_trace_t *t, const collprof_trace_op_row_t *r);
    void *arg;
    size_t block;
    int whole; /**< with keep: 1 + the rank that keeps all its ops in a range of seqs (they
                *   must be consecutive; every kept rank's must not repeat one); 0: none */
} cp_trace_sel_t;

/** Read and check path's trace tables into t.  0, or -1 and a one-line reason in err. */
int cp_trace_read(const char *path, cp_trace_t *t, char *err, size_t errlen);
/** cp_trace_read keeping the rows sel selects (memory: those rows and one block); t->partial
 *  set where sel has a keep. */
int cp_trace_read_sel(const char *path, cp_trace_t *t, const cp_trace_sel_t *sel, char *err,
                      size_t errlen);
void cp_trace_free(cp_trace_t *t);

#endif /* COLLPROF_SCHEMA_TRACE_READ_H */
