/*
 * The recorder: every op NCCL starts gets a place in the process's issue
 * order; it is written, one JSON line (docs/replay.md, "Recording from NCCL
 * programs"), once it and every op before it are complete: stopped on the
 * host and, where NCCL times the kernel (v4+), every kernel channel stopped
 * on the GPU.  So the file is in issue order across communicators, and memory
 * holds only the ops in flight.  One mutex guards everything: NCCL calls from
 * the user's threads and from its proxy thread.  What NCCL holds are handles
 * (ncclprof_reg.c): an op is freed once written and stopped on the host, and a
 * kernel channel NCCL starts on it after that (more than it announced), a
 * second stop, or a stop of something never started, finds no handle and is
 * ignored; whatever of a communicator NCCL never stopped is freed at its end,
 * and an event on a communicator already finalized is ignored too.
 */
#include "ncclprof.h"
#include "ncclprof_api.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

/* ops waiting behind an incomplete one before that one is written as it is */
#define NP_MAX_PENDING 4096

typedef struct np_group {
    int kind;         /* NP_H_GROUP */
    uint64_t id, csn; /* csn: its communicator's sn, 0 none */
    void *h;          /* NCCL's handle: NULL once stopped */
    int nops, refs;   /* refs: NCCL's handle and each op */
} np_group_t;

typedef struct np_op {
    int kind;        /* NP_H_OP */
    np_comm_t *comm; /* NULL once written */
    uint64_t csn;    /* its communicator's sn */
    void *h;         /* NCCL's handle */
    int p2p, ce;
    char func[24], dtype[24], algo[16], proto[16];
    uint64_t seq, issue;
    size_t count;
    int root, peer;
    int nch_expected, nch_started, nch_done, stopped, written;
    int64_t cpu_start, cpu_stop;
    uint64_t gpu_start, gpu_stop; /* 0: none */
    np_group_t *grp;
    struct np_op *next;
} np_op_t;

typedef struct np_kch {
    int kind;     /* NP_H_KCH */
    void *op, *h; /* the handles of its op and its own */
    uint64_t csn, start, stop;
} np_kch_t_;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static int ncomms, noted;
static np_op_t *head, *tail;
static size_t pending;
static uint64_t next_issue, next_group, next_comm = 1;
static char host[64];

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* bytes of one element of NCCL's type name, 0 unknown */
static int dtype_size(const char *t)
{
    static const struct {
        const char *n;
        int s;
    } m[] = {{"ncclInt8", 1},    {"ncclUint8", 1},    {"ncclInt32", 4},      {"ncclUint32", 4},
             {"ncclInt64", 8},   {"ncclUint64", 8},   {"ncclFloat16", 2},    {"ncclFloat32", 4},
             {"ncclFloat64", 8}, {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}};
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        if (!strcmp(t, m[i].n)) {
            return m[i].s;
        }
    }
    return 0;
}

/* a line being built: text appended, cut (never overrun) at its size */
typedef struct {
    char b[2048];
    size_t n;
} np_line_t;

static void add(np_line_t *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(np_line_t *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->b + l->n, sizeof(l->b) - l->n, fmt, ap);
    va_end(ap);
    l->n += k < 0 ? 0 : (size_t)k < sizeof(l->b) - l->n ? (size_t)k : sizeof(l->b) - l->n - 1;
}

/* s as a JSON string body (quotes, backslashes and control characters escaped) */
static void add_str(np_line_t *l, const char *s)
{
    for (; s != NULL && *s != '\0' && l->n + 8 < sizeof(l->b); s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            l->b[l->n++] = '\\';
            l->b[l->n++] = (char)c;
        } else if (c < 0x20) {
            l->n += (size_t)snprintf(l->b + l->n, 8, "\\u%04x", c);
        } else {
            l->b[l->n++] = (char)c;
        }
    }
    l->b[l->n] = '\0';
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "collprof NCCL profiler: note: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* NCCL has one profiler slot and this plugin holds it: NCCL Inspector, if asked for (set,
 * not empty, not 0), records nothing; said once (the path NCCL was given, if any). */
static void slot_note(void)
{
    const char *other = getenv("NCCL_INSPECTOR_ENABLE");
    const char *me = getenv("NCCL_PROFILER_PLUGIN");
    if (other != NULL && other[0] != '\0' && strcmp(other, "0") != 0) {
        note("NCCL loads one profiler plugin and has loaded collprof's%s%s%s, so the NCCL "
             "Inspector (NCCL_INSPECTOR_ENABLE=%s) records nothing",
             me != NULL && me[0] != '\0' ? " (" : "", me != NULL ? me : "",
             me != NULL && me[0] != '\0' ? ")" : "", other);
    }
}

