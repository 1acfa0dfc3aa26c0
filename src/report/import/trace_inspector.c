/*
 * NCCL Inspector's JSON lines (NVIDIA/nccl plugins/profiler/inspector,
 * output format v4.x), one file per process (<host>-pid<pid>.log): objects
 * one after another, each with "header" {id (communicator hash), comm_name,
 * rank, n_ranks, nnodes} and "metadata", then "coll_perf" {coll, coll_sn,
 * coll_msg_size_bytes, coll_exec_time_us, event_trace_ts {coll_start_ts}} or
 * "p2p_perf" {p2p, p2p_sn, p2p_peer, p2p_msg_size_bytes, p2p_exec_time_us};
 * since v4.3 the header comes once per dump, in a "dump_stats" marker, and
 * the op records after it carry none.  "proxy_trace" records are skipped.
 *
 * The Inspector knows ranks only within a communicator: the groups are
 * rebuilt by joining the files on the communicator hash (a first pass reads
 * the headers), and a process's global rank is its rank in the communicator
 * of every rank (the one with the most ranks).  One process, one rank.
 *
 * collprof's NCCL profiler plugin (plugins/ncclprof) writes the same layout
 * with the header on every record and more fields in each op record: "dtype",
 * "in_count", "out_count", "root" (a rank of the communicator), "cpu_start_ns",
 * "exec_time_ns", "group_call" and "group_ops" (the ops NCCL launched as one
 * kernel plan); "n_ranks" is absent under NCCL's profiler API v3 (rebuilt
 * here as 1 + the largest rank any file gives the communicator).
 */
#include "config.h"

#include "report/import/json.h"
#include "report/import/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct insp {
    cp_trace_t *t;
    int pass, file, nfiles;
    int *global;   /* [nfiles] each file's global rank */
    int group;     /* the context: the current header's group, -1 none */
    int comm_rank; /* and the rank in it */
    int64_t dropped, no_ts, ops;
    int own;                          /* collprof's plugin's files */
    int64_t last_call, co, gpu, open; /* own: the group call going on, ops GPU-timed, not done */
} insp_t;

/* own, n_ranks absent (API v3): group g has at least rank + 1 ranks.  0, or -1. */
static int grow(insp_t *s, int g, int64_t rank, int line)
{
    cp_trace_group_t *G = &s->t->groups[g];
    if (rank < G->nranks) {
        return 0;
    }
    if (s->pass == 2) {
        return cp_trace_fail(s->t, line, "rank %" PRId64 " unseen in the first pass", rank);
    }
    int *m = realloc(G->members, (size_t)(rank + 1) * sizeof(int));
    if (m == NULL) {
        return cp_trace_fail(s->t, line, "out of memory");
    }
    for (int r = G->nranks; r <= rank; r++) {
        m[r] = -1;
    }
    G->members = m;
    G->nranks = (int)rank + 1;
    return 0;
}

