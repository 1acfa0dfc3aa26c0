/*
 * PARAM's basic comms trace (facebookresearch/param, train/comms/pt: the
 * "basic" trace type), one JSON file per rank: an array of entries, each
 * {"comms": NAME, "req", "seqnum", "startTime_ns", "world_size", "root",
 * "pg_id", "global_ranks", "in_msg_size", "out_msg_size" (elements), "dtype",
 * "in_split", "out_split", "src_rank", "dst_rank", "use_batch", "markers"} or
 * {"compute": ...}.  Ranks (root, src, dst, group members) are global, as
 * torch.distributed takes them.  The rank of a file is the last number in
 * its name (PARAM writes <dir>/<rank>.json).  Compute entries are skipped.
 */
#include "config.h"

#include "report/import/json.h"
#include "report/import/trace.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PG_MEMO = 8 };

typedef struct param_file {
    cp_trace_t *t;
    int rank;
    int64_t batch; /* the coalesced id of the use_batch run going on, -1: none */
    int64_t computes;
    /* the groups of the pg_ids seen last, by pg_id % PG_MEMO (-1: none): most entries need
     * neither the key's text nor its look-up */
    int64_t pg[PG_MEMO];
    int gid[PG_MEMO];
} param_file_t;

/* Optional member key of o, a whole number in [lo, hi]: 1 with *out, 0 when absent, -1 bad. */
static int opt_int(param_file_t *p, const cp_json_t *o, const char *key, double lo, double hi,
                   int64_t *out)
{
    const cp_json_t *v = cp_json_get(o, key);
    if (v == NULL || v->type == CP_JSON_NULL) {
        return 0;
    }
    if (cp_trace_int(v, lo, hi, out) != 0) {
        return cp_trace_fail(p->t, v->line, "'%s' is not a whole number in %.0f..%.0f", key, lo,
                             hi);
    }
    return 1;
}

/* An array of whole numbers (ranks: int, else uint64) into a malloc'd array; n its length. */
static int num_array(param_file_t *p, const cp_json_t *v, const char *key, int64_t hi,
                     int64_t **out, int *n)
{
    *out = NULL;
    *n = 0;
    if (v == NULL || v->type != CP_JSON_ARR || v->n > CP_TRACE_MAX_SPLITS) {
        return cp_trace_fail(p->t, v != NULL ? v->line : 0, "'%s' is not a list of numbers", key);
    }
    *out = malloc((v->n + 1) * sizeof(**out));
    if (*out == NULL) {
        return cp_trace_fail(p->t, v->line, "out of memory");
    }
    for (size_t i = 0; i < v->n; i++) {
        if (cp_trace_int(v->kids[i], 0, (double)hi, &(*out)[i]) != 0) {
            free(*out);
            *out = NULL;
            return cp_trace_fail(p->t, v->line,
                                 "'%s' holds a value that is not a whole number in "
                                 "0..%lld",
                                 key, (long long)hi);
        }
    }
    *n = (int)v->n;
    return 0;
}

/* The op's group: pg_id and global_ranks (or world_size ranks), joined on the pg_id. */
static int param_group(param_file_t *p, const cp_json_t *o, collprof_trace_op_row_t *r)
{
    int64_t pg = 0, ws = 0;
    int has_pg = opt_int(p, o, "pg_id", 0, 1e9, &pg),
        has_ws = opt_int(p, o, "world_size", 1, CP_TRACE_MAX_RANKS, &ws);
    if (has_pg < 0 || has_ws < 0) {
        return -1;
    }
    int slot = (int)(pg % PG_MEMO), g = p->gid[slot];
    if (g < 0 || p->pg[slot] != pg) {
        char key[32];
        snprintf(key, sizeof(key), "%lld", (long long)pg);
        g = cp_trace_group(p->t, o->line, key, key, has_pg ? "" : "world (no pg_id)");
        if (g < 0) {
            return -1;
        }
        p->pg[slot] = pg;
        p->gid[slot] = g;
    }
    r->group = g;
    const cp_json_t *gr = cp_json_get(o, "global_ranks");
    int64_t *ranks = NULL;
    int n = 0, rc = 0;
    const cp_trace_group_t *G = &p->t->groups[g];
    if (gr != NULL && gr->type == CP_JSON_ARR && G->size > 0 && gr->n == (size_t)G->size) {
        size_t i = 0; /* the common case: the members the group has, checked in place */
        for (int64_t m;
             i < gr->n && cp_trace_int(gr->kids[i], 0, CP_TRACE_MAX_RANKS - 1, &m) == 0 &&
             m == G->members[i];
             i++) {
        }
        if (i == gr->n) {
            return 0;
        }
    }
    if (gr != NULL && gr->type != CP_JSON_NULL) {
        rc = num_array(p, gr, "global_ranks", CP_TRACE_MAX_RANKS - 1, &ranks, &n);
    } else if (has_ws && pg == 0 && (ranks = malloc((size_t)ws * sizeof(*ranks))) != NULL) {
        for (n = 0; n < ws; n++) {
            ranks[n] = n;
        }
    }
    int *m = rc == 0 && n > 0 ? malloc((size_t)n * sizeof(int)) : NULL;
    for (int i = 0; m != NULL && i < n; i++) {
        m[i] = (int)ranks[i];
    }
    if (rc == 0 && m != NULL) {
        rc = cp_trace_members(p->t, o->line, g, m, n);
    }
    free(m);
    free(ranks);
    return rc;
}

