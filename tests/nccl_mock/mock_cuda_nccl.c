/*
 * A stand-in for the CUDA runtime and NCCL, linked into a test copy of the
 * NCCL plugin (tests/nccl_mock/collprof_nccl.so) so that the plugin's own
 * logic runs on machines without a GPU: communicator caching and eviction,
 * the environment around ncclCommInitRankConfig, non-blocking calls
 * (ncclInProgress), grouped send/recv, in-place layouts, staging,
 * registration, graph capture and replay, event timing (an event records
 * the host clock when the stream reaches it: after the work before it, which
 * ran at submission), device-to-device copies (counted), timeouts.
 *
 * "Device" memory is host memory.  Ranks are processes; each communicator is
 * a POSIX shared-memory segment named by its ncclUniqueId, with one input
 * slot per rank, one mailbox per (source, destination) pair with its
 * message counters (grouped send/recv match pair by pair) and a barrier.
 * A stream executes every operation when it is submitted (or records it while
 * captured); cudaEventQuery answers "done" unless a hang was injected.
 * Reductions: sum/prod/min/max on int8..uint64, float32, float64 (no 16-bit
 * floats).
 *
 * Forced algorithms NVLS, NVLSTree, CollNetChain and PAT are refused, as on
 * a machine without them, and CollNetDirect for everything but allreduce (a
 * CollNet plugin with allreduce only), the way NCCL 2.28 refuses them
 * (enqueue.cc, group.cc):
 *  - the error is decided when the algorithm is selected, and its code
 *    depends on the environment at that moment: ncclInvalidUsage while
 *    NCCL_ALGO or NCCL_PROTO is set, ncclInternalError otherwise; the last
 *    error reads "no algorithm/protocol available";
 *  - on a blocking communicator the call that selects (a collective, a
 *    group end, ncclGroupSimulateEnd) fails at once and the communicator
 *    stays usable; ncclGroupSimulateEnd only simulates;
 *  - on a non-blocking communicator every collective and every group end
 *    (ncclGroupSimulateEnd included: its non-blocking path launches for
 *    real) returns ncclInProgress; the selection happens later, on NCCL's
 *    thread (here: at the first ncclCommGetAsyncError), and its error sticks
 *    to the communicator: ncclCommGetAsyncError and every later call on it
 *    return it until it is aborted;
 *  - a single-rank communicator selects no algorithm at all (the collective
 *    is a device copy), so nothing is refused there.
 * Non-blocking collectives also take MOCK_NB_POLLS polls of
 * ncclCommGetAsyncError to complete (NCCL's per-collective thread), and the
 * plugin's nanosleep calls are counted, so that a sleep in a timed path shows.
 *
 * Not a model of NCCL's performance or of its error behaviour beyond that.  The driver API
 * that the plugin's device compute reaches (modules, kernel launches) is mock_cuda_driver.c's.
 */
#include "config.h"

#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define MOCK_SLOT     (2u << 20)
#define MOCK_MBOX     (1u << 20)
#define MOCK_HDR      4096u
#define MOCK_MAXOPS   4096
#define MOCK_NB_POLLS 100 /* more than a plugin's spins before it would nap */

struct CUstream_st {
    int dummy;
};
struct CUevent_st {
    double t;
};

enum { K_AR, K_AG, K_RS, K_BC, K_RED, K_A2A, K_GA, K_SC, K_SEND, K_RECV, K_COPY, K_SET };

typedef struct mop {
    int kind;
    struct ncclComm *c;
    const void *s;
    void *r;
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t op;
    int root, peer;
} mop_t;

struct ncclComm {
    int rank, n, polls, aborted, blocking;
    int pending_refusal;    /* a refused selection not yet made (non-blocking) */
    ncclResult_t async_err; /* sticky, as comm->asyncResult */
    char name[64];
    char *base;
    size_t len;
    int regs;
    int splits; /* ncclCommSplit calls so far (names the new communicators) */
    char algo[32], proto[32], last[256];
};

struct CUgraph_st {
    mop_t *ops;
    int nops;
};
struct CUgraphExec_st {
    mop_t *ops;
    int nops;
};

typedef struct {
    volatile unsigned count, gen;
} mhdr_t;

