/*
 * collprof's NCCL profiler plugin (plugins/ncclprof) without NCCL: the built
 * libnccl-profiler-collprof.so is dlopened, its tables ncclProfiler_v6 .. v3
 * are found, and each scenario drives one table for 2 or 3 forked "ranks" the
 * way NCCL 2.29's src/plugin/profiler.cc does: per communicator an init; per
 * kernel plan a Group event, a Coll or P2p event per op of the plan (its
 * parent the group), started then stopped as the plan is launched, the group
 * stopped; from v4 on a KernelCh event per channel (its parent the op) with
 * the GPU's start time, its stop time through recordEventState; a finalize
 * per communicator.  The descriptors are written here as NCCL declares them
 * (a transcription independent of the plugin's ncclprof_api.h).  The files
 * are imported with `collprof-report import --trace nccl-collprof` and the
 * trace's ops (order, sizes, groups, roots, peers, group calls, GPU-timed
 * durations) are checked.
 */
#include "config.h"

#include "tap.h"

#include "schema/trace_read.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define LEAKS() __lsan_do_recoverable_leak_check() /* (ASan: what is lost, said on stderr) */
#define ASAN    1 /* (its quarantine holds freed memory: peak memory says nothing) */
#else
#define LEAKS() 0
#define ASAN    0
#endif

/* ---- NCCL's declarations, as its profiler_v3.h .. v6.h give them ---- */
enum { GROUP = 1, COLL = 2, P2P = 4, KERNEL_CH = 64, KERNEL_CH_STOP = 22 };
/* v5 and later: the API events NCCL starts whenever any of the events above is asked for, and
 * the group API event's two states */
enum { GROUP_API = 256, COLL_API = 512, P2P_API = 1024, GROUP_START_API_STOP = 23 };
enum { GROUP_END_API_START = 24 };
typedef void (*logger_t)(int, unsigned long, const char *, int, const char *, ...);

typedef struct {
    uint64_t type; /* v5, v6: uint64_t; v3, v4 (descr34_t) uint8_t */
    void *parentObj;
    int rank;
    union {
        struct {
            bool graphCaptured;
            int groupDepth;
        } groupApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            int root;
            void *stream;
            bool graphCaptured;
        } collApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            void *stream;
            bool graphCaptured;
        } p2pApi;
        struct {
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels, nWarps;
            const char *algo, *proto;
            void *parentGroup;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
            void *parentGroup;
        } p2p;
        struct {
            pid_t pid;
            uint8_t channelId;
            int peer, nSteps, chunkSize, isSend;
        } proxyOp;
        struct {
            uint8_t channelId;
            uint64_t pTimer;
        } kernelCh;
    };
} descr5_t;

typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct { /* v4 */
            uint64_t seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels, nWarps;
            const char *algo, *proto;
        } coll4;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
        } p2p4;
        struct { /* v3 */
            const char *name;
            uint64_t commHash, seqNumber;
            const char *func;
            void const *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nMaxChannels, nWarps;
            const char *algo, *proto;
        } coll3;
        struct {
            const char *name;
            uint64_t commHash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p3;
        struct {
            uint8_t channelId;
            uint64_t pTimer;
        } kernelCh;
    };
} descr34_t;

typedef union {
    struct {
        size_t transSize;
    } proxyStep;
    struct {
        uint64_t pTimer;
    } kernelCh;
} state_args_t;

typedef struct {
    const char *name;
    int (*init)(void **, uint64_t, int *, const char *, int, int, int, logger_t);
    int (*startEvent)(void *, void **, void *);
    int (*stopEvent)(void *);
    int (*recordEventState)(void *, int, state_args_t *);
    int (*finalize)(void *);
} table56_t;
typedef struct {
    const char *name;
    int (*init)(void **, int *, const char *, uint64_t, int, int, int, logger_t);
    int (*startEvent)(void *, void **, void *);
    int (*stopEvent)(void *);
    int (*recordEventState)(void *, int, state_args_t *);
    int (*finalize)(void *);
} table4_t;
typedef struct {
    const char *name;
    int (*init)(void **, int *);
    int (*startEvent)(void *, void **, void *);
    int (*stopEvent)(void *);
    int (*recordEventState)(void *, int, void *);
    int (*finalize)(void *);
} table3_t;

/* ---- the simulated NCCL ---- */
static void *lib;
static int ver; /* the table in use: 3, 4, 5 or 6 */

typedef struct {
    void *ctx;
    uint64_t hash;
    int rank, nranks;
    uint64_t seq[8]; /* per function, as comm->seqNumber */
} comm_t;

static void comm_init(comm_t *c, uint64_t hash, int nranks, int rank, int *mask)
{
    memset(c, 0, sizeof(*c));
    c->hash = hash, c->rank = rank, c->nranks = nranks;
    if (ver >= 5) {
        const table56_t *t = dlsym(lib, ver == 6 ? "ncclProfiler_v6" : "ncclProfiler_v5");
        t->init(&c->ctx, hash, mask, "tcomm", 1, nranks, rank, NULL);
    } else if (ver == 4) {
        const table4_t *t = dlsym(lib, "ncclProfiler_v4");
        t->init(&c->ctx, mask, "tcomm", hash, 1, nranks, rank, NULL);
    } else {
        const table3_t *t = dlsym(lib, "ncclProfiler_v3");
        t->init(&c->ctx, mask);
    }
}

