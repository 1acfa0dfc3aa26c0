/*
 * `collprof-report import --trace FORMAT FILE... -o OUT.h5`: a real job's
 * communication (PARAM's basic JSON trace, NCCL Inspector JSON lines, PyTorch
 * Flight Recorder JSON, PyTorch execution traces, Chakra's linked JSON and its
 * .et protobuf) as the trace model of include/collprof/schema.h
 * (/trace_ops, /trace_groups, /trace_members, /trace_splits; docs/replay.md).
 * Each reader (trace_param.c, trace_inspector.c, trace_fr.c, trace_et.c;
 * trace_chakra.c reads protobuf) streams its files through json.c's cp_json_read_fd and hands every
 * op to cp_trace_add, which gives it its place in the rank's order and writes the ops to the file
 * in blocks (trace_write.c): memory grows with the groups and ranks, not with
 * the ops.
 *
 * The trace files, top to bottom: cmd_trace > trace_param, trace_inspector,
 * trace_fr, trace_et (> trace_et_end), trace_chakra > trace_core > trace_write (then import_write's
 * publish, json).
 */
#ifndef COLLPROF_REPORT_TRACE_H
#define COLLPROF_REPORT_TRACE_H

#include <collprof/schema.h>

#include "base/strset.h"

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

/* The most ranks, groups and split sizes of one op a trace may have. */
#define CP_TRACE_MAX_RANKS  (1 << 20)
#define CP_TRACE_MAX_GROUPS (1 << 20)
#define CP_TRACE_MAX_SPLITS (1 << 20)
/* Ops kept in memory before they are written. */
#define CP_TRACE_BLOCK 8192

typedef struct cp_trace_group {
    char name[64], desc[64], key[32];
    int size;     /**< members known; 0: not yet (Inspector: the ranks seen so far) */
    int nranks;   /**< the size the source says (Inspector's n_ranks); 0: unknown */
    int *members; /**< [size] global ranks in group-rank order; Inspector: -1 where unseen */
} cp_trace_group_t;

typedef struct cp_trace {
    const char *shown; /**< the file being read, as printed */
    char format[32], tool[32], note[1024];
    /* the file being written (trace_write.c) */
    hid_t file, ops, splits;
    char tmp[4200];
    collprof_trace_op_row_t *buf;
    size_t nbuf;
    collprof_trace_split_row_t *sbuf;
    size_t nsbuf, scap;
    uint64_t nops, nsplits;
    /* the groups, by the key they are joined on */
    cp_strset_t keys;
    cp_trace_group_t *groups;
    size_t ngroups, gcap;
    /* per rank: the next seq */
    int64_t *next_seq;
    int nseq;
    int64_t next_coalesced;
    char err[1024];
} cp_trace_t;

/** Record "import: NAME:LINE: message" (line 0: no line) as the error; returns -1
 *  (trace_write.c, the lowest file). */
int cp_trace_fail(cp_trace_t *t, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** collprof's name of an op as a source names it ("nccl:all_reduce", "AllReduce",
 *  "all_to_allv", "isend", "nccl:send 0->1"): a collprof op, "send", "recv", "wait", "" for
 *  a name to skip (a coalescing marker, init), or NULL when unknown.  *async: 1 for isend,
 *  irecv. */
const char *cp_trace_op(const char *name, int *async);

/** collprof's name of an element type ("Float", "BFloat16", "float", "Long"), or NULL. */
const char *cp_trace_dtype(const char *name);

/** The size in bytes of a collprof element type, or 0. */
int cp_trace_dtype_size(const char *dtype);

/** The group joined on key (created, with name and desc, where new): its id, or -1. */
int cp_trace_group(cp_trace_t *t, int line, const char *key, const char *name, const char *desc);

/** Group g's members (global ranks, group-rank order): set, or checked against those set
 *  before (a file that disagrees is an error).  0, or -1. */
int cp_trace_members(cp_trace_t *t, int line, int g, const int *members, int n);

/** src into the string field dst[size], cut to fit as snprintf's "%s" cuts it (without
 *  snprintf's cost: the readers fill a few fields of every op). */
static inline void cp_trace_copy(char *dst, size_t size, const char *src)
{
    size_t n = 0;
    while (n + 1 < size && src[n] != '\0') {
        dst[n] = src[n];
        n++;
    }
    dst[n] = '\0';
}

/** A row with every field "not recorded" (-1, 0, ""). */
void cp_trace_row_init(collprof_trace_op_row_t *r);

/** Add r (rank, op and the fields the source has; seq is given here), with nsplit split sizes
 *  each way for a variable op: 0, or -1. */
int cp_trace_add(cp_trace_t *t, int line, collprof_trace_op_row_t *r, const uint64_t *in_split,
                 const uint64_t *out_split, int nsplit);

/** The rank a per-rank file's name says: the last number in its base name, or -1. */
int cp_trace_rank_of_name(const char *path);

/** A JSON number that is a whole number in [lo, hi]: 0 with *out, else -1. */
struct cp_json;
int cp_trace_int(const struct cp_json *v, double lo, double hi, int64_t *out);

/* trace_write.c */
/** Start the file under a temporary name beside out: 0, or -1. */
int cp_trace_open(cp_trace_t *t, const char *out);
/** Write the buffered ops and splits: 0, or -1. */
int cp_trace_flush(cp_trace_t *t);
/** Finish the file (groups, members, root attributes) and publish it as out: 0, or -1. */
int cp_trace_close(cp_trace_t *t, const char *out, const char *command);
/** Drop the file (after an error) and free everything. */
void cp_trace_free(cp_trace_t *t);

/* the readers: every file of paths[0..n) into t; 0, or -1 with t->err */
int cp_trace_param(cp_trace_t *t, char **paths, int n);
/* own: the files of collprof's NCCL profiler plugin (Inspector's layout, more fields) */
int cp_trace_inspector(cp_trace_t *t, char **paths, int n, int own);
int cp_trace_fr(cp_trace_t *t, char **paths, int n);
int cp_trace_ctrace(cp_trace_t *t, char **paths, int n);     /* trace_ctrace.c: collprof-trace */
int cp_trace_pytorch_et(cp_trace_t *t, char **paths, int n); /* trace_et.c */
int cp_trace_chakra_json(cp_trace_t *t, char **paths, int n);
int cp_trace_chakra_et(cp_trace_t *t, char **paths, int n); /* trace_chakra.c */

/** 0 when format is a trace format import reads, else -1 (cmd_trace.c). */
int cp_trace_format_known(const char *format);

/** Open path for reading (a regular file, not empty): the fd, or -1 with the error
 *  (trace_core.c). */
int cp_trace_open_input(cp_trace_t *t, const char *path);

#endif /* COLLPROF_REPORT_TRACE_H */