static int g_group_depth;
static mop_t g_group[MOCK_MAXOPS];
static int g_ngroup;
static cudaStream_t g_capturing;
static mop_t *g_cap;
static int g_ncap;
static int g_hang_after = -1; /* collectives left before this rank's stream hangs */
static int g_stuck;
static unsigned long g_ops_done, g_graph_launches, g_registers, g_deregisters, g_inits, g_naps;
static unsigned long g_memallocs, g_memfrees;
static unsigned long g_d2d_copies, g_d2d_bytes;  /* cudaMemcpyAsync device to device */
static unsigned long g_group_ends, g_group_most; /* group ends that ran ops; most ops in one */
static char g_last_global[256];

/* statistics for the test driver (exported from the test plugin) */
__attribute__((visibility("default"))) void cpmock_stats(unsigned long out[8]);
__attribute__((visibility("default"))) void cpmock_hang_after(int nops);
__attribute__((visibility("default"))) void cpmock_d2d(unsigned long out[2]);
__attribute__((visibility("default"))) void cpmock_groups(unsigned long out[2]);
void cpmock_stats(unsigned long out[8])
{
    out[0] = g_ops_done;
    out[1] = g_graph_launches;
    out[2] = g_registers;
    out[3] = g_deregisters;
    out[4] = g_inits;
    out[5] = g_naps;
    out[6] = g_memallocs;
    out[7] = g_memfrees;
}

/* the outermost ncclGroupEnd calls that ran operations so far, and the most ops one ran */
void cpmock_groups(unsigned long out[2])
{
    out[0] = g_group_ends;
    out[1] = g_group_most;
}

/* device-to-device copies submitted so far, and their bytes */
void cpmock_d2d(unsigned long out[2])
{
    out[0] = g_d2d_copies;
    out[1] = g_d2d_bytes;
}

/* the plugin's sleeps (hidden symbols bind inside the test plugin): counted */
int nanosleep(const struct timespec *req, struct timespec *rem)
{
    g_naps++;
    return clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem);
}
void cpmock_hang_after(int nops)
{
    g_hang_after = nops;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void mbarrier(struct ncclComm *c)
{
    mhdr_t *h = (mhdr_t *)c->base;
    unsigned gen = __atomic_load_n(&h->gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&h->count, 1, __ATOMIC_ACQ_REL) == (unsigned)c->n) {
        __atomic_store_n(&h->count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&h->gen, gen + 1, __ATOMIC_RELEASE);
        return;
    }
    double t0 = now_s();
    while (__atomic_load_n(&h->gen, __ATOMIC_ACQUIRE) == gen) {
        if (now_s() - t0 > 60.0) {
            fprintf(stderr, "cpmock: rank %d: barrier of %s stuck for 60 s (mismatched calls?)\n",
                    c->rank, c->name);
            abort();
        }
        sched_yield();
    }
}

static char *slot(struct ncclComm *c, int r)
{
    return c->base + MOCK_HDR + (size_t)r * MOCK_SLOT;
}

static char *mbox(struct ncclComm *c, int src, int dst)
{
    return c->base + MOCK_HDR + (size_t)c->n * MOCK_SLOT + ((size_t)src * c->n + dst) * MOCK_MBOX;
}

static size_t esize(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 1;
    }
}

/* (sums and products in UT: integers wrap as on the device, whatever the buffers hold) */
#define RED_CASE(T, CT, UT)                                                                        \
    case T: {                                                                                      \
        CT *d = dst;                                                                               \
        const CT *s = src;                                                                         \
        for (size_t i = 0; i < count; i++) {                                                       \
            CT a = first ? s[i] : d[i], b = s[i];                                                  \
            if (first) {                                                                           \
                d[i] = a;                                                                          \
                continue;                                                                          \
            }                                                                                      \
            d[i] = op == ncclSum    ? (CT)((UT)a + (UT)b)                                          \
                   : op == ncclProd ? (CT)((UT)a * (UT)b)                                          \
                   : op == ncclMin  ? (a < b ? a : b)                                              \
                                    : (a > b ? a : b);                                              \
        }                                                                                          \
        return 0;                                                                                  \
    }

static int reduce_into(void *dst, const void *src, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                       int first)
{
    switch (dt) {
        RED_CASE(ncclInt8, int8_t, uint8_t)
        RED_CASE(ncclUint8, uint8_t, uint8_t)
        RED_CASE(ncclInt32, int32_t, uint32_t)
        RED_CASE(ncclUint32, uint32_t, uint32_t)
        RED_CASE(ncclInt64, int64_t, uint64_t)
        RED_CASE(ncclUint64, uint64_t, uint64_t)
        RED_CASE(ncclFloat32, float, float)
        RED_CASE(ncclFloat64, double, double)
    default: return -1;
    }
}

