/*
 * The trace model's bookkeeping (trace.h): the sources' names of ops and
 * element types in collprof's words, the groups by the key they are joined
 * on, and each rank's order.
 */
#include "config.h"

#include "report/import/import.h"
#include "report/import/json.h"
#include "report/import/trace.h"

#include <collprof/vocab.h>

#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* name lower case, without a "lib:" prefix, '_', '-', ' ' and what follows a space ("nccl:send
 * 0->1"), into k */
static void squeeze(const char *name, char *k, size_t len)
{
    const char *colon = strchr(name, ':');
    const char *p = colon != NULL ? colon + 1 : name;
    size_t n = 0;
    for (; *p != '\0' && n + 1 < len; p++) {
        if (*p == ' ' && n > 0) {
            break;
        }
        if (*p != '_' && *p != '-' && *p != ' ') {
            k[n++] = (char)tolower((unsigned char)*p);
        }
    }
    k[n] = '\0';
}

/* k without a suffix torch adds ("base", "intotensor", "tensor", "coalesced", "single", "oop":
 * Flight Recorder's "_reduce_oop", "_broadcast_oop") */
static void strip_suffixes(char *k)
{
    static const char *const suffixes[] = {"coalesced", "intotensor", "tensor",
                                           "base",      "single",     "oop"};
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
            size_t n = strlen(k), m = strlen(suffixes[i]);
            if (n > m && !strcmp(k + n - m, suffixes[i])) {
                k[n - m] = '\0';
                again = 1;
            }
        }
    }
}

/* The names the sources use, looked up once each: a trace repeats a few names millions of
 * times (collprof-report is one thread).  A name too long for an entry is looked up every
 * time. */
typedef struct memo {
    char name[40];
    const char *value;
    int flag;
} memo_t;
enum { MEMO_SIZE = 8 };

/* The entry of name in m[MEMO_SIZE] (value set), or the one to fill (name set, value NULL),
 * or NULL when name does not fit. */
static memo_t *memo_find(memo_t *m, unsigned *next, const char *name)
{
    size_t len = strnlen(name, sizeof(m->name));
    if (len == sizeof(m->name)) {
        return NULL;
    }
    for (int i = 0; i < MEMO_SIZE; i++) {
        if (m[i].value != NULL && !memcmp(m[i].name, name, len + 1)) {
            return &m[i];
        }
    }
    memo_t *e = &m[(*next)++ % MEMO_SIZE];
    memcpy(e->name, name, len + 1);
    e->value = NULL;
    return e;
}

static const char *trace_op(const char *name, int *async)
{
    char k[48];
    *async = 0;
    squeeze(name, k, sizeof(k));
    if (!strcmp(k, "coalesced") || !strcmp(k, "init") || !strcmp(k, "batchisendirecv")) {
        return ""; /* markers: the ops around them are the ops */
    }
    strip_suffixes(k);
    static const char *const own[][2] = {{"send", "send"},
                                         {"recv", "recv"},
                                         {"isend", "send"},
                                         {"irecv", "recv"},
                                         {"wait", "wait"},
                                         {"alltoallv", "alltoallv"},
                                         {"allgatherv", "allgatherv"}};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        if (!strcmp(k, own[i][0])) {
            *async = k[0] == 'i';
            return own[i][1];
        }
    }
    int op = cp_import_op(k);
    const collprof_op_info_t *info = op >= 0 ? collprof_op_info(op) : NULL;
    return info != NULL ? info->name : NULL;
}

const char *cp_trace_op(const char *name, int *async)
{
    static memo_t memo[MEMO_SIZE];
    static unsigned next;
    memo_t *m = memo_find(memo, &next, name);
    if (m != NULL && m->value != NULL) {
        *async = m->flag;
        return m->value;
    }
    const char *op = trace_op(name, async);
    if (m != NULL) { /* an unknown name is not kept: it ends the import */
        m->value = op;
        m->flag = *async;
    }
    return op;
}