/* The header of o (where it has one) as the context; 0, or -1. */
static int header(insp_t *s, const cp_json_t *o)
{
    const cp_json_t *h = cp_json_get(o, "header");
    if (h == NULL) {
        return 0;
    }
    const cp_json_t *id = cp_json_get(h, "id"), *name = cp_json_get(h, "comm_name");
    int64_t rank, n;
    char key[32];
    if (id != NULL && id->type == CP_JSON_STR && id->str[0] != '\0' &&
        strlen(id->str) < sizeof(key)) {
        cp_trace_copy(key, sizeof(key), id->str);
    } else if (id != NULL && cp_trace_int(id, 0, 1.8e19, &rank) == 0) {
        snprintf(key, sizeof(key), "%.0f", id->num);
    } else {
        return cp_trace_fail(s->t, h->line, "a header without a communicator 'id'");
    }
    if (s->own && cp_json_get(h, "n_ranks") == NULL) {
        n = -1; /* API v3: not known */
        if (cp_trace_int(cp_json_get(h, "rank"), 0, CP_TRACE_MAX_RANKS - 1, &rank) != 0) {
            return cp_trace_fail(s->t, h->line, "a header without 'rank'");
        }
    } else if (cp_trace_int(cp_json_get(h, "n_ranks"), 1, CP_TRACE_MAX_RANKS, &n) != 0 ||
               cp_trace_int(cp_json_get(h, "rank"), 0, (double)n - 1, &rank) != 0) {
        return cp_trace_fail(s->t, h->line,
                             "a header without 'rank' in 0..n_ranks-1 and 'n_ranks'");
    }
    int g = cp_trace_group(s->t, h->line, key,
                           name != NULL && name->type == CP_JSON_STR ? name->str : key, "");
    if (g < 0) {
        return -1;
    }
    cp_trace_group_t *G = &s->t->groups[g];
    if (n < 0) {
        if (grow(s, g, rank, h->line) != 0) {
            return -1;
        }
    } else if (G->nranks == 0) {
        G->nranks = (int)n;
        if ((G->members = malloc((size_t)n * sizeof(int))) == NULL) {
            return cp_trace_fail(s->t, h->line, "out of memory");
        }
        memset(G->members, 0xff, (size_t)n * sizeof(int)); /* -1: no file yet */
    } else if (G->nranks != n) {
        return cp_trace_fail(s->t, h->line, "communicator %s: %" PRId64 " ranks here, %d before",
                             key, n, G->nranks);
    }
    if (s->pass == 1) {
        int *m = &G->members[rank];
        if (*m >= 0 && *m != s->file) {
            return cp_trace_fail(s->t, h->line, "communicator %s: rank %" PRId64 " in two files",
                                 key, rank);
        }
        *m = s->file;
    }
    s->group = g;
    s->comm_rank = (int)rank;
    return 0;
}

/* own: the fields collprof's plugin adds to r (the Inspector's are set): 0, or -1. */
static int own_fields(insp_t *s, const cp_json_t *perf, collprof_trace_op_row_t *r,
                      const cp_trace_group_t *G)
{
    const cp_json_t *dt = cp_json_get(perf, "dtype");
    int64_t v, in = 0, out = 0;
    if (dt != NULL && dt->type == CP_JSON_STR) {
        const char *d = cp_trace_dtype(strncmp(dt->str, "nccl", 4) ? dt->str : dt->str + 4);
        cp_trace_copy(r->dtype, sizeof(r->dtype), d != NULL ? d : "");
    }
    if (cp_trace_int(cp_json_get(perf, "in_count"), 0, 1e18, &in) == 0 &&
        cp_trace_int(cp_json_get(perf, "out_count"), 0, 1e18, &out) == 0) {
        r->in_count = (uint64_t)in;
        r->out_count = (uint64_t)out;
        int size = r->dtype[0] != '\0' ? cp_trace_dtype_size(r->dtype) : 0;
        r->bytes = size > 0 ? (uint64_t)(in > out ? in : out) * (uint64_t)size : r->bytes;
    }
    if (cp_trace_int(cp_json_get(perf, "root"), 0, G->nranks - 1, &v) == 0 &&
        (!strcmp(r->op, "broadcast") || !strcmp(r->op, "reduce") || !strcmp(r->op, "gather") ||
         !strcmp(r->op, "scatter"))) {
        r->root = G->members[v];
    }
    if (cp_trace_int(cp_json_get(perf, "cpu_start_ns"), 0, 9.2e18, &v) == 0) {
        r->t_issue_ns = v;
    }
    int p2p = !strcmp(r->op, "send") || !strcmp(r->op, "recv");
    const cp_json_t *src = cp_json_get(perf, p2p ? "p2p_timing_source" : "coll_timing_source");
    r->dur_ns = cp_trace_int(cp_json_get(perf, "exec_time_ns"), 0, 9.2e18, &v) == 0 ? v : -1;
    s->gpu += r->dur_ns >= 0 && src != NULL && src->type == CP_JSON_STR &&
              !strcmp(src->str, "kernel_gpu");
    s->open += r->dur_ns < 0;
    int64_t call, nops;
    if (cp_trace_int(cp_json_get(perf, "group_call"), 0, 9e15, &call) == 0 &&
        cp_trace_int(cp_json_get(perf, "group_ops"), 2, 9e15, &nops) == 0) {
        if (call != s->last_call) {
            s->last_call = call;
            s->co = s->t->next_coalesced++;
        }
        r->coalesced = s->co;
    }
    return 0;
}