/* reduce block off..off+count of every rank's slot into out */
static void reduce_slots(struct ncclComm *c, void *out, size_t off, size_t count, ncclDataType_t dt,
                         ncclRedOp_t op)
{
    char *tmp = malloc(count * esize(dt) + 1);
    for (int r = 0; r < c->n; r++) {
        reduce_into(tmp, slot(c, r) + off * esize(dt), count, dt, op, r == 0);
    }
    memcpy(out, tmp, count * esize(dt));
    free(tmp);
}

static void exec_coll(const mop_t *m)
{
    struct ncclComm *c = m->c;
    size_t es = esize(m->dt), n = (size_t)c->n, b = m->count * es;
    switch (m->kind) {
    case K_AR:
    case K_RED:
        memcpy(slot(c, c->rank), m->s, b);
        mbarrier(c);
        if (m->kind == K_AR || c->rank == m->root) {
            reduce_slots(c, m->r, 0, m->count, m->dt, m->op);
        }
        break;
    case K_AG:
        memcpy(slot(c, c->rank), m->s, b);
        mbarrier(c);
        for (size_t r = 0; r < n; r++) {
            memcpy((char *)m->r + r * b, slot(c, (int)r), b);
        }
        break;
    case K_RS:
        memcpy(slot(c, c->rank), m->s, b * n);
        mbarrier(c);
        reduce_slots(c, m->r, (size_t)c->rank * m->count, m->count, m->dt, m->op);
        break;
    case K_BC:
        if (c->rank == m->root) {
            memcpy(slot(c, c->rank), m->s, b);
        }
        mbarrier(c);
        memcpy(m->r, slot(c, m->root), b);
        break;
    case K_A2A:
        memcpy(slot(c, c->rank), m->s, b * n);
        mbarrier(c);
        for (size_t r = 0; r < n; r++) {
            memcpy((char *)m->r + r * b, slot(c, (int)r) + (size_t)c->rank * b, b);
        }
        break;
    case K_GA:
        memcpy(slot(c, c->rank), m->s, b);
        mbarrier(c);
        if (c->rank == m->root) {
            for (size_t r = 0; r < n; r++) {
                memcpy((char *)m->r + r * b, slot(c, (int)r), b);
            }
        }
        break;
    case K_SC:
        if (c->rank == m->root) {
            memcpy(slot(c, c->rank), m->s, b * n);
        }
        mbarrier(c);
        memcpy(m->r, slot(c, m->root) + (size_t)c->rank * b, b);
        break;
    }
    mbarrier(c);
}

/*
 * Grouped send/recv are matched pair by pair, as NCCL does: a rank that moves
 * nothing in a group (an empty gatherv block) takes no part in it.  Counters
 * in the header, per (source, destination): messages put in the mailbox and
 * messages taken out; a group's sends to one peer are one message.
 */
static volatile unsigned *pair_ctr(struct ncclComm *c, int taken, int src, int dst)
{
    volatile unsigned *ctr = (volatile unsigned *)(c->base + 64); /* after mhdr_t; n <= 8 */
    return ctr + (taken ? 64 : 0) + src * c->n + dst;
}

/* wait until the (src, dst) mailbox is empty (full: until it holds a message) */
static void pair_wait(struct ncclComm *c, int src, int dst, int full)
{
    double t0 = now_s();
    while ((__atomic_load_n(pair_ctr(c, 0, src, dst), __ATOMIC_ACQUIRE) !=
            __atomic_load_n(pair_ctr(c, 1, src, dst), __ATOMIC_ACQUIRE)) != full) {
        if (now_s() - t0 > 60.0) {
            fprintf(stderr, "cpmock: rank %d: send/recv %d -> %d of %s stuck for 60 s\n", c->rank,
                    src, dst, c->name);
            abort();
        }
        sched_yield();
    }
}