/* the table in use, looked up once per version (as NCCL does) */
static const table3_t *any_table(void)
{
    static const table3_t *t;
    static int t_ver;
    if (t == NULL || t_ver != ver) {
        t = dlsym(lib, ver == 6   ? "ncclProfiler_v6"
                       : ver == 5 ? "ncclProfiler_v5"
                       : ver == 4 ? "ncclProfiler_v4"
                                  : "ncclProfiler_v3");
        t_ver = ver;
    }
    return t;
}

static void *start(comm_t *c, void *d)
{
    void *h = NULL;
    any_table()->startEvent(c != NULL ? c->ctx : NULL, &h, d);
    return h;
}

static void stop(void *h)
{
    if (h != NULL) {
        any_table()->stopEvent(h);
    }
}

static void *group_start(comm_t *c)
{
    descr5_t d5 = {.type = GROUP, .rank = c->rank};
    descr34_t d4 = {.type = GROUP, .rank = c->rank};
    return start(c, ver >= 5 ? (void *)&d5 : (void *)&d4);
}

/* an op of a plan: coll (peer < 0) or p2p */
typedef struct {
    const char *func, *dtype;
    size_t count;
    int root, peer, nch, fn;
} op_t;

/* v5, v6: parent is the op's API event (NCCL 2.28 on), grp its kernel plan's group */
static void *op_start56(comm_t *c, const op_t *o, void *grp, void *parent)
{
    descr5_t d = {.type = o->peer >= 0 ? P2P : COLL, .parentObj = parent, .rank = c->rank};
    if (o->peer >= 0) {
        d.p2p.func = o->func, d.p2p.datatype = o->dtype, d.p2p.count = o->count;
        d.p2p.peer = o->peer, d.p2p.nChannels = (uint8_t)o->nch, d.p2p.parentGroup = grp;
    } else {
        d.coll.seqNumber = c->seq[o->fn]++, d.coll.func = o->func, d.coll.count = o->count;
        d.coll.root = o->root, d.coll.datatype = o->dtype, d.coll.nChannels = (uint8_t)o->nch;
        d.coll.algo = "RING", d.coll.proto = "SIMPLE", d.coll.parentGroup = grp;
    }
    return start(c, &d);
}

static void *op_start34(comm_t *c, const op_t *o, void *grp)
{
    descr34_t d = {.type = o->peer >= 0 ? P2P : COLL, .parentObj = grp, .rank = c->rank};
    if (ver == 4 && o->peer >= 0) {
        d.p2p4.func = o->func, d.p2p4.datatype = o->dtype, d.p2p4.count = o->count;
        d.p2p4.peer = o->peer, d.p2p4.nChannels = (uint8_t)o->nch;
    } else if (ver == 4) {
        d.coll4.seqNumber = c->seq[o->fn]++, d.coll4.func = o->func, d.coll4.count = o->count;
        d.coll4.root = o->root, d.coll4.datatype = o->dtype, d.coll4.nChannels = (uint8_t)o->nch;
        d.coll4.algo = "TREE", d.coll4.proto = "LL";
    } else if (o->peer >= 0) {
        d.p2p3.name = "tcomm", d.p2p3.commHash = c->hash, d.p2p3.func = o->func;
        d.p2p3.datatype = o->dtype, d.p2p3.count = o->count, d.p2p3.peer = o->peer;
    } else {
        d.coll3.name = "tcomm", d.coll3.commHash = c->hash, d.coll3.func = o->func;
        d.coll3.seqNumber = c->seq[o->fn]++, d.coll3.count = o->count, d.coll3.root = o->root;
        d.coll3.datatype = o->dtype, d.coll3.nMaxChannels = (uint8_t)o->nch;
    }
    return start(c, &d);
}

/* One kernel plan of n ops (hostStreamPlanTask): group, the ops started, stopped, the group
 * stopped.  hs[]: the ops' handles, for their kernel channels. */
static void plan(comm_t *c, const op_t *ops, int n, void **hs)
{
    void *grp = group_start(c);
    for (int i = 0; i < n; i++) {
        hs[i] = ver >= 5 ? op_start56(c, &ops[i], grp, NULL) : op_start34(c, &ops[i], grp);
    }
    for (int i = 0; i < n; i++) {
        stop(hs[i]);
    }
    stop(grp);
}

/* A kernel channel of op h: GPU start, then (recordEventState) stop (proxy thread); its
 * handle (stopped). */
static void *channel(comm_t *c, void *h, int ch, uint64_t t0, uint64_t t1)
{
    if (ver < 4) {
        return NULL;
    }
    descr5_t d5 = {.type = KERNEL_CH, .parentObj = h}; /* (NCCL 2.28 leaves its rank 0) */
    descr34_t d4 = {.type = KERNEL_CH, .parentObj = h, .rank = c->rank};
    d5.kernelCh.channelId = d4.kernelCh.channelId = (uint8_t)ch;
    d5.kernelCh.pTimer = d4.kernelCh.pTimer = t0;
    void *k = start(c, ver >= 5 ? (void *)&d5 : (void *)&d4);
    state_args_t a = {.kernelCh.pTimer = t1};
    any_table()->recordEventState(k, KERNEL_CH_STOP, &a);
    stop(k);
    return k;
}

static void finalize(comm_t *c)
{
    any_table()->finalize(c->ctx);
}

