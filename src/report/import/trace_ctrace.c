/*
 * collprof-trace's files (src/trace, docs/replay.md "Recording"): JSON lines,
 * one file per rank (collprof-trace.RANK.jsonl), each
 *
 *   {"collprof_trace": 1, "rank", "size", ...}                     the header, first
 *   {"comm": I, "key", "size", "members": [world ranks], "from"}   before its ops
 *   {"op", "mpi", "comm", "dtype", "in", "out", "bytes", "t", "dur",
 *    "root", "peer", "req", "co", "in_split", "out_split"}
 *   {"end": true, "ops", "comms", "open_requests", "finalized"}     the last
 *
 * Ranks, roots, peers and members are MPI_COMM_WORLD ranks; a communicator's
 * "key" (a hash of its members and how many of those members' communicators
 * came before it) is the same in every member's file: the groups are joined
 * on it.  "t" is ns since a barrier every rank left together at MPI_Init.
 */
#include "config.h"

#include "report/import/json.h"
#include "report/import/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ctr {
    cp_trace_t *t;
    int size;   /* ranks of the job (every file's header says the same) */
    char *seen; /* [size] a file of that rank was read */
    int rank;   /* this file's, -1 before its header */
    int ended;  /* this file's end line was read */
    int *group; /* [ngroup] this file's comm index -> group, -1 none */
    size_t ngroup;
    int64_t co_file, co; /* the file's last co number and the one it was given */
    int64_t unfinished, open_reqs, ops;
} ctr_t;

/* member key of o, a whole number in [lo, hi]: 1 with *v, 0 absent, -1 bad (the error set) */
static int num(ctr_t *s, const cp_json_t *o, const char *key, double lo, double hi, int64_t *v)
{
    const cp_json_t *x = cp_json_get(o, key);
    if (x == NULL) {
        return 0;
    }
    if (cp_trace_int(x, lo, hi, v) != 0) {
        return cp_trace_fail(s->t, x->line, "'%s' is not a whole number in %.0f..%.0f", key, lo,
                             hi);
    }
    return 1;
}

static int header(ctr_t *s, const cp_json_t *o)
{
    int64_t v, rank, size;
    if (num(s, o, "collprof_trace", 1, 1, &v) != 1) {
        return cp_trace_fail(s->t, o->line, "collprof_trace version is not 1");
    }
    if (num(s, o, "size", 1, CP_TRACE_MAX_RANKS, &size) != 1 ||
        num(s, o, "rank", 0, (double)size - 1, &rank) != 1) {
        return cp_trace_fail(s->t, o->line, "a header without 'size' and 'rank' in 0..size-1");
    }
    if (s->size == 0) {
        s->size = (int)size;
        s->seen = calloc((size_t)size, 1);
        if (s->seen == NULL) {
            return cp_trace_fail(s->t, o->line, "out of memory");
        }
    } else if (size != s->size) {
        return cp_trace_fail(s->t, o->line, "a job of %" PRId64 " ranks; the files before: %d",
                             size, s->size);
    }
    if (s->seen[rank]) {
        return cp_trace_fail(s->t, o->line, "a second file of rank %" PRId64, rank);
    }
    s->seen[rank] = 1;
    s->rank = (int)rank;
    return 0;
}

static int comm(ctr_t *s, const cp_json_t *o)
{
    int64_t id;
    const cp_json_t *key = cp_json_get(o, "key"), *m = cp_json_get(o, "members"),
                    *from = cp_json_get(o, "from");
    if (num(s, o, "comm", 0, CP_TRACE_MAX_GROUPS - 1, &id) != 1 || key == NULL ||
        key->type != CP_JSON_STR || key->str[0] == '\0' || strlen(key->str) >= 32 || m == NULL ||
        m->type != CP_JSON_ARR || m->n == 0 || m->n > (size_t)s->size) {
        return cp_trace_fail(s->t, o->line,
                             "a communicator without 'comm', 'key' (under 32 characters) and "
                             "'members' (1..%d ranks)",
                             s->size);
    }
    if ((size_t)id >= s->ngroup) {
        size_t n = (size_t)id + 16;
        int *g = realloc(s->group, n * sizeof(*g));
        if (g == NULL) {
            return cp_trace_fail(s->t, o->line, "out of memory");
        }
        for (size_t i = s->ngroup; i < n; i++) {
            g[i] = -1;
        }
        s->group = g;
        s->ngroup = n;
    }
    int *r = malloc(m->n * sizeof(*r));
    if (r == NULL) {
        return cp_trace_fail(s->t, o->line, "out of memory");
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < m->n; i++) {
        int64_t v;
        rc = cp_trace_int(m->kids[i], 0, s->size - 1, &v) == 0
                 ? 0
                 : cp_trace_fail(s->t, m->line, "'members' holds a value that is not a rank");
        r[i] = (int)v;
    }
    int g = rc == 0 ? cp_trace_group(s->t, o->line, key->str, key->str,
                                     from != NULL && from->type == CP_JSON_STR ? from->str : "")
                    : -1;
    rc = g >= 0 ? cp_trace_members(s->t, o->line, g, r, (int)m->n) : -1;
    free(r);
    s->group[id] = g;
    return rc;
}

