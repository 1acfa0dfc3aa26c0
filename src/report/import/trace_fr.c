/*
 * PyTorch's Flight Recorder, the JSON form (version 2.x, from
 * torch._C._distributed_c10d._dump_nccl_trace_json(), _dump_fr_trace_json()
 * in newer releases), one file per rank: {"version", "pg_config" {name:
 * {name, desc, ranks: "[0, 1]"}}, "pg_status", "entries" [{record_id, pg_id,
 * process_group [name, desc], collective_seq_id, p2p_seq_id, op_id,
 * profiling_name "nccl:all_reduce" | "nccl:send 0->1", time_created_ns,
 * duration_ms, input_sizes [[dims]], input_dtypes, output_sizes,
 * output_dtypes, state, is_p2p, ...}]}.  The dump's keys come sorted, so
 * "entries" precedes "pg_config": a first pass reads the groups (the entries
 * stream past), a second streams the entries.  The pickle dump written on a
 * timeout is refused, naming the JSON API.  Send/recv peers are group ranks
 * in profiling_name, made global through pg_config.  Consecutive entries of
 * one group with the same sequence number are one coalesced call; the
 * "nccl:coalesced" entries themselves are markers and skipped (and newer torch's
 * "nccl:REDUCE_SCATTER_coalesced"); "_reduce_oop" and "_broadcast_oop" are rooted at their
 * place in their call.
 */
#include "config.h"

#include "report/import/json.h"
#include "report/import/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fr {
    cp_trace_t *t;
    int rank;
    int has_pending;
    collprof_trace_op_row_t pending; /* held back: the next entry may coalesce with it */
    int pending_line, pending_p2p;
    int run; /* the pending entry's place in its coalesced call (0: its first) */
    int64_t not_done, no_dur;
} fr_t;

/* "[0, 1, 2]" (or a JSON list) as the members of group g. */
static int members(cp_trace_t *t, int g, const cp_json_t *v)
{
    size_t cap = 1; /* the most ranks the value can hold: its elements, or the string's commas */
    if (v->type == CP_JSON_ARR) {
        cap += v->n;
    }
    for (const char *c = v->type == CP_JSON_STR ? v->str : ""; *c != '\0'; c++) {
        cap += *c == ',';
    }
    int *m = cap <= CP_TRACE_MAX_RANKS ? malloc(cap * sizeof(int)) : NULL, n = 0, rc = 0;
    if (m == NULL) {
        return cp_trace_fail(
            t, v->line, cap > CP_TRACE_MAX_RANKS ? "pg_config: too many ranks" : "out of memory");
    }
    if (v->type == CP_JSON_ARR) {
        for (size_t i = 0; rc == 0 && i < v->n; i++) {
            int64_t r;
            rc = (size_t)n < cap && cp_trace_int(v->kids[i], 0, CP_TRACE_MAX_RANKS - 1, &r) == 0
                     ? (m[n++] = (int)r, 0)
                     : -1;
        }
    } else if (v->type == CP_JSON_STR) {
        const char *p = v->str + strspn(v->str, " [");
        while (rc == 0 && *p != '\0' && *p != ']') {
            char *end;
            long r = strtol(p, &end, 10);
            rc = end != p && r >= 0 && r < CP_TRACE_MAX_RANKS && (size_t)n < cap
                     ? (m[n++] = (int)r, 0)
                     : -1;
            p = end + strspn(end, " ,");
        }
    } else {
        rc = -1;
    }
    rc = rc == 0 ? cp_trace_members(t, v->line, g, m, n)
                 : cp_trace_fail(t, v->line, "pg_config: 'ranks' is not a list of ranks");
    free(m);
    return rc;
}