/* handles the plugin gave API events (v5 on): it asks for none, so wants none */
static int api_handles;

/* What NCCL 2.28 does (src/enqueue.cc, src/plugin/profiler.cc) for ncclGroupStart, n calls,
 * ncclGroupEnd: a GroupApi event (its states 23 and 24 recorded on a handle, were there one)
 * and a CollApi or P2pApi event per call, started and stopped inside the call, although the
 * plugin asks for none of them; then the kernel plan: its Group event, an op event per call (its
 * parent the call's API event, its group the plan's), and, when early, op 0's channel 0 started
 * and ended by the proxy thread before the host stops the ops (NCCL starts the proxy between
 * the ops' start and their stop); the ops stopped, the group, the GroupApi event last.
 * Every API handle is passed on as NCCL passes it, and only a non-NULL one is stopped. */
static void plan5(comm_t *c, const op_t *ops, int n, void **hs, int early)
{
    descr5_t ga = {.type = GROUP_API, .groupApi.groupDepth = 1};
    void *gh = start(c, &ga), *api[4] = {NULL};
    if (gh != NULL) {
        any_table()->recordEventState(gh, GROUP_START_API_STOP, NULL);
    }
    for (int i = 0; i < n; i++) {
        descr5_t a = {.type = ops[i].peer >= 0 ? P2P_API : COLL_API, .parentObj = gh};
        if (ops[i].peer >= 0) {
            a.p2pApi.func = ops[i].func, a.p2pApi.count = ops[i].count;
            a.p2pApi.datatype = ops[i].dtype;
        } else {
            a.collApi.func = ops[i].func, a.collApi.count = ops[i].count;
            a.collApi.datatype = ops[i].dtype, a.collApi.root = ops[i].root;
        }
        api[i] = start(c, &a);
        stop(api[i]);
    }
    if (gh != NULL) {
        any_table()->recordEventState(gh, GROUP_END_API_START, NULL);
    }
    void *grp = group_start(c);
    for (int i = 0; i < n; i++) {
        hs[i] = op_start56(c, &ops[i], grp, api[i]);
        api_handles += api[i] != NULL;
    }
    if (early) {
        channel(c, hs[0], 0, 1000, 4000);
    }
    for (int i = 0; i < n; i++) {
        stop(hs[i]);
    }
    stop(grp);
    stop(gh);
    api_handles += gh != NULL;
}

/* ---- the scenarios: one process per rank, as NCCL's one process per GPU ---- */
static const op_t AR = {"AllReduce", "ncclFloat32", 1024, 0, -1, 2, 0};
static const op_t BC = {"Broadcast", "ncclBfloat16", 256, 0, -1, 1, 1};
static const op_t AGRS[2] = {{"AllGather", "ncclFloat32", 100, 0, -1, 1, 2},
                             {"ReduceScatter", "ncclInt32", 50, 0, -1, 1, 3}};

/* v6, 3 ranks: the world [0 1 2] and a pair [2 0]; rank 0's allreduce ends on the GPU after
 * its broadcast (the file must keep the issue order); a group call of two ops; a send. */
static void rank6(int r)
{
    comm_t w, p;
    void *h[2], *hb[1], *hg[2];
    int mask;
    comm_init(&w, 0xa11, 3, r, &mask);
    plan(&w, &AR, 1, h);
    if (r != 1) {
        comm_init(&p, 0xb22, 2, r == 2 ? 0 : 1, &mask);
        plan(&p, &BC, 1, hb);
        channel(&p, hb[0], 0, 2000, 2500);
    }
    channel(&w, h[0], 0, 1000, 4000);
    channel(&w, h[0], 1, 1500, 6000);
    plan(&w, AGRS, 2, hg);
    channel(&w, hg[0], 0, 7000, 7100);
    channel(&w, hg[1], 0, 7100, 7300);
    if (r < 2) {
        op_t sr = {r == 0 ? "Send" : "Recv", "ncclInt64", 8, -1, 1 - r, 1, 0};
        plan(&w, &sr, 1, h);
        channel(&w, h[0], 0, 8000, 8300);
    }
    if (r != 1) {
        finalize(&p);
    }
    finalize(&w);
}

/* v4, 2 ranks: a reduce to rank 1 and an allreduce, GPU-timed */
static void rank4(int r)
{
    comm_t w;
    void *h[1];
    int mask;
    op_t red = {"Reduce", "ncclFloat64", 16, 1, -1, 1, 4},
         ar = {"AllReduce", "ncclFloat16", 8, 0, -1, 1, 0};
    comm_init(&w, 0xd44, 2, r, &mask);
    plan(&w, &red, 1, h);
    channel(&w, h[0], 0, 100, 400);
    plan(&w, &ar, 1, h);
    channel(&w, h[0], 0, 500, 600);
    finalize(&w);
}

/* v3, 2 ranks: no communicator at init (the ops name it), no GPU times; a send and a recv
 * in one group call */
static void rank3(int r)
{
    comm_t w;
    void *h[2];
    int mask;
    op_t ar = {"AllReduce", "ncclFloat32", 10, 0, -1, 2, 0};
    op_t sr[2] = {{"Send", "ncclInt8", 4, -1, 1 - r, 0, 0},
                  {"Recv", "ncclInt8", 4, -1, 1 - r, 0, 0}};
    comm_init(&w, 0xc33, 2, r, &mask);
    w.hash = 0xc33;
    plan(&w, &ar, 1, h);
    plan(&w, sr, 2, h);
    finalize(&w);
}