/* The file, opened at the first communicator: 0, or -1 (a note said why). */
static int open_out(void)
{
    const char *dir = getenv("COLLPROF_TRACE_DIR");
    if (!noted) {
        slot_note();
    }
    if (!noted && (dir == NULL || dir[0] == '\0')) {
        note("COLLPROF_TRACE_DIR is not set: the trace goes into the current directory");
        dir = ".";
    }
    noted = 1;
    if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "host");
    }
    host[sizeof(host) - 1] = '\0';
    char path[4096];
    snprintf(path, sizeof(path), "%s/collprof-nccl-%s-pid%ld.jsonl", dir, host, (long)getpid());
    if ((out = fopen(path, "a")) == NULL) {
        note("cannot write %s (%s): nothing is recorded", path, strerror(errno));
        return -1;
    }
    setvbuf(out, NULL, _IOFBF, 1 << 16); /* about 90 lines a write; flushed at each finalize */
    return 0;
}

void *np_comm_new(int api, uint64_t hash, const char *name, int nnodes, int nranks, int rank,
                  int *mask)
{
    *mask = 0;
    np_comm_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->kind = NP_H_COMM;
    c->api = api;
    c->hash = hash;
    snprintf(c->name, sizeof(c->name), "%s", name != NULL ? name : "");
    c->nnodes = nnodes;
    c->nranks = nranks;
    c->rank = rank;
    pthread_mutex_lock(&mu);
    void *h = out != NULL || open_out() == 0 ? np_reg_add(c) : NULL;
    ncomms += h != NULL;
    c->sn = next_comm++;
    pthread_mutex_unlock(&mu);
    if (h == NULL) {
        free(c);
        return NULL;
    }
    *mask = NP_EV_GROUP | NP_EV_COLL | NP_EV_P2P;
    *mask |= api >= 4 ? NP_EV_KERNEL_CH : 0;
    *mask |= api >= 6 ? NP_EV_CE_COLL : 0;
    return h;
}

/* the element counts of an op's input and output (NCCL's count: per rank where it splits) */
static void counts(const np_op_t *o, int n, uint64_t *in, uint64_t *outc)
{
    uint64_t c = o->count, all = n > 0 ? c * (uint64_t)n : 0;
    *in = *outc = c;
    if (!strcmp(o->func, "AllGather") || !strcmp(o->func, "Gather")) {
        *outc = all;
    } else if (!strcmp(o->func, "ReduceScatter") || !strcmp(o->func, "Scatter")) {
        *in = all;
    } else if (!strcmp(o->func, "AlltoAll")) {
        *in = *outc = all;
    }
}

static void add_times(np_line_t *l, const np_op_t *o, const char *p)
{
    int gpu = o->gpu_start != 0 && o->gpu_stop >= o->gpu_start;
    int64_t dur =
        gpu ? (int64_t)(o->gpu_stop - o->gpu_start)
            : (o->stopped && o->cpu_stop >= o->cpu_start ? o->cpu_stop - o->cpu_start : -1);
    add(l,
        ",\"%s_exec_time_us\":%lld,\"%s_timing_source\":\"%s\",\"exec_time_ns\":%lld,"
        "\"cpu_start_ns\":%lld,\"cpu_stop_ns\":%lld",
        p, (long long)(dur >= 0 ? (dur + 500) / 1000 : 0), p, gpu ? "kernel_gpu" : "cpu",
        (long long)dur, (long long)o->cpu_start, (long long)(o->stopped ? o->cpu_stop : -1));
    if (gpu) {
        add(l, ",\"gpu_start_ns\":%llu,\"gpu_stop_ns\":%llu", (unsigned long long)o->gpu_start,
            (unsigned long long)o->gpu_stop);
    }
    add(l, ",\"event_trace_ts\":{\"%s_start_ts\":%lld}}}\n", p, (long long)(o->cpu_start / 1000));
}

/* the communicator's header and metadata, the same on each of its lines: made once (v3: at
 * its first op's writing, when the op has named the communicator) */
static const char *comm_head(np_comm_t *c)
{
    if (c->head[0] == '\0') {
        np_line_t l = {.n = 0};
        add(&l, "{\"header\":{\"id\":\"0x%llx\",\"comm_name\":\"", (unsigned long long)c->hash);
        add_str(&l, c->name);
        add(&l, "\",\"rank\":%d", c->rank);
        if (c->nranks > 0) {
            add(&l, ",\"n_ranks\":%d,\"nnodes\":%d", c->nranks, c->nnodes);
        }
        add(&l,
            "},\"metadata\":{\"collprof_nccl_profiler\":\"1\",\"profiler_api\":\"v%d\","
            "\"hostname\":\"",
            c->api);
        add_str(&l, host);
        add(&l, "\",\"pid\":%ld},", (long)getpid());
        snprintf(c->head, sizeof(c->head), "%s", l.b);
    }
    return c->head;
}