/* in_msg_size, out_msg_size, dtype, and the splits of all_to_allv. */
static int param_sizes(param_file_t *p, const cp_json_t *o, collprof_trace_op_row_t *r,
                       int64_t **in, int64_t **out, int *ns)
{
    int64_t ic = 0, oc = 0;
    const cp_json_t *dt = cp_json_get(o, "dtype");
    if (opt_int(p, o, "in_msg_size", 0, 1e15, &ic) != 1 ||
        opt_int(p, o, "out_msg_size", 0, 1e15, &oc) != 1) {
        return cp_trace_fail(p->t, o->line, "'%s' without in_msg_size and out_msg_size",
                             r->source_name);
    }
    const char *d = dt != NULL && dt->type == CP_JSON_STR ? cp_trace_dtype(dt->str) : NULL;
    if (d == NULL) {
        return cp_trace_fail(p->t, dt != NULL ? dt->line : o->line, "'dtype' %s",
                             dt == NULL ? "missing" : "is not an element type the model knows");
    }
    cp_trace_copy(r->dtype, sizeof(r->dtype), d);
    r->in_count = (uint64_t)ic;
    r->out_count = (uint64_t)oc;
    r->bytes = (uint64_t)(ic > oc ? ic : oc) * (uint64_t)cp_trace_dtype_size(d);
    if (strcmp(r->op, "alltoallv") != 0) {
        return 0; /* even */
    }
    const cp_json_t *is = cp_json_get(o, "in_split"), *os = cp_json_get(o, "out_split");
    if (is == NULL || os == NULL ||
        (is->type == CP_JSON_ARR && is->n == 0 && os->type == CP_JSON_ARR && os->n == 0)) {
        return 0; /* no splits: even */
    }
    int ni = 0, no = 0;
    if (num_array(p, is, "in_split", (int64_t)1e15, in, &ni) != 0 ||
        num_array(p, os, "out_split", (int64_t)1e15, out, &no) != 0) {
        return -1;
    }
    if (ni != no) {
        return cp_trace_fail(p->t, o->line, "in_split has %d sizes, out_split %d", ni, no);
    }
    *ns = ni;
    return 0;
}

/* root, peer, req, use_batch, seqnum, startTime_ns. */
static int param_marks(param_file_t *p, const cp_json_t *o, collprof_trace_op_row_t *r)
{
    int64_t v = 0;
    int k;
    if ((k = opt_int(p, o, "root", 0, CP_TRACE_MAX_RANKS - 1, &v)) < 0) {
        return -1;
    }
    r->root = k ? (int32_t)v : -1;
    int send = !strcmp(r->op, "send"), recv = !strcmp(r->op, "recv");
    if ((send || recv) &&
        opt_int(p, o, send ? "dst_rank" : "src_rank", 0, CP_TRACE_MAX_RANKS - 1, &v) != 1) {
        return cp_trace_fail(p->t, o->line, "'%s' without %s", r->source_name,
                             send ? "dst_rank" : "src_rank");
    }
    r->peer = send || recv ? (int32_t)v : -1;
    if ((k = opt_int(p, o, "req", 0, 1e15, &v)) < 0) {
        return -1;
    }
    r->req = k ? v : -1;
    if (!strcmp(r->op, "wait") && !k) {
        return cp_trace_fail(p->t, o->line, "a wait without 'req'");
    }
    const cp_json_t *b = cp_json_get(o, "use_batch");
    if (b != NULL && b->type == CP_JSON_BOOL && b->boolean) {
        p->batch = p->batch >= 0 ? p->batch : p->t->next_coalesced++;
        r->coalesced = p->batch;
    } else {
        p->batch = -1;
    }
    if ((k = opt_int(p, o, "seqnum", 0, 9e15, &v)) < 0) {
        return -1;
    }
    r->source_seq = k ? v : -1;
    if ((k = opt_int(p, o, "startTime_ns", 0, 9e18, &v)) < 0) {
        return -1;
    }
    r->t_issue_ns = k ? v : -1;
    return 0;
}