/* A coll_perf or p2p_perf record as an op of the file's rank. */
static int op(insp_t *s, const cp_json_t *perf, int p2p)
{
    cp_trace_t *t = s->t;
    const cp_json_t *name = cp_json_get(perf, p2p ? "p2p" : "coll");
    int async;
    const char *o =
        name != NULL && name->type == CP_JSON_STR ? cp_trace_op(name->str, &async) : NULL;
    if (o == NULL || o[0] == '\0') {
        return cp_trace_fail(t, perf->line, "'%s' is not an operation the trace model knows",
                             name != NULL && name->type == CP_JSON_STR ? name->str : "(none)");
    }
    collprof_trace_op_row_t r;
    cp_trace_row_init(&r);
    int64_t v;
    r.rank = s->global[s->file];
    r.group = s->group;
    cp_trace_copy(r.op, sizeof(r.op), o);
    cp_trace_copy(r.source_name, sizeof(r.source_name), name->str);
    if (cp_trace_int(cp_json_get(perf, p2p ? "p2p_msg_size_bytes" : "coll_msg_size_bytes"), 0, 1e18,
                     &v) != 0) {
        return cp_trace_fail(t, perf->line, "no message size in bytes");
    }
    r.bytes = (uint64_t)v;
    if (cp_trace_int(cp_json_get(perf, p2p ? "p2p_exec_time_us" : "coll_exec_time_us"), 0, 9e12,
                     &v) == 0) {
        r.dur_ns = v * 1000;
    }
    r.source_seq =
        cp_trace_int(cp_json_get(perf, p2p ? "p2p_sn" : "coll_sn"), 0, 9e15, &v) == 0 ? v : -1;
    const cp_json_t *ts = cp_json_get(perf, "event_trace_ts");
    if (cp_trace_int(cp_json_get(ts, p2p ? "p2p_start_ts" : "coll_start_ts"), 0, 9e15, &v) == 0) {
        r.t_issue_ns = v * 1000;
    } else {
        s->no_ts++;
    }
    const cp_trace_group_t *G = &t->groups[s->group];
    if (p2p) {
        if (cp_trace_int(cp_json_get(perf, "p2p_peer"), 0, G->nranks - 1, &v) != 0) {
            return cp_trace_fail(t, perf->line, "'p2p_peer' is not a rank of the communicator");
        }
        r.peer = G->members[v];
    }
    if (s->own && own_fields(s, perf, &r, G) != 0) {
        return -1;
    }
    s->ops++;
    return cp_trace_add(t, perf->line, &r, NULL, NULL, 0);
}

static int line(void *ctx, const cp_json_t *o)
{
    insp_t *s = ctx;
    if (o->type != CP_JSON_OBJ) {
        return cp_trace_fail(s->t, o->line, "a line that is not a JSON object");
    }
    if (header(s, o) != 0) {
        return -1;
    }
    const cp_json_t *st = cp_json_get(o, "dump_stats");
    int64_t v;
    if (s->pass == 2 && st != NULL &&
        cp_trace_int(cp_json_get(st, "coll_dropped_since_last_dump"), 0, 9e15, &v) == 0) {
        s->dropped += v;
    }
    const cp_json_t *c = cp_json_get(o, "coll_perf"), *p = cp_json_get(o, "p2p_perf");
    if (c == NULL && p == NULL) {
        return 0; /* a marker, a proxy record */
    }
    if (s->group < 0) {
        return cp_trace_fail(s->t, o->line, "an operation before any header");
    }
    return s->pass == 2 ? op(s, c != NULL ? c : p, c == NULL) : 0;
}

