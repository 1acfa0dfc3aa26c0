/*
 * PyTorch's execution trace (torch.profiler.ExecutionTraceObserver, schema
 * "1.0.2-chakra.0.0.4" .. "1.1.1-chakra.0.0.4"), one JSON file per rank:
 * {"schema", "pid", "time", "start_ts", "nodes" [{"id", "name", "ctrl_deps"
 * (the parent), "inputs" {"values", "shapes", "types", "strides"}, "outputs",
 * "attrs" [{"name", "type", "value"}]}], "finish_ts"}.  The communication
 * ops are the "record_param_comms" nodes: their inputs are c10d's
 * RECORD_PARAM_COMMS list ([the input tensors,] the sequence number (or
 * [seq, is_p2p]), the group (name or [name, desc]), a group rank (the root
 * of a rooted op, the peer of a send or recv), the collective's name, ...),
 * and since schema 1.1.0 their attrs name the rest: collective_name, dtype,
 * in_msg_nelems, out_msg_nelems, in_split_size, out_split_size (rows of dim
 * 0, as c10d takes them), global_rank_start, global_rank_stride, pg_name,
 * pg_desc, pg_size.  The groups' members come from the
 * "## process_group:init ##" node (a JSON string of every group's pg_name,
 * pg_desc, ranks (empty: all group_size ranks)), else from a regular
 * start/stride.  The rank of a file is the last number in its name.
 *
 * `chakra-json` is the same file after Chakra's trace linker
 * (chakra_trace_link): host ops carry Kineto's "ts" and "inclusive_dur"
 * (microseconds), and the GPU kernels are added as nodes with a "cat" whose
 * ctrl_deps is their launching host op: a comm op's issue time is its host
 * ts, its duration the span of its NCCL kernels.  The plain ET has no times.
 */
#include "config.h"

#include "report/import/json.h"
#include "report/import/trace_et.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void *cp_et_grow(cp_trace_t *t, int line, void **arr, size_t *n, size_t *cap, size_t sz)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        void *a = realloc(*arr, c * sz);
        if (a == NULL) {
            cp_trace_fail(t, line, "out of memory");
            return NULL;
        }
        *arr = a;
        *cap = c;
    }
    char *p = (char *)*arr + (*n)++ * sz;
    memset(p, 0, sz);
    return p;
}

/* The node's members and attrs that the readers use, found in one pass over each (a node's
 * members, and an attr's, are never named twice; an attr named twice in a node's attrs: the
 * first), so that each name is compared once per node and not looked up again for each use. */
enum {
    M_NAME,
    M_ID,
    M_CAT,
    M_INPUTS,
    M_ATTRS,
    M_CTRL_DEPS,
    M_TS,
    M_INCLUSIVE_DUR,
    M_DUR,
    NMEMBERS
};
enum {
    A_COLLECTIVE_NAME,
    A_PG_NAME,
    A_PG_DESC,
    A_PG_SIZE,
    A_DTYPE,
    A_IN_MSG_NELEMS,
    A_OUT_MSG_NELEMS,
    A_IN_SPLIT_SIZE,
    A_OUT_SPLIT_SIZE,
    A_GLOBAL_RANK_START,
    A_GLOBAL_RANK_STRIDE,
    NATTRS
};

typedef struct et_node {
    const cp_json_t *v;           /* the node */
    const cp_json_t *m[NMEMBERS]; /* its members, NULL where absent */
    const cp_json_t *a[NATTRS];   /* its attrs' values, NULL where absent */
} et_node_t;

/* The members read, in M_ order, then an attr's "value" and the inputs' "values": the reader
 * keeps only a node's members of these names (cp_json_stream_t.names: the rest of a node, its
 * shapes, types, outputs, is checked and dropped as it streams past), by these pointers, so
 * that they compare by address. */
static const char *const member_names[] = {"name",  "id",        "cat",    "inputs",
                                           "attrs", "ctrl_deps", "ts",     "inclusive_dur",
                                           "dur",   "value",     "values", NULL};
enum { M_VALUE = NMEMBERS };
static const char *const attr_names[NATTRS] = {
    "collective_name", "pg_name",           "pg_desc",           "pg_size",
    "dtype",           "in_msg_nelems",     "out_msg_nelems",    "in_split_size",
    "out_split_size",  "global_rank_start", "global_rank_stride"};

