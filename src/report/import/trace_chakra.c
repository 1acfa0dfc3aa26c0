/*
 * Chakra's execution trace in protobuf (mlcommons/chakra, the .et files its
 * converter writes, one per rank): messages one after the other, each
 * preceded by its length as a varint (protolib's encodeMessage), a
 * GlobalMetadata first, then Nodes (chakra_et.proto: the fields read).  The
 * communication nodes are COMM_COLL_NODE (attrs comm_type, a
 * CollectiveCommType, and comm_size in bytes), COMM_SEND_NODE and
 * COMM_RECV_NODE (comm_size, and the peer in comm_dst or comm_src, taken as
 * global ranks, as ASTRA-sim's feeder reads them); pg_name names the group,
 * whose members come from Chakra's comm_group.json ({"pg_name": [global
 * ranks]}), given among the files (the one whose name ends in .json).  A node
 * without pg_name is of the group of every rank (one .et file each).  Nodes
 * are read in the file's order (the converter writes them by id), one at a
 * time.  Chakra records no element type: the ops carry bytes only.  The rank
 * of a file is the last number in its name.  Decoded with protobuf-c; without
 * it the format is refused.
 */
#include "config.h"

#include "report/import/json.h"
#include "report/import/trace.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if HAVE_PROTOBUF_C
#include "chakra_et.pb-c.h"

/* The largest message read: Chakra's nodes are small; inputs of a huge op are a few MiB. */
#define CHAKRA_MAX_MSG (64u << 20)

typedef struct chakra {
    cp_trace_t *t;
    FILE *in;
    long long off, at; /* the file's position; the offset of the message being read */
    int rank, nranks, world, have_groups;
    uint8_t *buf;
    size_t cap;
    struct pb_block *arena; /* the Node being read (chakra_file) */
} chakra_t;

/* The message at the file's position into c->buf: its length, 0 at the end, -1 bad. */
static long long next_msg(chakra_t *c)
{
    uint64_t len = 0;
    int ch = 0, shift = 0, n = 0;
    c->at = c->off;
    while ((ch = getc(c->in)) != EOF && shift < 35) {
        len |= (uint64_t)(ch & 0x7f) << shift;
        shift += 7;
        n++;
        if (!(ch & 0x80)) {
            break;
        }
    }
    if (n == 0 && ch == EOF) {
        return 0;
    }
    if (ch == EOF || (ch & 0x80)) {
        return cp_trace_fail(c->t, 0, "offset %lld: truncated or bad length prefix", c->at);
    }
    if (len == 0 || len > CHAKRA_MAX_MSG) {
        return cp_trace_fail(c->t, 0, "offset %lld: a message of %" PRIu64 " bytes (at most %u)",
                             c->at, len, CHAKRA_MAX_MSG);
    }
    if (len > c->cap) {
        uint8_t *b = realloc(c->buf, len);
        if (b == NULL) {
            return cp_trace_fail(c->t, 0, "out of memory");
        }
        c->buf = b;
        c->cap = len;
    }
    size_t got = fread(c->buf, 1, len, c->in);
    if (got != len) {
        return cp_trace_fail(
            c->t, 0, "offset %lld: truncated: a message of %" PRIu64 " bytes, %zu in the file",
            c->at, len, got);
    }
    c->off += n + (long long)len;
    return (long long)len;
}

/* An attr's integer value (any integer type) in *v: 1, 0 when absent, -1 not an integer. */
static int attr_int(const CollprofChakra__Node *nd, const char *name, int64_t *v)
{
    for (size_t i = 0; i < nd->n_attr; i++) {
        const CollprofChakra__Attr *a = nd->attr[i];
        if (strcmp(a->name, name) != 0) {
            continue;
        }
        switch (a->value_case) {
        case COLLPROF_CHAKRA__ATTR__VALUE_INT32_VAL: *v = a->int32_val; return 1;
        case COLLPROF_CHAKRA__ATTR__VALUE_INT64_VAL: *v = a->int64_val; return 1;
        case COLLPROF_CHAKRA__ATTR__VALUE_UINT32_VAL: *v = a->uint32_val; return 1;
        case COLLPROF_CHAKRA__ATTR__VALUE_UINT64_VAL:
            *v = a->uint64_val > INT64_MAX ? -1 : (int64_t)a->uint64_val;
            return 1;
        case COLLPROF_CHAKRA__ATTR__VALUE_SINT32_VAL: *v = a->sint32_val; return 1;
        case COLLPROF_CHAKRA__ATTR__VALUE_SINT64_VAL: *v = a->sint64_val; return 1;
        default: return -1;
        }
    }
    return 0;
}