/* one group: every send into its peer's mailbox, then every receive, in call order */
static void exec_p2p(const mop_t *ops, int nops)
{
    struct ncclComm *c = NULL;
    size_t off[64] = {0};
    unsigned char sent[64] = {0}, got[64] = {0};
    for (int i = 0; i < nops; i++) {
        if (ops[i].kind == K_SEND) {
            c = ops[i].c;
            int p = ops[i].peer;
            size_t b = ops[i].count * esize(ops[i].dt);
            if (off[p] + b > MOCK_MBOX) { /* one message per peer and group: it must fit */
                fprintf(stderr, "cpmock: rank %d: a group's sends to %d exceed the %u B mailbox\n",
                        c->rank, p, MOCK_MBOX);
                abort();
            }
            if (!sent[p]) {
                pair_wait(c, c->rank, p, 0);
            }
            sent[p] = 1;
            memcpy(mbox(c, c->rank, p) + off[p], ops[i].s, b);
            off[p] += b;
        }
    }
    for (int p = 0; c != NULL && p < c->n; p++) {
        if (sent[p]) {
            __atomic_add_fetch(pair_ctr(c, 0, c->rank, p), 1, __ATOMIC_RELEASE);
        }
    }
    memset(off, 0, sizeof(off));
    for (int i = 0; i < nops; i++) {
        if (ops[i].kind == K_RECV) {
            c = ops[i].c;
            int p = ops[i].peer;
            size_t b = ops[i].count * esize(ops[i].dt);
            if (!got[p]) {
                pair_wait(c, p, c->rank, 1);
            }
            got[p] = 1;
            memcpy(ops[i].r, mbox(c, p, c->rank) + off[p], b);
            off[p] += b;
        }
    }
    for (int p = 0; c != NULL && p < c->n; p++) {
        if (got[p]) {
            __atomic_add_fetch(pair_ctr(c, 1, p, c->rank), 1, __ATOMIC_RELEASE);
        }
    }
}

static void count_op(void)
{
    g_ops_done++;
    if (g_hang_after > 0 && --g_hang_after == 0) {
        g_stuck = 1;
    }
}

static void exec_list(const mop_t *ops, int nops)
{
    int p2p = 0;
    for (int i = 0; i < nops; i++) {
        switch (ops[i].kind) {
        case K_SEND:
        case K_RECV: p2p = 1; break;
        case K_COPY: memmove(ops[i].r, ops[i].s, ops[i].count); break;
        case K_SET: memset(ops[i].r, ops[i].root, ops[i].count); break;
        default: exec_coll(&ops[i]); count_op();
        }
    }
    if (p2p) {
        exec_p2p(ops, nops);
        count_op();
    }
}

/* a group or a capture records; otherwise the stream runs it now */
static ncclResult_t submit(const mop_t *m)
{
    if (m->c != NULL && m->c->aborted) {
        return ncclInvalidUsage;
    }
    if (m->c != NULL && m->c->async_err != ncclSuccess) {
        return m->c->async_err; /* sticky until the communicator is aborted */
    }
    if (g_group_depth > 0) {
        if (g_ngroup >= MOCK_MAXOPS) {
            return ncclInternalError;
        }
        g_group[g_ngroup++] = *m;
        return ncclSuccess;
    }
    if (g_capturing != NULL) {
        g_cap = realloc(g_cap, (size_t)(g_ncap + 1) * sizeof(*g_cap));
        g_cap[g_ncap++] = *m;
        return ncclSuccess;
    }
    exec_list(m, 1);
    return ncclSuccess;
}

/* whether the forced algorithm is one this machine lacks for kind (one rank selects none) */
static int missing_algo(const struct ncclComm *c, int kind)
{
    static const char *missing[] = {"NVLS", "NVLSTree", "CollNetChain", "PAT", NULL};
    if (c->n > 1 && !strcasecmp(c->algo, "CollNetDirect")) {
        return kind != K_AR;
    }
    for (int i = 0; c->n > 1 && missing[i]; i++) {
        if (!strcasecmp(c->algo, missing[i])) {
            return 1;
        }
    }
    return 0;
}

/* the refusal, as NCCL decides it: the environment is read now, not at init */
static ncclResult_t refuse(struct ncclComm *c)
{
    const char *a = getenv("NCCL_ALGO"), *p = getenv("NCCL_PROTO");
    snprintf(c->last, sizeof(c->last),
             "Error : no algorithm/protocol available for this collective (mock: communicator "
             "created with NCCL_ALGO=%s; NCCL_ALGO is %s now)",
             c->algo, a ? a : "unset");
    return a != NULL || p != NULL ? ncclInvalidUsage : ncclInternalError;
}

/* a refused selection on c: at once when blocking, later and sticky when not */
static ncclResult_t refused_on(struct ncclComm *c)
{
    if (c->blocking) {
        return refuse(c);
    }
    c->pending_refusal = 1;
    c->polls = 1;
    return ncclInProgress;
}