/* Which of names[0..n) key is (-1: none): by its first byte, then whole. */
static inline int which(const char *key, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (names[i][0] == key[0] && !strcmp(names[i] + 1, key + 1)) {
            return i;
        }
    }
    return -1;
}

/* The attrs' values by name (the first attr of each name: its value, NULL if it has none). */
static void index_attrs(et_node_t *n, const cp_json_t *attrs)
{
    uint32_t seen = 0;
    for (size_t i = 0; attrs != NULL && attrs->type == CP_JSON_ARR && i < attrs->n; i++) {
        const cp_json_t *a = attrs->kids[i], *name = NULL, *value = NULL;
        for (size_t k = 0; a->type == CP_JSON_OBJ && k < a->n; k++) {
            const char *key = a->keys[k];
            if (key == member_names[M_NAME]) {
                name = a->kids[k];
            } else if (key == member_names[M_VALUE]) {
                value = a->kids[k];
            }
        }
        int at =
            name != NULL && name->type == CP_JSON_STR ? which(name->str, attr_names, NATTRS) : -1;
        if (at >= 0 && !(seen & UINT32_C(1) << at)) {
            seen |= UINT32_C(1) << at;
            n->a[at] = value;
        }
    }
}

/* The node's members by name (its attrs are indexed by comm_node alone). */
static void index_node(et_node_t *n, const cp_json_t *node)
{
    memset(n, 0, sizeof(*n));
    n->v = node;
    for (size_t k = 0; node->type == CP_JSON_OBJ && k < node->n; k++) {
        for (int at = 0; at < NMEMBERS; at++) {
            if (node->keys[k] == member_names[at]) {
                n->m[at] = node->kids[k];
                break;
            }
        }
    }
}

/* A whole number in [lo, hi] that must be there: 0, or -1 with the error. */
static int need_int(cp_trace_t *t, const cp_json_t *node, const cp_json_t *v, const char *what,
                    double lo, double hi, int64_t *out)
{
    if (cp_trace_int(v, lo, hi, out) != 0) {
        return cp_trace_fail(t, v != NULL ? v->line : node->line, "%s %s", what,
                             v == NULL ? "missing" : "is not a whole number in range");
    }
    return 0;
}

/* "[3, 5]" (c10d's split sizes, rows of dim 0) into elements: count / rows in all. */
static int splits(et_file_t *f, const cp_json_t *in, const cp_json_t *out, et_op_t *op)
{
    cp_trace_t *t = f->t;
    const cp_json_t *v[2] = {in, out};
    uint64_t total[2] = {op->in_count, op->out_count}, *s[2] = {NULL, NULL};
    int n[2] = {0, 0}, rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        const char *p = v[k] != NULL && v[k]->type == CP_JSON_STR ? v[k]->str : NULL;
        size_t cap = 1;
        for (const char *c = p != NULL ? p : ""; *c != '\0'; c++) {
            cap += *c == ',';
        }
        if (p == NULL || cap > CP_TRACE_MAX_SPLITS || (s[k] = malloc(cap * 8)) == NULL) {
            rc = cp_trace_fail(t, op->line, "'%s_split_size' is not a list of sizes",
                               k ? "out" : "in");
            break;
        }
        uint64_t sum = 0;
        for (p += strspn(p, " ["); rc == 0 && *p != '\0' && *p != ']'; p += strspn(p, " ,")) {
            char *end;
            double x = strtod(p, &end);
            rc = end == p || !(x >= 0 && x <= 1e15) || x != floor(x) || (size_t)n[k] >= cap ||
                         sum + x > 1e15
                     ? -1
                     : 0;
            if (rc == 0) { /* at most cap sizes, their sum at most 1e15: no overflow */
                s[k][n[k]++] = (uint64_t)x;
                sum += (uint64_t)x;
            }
            p = end;
        }
        for (int i = 0; rc == 0 && i < n[k]; i++) { /* rows into elements */
            rc = sum == 0 || total[k] % sum != 0 ? -1 : (s[k][i] *= total[k] / sum, 0);
        }
        if (rc != 0) {
            rc = cp_trace_fail(t, op->line,
                               "'%s_split_size' is not a list of sizes that divide "
                               "its %" PRIu64 " elements",
                               k ? "out" : "in", total[k]);
        }
    }
    if (rc == 0 && n[0] != n[1]) {
        rc =
            cp_trace_fail(t, op->line, "in_split_size has %d sizes, out_split_size %d", n[0], n[1]);
    }
    if (rc == 0 && n[0] > 0 && (op->split = malloc((size_t)n[0] * 16)) == NULL) {
        rc = cp_trace_fail(t, op->line, "out of memory");
    }
    f->nsplits += op->split != NULL;
    if (rc == 0 && n[0] > 0) {
        memcpy(op->split, s[0], (size_t)n[0] * 8);
        memcpy(op->split + n[0], s[1], (size_t)n[0] * 8);
        op->nsplit = n[0];
    }
    free(s[0]);
    free(s[1]);
    return rc;
}