static const char *attr_str(const CollprofChakra__Node *nd, const char *name)
{
    for (size_t i = 0; i < nd->n_attr; i++) {
        if (!strcmp(nd->attr[i]->name, name) &&
            nd->attr[i]->value_case == COLLPROF_CHAKRA__ATTR__VALUE_STRING_VAL) {
            return nd->attr[i]->string_val;
        }
    }
    return NULL;
}

/* Is rank a member of group g? */
static int member(const cp_trace_group_t *G, int64_t rank)
{
    for (int i = 0; i < G->size; i++) {
        if (G->members[i] == rank) {
            return 1;
        }
    }
    return 0;
}

/* The node's group: pg_name's (from comm_group.json), else every rank's. */
static int node_group(chakra_t *c, const CollprofChakra__Node *nd, collprof_trace_op_row_t *r)
{
    cp_trace_t *t = c->t;
    const char *pg = attr_str(nd, "pg_name");
    if (pg == NULL && c->world < 0) { /* every rank: one .et file each */
        int *m = malloc((size_t)c->nranks * sizeof(int));
        for (int i = 0; m != NULL && i < c->nranks; i++) {
            m[i] = i;
        }
        c->world = m == NULL ? cp_trace_fail(t, 0, "out of memory")
                             : cp_trace_group(t, 0, "(world)", "world", "every rank (no pg_name)");
        if (c->world >= 0 &&
            (t->groups[c->world].size > 0 || cp_trace_members(t, 0, c->world, m, c->nranks) != 0)) {
            c->world = cp_trace_fail(t, 0, "comm_group.json has a group '(world)'");
        }
        free(m);
    }
    if (pg == NULL) {
        r->group = c->world;
    } else {
        size_t before = t->ngroups;
        r->group = cp_trace_group(t, 0, pg, pg, "");
        if (r->group >= 0 && t->ngroups > before) {
            return cp_trace_fail(t, 0, "offset %lld: pg_name '%.40s' is not a group of %s", c->at,
                                 pg,
                                 c->have_groups ? "the comm_group.json given"
                                                : "any file: no comm_group.json among the files");
        }
    }
    if (r->group < 0) {
        return -1;
    }
    if (!member(&t->groups[r->group], r->rank)) {
        return cp_trace_fail(t, 0, "offset %lld: rank %d is not a member of group '%s'", c->at,
                             r->rank, t->groups[r->group].name);
    }
    return 0;
}

/* A COMM_* node into r: 0, 1 when not a comm node, -1 bad. */
static int comm_node(chakra_t *c, const CollprofChakra__Node *nd, collprof_trace_op_row_t *r)
{
    static const char *const coll[] = {
        "all_reduce", "reduce",     "all_gather",     "gather",         "scatter",
        "broadcast",  "all_to_all", "reduce_scatter", "reduce_scatter", "barrier"};
    cp_trace_t *t = c->t;
    int64_t type = -1, size = 0, peer = -1;
    const char *name = nd->type == 5 ? "send" : nd->type == 6 ? "recv" : NULL;
    if (nd->type < 5 || nd->type > 7) {
        return 1;
    }
    if (nd->type == 7 && (attr_int(nd, "comm_type", &type) != 1 || type < 0 || type > 9)) {
        return cp_trace_fail(t, 0,
                             "offset %lld: a COMM_COLL_NODE without a comm_type the "
                             "model knows (0..9)",
                             c->at);
    }
    name = name != NULL ? name : coll[type];
    int has = attr_int(nd, "comm_size", &size);
    if (has < 0 || (has == 0 && type != 9) || size < 0 || size > 1e15) {
        return cp_trace_fail(t, 0, "offset %lld: '%s' without a comm_size in 0..1e15 bytes", c->at,
                             name);
    }
    int async;
    cp_trace_row_init(r);
    r->rank = c->rank;
    cp_trace_copy(r->op, sizeof(r->op), cp_trace_op(name, &async));
    cp_trace_copy(r->source_name, sizeof(r->source_name), nd->name);
    r->bytes = (uint64_t)size;
    r->source_seq = nd->id <= INT64_MAX ? (int64_t)nd->id : -1;
    if (nd->start_time_micros > 0 && nd->start_time_micros < 9000000000000000ull / 1000) {
        r->t_issue_ns = (int64_t)nd->start_time_micros * 1000;
    }
    if (nd->duration_micros > 0 && nd->duration_micros < 9000000000000000ull / 1000) {
        r->dur_ns = (int64_t)nd->duration_micros * 1000;
    }
    if (node_group(c, nd, r) != 0) {
        return -1;
    }
    if (nd->type != 7) {
        const char *key = nd->type == 5 ? "comm_dst" : "comm_src";
        if (attr_int(nd, key, &peer) != 1 || !member(&t->groups[r->group], peer)) {
            return cp_trace_fail(t, 0, "offset %lld: '%s' without a %s in group '%s'", c->at, name,
                                 key, t->groups[r->group].name);
        }
        r->peer = (int32_t)peer;
    }
    return 0;
}