static int param_entry(void *ctx, const cp_json_t *o)
{
    param_file_t *p = ctx;
    if (o->type != CP_JSON_OBJ) {
        return cp_trace_fail(p->t, o->line, "an entry that is not an object");
    }
    const cp_json_t *c = cp_json_get(o, "comms");
    if (c == NULL && cp_json_get(o, "compute") != NULL) {
        p->computes++;
        return 0;
    }
    if (c == NULL || c->type != CP_JSON_STR) {
        return cp_trace_fail(p->t, o->line, "an entry without 'comms' (or 'compute')");
    }
    int async;
    const char *op = cp_trace_op(c->str, &async);
    if (op == NULL) {
        return cp_trace_fail(p->t, c->line, "'%.40s' is not an operation the trace model knows",
                             c->str);
    }
    if (op[0] == '\0') {
        return 0;
    }
    collprof_trace_op_row_t r;
    cp_trace_row_init(&r);
    r.rank = p->rank;
    cp_trace_copy(r.op, sizeof(r.op), op);
    cp_trace_copy(r.source_name, sizeof(r.source_name), c->str);
    int64_t *in = NULL, *out = NULL;
    int ns = 0;
    int rc = param_group(p, o, &r) == 0 && param_marks(p, o, &r) == 0 &&
                     (!strcmp(op, "wait") || !strcmp(op, "barrier") ||
                      param_sizes(p, o, &r, &in, &out, &ns) == 0)
                 ? 0
                 : -1;
    if (rc == 0 && ns > 0 && p->t->groups[r.group].size > 0 && ns != p->t->groups[r.group].size) {
        rc = cp_trace_fail(p->t, o->line, "%d split sizes for a group of %d", ns,
                           p->t->groups[r.group].size);
    }
    if (rc == 0) {
        rc = cp_trace_add(p->t, o->line, &r, (const uint64_t *)in, (const uint64_t *)out, ns);
    }
    free(in);
    free(out);
    return rc;
}

/* One rank's file. */
static int param_file(cp_trace_t *t, const char *path, int rank)
{
    int fd = cp_trace_open_input(t, path);
    if (fd < 0) {
        return -1;
    }
    static const char *const none[] = {NULL}; /* a root that is not a list: nothing kept */
    param_file_t p = {.t = t, .rank = rank, .batch = -1};
    memset(p.gid, -1, sizeof(p.gid));
    cp_json_stream_t s = {NULL, 0, param_entry, &p, NULL};
    cp_json_opts_t opts = {none, 0};
    cp_json_t *root = NULL;
    cp_json_error_t e;
    int rc = cp_json_read_fd(fd, &opts, &s, &root, &e);
    close(fd);
    if (rc != 0 && !e.stopped) {
        cp_trace_fail(t, e.line, "not valid JSON: %s", e.msg);
    }
    if (rc == 0 && (root == NULL || root->type != CP_JSON_ARR)) {
        rc = cp_trace_fail(t, 1, "not a PARAM basic trace (a JSON list of entries)");
    }
    cp_json_free(root);
    return rc;
}

int cp_trace_param(cp_trace_t *t, char **paths, int n)
{
    snprintf(t->format, sizeof(t->format), "param-basic");
    snprintf(t->tool, sizeof(t->tool), "param");
    snprintf(t->note, sizeof(t->note),
             "PARAM basic trace: startTime_ns where the entries have it, no durations; compute "
             "entries skipped");
    for (int i = 0; i < n; i++) {
        int rank = cp_trace_rank_of_name(paths[i]);
        t->shown = paths[i];
        if (rank < 0 && n > 1) {
            return cp_trace_fail(t, 0, "no rank number in the file name (PARAM's <rank>.json)");
        }
        rank = rank < 0 ? 0 : rank;
        if (rank < t->nseq && t->next_seq[rank] > 0) {
            return cp_trace_fail(t, 0, "a second file of rank %d", rank);
        }
        if (param_file(t, paths[i], rank) != 0) {
            return -1;
        }
    }
    return 0;
}