/* in_split and out_split: one count per group rank each */
static int splits(ctr_t *s, const cp_json_t *o, int n, uint64_t **in, uint64_t **out)
{
    const cp_json_t *a[2] = {cp_json_get(o, "in_split"), cp_json_get(o, "out_split")};
    uint64_t **dst[2] = {in, out};
    for (int k = 0; k < 2; k++) {
        if (a[k] == NULL || a[k]->type != CP_JSON_ARR || a[k]->n != (size_t)n) {
            return cp_trace_fail(s->t, o->line, "'%s' is not %d counts",
                                 k ? "out_split" : "in_split", n);
        }
        if ((*dst[k] = malloc((size_t)n * sizeof(uint64_t))) == NULL) {
            return cp_trace_fail(s->t, o->line, "out of memory");
        }
        for (int i = 0; i < n; i++) {
            int64_t v;
            if (cp_trace_int(a[k]->kids[i], 0, 1e15, &v) != 0) {
                return cp_trace_fail(s->t, a[k]->line, "a split count that is not a count");
            }
            (*dst[k])[i] = (uint64_t)v;
        }
    }
    return 0;
}

/* the numbers of an op line into r: -1 on a bad one */
static int op_fields(ctr_t *s, const cp_json_t *o, collprof_trace_op_row_t *r)
{
    int64_t v;
    const char *keys[] = {"in", "out", "bytes", "t", "dur", "root", "peer", "req", "co"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        double hi = i >= 5 && i <= 6 ? s->size - 1 : i >= 3 && i <= 4 ? 9e18 : 1e18;
        int k = num(s, o, keys[i], 0, hi, &v);
        if (k < 0) {
            return -1;
        }
        if (k == 0) {
            continue;
        }
        switch (i) {
        case 0: r->in_count = (uint64_t)v; break;
        case 1: r->out_count = (uint64_t)v; break;
        case 2: r->bytes = (uint64_t)v; break;
        case 3: r->t_issue_ns = v; break;
        case 4: r->dur_ns = v; break;
        case 5: r->root = (int32_t)v; break;
        case 6: r->peer = (int32_t)v; break;
        case 7: r->req = v; break;
        default:
            if (v != s->co_file || s->co < 0) { /* a new call of several ops */
                s->co_file = v;
                s->co = s->t->next_coalesced++;
            }
            r->coalesced = s->co;
        }
    }
    return 0;
}