/* v5 (NCCL 2.28), 2 ranks, NCCL's events as it sends them: a group call of an allreduce and an
 * all-gather (NCCL describes an all-gather and a broadcast in bytes: ncclInt8, the count in
 * bytes), a broadcast from rank 1, a group call of a send and a recv.  Exit 3: the plugin
 * asked v5 for other events than Group, Coll, P2p and KernelCh; 4: it gave an API event a
 * handle. */
static void rank5(int r)
{
    comm_t w;
    void *h[2];
    int mask = 0;
    const op_t arag[2] = {{"AllReduce", "ncclFloat32", 1024, 0, -1, 2, 0},
                          {"AllGather", "ncclInt8", 400, 0, -1, 1, 2}};
    const op_t bc = {"Broadcast", "ncclInt8", 512, 1, -1, 1, 1};
    const op_t sr[2] = {{"Send", "ncclFloat32", 16, -1, 1 - r, 1, 0},
                        {"Recv", "ncclFloat32", 16, -1, 1 - r, 1, 0}};
    comm_init(&w, 0xe55, 2, r, &mask);
    if (mask != (GROUP | COLL | P2P | KERNEL_CH)) {
        _exit(3);
    }
    plan5(&w, arag, 2, h, 1);
    channel(&w, h[0], 1, 1500, 6000);
    channel(&w, h[1], 0, 7000, 7100);
    plan5(&w, &bc, 1, h, 0);
    channel(&w, h[0], 0, 7500, 7900);
    plan5(&w, sr, 2, h, 0);
    channel(&w, h[0], 0, 8000, 8300);
    channel(&w, h[1], 0, 8000, 8300);
    finalize(&w);
    if (api_handles != 0) {
        _exit(4);
    }
}

/* A kernel channel of op h started at t0 (and not stopped): its handle. */
static void *ch_start(comm_t *c, void *h, int ch, uint64_t t0)
{
    descr5_t d = {.type = KERNEL_CH, .parentObj = h, .kernelCh.channelId = (uint8_t)ch};
    d.kernelCh.pTimer = t0;
    return start(c, &d);
}

static void ch_stop(void *k, uint64_t t1)
{
    state_args_t a = {.kernelCh.pTimer = t1};
    any_table()->recordEventState(k, KERNEL_CH_STOP, &a);
    any_table()->stopEvent(k);
}

/* v6, 2 ranks: events NCCL does not send in that number or order, which the plugin must
 * survive without touching what it freed, losing an op or keeping memory (exit 5: ASan found
 * memory lost).  A: 2 channels announced, a third after A is written (its handle gone); B
 * stopped twice, A again, a channel stopped twice and its state recorded after; C: its
 * channels started before its host stop and stopped in reverse order, after its group; D: one
 * of its 2 channels never comes; E behind it; F never stopped on the host; then a group and an
 * op on the communicator after its finalize (exit 6: the op got a handle), a second finalize. */
static void rank_odd(int r)
{
    comm_t w;
    void *a[1], *b[1], *c[1], *d[1], *e[1], *f[1];
    int mask;
    comm_init(&w, 0xf66, 2, r, &mask);
    plan(&w, &AR, 1, a);
    channel(&w, a[0], 0, 1000, 2000);
    channel(&w, a[0], 1, 1000, 3000);
    plan(&w, &BC, 1, b);
    channel(&w, a[0], 2, 10, 900000000); /* A's third: A is gone */
    void *k = channel(&w, b[0], 0, 5000, 5500);
    stop(b[0]), stop(a[0]), stop(k), ch_stop(k, 800000000);
    any_table()->stopEvent(NULL);
    void *grp = group_start(&w);
    c[0] = op_start56(&w, &AR, grp, NULL);
    void *k0 = ch_start(&w, c[0], 0, 11000), *k1 = ch_start(&w, c[0], 1, 11500);
    stop(grp);
    stop(c[0]);
    ch_stop(k1, 13000), ch_stop(k0, 12000);
    plan(&w, &AR, 1, d);
    channel(&w, d[0], 0, 20000, 20400);
    plan(&w, &BC, 1, e);
    channel(&w, e[0], 0, 21000, 21100);
    grp = group_start(&w);
    f[0] = op_start56(&w, &BC, grp, NULL);
    stop(grp);
    channel(&w, f[0], 0, 22000, 22300);
    finalize(&w);
    grp = group_start(&w); /* on the finalized communicator: nothing recorded */
    if (op_start56(&w, &AR, grp, NULL) != NULL) {
        _exit(6);
    }
    stop(grp);
    finalize(&w);
    fflush(NULL);
    if (LEAKS()) {
        _exit(5);
    }
}

/* The memory of communicators whose events NCCL never ended: in a child, a communicator kept
 * open while 40000 others each start an op and a kernel channel, stop neither and are
 * finalized; the growth of its peak memory (KiB) over the last 36000, or -1. */