/* The first pass: version and pg_config. */
static int groups(fr_t *f, const cp_json_t *root)
{
    cp_trace_t *t = f->t;
    const cp_json_t *ver = cp_json_get(root, "version"), *pc = cp_json_get(root, "pg_config");
    if (root == NULL || root->type != CP_JSON_OBJ || ver == NULL || ver->type != CP_JSON_STR) {
        return cp_trace_fail(t, 1, "not a Flight Recorder JSON dump (no \"version\")");
    }
    if (strncmp(ver->str, "2.", 2) != 0) {
        return cp_trace_fail(t, ver->line, "Flight Recorder version %.20s: import reads 2.x",
                             ver->str);
    }
    for (size_t i = 0; pc != NULL && pc->type == CP_JSON_OBJ && i < pc->n; i++) {
        const cp_json_t *g = pc->kids[i], *d = cp_json_get(g, "desc"), *r = cp_json_get(g, "ranks");
        int id = cp_trace_group(t, g->line, pc->keys[i], pc->keys[i],
                                d != NULL && d->type == CP_JSON_STR ? d->str : "");
        if (id < 0 || r == NULL || members(t, id, r) != 0) {
            return id < 0 ? -1 : cp_trace_fail(t, g->line, "pg_config: a group without 'ranks'");
        }
    }
    return 0;
}

/* Elements of every tensor in sizes ([[dims], ...]): 0 with *out, else -1. */
static int elements(const cp_json_t *sizes, uint64_t *out)
{
    *out = 0;
    for (size_t i = 0; sizes != NULL && sizes->type == CP_JSON_ARR && i < sizes->n; i++) {
        const cp_json_t *dims = sizes->kids[i];
        uint64_t e = 1;
        int64_t d;
        if (dims->type != CP_JSON_ARR) {
            return -1;
        }
        for (size_t j = 0; j < dims->n; j++) {
            if (cp_trace_int(dims->kids[j], 0, 1e12, &d) != 0 ||
                (d > 0 && e > UINT64_MAX / (uint64_t)d)) {
                return -1;
            }
            e *= (uint64_t)d;
        }
        *out += e;
    }
    return sizes == NULL || sizes->type == CP_JSON_ARR ? 0 : -1;
}

/* Sizes, element type, peer. */
static int entry_data(fr_t *f, const cp_json_t *o, collprof_trace_op_row_t *r, const char *pname)
{
    cp_trace_t *t = f->t;
    if (elements(cp_json_get(o, "input_sizes"), &r->in_count) != 0 ||
        elements(cp_json_get(o, "output_sizes"), &r->out_count) != 0) {
        return cp_trace_fail(t, o->line, "input_sizes or output_sizes is not a list of shapes");
    }
    const cp_json_t *dt = cp_json_get(o, "input_dtypes");
    dt = dt != NULL && dt->type == CP_JSON_ARR && dt->n > 0 ? dt->kids[0]
                                                            : cp_json_get(o, "output_dtypes");
    dt = dt != NULL && dt->type == CP_JSON_ARR && dt->n > 0 ? dt->kids[0] : dt;
    if (dt != NULL && dt->type == CP_JSON_STR) {
        const char *d = cp_trace_dtype(dt->str);
        if (d == NULL) {
            return cp_trace_fail(t, dt->line, "'%.30s' is not an element type the model knows",
                                 dt->str);
        }
        cp_trace_copy(r->dtype, sizeof(r->dtype), d);
        r->bytes = (r->in_count > r->out_count ? r->in_count : r->out_count) *
                   (uint64_t)cp_trace_dtype_size(d);
    }
    int send = !strcmp(r->op, "send");
    if (send || !strcmp(r->op, "recv")) {
        const char *sp = strchr(pname, ' ');
        int me, peer;
        const cp_trace_group_t *G = &t->groups[r->group];
        if (sp == NULL || sscanf(sp + 1, send ? "%d->%d" : "%d<-%d", &me, &peer) != 2 || peer < 0 ||
            me < 0 || peer >= G->size || me >= G->size) {
            return cp_trace_fail(t, o->line, "'%.40s': no peer within the group's %d ranks", pname,
                                 G->size);
        }
        if (G->members[me] != r->rank) {
            return cp_trace_fail(t, o->line,
                                 "'%.40s': group rank %d is rank %d, not this file's %d", pname, me,
                                 G->members[me], r->rank);
        }
        r->peer = G->members[peer];
    }
    return 0;
}