/* The members a regular group says by its first global rank and stride, where it says them. */
static int stride_members(et_file_t *f, const et_node_t *n, int g)
{
    int64_t start, stride, size;
    if (cp_trace_int(n->a[A_GLOBAL_RANK_START], 0, CP_TRACE_MAX_RANKS - 1, &start) != 0 ||
        cp_trace_int(n->a[A_GLOBAL_RANK_STRIDE], -1, CP_TRACE_MAX_RANKS, &stride) != 0 ||
        cp_trace_int(n->a[A_PG_SIZE], 1, CP_TRACE_MAX_RANKS, &size) != 0 || stride < 0 ||
        (stride == 0 && size > 1) || f->t->groups[g].size > 0) {
        return 0; /* irregular, or not recorded: process_group:init says them */
    }
    if (start + (size - 1) * stride >= CP_TRACE_MAX_RANKS) {
        return cp_trace_fail(f->t, n->v->line,
                             "global_rank_start %" PRId64 " + stride %" PRId64 " x %" PRId64
                             " ranks is past the most ranks",
                             start, stride, size);
    }
    int *m = malloc((size_t)size * sizeof(int));
    if (m == NULL) {
        return cp_trace_fail(f->t, n->v->line, "out of memory");
    }
    for (int64_t i = 0; i < size; i++) {
        m[i] = (int)(start + i * stride);
    }
    int rc = cp_trace_members(f->t, n->v->line, g, m, (int)size);
    free(m);
    return rc;
}

/* The inputs' sequence number, group and group rank (values after the tensors, if any). */
static int comm_inputs(et_file_t *f, const et_node_t *n, et_op_t *op, const cp_json_t **pg,
                       const cp_json_t **name)
{
    const cp_json_t *node = n->v, *v = cp_json_get(n->m[M_INPUTS], "values");
    if (v == NULL || v->type != CP_JSON_ARR) {
        return cp_trace_fail(f->t, node->line, "a record_param_comms without inputs.values");
    }
    size_t b = v->n > 0 && (v->kids[0]->type == CP_JSON_NUM ||
                            (v->kids[0]->type == CP_JSON_ARR && v->kids[0]->n == 2 &&
                             v->kids[0]->kids[1]->type == CP_JSON_BOOL))
                   ? 0
                   : 1;
    if (v->n < b + 4) {
        return cp_trace_fail(f->t, v->line, "record_param_comms: %zu inputs, not c10d's list",
                             v->n);
    }
    const cp_json_t *seq = v->kids[b];
    if (seq->type == CP_JSON_ARR) {
        op->p2p = seq->n == 2 && seq->kids[1]->type == CP_JSON_BOOL && seq->kids[1]->boolean;
        seq = seq->n > 0 ? seq->kids[0] : NULL;
    }
    int64_t x;
    if (need_int(f->t, node, seq, "the sequence number", 0, 9e15, &op->seq) != 0 ||
        need_int(f->t, node, v->kids[b + 2], "the group rank", -1, CP_TRACE_MAX_RANKS - 1, &x) !=
            0) {
        return -1;
    }
    op->grank = (int)x;
    *pg = v->kids[b + 1]->type == CP_JSON_ARR && v->kids[b + 1]->n > 0 ? v->kids[b + 1]->kids[0]
                                                                       : v->kids[b + 1];
    *name = v->kids[b + 3];
    return 0;
}