static int op(ctr_t *s, const cp_json_t *o)
{
    const cp_json_t *name = cp_json_get(o, "op"), *mpi = cp_json_get(o, "mpi"),
                    *dt = cp_json_get(o, "dtype");
    int async;
    const char *op = name->type == CP_JSON_STR ? cp_trace_op(name->str, &async) : NULL;
    if (op == NULL || op[0] == '\0') {
        return cp_trace_fail(s->t, name->line, "'op' is not an operation the trace model knows");
    }
    int64_t c;
    if (num(s, o, "comm", 0, CP_TRACE_MAX_GROUPS - 1, &c) != 1 || (size_t)c >= s->ngroup ||
        s->group[c] < 0) {
        return cp_trace_fail(s->t, o->line, "an op of no communicator given before it");
    }
    collprof_trace_op_row_t r;
    cp_trace_row_init(&r);
    r.rank = s->rank;
    r.group = s->group[c];
    cp_trace_copy(r.op, sizeof(r.op), op);
    cp_trace_copy(r.source_name, sizeof(r.source_name),
                  mpi != NULL && mpi->type == CP_JSON_STR ? mpi->str : name->str);
    if (dt != NULL) {
        const char *d = dt->type == CP_JSON_STR ? cp_trace_dtype(dt->str) : NULL;
        if (d == NULL) {
            return cp_trace_fail(s->t, dt->line, "'dtype' is not an element type the model knows");
        }
        cp_trace_copy(r.dtype, sizeof(r.dtype), d);
    }
    if (op_fields(s, o, &r) != 0) {
        return -1;
    }
    if (r.dtype[0] == '\0') { /* a type without a collprof name: its counts are not elements */
        r.in_count = r.out_count = 0;
    }
    if (!strcmp(op, "wait") && r.req < 0) {
        return cp_trace_fail(s->t, o->line, "a wait without 'req'");
    }
    uint64_t *in = NULL, *out = NULL;
    int n = cp_json_get(o, "in_split") != NULL ? s->t->groups[r.group].size : 0;
    int rc = n > 0 ? splits(s, o, n, &in, &out) : 0;
    if (rc == 0) {
        rc = cp_trace_add(s->t, o->line, &r, in, out, n);
    }
    free(in);
    free(out);
    s->ops++;
    return rc;
}

static int line(void *ctx, const cp_json_t *o)
{
    ctr_t *s = ctx;
    if (o->type != CP_JSON_OBJ) {
        return cp_trace_fail(s->t, o->line, "a line that is not an object");
    }
    if (s->ended) {
        return cp_trace_fail(s->t, o->line, "a line after the end line");
    }
    if (cp_json_get(o, "collprof_trace") != NULL) {
        return s->rank >= 0 ? cp_trace_fail(s->t, o->line, "a second header") : header(s, o);
    }
    if (s->rank < 0) {
        return cp_trace_fail(s->t, o->line, "not a collprof-trace file (no header line first)");
    }
    if (cp_json_get(o, "op") != NULL) {
        return op(s, o);
    }
    if (cp_json_get(o, "members") != NULL) {
        return comm(s, o);
    }
    if (cp_json_get(o, "end") != NULL) {
        const cp_json_t *fin = cp_json_get(o, "finalized");
        int64_t v = 0;
        s->ended = 1;
        s->unfinished += fin == NULL || fin->type != CP_JSON_BOOL || !fin->boolean;
        s->open_reqs += num(s, o, "open_requests", 0, 1e15, &v) == 1 ? v : 0;
        return 0;
    }
    return cp_trace_fail(s->t, o->line, "a line that is no header, communicator, op or end");
}

static int one_file(ctr_t *s, const char *path)
{
    int fd = cp_trace_open_input(s->t, path);
    if (fd < 0) {
        return -1;
    }
    s->rank = -1;
    s->ended = 0;
    s->co = -1;
    for (size_t i = 0; i < s->ngroup; i++) {
        s->group[i] = -1;
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
    if (s->rank < 0) {
        return cp_trace_fail(s->t, 0, "not a collprof-trace file (no header line)");
    }
    s->unfinished += !s->ended;
    return 0;
}

int cp_trace_ctrace(cp_trace_t *t, char **paths, int n)
{
    snprintf(t->format, sizeof(t->format), "collprof-trace-jsonl");
    snprintf(t->tool, sizeof(t->tool), "collprof-trace");
    ctr_t s = {.t = t, .rank = -1, .co = -1};
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        t->shown = paths[i];
        rc = one_file(&s, paths[i]);
    }
    for (int r = 0; rc == 0 && r < s.size; r++) {
        if (!s.seen[r]) {
            t->shown = NULL;
            rc = cp_trace_fail(t, 0, "no file of rank %d of the job's %d (give every rank's file)",
                               r, s.size);
        }
    }
    snprintf(t->note, sizeof(t->note),
             "collprof-trace (PMPI): t_issue_ns on CLOCK_MONOTONIC since a barrier at MPI_Init "
             "(ranks aligned within its exit skew), dur_ns the call's own time (an I-op's issue; "
             "its wait row the completing call); counts in elements of the MPI datatype (bytes "
             "only for types without a collprof name); a receive's count is its posted buffer; "
             "%" PRId64 " rank(s) did not reach MPI_Finalize, %" PRId64
             " request(s) never completed in a wait or test call",
             s.unfinished, s.open_reqs);
    free(s.seen);
    free(s.group);
    return rc;
}