static long lingering(void)
{
    char dir[] = "/tmp/cp-ncclprof-XXXXXX", cmd[64];
    int fd[2];
    long kib = -1;
    if (mkdtemp(dir) == NULL || pipe(fd) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        comm_t keep, x;
        int mask;
        struct rusage a, b;
        setenv("COLLPROF_TRACE_DIR", dir, 1);
        ver = 6;
        comm_init(&keep, 0xa77, 1, 0, &mask);
        for (int i = 0; i < 40000; i++) {
            if (i == 4000) {
                getrusage(RUSAGE_SELF, &a);
            }
            comm_init(&x, 0xb77, 1, 0, &mask);
            void *grp = group_start(&x), *h = op_start56(&x, &AR, grp, NULL);
            stop(grp);
            ch_start(&x, h, 0, 1000);
            finalize(&x);
        }
        getrusage(RUSAGE_SELF, &b);
        finalize(&keep);
        kib = b.ru_maxrss - a.ru_maxrss;
        _exit(write(fd[1], &kib, sizeof(kib)) == sizeof(kib) ? 0 : 1);
    }
    close(fd[1]);
    if (read(fd[0], &kib, sizeof(kib)) != sizeof(kib)) {
        kib = -1;
    }
    close(fd[0]);
    waitpid(pid, NULL, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        kib = -1;
    }
    return kib;
}