/* The op's element type and counts (attrs since schema 1.1.0), and splits. */
static int comm_sizes(et_file_t *f, const et_node_t *n, et_op_t *op)
{
    cp_trace_t *t = f->t;
    const cp_json_t *node = n->v, *dt = n->a[A_DTYPE];
    int64_t ic, oc;
    if (!strcmp(op->op, "wait") || !strcmp(op->op, "barrier")) {
        return 0;
    }
    const char *d = dt != NULL && dt->type == CP_JSON_STR ? cp_trace_dtype(dt->str) : NULL;
    if (n->a[A_IN_MSG_NELEMS] == NULL) {
        return cp_trace_fail(t, node->line,
                             "a record_param_comms without the in_msg_nelems "
                             "attr (schema 1.1.0, PyTorch 2.4, records it)");
    }
    if (d == NULL) {
        return cp_trace_fail(t, dt != NULL ? dt->line : node->line, "'dtype' %s",
                             dt == NULL ? "missing" : "is not an element type the model knows");
    }
    if (need_int(t, node, n->a[A_IN_MSG_NELEMS], "in_msg_nelems", 0, 1e15, &ic) != 0 ||
        need_int(t, node, n->a[A_OUT_MSG_NELEMS], "out_msg_nelems", 0, 1e15, &oc) != 0) {
        return -1;
    }
    op->dtype = d;
    op->in_count = (uint64_t)ic;
    op->out_count = (uint64_t)oc;
    op->bytes = (uint64_t)(ic > oc ? ic : oc) * (uint64_t)cp_trace_dtype_size(d);
    const cp_json_t *is = n->a[A_IN_SPLIT_SIZE], *os = n->a[A_OUT_SPLIT_SIZE];
    if (strcmp(op->op, "alltoallv") != 0 || is == NULL ||
        (is->type == CP_JSON_STR && !strcmp(is->str, "[]"))) {
        return 0;
    }
    return splits(f, is, os, op);
}

/* The op's source name, as the row's field holds it (cut to fit), among the file's names. */
static int op_name(et_file_t *f, et_op_t *op, const char *name)
{
    size_t len = strnlen(name, sizeof(((collprof_trace_op_row_t *)0)->source_name) - 1);
    long id = f->last;
    int added;
    if (f->names.n == 0 || !cp_strset_is(&f->names, id, name, len)) {
        id = cp_strset_put(&f->names, name, len, &added);
    }
    if (id < 0 || id > INT32_MAX) {
        return cp_trace_fail(f->t, op->line, "out of memory");
    }
    f->last = id;
    op->name = (uint32_t)id;
    return 0;
}

/* A record_param_comms node: one op held back (wait, barrier and the rest). */
static int comm_node(et_file_t *f, et_node_t *n, int64_t id)
{
    cp_trace_t *t = f->t;
    const cp_json_t *node = n->v;
    index_attrs(n, n->m[M_ATTRS]);
    et_op_t *op = cp_et_grow(t, node->line, (void **)&f->ops, &f->nops, &f->opcap, sizeof(*op));
    const cp_json_t *pg = NULL, *name = NULL, *a;
    if (op == NULL || comm_inputs(f, n, op, &pg, &name) != 0) {
        return -1;
    }
    name = (a = n->a[A_COLLECTIVE_NAME]) != NULL ? a : name;
    pg = (a = n->a[A_PG_NAME]) != NULL ? a : pg;
    int async;
    const char *o = name->type == CP_JSON_STR ? cp_trace_op(name->str, &async) : NULL;
    if (o == NULL || pg->type != CP_JSON_STR) {
        return cp_trace_fail(t, name->line,
                             o == NULL ? "'%.40s' is not an operation the trace "
                                         "model knows"
                                       : "'%.40s': the group is not a name",
                             name->type == CP_JSON_STR ? name->str : "(not a string)");
    }
    if (o[0] == '\0') {
        f->nops--; /* init, coalescing markers */
        return 0;
    }
    op->id = id;
    op->line = node->line;
    op->op = o;
    op->req = op->t_issue_ns = op->dur_ns = -1;
    if (op_name(f, op, name->str) != 0) {
        return -1;
    }
    const cp_json_t *desc = n->a[A_PG_DESC], *ts = n->m[M_TS];
    op->group = cp_trace_group(t, pg->line, pg->str, pg->str,
                               desc != NULL && desc->type == CP_JSON_STR ? desc->str : "");
    if (op->group < 0 || stride_members(f, n, op->group) != 0 || comm_sizes(f, n, op) != 0) {
        return -1;
    }
    int64_t parent;
    op->parent = cp_trace_int(n->m[M_CTRL_DEPS], 0, 9e18, &parent) == 0 ? parent : -1;
    if (f->times && ts != NULL && ts->type == CP_JSON_NUM && ts->num >= 0 && ts->num < 9e12) {
        op->t_issue_ns = llround(ts->num * 1000.0);
    }
    return 0;
}