static int read_all(insp_t *s, char **paths)
{
    for (s->file = 0; s->file < s->nfiles; s->file++) {
        s->t->shown = paths[s->file];
        s->group = -1;
        s->last_call = -1;
        int fd = cp_trace_open_input(s->t, paths[s->file]);
        if (fd < 0) {
            return -1;
        }
        cp_json_stream_t js = {NULL, 1, line, s, NULL};
        cp_json_t *root = NULL;
        cp_json_error_t e;
        int rc = cp_json_read_fd(fd, NULL, &js, &root, &e);
        close(fd);
        cp_json_free(root);
        if (rc != 0) {
            return e.stopped ? -1 : cp_trace_fail(s->t, e.line, "not valid JSON: %s", e.msg);
        }
    }
    s->t->shown = NULL;
    return 0;
}

/* After the headers: each file's global rank, and the groups' members as global ranks. */
static int join(insp_t *s, char **paths)
{
    cp_trace_t *t = s->t;
    int world = 0;
    for (size_t g = 0; g < t->ngroups; g++) {
        world = t->groups[g].nranks > world ? t->groups[g].nranks : world;
    }
    for (int f = 0; f < s->nfiles; f++) {
        s->global[f] = -1;
    }
    for (size_t g = 0; g < t->ngroups; g++) {
        for (int r = 0; t->groups[g].nranks == world && r < world; r++) {
            int f = t->groups[g].members[r];
            if (f >= 0 && s->global[f] < 0) {
                s->global[f] = r;
            }
        }
    }
    for (int f = 0; f < s->nfiles; f++) {
        if (s->global[f] < 0) {
            t->shown = paths[f];
            return cp_trace_fail(t, 0,
                                 "in no communicator of all %d ranks: its global rank is "
                                 "unknown",
                                 world);
        }
    }
    for (size_t g = 0; g < t->ngroups; g++) {
        cp_trace_group_t *G = &t->groups[g];
        for (int r = 0; r < G->nranks; r++) {
            if (G->members[r] < 0) {
                return cp_trace_fail(t, 0,
                                     "communicator %s (%s): no file has its rank %d (give "
                                     "every process's file)",
                                     G->key, G->name, r);
            }
            G->members[r] = s->global[G->members[r]];
        }
        G->size = G->nranks;
    }
    return 0;
}

int cp_trace_inspector(cp_trace_t *t, char **paths, int n, int own)
{
    snprintf(t->format, sizeof(t->format), own ? "nccl-collprof-jsonl" : "nccl-inspector-jsonl");
    snprintf(t->tool, sizeof(t->tool), own ? "collprof-nccl-profiler" : "nccl-inspector");
    insp_t s = {.t = t, .pass = 1, .nfiles = n, .group = -1, .own = own};
    s.global = calloc((size_t)n, sizeof(int));
    int rc = s.global == NULL ? cp_trace_fail(t, 0, "out of memory") : 0;
    if (rc == 0 && read_all(&s, paths) == 0 && join(&s, paths) == 0) {
        s.pass = 2;
        rc = read_all(&s, paths);
    } else {
        rc = -1;
    }
    if (own) {
        snprintf(t->note, sizeof(t->note),
                 "collprof's NCCL profiler: issue times are the host's clock (CLOCK_REALTIME) "
                 "when NCCL started the op's kernel plan; durations are the GPU's kernel time "
                 "where NCCL timed the channels (profiler API v4 or later: %" PRId64 " of %" PRId64
                 " ops), else the host's start to stop of the plan's launch; %" PRId64
                 " ops written before they completed (no duration)",
                 s.gpu, s.ops, s.open);
        free(s.global);
        return rc;
    }
    snprintf(t->note, sizeof(t->note),
             "NCCL Inspector: durations are coll_exec_time_us (GPU-timed by default); by default "
             "the Inspector drops ops under 8 KiB (NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES) and "
             "CPU-timed ones (NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING), and records start times only "
             "with NCCL_INSPECTOR_DUMP_VERBOSE=1 (%" PRId64 " of %" PRId64 " ops without one); "
             "the order across communicators is the dumps' order; no dtype, root or counts; "
             "%" PRId64 " records overwritten before a dump (dump_stats)",
             s.no_ts, s.ops, s.dropped);
    free(s.global);
    return rc;
}