static int group_refused(void)
{
    for (int i = 0; i < g_ngroup; i++) {
        if (g_group[i].kind <= K_RED && g_group[i].c != NULL &&
            missing_algo(g_group[i].c, g_group[i].kind)) {
            return 1;
        }
    }
    return 0;
}

static ncclResult_t coll(int kind, struct ncclComm *c, const void *s, void *r, size_t count,
                         ncclDataType_t dt, ncclRedOp_t op, int root)
{
    mop_t m = {kind, c, s, r, count, dt, op, root, 0};
    if ((kind == K_AR || kind == K_RED || kind == K_RS) &&
        reduce_into(NULL, NULL, 0, dt, op, 1) != 0) {
        snprintf(c->last, sizeof(c->last), "mock: dtype %d not reducible here", (int)dt);
        return ncclInvalidArgument;
    }
    if (count * esize(dt) * (size_t)c->n > MOCK_SLOT) {
        snprintf(c->last, sizeof(c->last), "mock: %zu elements too many", count);
        return ncclInvalidArgument;
    }
    if (g_group_depth > 0 || g_capturing != NULL) {
        return submit(&m);
    }
    if (c->async_err != ncclSuccess) {
        return c->async_err;
    }
    if (kind <= K_RED && missing_algo(c, kind)) {
        return refused_on(c);
    }
    ncclResult_t res = submit(&m);
    if (res == ncclSuccess && !c->blocking) {
        c->polls = MOCK_NB_POLLS; /* NCCL's thread launches it */
        return ncclInProgress;
    }
    return res;
}

/* ---- NCCL ------------------------------------------------------------------ */

ncclResult_t ncclGetVersion(int *v)
{
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclInternalError: return "internal error (mock)";
    case ncclInvalidUsage: return "invalid usage (mock)";
    case ncclInvalidArgument: return "invalid argument (mock)";
    default: return "mock NCCL error";
    }
}

const char *ncclGetLastError(ncclComm_t c)
{
    return c != NULL ? c->last : g_last_global;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static int k;
    memset(id, 0, sizeof(*id));
    snprintf(id->internal, sizeof(id->internal), "/cpmock-%d-%d-%ld", (int)getpid(), k++,
             (long)time(NULL));
    return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int n, ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
    struct ncclComm *c = calloc(1, sizeof(*c));
    const char *a = getenv("NCCL_ALGO"), *p = getenv("NCCL_PROTO");
    if (config == NULL || config->magic != 0xcafebeef || config->size != sizeof(ncclConfig_t)) {
        free(c);
        return ncclInvalidArgument;
    }
    if (n > 8 || rank < 0 || rank >= n) {
        free(c);
        return ncclInvalidArgument;
    }
    c->rank = rank;
    c->n = n;
    /* NCCL_CONFIG_INITIALIZER leaves it undefined: blocking by default */
    c->blocking = config->blocking != 0;
    snprintf(c->name, sizeof(c->name), "%s", id.internal);
    snprintf(c->algo, sizeof(c->algo), "%s", a ? a : "");
    snprintf(c->proto, sizeof(c->proto), "%s", p ? p : "");
    c->len = MOCK_HDR + (size_t)n * MOCK_SLOT + (size_t)n * n * MOCK_MBOX;
    int fd = shm_open(c->name, O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)c->len) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        free(c);
        return ncclSystemError;
    }
    c->base = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (c->base == MAP_FAILED) {
        free(c);
        return ncclSystemError;
    }
    g_inits++;
    mbarrier(c); /* everyone mapped it */
    if (rank == 0) {
        shm_unlink(c->name);
    }
    *out = c;
    if (config->blocking == 0) {
        c->polls = 2; /* report ncclInProgress twice, as a real non-blocking init does */
        return ncclInProgress;
    }
    return ncclSuccess;
}

/*
 * Every rank of c: its colour and key through its input slot, then the ranks of each colour
 * (ordered by key, then by rank in c) initialise a communicator of their own, named after c,
 * the split's number and the colour; NCCL_SPLIT_NOCOLOR gets none.
 */