/* run fn for ranks 0..n-1, each in its own process writing into dir: 0 when all exit 0 */
static int run_ranks(void (*fn)(int), int n, const char *dir)
{
    pid_t pids[4];
    for (int r = 0; r < n; r++) {
        if ((pids[r] = fork()) == 0) {
            setenv("COLLPROF_TRACE_DIR", dir, 1);
            fn(r);
            fflush(NULL);
            _exit(0);
        }
    }
    int bad = 0;
    for (int r = 0; r < n; r++) {
        int st;
        bad |= waitpid(pids[r], &st, 0) != pids[r] || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    return bad;
}

/* collprof-report import --trace nccl-collprof (the .jsonl files of dir) -o dir/t.h5: its
 * exit status */
static int import(const char *dir, const char *format, const char *out, int *nfiles)
{
    char *argv[16] = {CP_REPORT_BIN, "import", "--trace", (char *)format};
    int argc = 4;
    DIR *d = opendir(dir);
    struct dirent *e;
    static char names[8][512];
    *nfiles = 0;
    while (d != NULL && (e = readdir(d)) != NULL && *nfiles < 8) {
        if (strstr(e->d_name, ".jsonl") != NULL) {
            snprintf(names[*nfiles], sizeof(names[0]), "%s/%s", dir, e->d_name);
            argv[argc++] = names[(*nfiles)++];
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    static char outp[512], log[512];
    snprintf(outp, sizeof(outp), "%s/%s", dir, out);
    snprintf(log, sizeof(log), "%s/import.out", dir);
    argv[argc++] = "-o";
    argv[argc++] = outp;
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        if (freopen(log, "w", stdout) == NULL || dup2(1, 2) < 0) {
            _exit(127);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int by_rank_seq(const void *a, const void *b)
{
    const collprof_trace_op_row_t *x = a, *y = b;
    return x->rank != y->rank ? x->rank - y->rank : (x->seq > y->seq) - (x->seq < y->seq);
}

/* The trace's ops sorted by rank and seq (the file holds them file by file), one line each:
 * rank|seq|op|dtype|in|out|bytes|group hash|root|peer|c or - (coalesced); their durations in
 * durs[]; *same_call 0 when consecutive coalesced ops of a rank have different numbers. */
static void op_lines(cp_trace_t *t, char *buf, size_t n, int64_t *durs, int *same_call)
{
    size_t len = 0;
    buf[0] = '\0';
    *same_call = 1;
    qsort(t->ops, t->nops, sizeof(t->ops[0]), by_rank_seq);
    for (size_t i = 0; i < t->nops; i++) {
        const collprof_trace_op_row_t *o = &t->ops[i];
        const char *hash =
            o->group >= 0 && (size_t)o->group < t->ngroups ? t->groups[o->group].source_hash : "?";
        len += (size_t)snprintf(buf + len, n - len, "%d|%lld|%s|%s|%llu|%llu|%llu|%s|%d|%d|%s\n",
                                o->rank, (long long)o->seq, o->op, o->dtype,
                                (unsigned long long)o->in_count, (unsigned long long)o->out_count,
                                (unsigned long long)o->bytes, hash, o->root, o->peer,
                                o->coalesced >= 0 ? "c" : "-");
        durs[i] = o->dur_ns;
        if (i > 0 && o->coalesced >= 0 && t->ops[i - 1].coalesced >= 0 &&
            t->ops[i - 1].rank == o->rank && t->ops[i - 1].coalesced != o->coalesced) {
            *same_call = 0;
        }
    }
}

/* the members of the group joined on hash, "a b c" */
static void members(const cp_trace_t *t, const char *hash, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t g = 0; g < t->ngroups; g++) {
        if (strcmp(t->groups[g].source_hash, hash) != 0) {
            continue;
        }
        for (int i = 0; i < t->groups[g].size; i++) {
            len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? " " : "",
                                    t->members[t->groups[g].member_off + i].rank);
        }
    }
}

static int issue_times_ok(const cp_trace_t *t)
{
    for (size_t i = 0; i < t->nops; i++) {
        if (t->ops[i].t_issue_ns <= 0 || (i > 0 && t->ops[i - 1].rank == t->ops[i].rank &&
                                          t->ops[i - 1].t_issue_ns > t->ops[i].t_issue_ns)) {
            return 0;
        }
    }
    return 1;
}

/* One scenario: ranks run, files imported, ops and groups checked. */
static void scenario(const char *name, int v, void (*fn)(int), int nranks, const char *want,
                     const int64_t *want_dur, const char *hash, const char *want_members)
{
    char dir[] = "/tmp/cp-ncclprof-XXXXXX", got[4096], err[256], mem[64], cmd[600];
    int64_t durs[64];
    int nfiles = 0, same = 0;
    ver = v;
    ok(mkdtemp(dir) != NULL, "%s: a scratch folder", name);
    ok(run_ranks(fn, nranks, dir) == 0, "%s: %d ranks drove the v%d table", name, nranks, v);
    int rc = import(dir, "nccl-collprof", "t.h5", &nfiles);
    ok(rc == 0 && nfiles == nranks,
       "%s: %d files, collprof-report import --trace nccl-collprof "
       "exits %d",
       name, nfiles, rc);
    cp_trace_t t = {0};
    char path[600];
    snprintf(path, sizeof(path), "%s/t.h5", dir);
    if (!ok(cp_trace_read(path, &t, err, sizeof(err)) == 0, "%s: the trace reads (%s)", name,
            rc == 0 ? "" : err)) {
        return;
    }
    op_lines(&t, got, sizeof(got), durs, &same);
    int same_ops = !strcmp(got, want);
    ok(same_ops, "%s: every op in issue order with its sizes, group, root, peer and group call%s%s",
       name, same_ops ? "" : "; got:\n", same_ops ? "" : got);
    ok(same, "%s: the ops of one group call share one coalesced number", name);
    int dur_ok = 1;
    for (size_t i = 0; i < t.nops; i++) {
        dur_ok &= want_dur != NULL ? durs[i] == want_dur[i] : durs[i] >= 0;
    }
    ok(dur_ok, "%s: durations %s", name, want_dur ? "from the GPU's channel times" : "recorded");
    ok(issue_times_ok(&t), "%s: issue times recorded, rising in each rank's order", name);
    members(&t, hash, mem, sizeof(mem));
    ok(!strcmp(mem, want_members), "%s: group %s has members [%s] (want [%s])", name, hash, mem,
       want_members);
    cp_trace_free(&t);
    if (v >= 4) {
        rc = import(dir, "nccl-inspector", "i.h5", &nfiles);
        ok(rc == 0, "%s: the files import as NCCL Inspector's too (exit %d)", name, rc);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        ok(0, "%s: scratch folder removed", name);
    }
}

/* a folder that cannot be written: no context, no events asked for */
static void unwritable(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        comm_t c;
        int mask = -1;
        setenv("COLLPROF_TRACE_DIR", "/nonexistent/cp-ncclprof", 1);
        ver = 6;
        comm_init(&c, 1, 2, 0, &mask);
        _exit(c.ctx == NULL && mask == 0 ? 0 : 1);
    }
    int st;
    ok(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
       "a trace folder that cannot be written: no context and no events (a note says why)");
}

/* The whole of file path (at most n - 1 bytes) into buf: its length, or -1. */
static long slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t k = f != NULL ? fread(buf, 1, n - 1, f) : 0;
    buf[k] = '\0';
    if (f != NULL) {
        fclose(f);
    }
    return f != NULL ? (long)k : -1;
}

/* One process of 2 communicators (v5), each a plan of one allreduce, in a scratch folder, with
 * NCCL_INSPECTOR_ENABLE=inspector and NCCL_PROFILER_PLUGIN=plugin (NULL: unset): its stderr
 * into err, how many lines its trace file has into *lines (-1: no single file). */
static void slot_run(const char *inspector, const char *plugin, char *err, size_t n, int *lines)
{
    char dir[] = "/tmp/cp-ncclprof-XXXXXX", path[600], body[4096];
    *lines = -1;
    err[0] = '\0';
    if (mkdtemp(dir) == NULL) {
        return;
    }
    snprintf(path, sizeof(path), "%s/stderr", dir);
    pid_t pid = fork();
    if (pid == 0) {
        comm_t a, b;
        void *h[1];
        int mask;
        if (freopen(path, "w", stderr) == NULL) {
            _exit(127);
        }
        setenv("COLLPROF_TRACE_DIR", dir, 1);
        setenv("NCCL_INSPECTOR_ENABLE", inspector, 1);
        if (plugin != NULL) {
            setenv("NCCL_PROFILER_PLUGIN", plugin, 1);
        } else {
            unsetenv("NCCL_PROFILER_PLUGIN");
        }
        ver = 5;
        comm_init(&a, 0xf01, 2, 0, &mask);
        comm_init(&b, 0xf02, 2, 0, &mask);
        plan5(&a, &AR, 1, h, 1);
        channel(&a, h[0], 1, 1500, 6000);
        plan5(&b, &AR, 1, h, 1);
        channel(&b, h[0], 1, 1500, 6000);
        finalize(&b);
        finalize(&a);
        fflush(NULL);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    slurp(path, err, n);
    DIR *d = opendir(dir);
    struct dirent *e;
    int files = 0;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strstr(e->d_name, ".jsonl") != NULL) {
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            files++;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    if (files == 1 && slurp(path, body, sizeof(body)) > 0) {
        *lines = 0;
        for (const char *p = body; (p = strstr(p, "\"coll_perf\"")) != NULL; p++) {
            ++*lines;
        }
    }
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    if (system(path) != 0) {
        ok(0, "one slot: scratch folder removed");
    }
}

/* NCCL's one profiler slot (docs/replay.md, "One profiler slot"): with NCCL_INSPECTOR_ENABLE
 * set the plugin says once, in one line, that NCCL Inspector records nothing, and records as
 * it does without it; set to 0 or empty, it says nothing. */
static void one_slot(void)
{
    char err[1024], want[1024];
    int lines;
    snprintf(want, sizeof(want),
             "collprof NCCL profiler: note: NCCL loads one profiler plugin and has loaded "
             "collprof's (%s), so the NCCL Inspector (NCCL_INSPECTOR_ENABLE=1) records nothing\n",
             CP_NCCLPROF_PLUGIN);
    slot_run("1", CP_NCCLPROF_PLUGIN, err, sizeof(err), &lines);
    int same = !strcmp(err, want);
    err[strcspn(err, "\n")] = '\0'; /* (shown on one line) */
    ok(same,
       "one slot: NCCL_INSPECTOR_ENABLE=1: one note line naming the plugin, "
       "for 2 communicators (got: %s)",
       err);
    ok(lines == 2, "one slot: NCCL_INSPECTOR_ENABLE=1: both communicators' ops recorded (%d)",
       lines);
    snprintf(want, sizeof(want),
             "collprof NCCL profiler: note: NCCL loads one profiler plugin and has loaded "
             "collprof's, so the NCCL Inspector (NCCL_INSPECTOR_ENABLE=yes) records nothing\n");
    slot_run("yes", NULL, err, sizeof(err), &lines);
    same = !strcmp(err, want);
    err[strcspn(err, "\n")] = '\0';
    ok(same && lines == 2,
       "one slot: NCCL_PROFILER_PLUGIN unset (the plugin found by its default name): the note "
       "names no path, the ops recorded (%d; got: %s)",
       lines, err);
    slot_run("0", CP_NCCLPROF_PLUGIN, err, sizeof(err), &lines);
    ok(err[0] == '\0' && lines == 2,
       "one slot: NCCL_INSPECTOR_ENABLE=0: no note, the ops "
       "recorded (%d; got: %s)",
       lines, err);
    slot_run("", CP_NCCLPROF_PLUGIN, err, sizeof(err), &lines);
    ok(err[0] == '\0' && lines == 2,
       "one slot: NCCL_INSPECTOR_ENABLE empty: no note, the ops "
       "recorded (%d; got: %s)",
       lines, err);
}

/* The plugin's cost per op as NCCL drives it (v6: a plan of one allreduce, two kernel channels,
 * the line written), in a child writing into a scratch folder: printed, and bounded loosely
 * (a bound a shared 2-core machine keeps; the figure is the point). */
static void cost(void)
{
    char dir[] = "/tmp/cp-ncclprof-XXXXXX", cmd[64];
    int fd[2];
    double per = -1;
    if (mkdtemp(dir) == NULL || pipe(fd) != 0) {
        ok(0, "cost: a scratch folder and a pipe");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        comm_t w;
        void *h[1];
        int mask, n = 100000;
        struct timespec a, b;
        setenv("COLLPROF_TRACE_DIR", dir, 1);
        ver = 6;
        comm_init(&w, 0xe55, 2, 0, &mask);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        for (int i = 0; i < n; i++) {
            plan(&w, &AR, 1, h);
            channel(&w, h[0], 0, 1000, 2000);
            channel(&w, h[0], 1, 1000, 2000);
        }
        finalize(&w);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        per = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / n;
        _exit(write(fd[1], &per, sizeof(per)) == sizeof(per) ? 0 : 1);
    }
    close(fd[1]);
    int got = read(fd[0], &per, sizeof(per)) == sizeof(per);
    close(fd[0]);
    waitpid(pid, NULL, 0);
    ok(got && per > 0 && per < 50000,
       "cost: %.0f ns of CPU per op (a plan of one op, 2 kernel channels, the line written; 100000 "
       "ops)",
       per);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        ok(0, "cost: scratch folder removed");
    }
}

static const char want6[] = "0|0|allreduce|float32|1024|1024|4096|0xa11|-1|-1|-\n"
                            "0|1|broadcast|bfloat16|256|256|512|0xb22|2|-1|-\n"
                            "0|2|allgather|float32|100|300|1200|0xa11|-1|-1|c\n"
                            "0|3|reducescatter|int32|150|50|600|0xa11|-1|-1|c\n"
                            "0|4|send|int64|8|8|64|0xa11|-1|1|-\n"
                            "1|0|allreduce|float32|1024|1024|4096|0xa11|-1|-1|-\n"
                            "1|1|allgather|float32|100|300|1200|0xa11|-1|-1|c\n"
                            "1|2|reducescatter|int32|150|50|600|0xa11|-1|-1|c\n"
                            "1|3|recv|int64|8|8|64|0xa11|-1|0|-\n"
                            "2|0|allreduce|float32|1024|1024|4096|0xa11|-1|-1|-\n"
                            "2|1|broadcast|bfloat16|256|256|512|0xb22|2|-1|-\n"
                            "2|2|allgather|float32|100|300|1200|0xa11|-1|-1|c\n"
                            "2|3|reducescatter|int32|150|50|600|0xa11|-1|-1|c\n";
static const int64_t dur6[] = {5000, 500, 100, 200, 300, 5000, 100, 200, 300, 5000, 500, 100, 200};
static const char want4[] = "0|0|reduce|float64|16|16|128|0xd44|1|-1|-\n"
                            "0|1|allreduce|float16|8|8|16|0xd44|-1|-1|-\n"
                            "1|0|reduce|float64|16|16|128|0xd44|1|-1|-\n"
                            "1|1|allreduce|float16|8|8|16|0xd44|-1|-1|-\n";
static const int64_t dur4[] = {300, 100, 300, 100};
static const char want5[] = "0|0|allreduce|float32|1024|1024|4096|0xe55|-1|-1|c\n"
                            "0|1|allgather|int8|400|800|800|0xe55|-1|-1|c\n"
                            "0|2|broadcast|int8|512|512|512|0xe55|1|-1|-\n"
                            "0|3|send|float32|16|16|64|0xe55|-1|1|c\n"
                            "0|4|recv|float32|16|16|64|0xe55|-1|1|c\n"
                            "1|0|allreduce|float32|1024|1024|4096|0xe55|-1|-1|c\n"
                            "1|1|allgather|int8|400|800|800|0xe55|-1|-1|c\n"
                            "1|2|broadcast|int8|512|512|512|0xe55|1|-1|-\n"
                            "1|3|send|float32|16|16|64|0xe55|-1|0|c\n"
                            "1|4|recv|float32|16|16|64|0xe55|-1|0|c\n";
static const int64_t dur5[] = {5000, 100, 400, 300, 300, 5000, 100, 400, 300, 300};
static const char want3[] = "0|0|allreduce|float32|10|10|40|0xc33|-1|-1|-\n"
                            "0|1|send|int8|4|4|4|0xc33|-1|1|c\n"
                            "0|2|recv|int8|4|4|4|0xc33|-1|1|c\n"
                            "1|0|allreduce|float32|10|10|40|0xc33|-1|-1|-\n"
                            "1|1|send|int8|4|4|4|0xc33|-1|0|c\n"
                            "1|2|recv|int8|4|4|4|0xc33|-1|0|c\n";

static const char want_odd[] = "0|0|allreduce|float32|1024|1024|4096|0xf66|-1|-1|-\n"
                               "0|1|broadcast|bfloat16|256|256|512|0xf66|0|-1|-\n"
                               "0|2|allreduce|float32|1024|1024|4096|0xf66|-1|-1|-\n"
                               "0|3|allreduce|float32|1024|1024|4096|0xf66|-1|-1|-\n"
                               "0|4|broadcast|bfloat16|256|256|512|0xf66|0|-1|-\n"
                               "0|5|broadcast|bfloat16|256|256|512|0xf66|0|-1|-\n"
                               "1|0|allreduce|float32|1024|1024|4096|0xf66|-1|-1|-\n"
                               "1|1|broadcast|bfloat16|256|256|512|0xf66|0|-1|-\n"
                               "1|2|allreduce|float32|1024|1024|4096|0xf66|-1|-1|-\n"
                               "1|3|allreduce|float32|1024|1024|4096|0xf66|-1|-1|-\n"
                               "1|4|broadcast|bfloat16|256|256|512|0xf66|0|-1|-\n"
                               "1|5|broadcast|bfloat16|256|256|512|0xf66|0|-1|-\n";
static const int64_t dur_odd[] = {2000, 500, 2000, 400, 100, 300, 2000, 500, 2000, 400, 100, 300};

int main(void)
{
    lib = dlopen(CP_NCCLPROF_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!ok(lib != NULL, "dlopen %s", CP_NCCLPROF_PLUGIN)) {
        printf("# %s\n", dlerror());
        return tap_done();
    }
    const char *names[] = {"ncclProfiler_v6", "ncclProfiler_v5", "ncclProfiler_v4",
                           "ncclProfiler_v3"};
    for (int i = 0; i < 4; i++) {
        const table3_t *t = dlsym(lib, names[i]);
        ok(t != NULL && t->name != NULL && !strcmp(t->name, "collprof") && t->init != NULL &&
               t->startEvent != NULL && t->stopEvent != NULL && t->recordEventState != NULL &&
               t->finalize != NULL,
           "%s exported, named collprof, every entry set", names[i]);
    }
    ok(dlsym(lib, "ncclProfiler_v2") == NULL && dlsym(lib, "ncclProfiler_v1") == NULL,
       "no v2 or v1 table (their layouts are not declared)");
    unwritable();
    scenario("odd events", 6, rank_odd, 2, want_odd, dur_odd, "0xf66", "0 1");
    long kib = lingering();
    ok(kib >= 0 && (kib < 1024 || ASAN),
       "36000 communicators' ops and kernel channels never stopped: freed at their ends (peak "
       "memory grew %ld KiB%s)",
       kib, ASAN ? ", not bounded under ASan" : "");
    scenario("v6", 6, rank6, 3, want6, dur6, "0xb22", "2 0");
    scenario("v5", 5, rank5, 2, want5, dur5, "0xe55", "0 1");
    scenario("v4", 4, rank4, 2, want4, dur4, "0xd44", "0 1");
    scenario("v3", 3, rank3, 2, want3, NULL, "0xc33", "0 1");
    one_slot();
    cost();
    return tap_done();
}