/* One op as a JSON line, Inspector v4.0's layout plus collprof's fields. */
static void write_op(np_op_t *o)
{
    np_line_t l = {.n = 0};
    const char *p = o->p2p ? "p2p" : "coll";
    uint64_t in, oc;
    counts(o, o->comm->nranks, &in, &oc);
    add(&l, "%s\"%s_perf\":{\"%s\":\"", comm_head(o->comm), p, p);
    add_str(&l, o->func);
    add(&l, "\",\"%s_sn\":%llu,\"%s_msg_size_bytes\":%llu", p, (unsigned long long)o->seq, p,
        (unsigned long long)(o->count * (uint64_t)dtype_size(o->dtype)));
    if (o->p2p) {
        add(&l, ",\"p2p_peer\":%d", o->peer);
    }
    add(&l, ",\"count\":%llu,\"in_count\":%llu,\"out_count\":%llu,\"dtype\":\"",
        (unsigned long long)o->count, (unsigned long long)in, (unsigned long long)oc);
    add_str(&l, o->dtype);
    add(&l, "\",\"root\":%d,\"algo\":\"", o->p2p ? -1 : o->root);
    add_str(&l, o->algo);
    add(&l, "\",\"proto\":\"");
    add_str(&l, o->proto);
    add(&l, "\",\"copy_engine\":%d,\"issue\":%llu,\"group_call\":%lld,\"group_ops\":%d", o->ce,
        (unsigned long long)o->issue, o->grp ? (long long)o->grp->id : -1LL,
        o->grp ? o->grp->nops : 1);
    add_times(&l, o, p);
    fwrite(l.b, 1, l.n, out);
}

static void group_put(np_group_t *g)
{
    if (g != NULL && --g->refs == 0) {
        free(g);
    }
}

/* Op o (written) gone: its handle and its memory.  mu held. */
static void op_free(np_op_t *o)
{
    np_reg_del(o->h);
    group_put(o->grp);
    free(o);
}

/* Stopped on the host and, on the GPU, every channel announced and every channel started. */
static int op_done(const np_op_t *o)
{
    return o->stopped && o->nch_done >= o->nch_expected && o->nch_done >= o->nch_started;
}

/* Write the ops at the head of the queue that are complete; every op through upto (NULL:
 * none) and, past NP_MAX_PENDING, the head whatever its state.  An op written and stopped is
 * freed.  mu held. */
static void drain(const np_op_t *upto)
{
    int forcing = upto != NULL;
    while (head != NULL && (forcing || op_done(head) || pending > NP_MAX_PENDING)) {
        np_op_t *o = head;
        forcing = forcing && o != upto;
        head = o->next;
        tail = head != NULL ? tail : NULL;
        pending--;
        if (out != NULL) {
            write_op(o);
        }
        o->written = 1;
        o->comm = NULL;
        if (o->stopped) {
            op_free(o);
        }
    }
}

void *np_group_start(void *ctx)
{
    np_group_t *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return NULL;
    }
    g->kind = NP_H_GROUP;
    g->refs = 1;
    pthread_mutex_lock(&mu);
    g->id = next_group++;
    const np_comm_t *c = np_reg_get(ctx, NP_H_COMM);
    g->csn = c != NULL ? c->sn : 0;
    void *h = g->h = np_reg_add(g);
    pthread_mutex_unlock(&mu);
    if (h == NULL) {
        free(g);
    }
    return h;
}

static void copy(char *dst, size_t n, const char *s)
{
    snprintf(dst, n, "%s", s != NULL ? s : "");
}

void *np_op_start(void *ctx, const np_desc_t *d)
{
    np_op_t *o = calloc(1, sizeof(*o));
    if (o == NULL) {
        return NULL;
    }
    o->kind = NP_H_OP;
    o->p2p = d->p2p;
    o->ce = d->ce;
    copy(o->func, sizeof(o->func), d->func);
    copy(o->dtype, sizeof(o->dtype), d->dtype);
    copy(o->algo, sizeof(o->algo), d->algo);
    copy(o->proto, sizeof(o->proto), d->proto);
    o->count = d->count;
    o->root = d->root;
    o->peer = d->peer;
    o->cpu_start = now_ns();
    pthread_mutex_lock(&mu);
    np_comm_t *c = np_reg_get(ctx, NP_H_COMM);
    void *h = o->h = c != NULL ? np_reg_add(o) : NULL;
    if (h == NULL) {
        pthread_mutex_unlock(&mu);
        free(o);
        return NULL;
    }
    if (c->api == 3 && c->hash == 0) { /* v3: the op names its communicator */
        c->hash = d->v3_hash;
        copy(c->name, sizeof(c->name), d->v3_name);
        c->rank = d->rank;
    }
    o->comm = c;
    o->nch_expected = c->api >= 4 ? d->nchannels : 0;
    o->csn = c->sn;
    o->seq = d->p2p ? c->p2p_sn++ : d->seq;
    o->issue = next_issue++;
    o->grp = np_reg_get(d->group, NP_H_GROUP);
    if (o->grp != NULL) {
        o->grp->refs++;
        o->grp->nops++;
    }
    if (tail != NULL) {
        tail->next = o;
    } else {
        head = o;
    }
    tail = o;
    pending++;
    pthread_mutex_unlock(&mu);
    return h;
}