ncclResult_t ncclCommSplit(ncclComm_t c, int color, int key, ncclComm_t *out, ncclConfig_t *config)
{
    if (c == NULL || c->aborted) {
        return ncclInvalidArgument;
    }
    int *mine = (int *)(void *)slot(c, c->rank), n = 0, me = 0;
    mbarrier(c); /* the slots are free */
    mine[0] = color;
    mine[1] = key;
    mbarrier(c);
    for (int q = 0; q < c->n; q++) {
        const int *o = (const int *)(const void *)slot(c, q);
        if (color != NCCL_SPLIT_NOCOLOR && o[0] == color) {
            n++;
            me += o[1] < key || (o[1] == key && q < c->rank);
        }
    }
    mbarrier(c); /* every rank has read them */
    c->splits++;
    if (color == NCCL_SPLIT_NOCOLOR) {
        *out = NULL;
        return ncclSuccess;
    }
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    snprintf(id.internal, sizeof(id.internal), "%s-s%d-c%d", c->name, c->splits, color);
    return ncclCommInitRankConfig(out, n, id, me, config);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *st)
{
    if (c->pending_refusal) { /* NCCL's thread selects now, with today's environment */
        c->pending_refusal = 0;
        c->polls = 0;
        c->async_err = refuse(c);
    }
    if (c->async_err != ncclSuccess) {
        *st = c->async_err;
    } else if (c->polls > 0) {
        c->polls--;
        *st = ncclInProgress;
    } else {
        *st = ncclSuccess;
    }
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t c)
{
    (void)c;
    return ncclSuccess;
}

static void release(ncclComm_t c)
{
    if (c->regs != 0) {
        fprintf(stderr, "cpmock: rank %d: communicator %s released with %d registration(s)\n",
                c->rank, c->name, c->regs);
    }
    munmap(c->base, c->len);
    free(c);
}

ncclResult_t ncclCommDestroy(ncclComm_t c)
{
    release(c);
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c)
{
    g_stuck = 0;
    c->regs = 0; /* an abort drops them */
    release(c);
    return ncclSuccess;
}

ncclResult_t ncclCommRegister(const ncclComm_t c, void *buf, size_t size, void **handle)
{
    if (buf == NULL || size == 0) {
        return ncclInvalidArgument;
    }
    c->regs++;
    g_registers++;
    *handle = buf;
    return ncclSuccess;
}

ncclResult_t ncclMemAlloc(void **p, size_t bytes)
{
    *p = malloc(bytes > 0 ? bytes : 1);
    g_memallocs += *p != NULL;
    return *p != NULL ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclMemFree(void *p)
{
    g_memfrees += p != NULL;
    free(p);
    return ncclSuccess;
}

ncclResult_t ncclCommDeregister(const ncclComm_t c, void *handle)
{
    if (handle == NULL || c->regs <= 0) {
        return ncclInvalidArgument;
    }
    c->regs--;
    g_deregisters++;
    return ncclSuccess;
}

/* nccl.h declares these two without a prototype */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

ncclResult_t ncclGroupStart(void)
{
    if (g_group_depth++ == 0) {
        g_ngroup = 0;
    }
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    if (g_group_depth <= 0) {
        return ncclInvalidUsage;
    }
    if (--g_group_depth > 0) {
        return ncclSuccess;
    }
    if (g_ngroup == 0) {
        return ncclSuccess;
    }
    struct ncclComm *c = g_group[0].c;
    if (c != NULL && c->async_err != ncclSuccess) {
        g_ngroup = 0;
        return c->async_err;
    }
    if (c != NULL && g_capturing == NULL && group_refused()) {
        g_ngroup = 0;
        return refused_on(c);
    }
    if (g_capturing != NULL && g_ngroup > 0) {
        g_cap = realloc(g_cap, (size_t)(g_ncap + g_ngroup) * sizeof(*g_cap));
        memcpy(g_cap + g_ncap, g_group, (size_t)g_ngroup * sizeof(*g_cap));
        g_ncap += g_ngroup;
    } else if (g_capturing == NULL) {
        g_group_ends++;
        g_group_most =
            (unsigned long)g_ngroup > g_group_most ? (unsigned long)g_ngroup : g_group_most;
        exec_list(g_group, g_ngroup);
    }
    g_ngroup = 0;
    if (c == NULL || c->blocking) {
        return ncclSuccess;
    }
    c->polls = 1; /* a non-blocking communicator: one ncclInProgress to poll away */
    return ncclInProgress;
}

ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *sim)
{
    if (g_group_depth <= 0) {
        return ncclInvalidUsage;
    }
    struct ncclComm *c = g_ngroup > 0 ? g_group[0].c : NULL;
    if (c != NULL && !c->blocking) {
        /* NCCL 2.28's non-blocking group path launches without simulating */
        return ncclGroupEnd();
    }
    int refused = group_refused();
    g_group_depth = 0;
    g_ngroup = 0;
    if (sim != NULL) {
        sim->estimatedTime = 1.0f;
    }
    return refused ? refuse(c) : ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                           ncclComm_t c, cudaStream_t st)
{
    (void)st;
    return coll(K_AR, c, s, r, count, dt, op, 0);
}