/* The marker torch's endCoalescing() records after a coalesced call: "nccl:" its OpType in
 * capitals, "_coalesced" ("nccl:REDUCE_SCATTER_coalesced"; older torch: "nccl:coalesced",
 * which cp_trace_op knows), no tensors.  "nccl:allreduce_coalesced" is an op. */
static int end_marker(const char *pn)
{
    const char *p = strchr(pn, ':') != NULL ? strchr(pn, ':') + 1 : pn;
    size_t n = strlen(p), m = strlen("_coalesced");
    if (n <= m || strcmp(p + n - m, "_coalesced") != 0) {
        return 0;
    }
    for (size_t i = 0; i < n - m; i++) {
        if (p[i] != '_' && (p[i] < 'A' || p[i] > 'Z')) {
            return 0;
        }
    }
    return 1;
}

/* torch's reduce_scatter of unequal blocks and all_gather of unequal tensors are coalesced
 * calls of "nccl:_reduce_oop" / "nccl:_broadcast_oop", the i-th to group rank i: r's root,
 * from its place in its call (run). */
static void oop_root(const cp_trace_t *t, collprof_trace_op_row_t *r, const char *pn, int run)
{
    const cp_trace_group_t *G = &t->groups[r->group];
    if (strstr(pn, "_oop") != NULL && run < G->size) {
        r->root = G->members[run];
    }
}

/* Hand the held-back entry on. */
static int release(fr_t *f)
{
    if (!f->has_pending) {
        return 0;
    }
    f->has_pending = 0;
    return cp_trace_add(f->t, f->pending_line, &f->pending, NULL, NULL, 0);
}

static int entry(void *ctx, const cp_json_t *o)
{
    fr_t *f = ctx;
    cp_trace_t *t = f->t;
    const cp_json_t *pn = cp_json_get(o, "profiling_name"), *pg = cp_json_get(o, "process_group");
    int async;
    const char *op = pn != NULL && pn->type == CP_JSON_STR ? cp_trace_op(pn->str, &async) : NULL;
    if (pn != NULL && pn->type == CP_JSON_STR && end_marker(pn->str)) {
        return 0;
    }
    if (o->type != CP_JSON_OBJ || op == NULL) {
        return cp_trace_fail(t, o->line,
                             "an entry without a 'profiling_name' the model knows%s%.40s",
                             pn != NULL && pn->type == CP_JSON_STR ? ": " : "",
                             pn != NULL && pn->type == CP_JSON_STR ? pn->str : "");
    }
    if (op[0] == '\0') {
        return 0;
    }
    if (pg == NULL || pg->type != CP_JSON_ARR || pg->n < 1 || pg->kids[0]->type != CP_JSON_STR) {
        return cp_trace_fail(t, o->line, "an entry without 'process_group' [name, desc]");
    }
    collprof_trace_op_row_t r;
    cp_trace_row_init(&r);
    r.rank = f->rank;
    cp_trace_copy(r.op, sizeof(r.op), op);
    cp_trace_copy(r.source_name, sizeof(r.source_name), pn->str);
    if ((r.group = cp_trace_group(t, o->line, pg->kids[0]->str, pg->kids[0]->str, "")) < 0 ||
        entry_data(f, o, &r, pn->str) != 0) {
        return -1;
    }
    const cp_json_t *p2p = cp_json_get(o, "is_p2p"), *dur = cp_json_get(o, "duration_ms");
    int is_p2p = p2p != NULL && p2p->type == CP_JSON_BOOL && p2p->boolean;
    int64_t v;
    r.source_seq =
        cp_trace_int(cp_json_get(o, is_p2p ? "p2p_seq_id" : "collective_seq_id"), 0, 9e15, &v) == 0
            ? v
            : -1;
    r.t_issue_ns = cp_trace_int(cp_json_get(o, "time_created_ns"), 0, 9e18, &v) == 0 ? v : -1;
    if (dur != NULL && dur->type == CP_JSON_NUM && dur->num >= 0 && dur->num < 1e9) {
        r.dur_ns = (int64_t)(dur->num * 1e6 + 0.5);
    } else {
        f->no_dur++;
    }
    const cp_json_t *st = cp_json_get(o, "state");
    f->not_done += st != NULL && st->type == CP_JSON_STR && strcmp(st->str, "completed") != 0;
    int joins = f->has_pending && f->pending.group == r.group && f->pending_p2p == is_p2p &&
                r.source_seq >= 0 && f->pending.source_seq == r.source_seq;
    if (joins) {
        if (f->pending.coalesced < 0) {
            f->pending.coalesced = t->next_coalesced++;
        }
        r.coalesced = f->pending.coalesced;
    }
    f->run = joins ? f->run + 1 : 0;
    oop_root(t, &r, pn->str, f->run);
    if (release(f) != 0) {
        return -1;
    }
    f->pending = r;
    f->pending_line = o->line;
    f->pending_p2p = is_p2p;
    f->has_pending = 1;
    return 0;
}