/* The "## process_group:init ##" node: a JSON string of every group and its ranks. */
static int pg_init(et_file_t *f, const et_node_t *n)
{
    cp_trace_t *t = f->t;
    const cp_json_t *node = n->v, *v = cp_json_get(n->m[M_INPUTS], "values");
    if (v == NULL || v->type != CP_JSON_ARR || v->n < 1 || v->kids[0]->type != CP_JSON_STR) {
        return cp_trace_fail(t, node->line, "process_group:init without the groups' JSON");
    }
    cp_json_error_t e;
    cp_json_t *pgs = cp_json_parse(v->kids[0]->str, strlen(v->kids[0]->str), NULL, &e);
    int rc = pgs != NULL && pgs->type == CP_JSON_ARR ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < pgs->n; i++) {
        const cp_json_t *g = pgs->kids[i], *name = cp_json_get(g, "pg_name"),
                        *desc = cp_json_get(g, "pg_desc"), *ranks = cp_json_get(g, "ranks");
        int64_t size = 0, r;
        if (name == NULL || name->type != CP_JSON_STR || ranks == NULL ||
            ranks->type != CP_JSON_ARR || ranks->n > CP_TRACE_MAX_RANKS ||
            (ranks->n == 0 &&
             cp_trace_int(cp_json_get(g, "group_size"), 1, CP_TRACE_MAX_RANKS, &size) != 0)) {
            rc = -1;
            break;
        }
        size = ranks->n > 0 ? (int64_t)ranks->n : size;
        int *m = malloc((size_t)size * sizeof(int)), id = -1;
        for (int64_t k = 0; m != NULL && k < size && rc == 0; k++) {
            rc = ranks->n == 0 ? (m[k] = (int)k, 0)
                 : cp_trace_int(ranks->kids[k], 0, CP_TRACE_MAX_RANKS - 1, &r) == 0
                     ? (m[k] = (int)r, 0)
                     : -1;
        }
        if (rc == 0 && m != NULL) {
            id = cp_trace_group(t, node->line, name->str, name->str,
                                desc != NULL && desc->type == CP_JSON_STR ? desc->str : "");
        }
        rc =
            m == NULL || rc != 0 || id < 0 ? -1 : cp_trace_members(t, node->line, id, m, (int)size);
        free(m);
        if (rc != 0 && t->err[0] != '\0') {
            cp_json_free(pgs);
            return -1;
        }
    }
    cp_json_free(pgs);
    return rc == 0 ? 0
                   : cp_trace_fail(t, node->line,
                                   "process_group:init: not a list of groups "
                                   "{pg_name, ranks, group_size}");
}

/* A GPU kernel of NCCL (chakra-json) or an nccl:* host op: kept to time the comm ops. */
static int link_node(et_file_t *f, const et_node_t *n, int64_t id, const char *name)
{
    int64_t parent;
    const cp_json_t *node = n->v;
    if (cp_trace_int(n->m[M_CTRL_DEPS], 0, 9e18, &parent) != 0) {
        return 0;
    }
    const cp_json_t *cat = n->m[M_CAT], *ts = n->m[M_TS], *dur = n->m[M_INCLUSIVE_DUR];
    dur = dur != NULL ? dur : n->m[M_DUR];
    if (cat == NULL) { /* nccl:all_reduce around or inside record_param_comms */
        et_link_t *a =
            cp_et_grow(f->t, node->line, (void **)&f->alias, &f->nalias, &f->aliascap, sizeof(*a));
        return a == NULL ? -1 : (a->id = id, a->parent = parent, 0);
    }
    if (strncasecmp(name, "nccl", 4) != 0 || ts == NULL || ts->type != CP_JSON_NUM || dur == NULL ||
        dur->type != CP_JSON_NUM || ts->num < 0 || ts->num > 9e12 || dur->num < 0 ||
        dur->num > 9e12) {
        return ts != NULL && ts->type != CP_JSON_NUM
                   ? cp_trace_fail(f->t, ts->line, "a kernel's 'ts' is not a number")
                   : 0;
    }
    et_link_t *g = cp_et_grow(f->t, node->line, (void **)&f->gpu, &f->ngpu, &f->gpucap, sizeof(*g));
    if (g == NULL) {
        return -1;
    }
    g->id = id;
    g->parent = parent;
    g->ts_ns = llround(ts->num * 1000.0);
    g->end_ns = llround((ts->num + dur->num) * 1000.0);
    return 0;
}