ncclResult_t ncclReduce(const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                        int root, ncclComm_t c, cudaStream_t st)
{
    (void)st;
    return coll(K_RED, c, s, r, count, dt, op, root);
}

ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t dt, int root,
                           ncclComm_t c, cudaStream_t st)
{
    (void)st;
    return coll(K_BC, c, s, r, count, dt, ncclSum, root);
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t dt, ncclComm_t c,
                           cudaStream_t st)
{
    (void)st;
    if (s != (char *)r + (size_t)c->rank * count * esize(dt) &&
        (char *)s < (char *)r + (size_t)c->n * count * esize(dt) &&
        (char *)s + count * esize(dt) > (char *)r) {
        snprintf(c->last, sizeof(c->last), "mock: allgather buffers overlap, not in place");
        return ncclInvalidArgument;
    }
    return coll(K_AG, c, s, r, count, dt, ncclSum, 0);
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t dt,
                               ncclRedOp_t op, ncclComm_t c, cudaStream_t st)
{
    (void)st;
    /* NCCL's in-place form: recvbuff == sendbuff + rank*recvcount; anything else may not overlap */
    if (r != (const char *)s + (size_t)c->rank * count * esize(dt) &&
        (char *)r < (const char *)s + (size_t)c->n * count * esize(dt) &&
        (char *)r + count * esize(dt) > (const char *)s) {
        snprintf(c->last, sizeof(c->last), "mock: reducescatter buffers overlap, not in place");
        return ncclInvalidArgument;
    }
    return coll(K_RS, c, s, r, count, dt, op, 0);
}

ncclResult_t ncclAlltoAll(const void *s, void *r, size_t count, ncclDataType_t dt, ncclComm_t c,
                          cudaStream_t st)
{
    (void)st;
    if (s == r) {
        snprintf(c->last, sizeof(c->last), "mock: in-place alltoall not supported");
        return ncclInvalidArgument;
    }
    return coll(K_A2A, c, s, r, count, dt, ncclSum, 0);
}

ncclResult_t ncclGather(const void *s, void *r, size_t count, ncclDataType_t dt, int root,
                        ncclComm_t c, cudaStream_t st)
{
    (void)st;
    return coll(K_GA, c, s, r, count, dt, ncclSum, root);
}

ncclResult_t ncclScatter(const void *s, void *r, size_t count, ncclDataType_t dt, int root,
                         ncclComm_t c, cudaStream_t st)
{
    (void)st;
    return coll(K_SC, c, s, r, count, dt, ncclSum, root);
}

ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t dt, int peer, ncclComm_t c,
                      cudaStream_t st)
{
    mop_t m = {K_SEND, c, s, NULL, count, dt, ncclSum, 0, peer};
    (void)st;
    if (g_group_depth == 0 || peer < 0 || peer >= c->n || count * esize(dt) > MOCK_MBOX) {
        return ncclInvalidUsage;
    }
    return submit(&m);
}

ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t dt, int peer, ncclComm_t c,
                      cudaStream_t st)
{
    mop_t m = {K_RECV, c, NULL, r, count, dt, ncclSum, 0, peer};
    (void)st;
    if (g_group_depth == 0 || peer < 0 || peer >= c->n || count * esize(dt) > MOCK_MBOX) {
        return ncclInvalidUsage;
    }
    return submit(&m);
}

/* ---- CUDA runtime ------------------------------------------------------------ */

/*
 * CPMOCK_NO_GPU says what this process lacks: "1" or "old": a recent enough
 * driver (12.2 under a 13.0 runtime: cudaErrorInsufficientDriver);
 * "nodriver": any driver (the same error, driver version 0); "stub": a real
 * driver (CUDA's stub only: cudaErrorStubLibrary); "nodev": a device
 * (cudaErrorNoDevice); "zero": a device (a count of 0).  "broken" lacks
 * nothing: the driver is recent and fails (cudaErrorSystemDriverMismatch).
 * CPMOCK_SETDEVICE_FAIL=1: the devices are there and cudaSetDevice fails
 * (cudaErrorDevicesUnavailable, as in exclusive-process mode).
 */