static const char *trace_dtype(const char *name)
{
    static const char *const map[][2] = {
        {"float", "float32"},     {"float32", "float32"},
        {"fp32", "float32"},      {"double", "float64"},
        {"float64", "float64"},   {"half", "float16"},
        {"float16", "float16"},   {"bfloat16", "bfloat16"},
        {"bf16", "bfloat16"},     {"int", "int32"},
        {"int32", "int32"},       {"long", "int64"},
        {"int64", "int64"},       {"char", "int8"},
        {"int8", "int8"},         {"byte", "uint8"},
        {"uint8", "uint8"},       {"bool", "uint8"},
        {"uint32", "uint32"},     {"uint64", "uint64"},
        {"c10::half", "float16"}, {"c10::bfloat16", "bfloat16"},
    };
    char k[32];
    size_t n = 0;
    for (const char *p = name; *p != '\0' && n + 1 < sizeof(k); p++) {
        k[n++] = (char)tolower((unsigned char)*p);
    }
    k[n] = '\0';
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (!strcmp(k, map[i][0])) {
            return map[i][1];
        }
    }
    return NULL;
}

const char *cp_trace_dtype(const char *name)
{
    static memo_t memo[MEMO_SIZE];
    static unsigned next;
    memo_t *m = memo_find(memo, &next, name);
    if (m != NULL && m->value != NULL) {
        return m->value;
    }
    const char *d = trace_dtype(name);
    if (m != NULL) {
        m->value = d;
    }
    return d;
}

int cp_trace_dtype_size(const char *dtype)
{
    static memo_t memo[MEMO_SIZE];
    static unsigned next;
    memo_t *m = memo_find(memo, &next, dtype);
    if (m != NULL && m->value != NULL) {
        return m->flag;
    }
    int size = 0;
    for (int i = 0; i < COLLPROF_DTYPE_COUNT && size == 0; i++) {
        size = !strcmp(collprof_dtype_name(i), dtype) ? (int)collprof_dtype_size(i) : 0;
    }
    if (m != NULL) {
        m->value = "";
        m->flag = size;
    }
    return size;
}

int cp_trace_group(cp_trace_t *t, int line, const char *key, const char *name, const char *desc)
{
    int added;
    long id = cp_strset_put(&t->keys, key, strlen(key), &added);
    if (id < 0) {
        return cp_trace_fail(t, line, "out of memory");
    }
    if (!added) {
        return (int)id;
    }
    if ((size_t)id >= CP_TRACE_MAX_GROUPS) {
        return cp_trace_fail(t, line, "more than %d process groups", CP_TRACE_MAX_GROUPS);
    }
    if (t->ngroups == t->gcap) {
        size_t cap = t->gcap ? t->gcap * 2 : 16;
        cp_trace_group_t *g = realloc(t->groups, cap * sizeof(*g));
        if (g == NULL) {
            return cp_trace_fail(t, line, "out of memory");
        }
        t->groups = g;
        t->gcap = cap;
    }
    cp_trace_group_t *g = &t->groups[t->ngroups++];
    memset(g, 0, sizeof(*g));
    cp_text_sanitize(key, g->key, sizeof(g->key));
    cp_text_sanitize(name, g->name, sizeof(g->name));
    cp_text_sanitize(desc, g->desc, sizeof(g->desc));
    return (int)id;
}

int cp_trace_members(cp_trace_t *t, int line, int gid, const int *members, int n)
{
    cp_trace_group_t *g = &t->groups[gid];
    if (g->size > 0) {
        if (g->size != n || memcmp(g->members, members, (size_t)n * sizeof(int)) != 0) {
            return cp_trace_fail(t, line, "group '%s': members differ from another file's",
                                 g->name);
        }
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (members[i] < 0 || members[i] >= CP_TRACE_MAX_RANKS) {
            return cp_trace_fail(t, line, "group '%s': member %d is not a rank", g->name,
                                 members[i]);
        }
        for (int j = 0; j < i; j++) {
            if (members[j] == members[i]) {
                return cp_trace_fail(t, line, "group '%s': rank %d twice", g->name, members[i]);
            }
        }
    }
    g->members = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (g->members == NULL) {
        return cp_trace_fail(t, line, "out of memory");
    }
    memcpy(g->members, members, (size_t)n * sizeof(int));
    g->size = n;
    return 0;
}

void cp_trace_row_init(collprof_trace_op_row_t *r)
{
    memset(r, 0, sizeof(*r));
    r->root = r->peer = -1;
    r->req = r->coalesced = r->split_off = r->t_issue_ns = r->dur_ns = r->source_seq = -1;
}