void *np_kch_start(void *op, uint64_t gpu_ns)
{
    np_kch_t_ *k = calloc(1, sizeof(*k));
    if (k == NULL) {
        return NULL;
    }
    k->kind = NP_H_KCH;
    k->op = op;
    k->start = gpu_ns;
    pthread_mutex_lock(&mu);
    np_op_t *o = np_reg_get(op, NP_H_OP); /* (NULL: gone, or never an op) */
    void *h = o != NULL ? np_reg_add(k) : NULL;
    if (h != NULL) {
        k->h = h;
        k->csn = o->csn;
        o->nch_started++;
        if (gpu_ns != 0 && (o->gpu_start == 0 || gpu_ns < o->gpu_start)) {
            o->gpu_start = gpu_ns;
        }
    }
    pthread_mutex_unlock(&mu);
    if (h == NULL) {
        free(k);
    }
    return h;
}

void np_kch_state(void *kch, uint64_t gpu_ns)
{
    pthread_mutex_lock(&mu);
    np_kch_t_ *k = np_reg_get(kch, NP_H_KCH);
    if (k != NULL) {
        k->stop = gpu_ns;
    }
    pthread_mutex_unlock(&mu);
}

/* Kernel channel k stopped: its op (if still there) told, k gone.  mu held. */
static void kch_free(np_kch_t_ *k, int stopped)
{
    np_op_t *o = stopped ? np_reg_get(k->op, NP_H_OP) : NULL;
    if (o != NULL) {
        o->nch_done++;
        o->gpu_stop = k->stop > o->gpu_stop ? k->stop : o->gpu_stop;
    }
    np_reg_del(k->h);
    free(k);
}

/* NCCL's handle of group g gone.  mu held. */
static void group_end(np_group_t *g)
{
    np_reg_del(g->h);
    g->h = NULL;
    group_put(g);
}

void np_stop(void *h)
{
    int64_t t = now_ns();
    pthread_mutex_lock(&mu);
    void *x = np_reg_get(h, 0);
    int kind = x != NULL ? *(int *)x : 0;
    if (kind == NP_H_GROUP) {
        group_end(x);
    } else if (kind == NP_H_OP && !((np_op_t *)x)->stopped) {
        np_op_t *o = x;
        o->cpu_stop = t;
        o->stopped = 1;
        if (o->written) { /* forced out before: no longer queued */
            op_free(o);
        }
        drain(NULL); /* frees o if it writes it */
    } else if (kind == NP_H_KCH) {
        kch_free(x, 1);
        drain(NULL);
    }
    pthread_mutex_unlock(&mu);
}

/* At the end of the communicator numbered *arg: what NCCL never stopped of it freed (its ops
 * are written by then).  mu held. */
static void sweep(void *x, void *arg)
{
    uint64_t sn = *(const uint64_t *)arg;
    int kind = *(int *)x;
    if (kind == NP_H_OP && ((np_op_t *)x)->csn == sn && ((np_op_t *)x)->written) {
        op_free(x);
    } else if (kind == NP_H_KCH && ((np_kch_t_ *)x)->csn == sn) {
        kch_free(x, 0);
    } else if (kind == NP_H_GROUP && ((np_group_t *)x)->csn == sn) {
        group_end(x);
    }
}

void np_comm_end(void *ctx)
{
    pthread_mutex_lock(&mu);
    np_comm_t *c = np_reg_get(ctx, NP_H_COMM);
    if (c == NULL) { /* (never ours, or finalized before) */
        pthread_mutex_unlock(&mu);
        return;
    }
    const np_op_t *last = NULL;
    for (const np_op_t *o = head; o != NULL; o = o->next) {
        last = o->comm == c ? o : last;
    }
    drain(last); /* its ops (and those before them) written as they are */
    np_reg_each(sweep, &c->sn);
    if (--ncomms == 0 && out != NULL) {
        fclose(out);
        out = NULL;
    } else if (out != NULL) {
        fflush(out);
    }
    np_reg_del(ctx);
    pthread_mutex_unlock(&mu);
    free(c);
}

/* A program that exits without destroying its communicators: what is recorded is written. */
__attribute__((destructor)) static void np_at_exit(void)
{
    pthread_mutex_lock(&mu);
    drain(tail);
    if (out != NULL) {
        fflush(out);
    }
    pthread_mutex_unlock(&mu);
}