/* A pickle dump (the file torch writes on a timeout) starts with PROTO (0x80). */
static int refuse_pickle(cp_trace_t *t, int fd)
{
    unsigned char c = 0;
    ssize_t n = pread(fd, &c, 1, 0);
    if (n == 1 && c == 0x80) {
        return cp_trace_fail(t, 0,
                             "a pickle dump (written on a timeout): import reads the JSON of "
                             "torch._C._distributed_c10d._dump_nccl_trace_json() "
                             "(_dump_fr_trace_json() in newer torch)");
    }
    return 0;
}

/* One rank's file; counts[0..1] += its entries without a duration, and not completed. */
static int fr_file(cp_trace_t *t, const char *path, int rank, int64_t *counts)
{
    static const char *const keep[] = {"version", "pg_config", NULL};
    fr_t f = {.t = t, .rank = rank};
    cp_json_opts_t opts = {keep, 0};
    cp_json_t *root = NULL;
    cp_json_error_t e;
    int fd = cp_trace_open_input(t, path);
    int rc = fd < 0 || refuse_pickle(t, fd) != 0 ? -1 : cp_json_read_fd(fd, &opts, NULL, &root, &e);
    if (rc == 0) {
        rc = groups(&f, root);
    } else if (fd >= 0 && t->err[0] == '\0') {
        cp_trace_fail(t, e.line, "not valid JSON: %s", e.msg);
    }
    cp_json_free(root);
    if (rc == 0 && lseek(fd, 0, SEEK_SET) == 0) {
        cp_json_stream_t s = {"entries", 0, entry, &f, NULL};
        rc = cp_json_read_fd(fd, &opts, &s, &root, &e);
        cp_json_free(root);
        rc = rc == 0 ? release(&f) : e.stopped ? -1 : cp_trace_fail(t, e.line, "%s", e.msg);
    }
    if (fd >= 0) {
        close(fd);
    }
    counts[0] += f.no_dur;
    counts[1] += f.not_done;
    return rc;
}

int cp_trace_fr(cp_trace_t *t, char **paths, int n)
{
    snprintf(t->format, sizeof(t->format), "flight-recorder-json");
    snprintf(t->tool, sizeof(t->tool), "pytorch-flight-recorder");
    int64_t counts[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        int rank = cp_trace_rank_of_name(paths[i]);
        t->shown = paths[i];
        if (rank < 0 && n > 1) {
            return cp_trace_fail(t, 0,
                                 "no rank number in the file name (the dump's <prefix><rank>)");
        }
        rank = rank < 0 ? 0 : rank;
        if (rank < t->nseq && t->next_seq[rank] > 0) {
            return cp_trace_fail(t, 0, "a second file of rank %d", rank);
        }
        if (fr_file(t, paths[i], rank, counts) != 0) {
            return -1;
        }
    }
    snprintf(
        t->note, sizeof(t->note),
        "Flight Recorder: issue times are time_created_ns (enqueue); durations only with "
        "TORCH_NCCL_ENABLE_TIMING=1 (%" PRId64 " entries without one); the ring keeps the "
        "last TORCH_FR_BUFFER_SIZE (2000) entries of each rank; %" PRId64
        " entries not completed; no roots but _reduce_oop's and _broadcast_oop's (their place in a "
        "coalesced call)",
        counts[0], counts[1]);
    return 0;
}