static int mock_lacks(const char *what)
{
    const char *e = getenv("CPMOCK_NO_GPU");
    return e != NULL && (!strcmp(e, what) || (e[0] == '1' && !strcmp(what, "old")));
}

cudaError_t cudaGetDeviceCount(int *n)
{
    if (mock_lacks("old") || mock_lacks("nodriver")) {
        return cudaErrorInsufficientDriver; /* count left unwritten, like CUDA 13 */
    }
    if (mock_lacks("stub") || mock_lacks("nodev") || mock_lacks("broken")) {
        return mock_lacks("stub")    ? cudaErrorStubLibrary
               : mock_lacks("nodev") ? cudaErrorNoDevice
                                     : cudaErrorSystemDriverMismatch;
    }
    *n = mock_lacks("zero") ? 0 : 8;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    /* "old": x.2 of the major version before the runtime's (12.2 under 13.0) */
    *v = mock_lacks("old")                              ? (CUDART_VERSION / 1000 - 1) * 1000 + 20
         : mock_lacks("nodriver") || mock_lacks("stub") ? 0
                                                        : CUDART_VERSION;
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaErrorInsufficientDriver
               ? "CUDA driver version is insufficient for CUDA runtime version (mock)"
               : "mock CUDA error";
}

const char *cudaGetErrorName(cudaError_t e)
{
    return e == cudaSuccess ? "cudaSuccess" : "cudaErrorMock";
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
    const char *f = getenv("CPMOCK_SETDEVICE_FAIL");
    if (f != NULL && f[0] == '1') {
        return cudaErrorDevicesUnavailable;
    }
    return d >= 0 && d < 8 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "mock GPU %d", d);
    p->totalGlobalMem = (size_t)1 << 30;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    (void)flags;
    *s = calloc(1, sizeof(**s));
    return *s ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    free(s);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    (void)s;
    return g_stuck ? cudaErrorLaunchTimeout : cudaSuccess;
}

static cudaError_t g_cuda_last = cudaSuccess; /* what cudaGetLastError answers, then clears */

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    const char *cap = getenv("CPMOCK_DEVICE_BYTES"); /* a smaller "device": larger ones fail */
    *p = cap == NULL || bytes <= strtoull(cap, NULL, 10) ? malloc(bytes) : NULL;
    if (*p != NULL) {
        memset(*p, 0xa5, bytes); /* garbage, as device memory would hold */
    }
    if (*p == NULL) {
        g_cuda_last = cudaErrorMemoryAllocation;
    }
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = g_cuda_last;
    g_cuda_last = cudaSuccess;
    return e;
}

cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int v, size_t bytes)
{
    memset(p, v, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t bytes, enum cudaMemcpyKind k,
                            cudaStream_t st)
{
    mop_t m = {K_COPY, NULL, s, d, bytes, ncclInt8, ncclSum, 0, 0};
    (void)st;
    if (k == cudaMemcpyDeviceToDevice) {
        g_d2d_copies++;
        g_d2d_bytes += bytes;
    }
    submit(&m);
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = calloc(1, sizeof(**e));
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    free(e);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)s;
    if (g_capturing != NULL) {
        return cudaErrorStreamCaptureUnsupported;
    }
    e->t = now_s();
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    (void)e;
    return g_stuck ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    *ms = (float)((b->t - a->t) * 1e3);
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    (void)mode;
    if (g_capturing != NULL) {
        return cudaErrorIllegalState;
    }
    g_capturing = s;
    g_cap = NULL;
    g_ncap = 0;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    if (g_capturing != s) {
        return cudaErrorIllegalState;
    }
    *g = calloc(1, sizeof(**g));
    (*g)->ops = g_cap;
    (*g)->nops = g_ncap;
    g_capturing = NULL;
    g_cap = NULL;
    g_ncap = 0;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags)
{
    (void)flags;
    *x = calloc(1, sizeof(**x));
    (*x)->nops = g->nops;
    (*x)->ops = malloc((size_t)(g->nops + 1) * sizeof(mop_t));
    if (g->nops > 0) { /* a rank with nothing to move captures an empty graph */
        memcpy((*x)->ops, g->ops, (size_t)g->nops * sizeof(mop_t));
    }
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    free(g->ops);
    free(g);
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
    free(x->ops);
    free(x);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s)
{
    (void)s;
    g_graph_launches++;
    exec_list(x->ops, x->nops);
    return cudaSuccess;
}