/* protobuf-c's allocations for one message, bumped from blocks kept for the next message (a
 * Node is a dozen small pieces: a malloc and a free for each were a fifth of the import). */
typedef struct pb_block {
    struct pb_block *prev;
    size_t used, size;
    _Alignas(max_align_t) unsigned char data[];
} pb_block_t;

static void *pb_alloc(void *data, size_t size)
{
    pb_block_t **head = data, *b = *head;
    if (size > SIZE_MAX / 2) {
        return NULL;
    }
    size = (size + 15) & ~(size_t)15;
    if (b == NULL || b->size - b->used < size) {
        size_t room = size > 65536 ? size : 65536;
        if ((b = malloc(sizeof(*b) + room)) == NULL) {
            return NULL;
        }
        *b = (pb_block_t){.prev = *head, .size = room};
        *head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    return p;
}

static void pb_free(void *data, void *p)
{
    (void)data; /* freed with the message's blocks (pb_reset) */
    (void)p;
}

/* The last message's allocations gone: the first block kept, empty; all (keep 0). */
static void pb_reset(pb_block_t **head, int keep)
{
    while (*head != NULL && ((*head)->prev != NULL || !keep)) {
        pb_block_t *prev = (*head)->prev;
        free(*head);
        *head = prev;
    }
    if (*head != NULL) {
        (*head)->used = 0;
    }
}

/* One rank's .et file, streamed a message at a time. */
static int chakra_file(chakra_t *c, const char *path)
{
    cp_trace_t *t = c->t;
    int fd = cp_trace_open_input(t, path);
    unsigned char magic[2] = {0, 0};
    if (fd < 0) {
        return -1;
    }
    if (pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        close(fd);
        return cp_trace_fail(t, 0, "gzip-compressed: gunzip it first");
    }
    c->in = fdopen(fd, "rb");
    if (c->in == NULL) {
        close(fd);
        return cp_trace_fail(t, 0, "cannot read it");
    }
    c->off = 0;
    long long len = next_msg(c);
    CollprofChakra__Metadata *md =
        len > 0 ? collprof_chakra__metadata__unpack(NULL, (size_t)len, c->buf) : NULL;
    int rc = md != NULL ? 0
             : len < 0  ? -1
                        : cp_trace_fail(t, 0,
                                        "not a Chakra .et file (no "
                                         "GlobalMetadata first)");
    if (md != NULL) {
        collprof_chakra__metadata__free_unpacked(md, NULL);
    }
    ProtobufCAllocator arena = {pb_alloc, pb_free, &c->arena};
    while (rc == 0 && (len = next_msg(c)) > 0) {
        CollprofChakra__Node *nd = collprof_chakra__node__unpack(&arena, (size_t)len, c->buf);
        collprof_trace_op_row_t r;
        rc = nd == NULL ? cp_trace_fail(t, 0, "offset %lld: not a Chakra Node message", c->at)
                        : comm_node(c, nd, &r);
        rc = rc == 0 ? cp_trace_add(t, 0, &r, NULL, NULL, 0) : rc > 0 ? 0 : -1;
        pb_reset(&c->arena, 1);
    }
    fclose(c->in);
    c->in = NULL;
    return rc == 0 && len == 0 ? 0 : -1;
}
#endif

/* comm_group.json: {"pg_name": [global ranks], ...}: the groups and their members. */
static int comm_groups(cp_trace_t *t, const char *path)
{
    cp_json_error_t e;
    cp_json_opts_t opts = {NULL, 0};
    cp_json_t *root = NULL;
    int fd = cp_trace_open_input(t, path);
    int rc = fd < 0 ? -1 : cp_json_read_fd(fd, &opts, NULL, &root, &e);
    if (fd >= 0) {
        close(fd);
    }
    if (fd >= 0 && rc != 0) {
        return cp_trace_fail(t, e.line, "not valid JSON: %s", e.msg);
    }
    if (rc == 0 && (root == NULL || root->type != CP_JSON_OBJ)) {
        rc = cp_trace_fail(t, 1, "not a comm_group.json ({\"pg_name\": [ranks]})");
    }
    for (size_t i = 0; rc == 0 && i < root->n; i++) {
        const cp_json_t *v = root->kids[i];
        int *m = v->type == CP_JSON_ARR && v->n > 0 && v->n <= CP_TRACE_MAX_RANKS
                     ? malloc(v->n * sizeof(int))
                     : NULL;
        int g = cp_trace_group(t, v->line, root->keys[i], root->keys[i], "");
        for (size_t k = 0; m != NULL && rc == 0 && k < v->n; k++) {
            int64_t r = 0;
            rc = cp_trace_int(v->kids[k], 0, CP_TRACE_MAX_RANKS - 1, &r);
            m[k] = (int)r;
        }
        rc = g < 0 ? -1
             : m == NULL || rc != 0
                 ? cp_trace_fail(t, v->line, "group '%.40s': not a list of ranks", root->keys[i])
                 : cp_trace_members(t, v->line, g, m, (int)v->n);
        free(m);
    }
    cp_json_free(root);
    return rc;
}

/* The .json among paths (comm_group.json): its index, -1 none, -2 two (the error set). */
static int groups_file(cp_trace_t *t, char **paths, int n)
{
    int at = -1;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(paths[i]);
        if (len >= 5 && !strcmp(paths[i] + len - 5, ".json")) {
            if (at >= 0) {
                t->shown = paths[i];
                cp_trace_fail(t, 0, "a second comm_group.json");
                return -2;
            }
            at = i;
        }
    }
    return at;
}