static int et_node(void *ctx, const cp_json_t *node)
{
    et_file_t *f = ctx;
    et_node_t n;
    index_node(&n, node);
    const cp_json_t *name = n.m[M_NAME];
    int64_t id;
    if (node->type != CP_JSON_OBJ || name == NULL || name->type != CP_JSON_STR) {
        return cp_trace_fail(f->t, node->line, "a node without a 'name'");
    }
    if (cp_trace_int(n.m[M_ID], 0, 9e18, &id) != 0) {
        return cp_trace_fail(f->t, node->line, "a node without a whole-number 'id'");
    }
    if (n.m[M_CAT] == NULL && !strcmp(name->str, "record_param_comms")) {
        return comm_node(f, &n, id);
    }
    if (strstr(name->str, "process_group:init") != NULL) {
        return pg_init(f, &n);
    }
    if (f->times && (n.m[M_CAT] != NULL || !strncmp(name->str, "nccl:", 5))) {
        return link_node(f, &n, id, name->str);
    }
    return 0;
}

/* One rank's file. */
static int et_file(cp_trace_t *t, const char *path, int rank, int times, int64_t *counts)
{
    static const char *const keep[] = {"schema", NULL};
    et_file_t f = {.t = t, .rank = rank, .times = times, .counts = counts};
    cp_json_opts_t opts = {keep, 0};
    cp_json_stream_t s = {"nodes", 0, et_node, &f, member_names};
    cp_json_t *root = NULL;
    cp_json_error_t e;
    int fd = cp_trace_open_input(t, path);
    int rc = fd < 0 ? -1 : cp_json_read_fd(fd, &opts, &s, &root, &e);
    if (fd >= 0) {
        close(fd);
    }
    if (fd >= 0 && rc != 0 && !e.stopped) {
        cp_trace_fail(t, e.line, "not valid JSON: %s", e.msg);
    }
    const cp_json_t *sc = cp_json_get(root, "schema");
    if (rc == 0 && (sc == NULL || sc->type != CP_JSON_STR || cp_json_get(root, "nodes") == NULL)) {
        rc = cp_trace_fail(t, 1, "not a PyTorch execution trace (no \"schema\" and \"nodes\")");
    } else if (rc == 0 && strncmp(sc->str, "1.0.2", 5) < 0) {
        rc = cp_trace_fail(t, sc->line,
                           "execution trace schema %.30s: import reads 1.0.2 and "
                           "later",
                           sc->str);
    }
    cp_json_free(root);
    rc = rc == 0 ? cp_et_finish(&f) : -1;
    cp_et_free(&f);
    return rc;
}

static int et_read(cp_trace_t *t, char **paths, int n, int times)
{
    int64_t counts[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        int rank = cp_trace_rank_of_name(paths[i]);
        t->shown = paths[i];
        if (rank < 0 && n > 1) {
            return cp_trace_fail(t, 0, "no rank number in the file name (<prefix><rank>.json)");
        }
        rank = rank < 0 ? 0 : rank;
        if (rank < t->nseq && t->next_seq[rank] > 0) {
            return cp_trace_fail(t, 0, "a second file of rank %d", rank);
        }
        if (et_file(t, paths[i], rank, times, counts) != 0) {
            return -1;
        }
    }
    char kernels[64] = "";
    if (times) {
        snprintf(kernels, sizeof(kernels), "; %" PRId64 " ops without a kernel", counts[1]);
    }
    snprintf(t->note, sizeof(t->note),
             "%s; %" PRId64 " waits without their op in the trace dropped; no coalesced calls%s",
             times ? "Chakra linked host+device trace: issue times are the host ops' Kineto ts, "
                     "durations the span of each op's NCCL kernels"
                   : "PyTorch execution trace: no times (the ET records none)",
             counts[0], kernels);
    return 0;
}

int cp_trace_pytorch_et(cp_trace_t *t, char **paths, int n)
{
    snprintf(t->format, sizeof(t->format), "pytorch-et");
    snprintf(t->tool, sizeof(t->tool), "pytorch-execution-trace");
    return et_read(t, paths, n, 0);
}

int cp_trace_chakra_json(cp_trace_t *t, char **paths, int n)
{
    snprintf(t->format, sizeof(t->format), "chakra-json");
    snprintf(t->tool, sizeof(t->tool), "chakra-trace-link");
    return et_read(t, paths, n, 1);
}