/* rank's next seq, the table grown to hold it: >= 0, or -1 */
static int64_t next_seq(cp_trace_t *t, int line, int rank)
{
    if (rank < 0 || rank >= CP_TRACE_MAX_RANKS) {
        return cp_trace_fail(t, line, "rank %d out of range (0..%d)", rank, CP_TRACE_MAX_RANKS - 1);
    }
    if (rank >= t->nseq) {
        int n = t->nseq ? t->nseq : 16;
        while (n <= rank) {
            n *= 2;
        }
        int64_t *s = realloc(t->next_seq, (size_t)n * sizeof(*s));
        if (s == NULL) {
            return cp_trace_fail(t, line, "out of memory");
        }
        memset(s + t->nseq, 0, (size_t)(n - t->nseq) * sizeof(*s));
        t->next_seq = s;
        t->nseq = n;
    }
    return t->next_seq[rank]++;
}

static int add_splits(cp_trace_t *t, int line, const uint64_t *split, int n)
{
    if (t->nsbuf + (size_t)n > t->scap) {
        size_t cap = t->scap ? t->scap : 4096;
        while (cap < t->nsbuf + (size_t)n) {
            cap *= 2;
        }
        collprof_trace_split_row_t *s = realloc(t->sbuf, cap * sizeof(*s));
        if (s == NULL) {
            return cp_trace_fail(t, line, "out of memory");
        }
        t->sbuf = s;
        t->scap = cap;
    }
    for (int i = 0; i < n; i++) {
        t->sbuf[t->nsbuf++].count = split[i];
    }
    return 0;
}

int cp_trace_add(cp_trace_t *t, int line, collprof_trace_op_row_t *r, const uint64_t *in_split,
                 const uint64_t *out_split, int nsplit)
{
    int64_t seq = next_seq(t, line, r->rank);
    if (seq < 0) {
        return -1;
    }
    r->seq = seq;
    if (nsplit > 0) {
        r->split_off = (int64_t)(t->nsplits + t->nsbuf);
        r->nsplit = nsplit;
        if (add_splits(t, line, in_split, nsplit) != 0 ||
            add_splits(t, line, out_split, nsplit) != 0) {
            return -1;
        }
    }
    t->buf[t->nbuf++] = *r;
    /* a block of ops, or of split sizes (8192 all-to-all-v of thousands of ranks are many) */
    if ((t->nbuf == CP_TRACE_BLOCK || t->nsbuf >= 64 * CP_TRACE_BLOCK) && cp_trace_flush(t) != 0) {
        return cp_trace_fail(t, line, "cannot write the output");
    }
    return 0;
}

int cp_trace_rank_of_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    const char *end = NULL;
    for (const char *p = base; *p != '\0'; p++) {
        if (isdigit((unsigned char)*p)) {
            end = p;
        }
    }
    if (end == NULL) {
        return -1;
    }
    const char *start = end;
    while (start > base && isdigit((unsigned char)start[-1])) {
        start--;
    }
    if (end - start >= 7) {
        return -1;
    }
    int rank = atoi(start);
    return rank < CP_TRACE_MAX_RANKS ? rank : -1;
}

int cp_trace_int(const cp_json_t *v, double lo, double hi, int64_t *out)
{
    if (v != NULL && v->type == CP_JSON_NUM && v->is_int) { /* the common case: no floor() */
        double d = (double)v->inum;
        if (d < lo || d > hi) {
            return -1;
        }
        *out = (int64_t)v->inum;
        return 0;
    }
    if (v == NULL || v->type != CP_JSON_NUM || v->num != floor(v->num) || v->num < lo ||
        v->num > hi) {
        return -1;
    }
    *out = v->is_int ? (int64_t)v->inum : (int64_t)v->num;
    return 0;
}

int cp_trace_open_input(cp_trace_t *t, const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    const char *why = NULL;
    if (fd < 0) {
        why = strerror(errno);
    } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        why = "not a regular file (a FIFO, device, socket or directory)";
    } else if (st.st_size == 0) {
        why = "empty file";
    }
    if (why != NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return cp_trace_fail(t, 0, "%s", why);
    }
    return fd;
}