int cp_trace_chakra_et(cp_trace_t *t, char **paths, int n)
{
    snprintf(t->format, sizeof(t->format), "chakra-et");
    snprintf(t->tool, sizeof(t->tool), "chakra");
    snprintf(t->note, sizeof(t->note),
             "Chakra .et: bytes only (Chakra records no element type or counts); times from "
             "start_time_micros and duration_micros where set; comm_src/comm_dst taken as "
             "global ranks; no waits or coalesced calls");
#if HAVE_PROTOBUF_C
    int g = groups_file(t, paths, n);
    if (g == -2) {
        return -1;
    }
    t->shown = g >= 0 ? paths[g] : NULL;
    if (g >= 0 && comm_groups(t, paths[g]) != 0) {
        return -1;
    }
    int nranks = n - (g >= 0), rc = 0;
    chakra_t c = {.t = t, .nranks = nranks, .world = -1, .have_groups = g >= 0};
    for (int i = 0; rc == 0 && i < n; i++) {
        if (i == g) {
            continue;
        }
        t->shown = paths[i];
        c.rank = cp_trace_rank_of_name(paths[i]);
        if (c.rank < 0 && nranks > 1) {
            rc = cp_trace_fail(t, 0, "no rank number in the file name (<prefix>.<rank>.et)");
        } else if ((c.rank = c.rank < 0 ? 0 : c.rank) < t->nseq && t->next_seq[c.rank] > 0) {
            rc = cp_trace_fail(t, 0, "a second file of rank %d", c.rank);
        } else {
            rc = chakra_file(&c, paths[i]);
        }
    }
    free(c.buf);
    pb_reset(&c.arena, 0);
    return rc;
#else
    (void)comm_groups;
    (void)groups_file;
    (void)paths;
    (void)n;
    return cp_trace_fail(t, 0,
                         "chakra-et: this collprof-report was built without protobuf-c "
                         "(install libprotobuf-c-dev and protobuf-c-compiler, then configure "
                         "and build again)");
#endif
}
