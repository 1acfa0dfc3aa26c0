#include "config.h"

/*
 * collprof backend "self": every operation in plain C over a POSIX shared
 * memory segment shared by the ranks of one node, with no communication
 * library.  It measures collprof's own overhead and lets tests drive the
 * runner without MPI.  It runs only when named (-b self).
 *
 * The segment: a process-shared barrier, a header of n element counts
 * (alltoallv: every rank's largest block), then one slot of S bytes
 * per rank (S = 1 MiB, option self-slot-kib) and two result areas of S bytes.
 * Every operation goes through the slots in chunks: each rank copies its
 * chunk into its own slot (or, for alltoall and reducescatter, one sub-slot
 * per peer), barrier, reads what it needs from the others' slots, barrier.
 * Reductions cost O(count) per rank whatever n: allreduce and reduce are a
 * reduce-scatter (rank r reduces its 1/n share of the chunk over the n
 * ranks' pieces, in rank order, into a result area; the pieces of a share lie
 * side by side in the slots area, see self_op_reduce) then an all-gather
 * (every rank, or the root, copies the whole result area); each element is
 * reduced by one rank only, so every rank gets the same bits.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <collprof/plugin.h>
#include <collprof/plugin_util.h>

#define SELF_ERR_LEN   256
#define SELF_NAME_LEN  64
#define SELF_LINE      64
#define SELF_PAGE      4096
#define SELF_SLOT_KIB  1024
#define SELF_MAX_ALIGN 8 /* the largest element size */

/* The barrier: arrivals and a generation number, on their own cache lines. */
typedef struct self_bar {
    uint32_t count;
    char pad0[SELF_LINE - sizeof(uint32_t)];
    uint32_t gen;
    char pad1[SELF_LINE - sizeof(uint32_t)];
} self_bar_t;

typedef struct self_ctx {
    const collprof_host_t *host;
    int rank;
    int n;
    size_t slot;   /* bytes per rank's slot */
    size_t seglen; /* bytes mapped */
    void *seg;     /* the mapping */
    self_bar_t *bar;
    size_t *most; /* n: every rank's largest alltoallv send count */
    unsigned char *slots;
    unsigned char *results; /* two areas of slot bytes after the n slots */
    char err[SELF_ERR_LEN];
} self_ctx_t;

static char self_err[SELF_ERR_LEN]; /* last_error(NULL) */

__attribute__((format(printf, 2, 3))) static void self_set_error(self_ctx_t *ctx, const char *fmt,
                                                                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx ? ctx->err : self_err, SELF_ERR_LEN, fmt, ap);
    va_end(ap);
}

/* ---- barrier ----------------------------------------------------------- */

static void self_barrier(self_ctx_t *ctx)
{
    self_bar_t *b = ctx->bar;
    uint32_t g = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == (uint32_t)ctx->n) {
        __atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&b->gen, g + 1, __ATOMIC_RELEASE);
        return;
    }
    /* yield first (more ranks than cores is common); then sleep, so that a
     * rank waiting long leaves the cores to others */
    for (unsigned spins = 0; __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == g; spins++) {
        if (spins < 256) {
            sched_yield();
        } else {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- reductions -------------------------------------------------------- */

/*
 * Signed integers reduce in their unsigned twin: wrap-around, never UB.  One
 * loop per operation, 8 elements a step written out (what -O2 vectorises),
 * then the rest.
 */
#define SELF_AT(EXPR, K)                                                                           \
    {                                                                                              \
        size_t i = b + (K);                                                                        \
        x[i] = (EXPR);                                                                             \
    }
#define SELF_LOOP(EXPR)                                                                            \
    for (size_t b = 0; b + 8 <= n; b += 8) {                                                       \
        SELF_AT(EXPR, 0) SELF_AT(EXPR, 1) SELF_AT(EXPR, 2) SELF_AT(EXPR, 3);                       \
        SELF_AT(EXPR, 4) SELF_AT(EXPR, 5) SELF_AT(EXPR, 6) SELF_AT(EXPR, 7);                       \
    }                                                                                              \
    for (size_t i = n & ~(size_t)7; i < n; i++) {                                                  \
        x[i] = (EXPR);                                                                             \
    }                                                                                              \
    break
#define SELF_DEF_INT(NAME, T, U)                                                                   \
    static void self_red_##NAME(void *restrict d, const void *restrict s, size_t n, int op)        \
    {                                                                                              \
        T *restrict x = d;                                                                         \
        const T *restrict y = s;                                                                   \
        switch (op) {                                                                              \
        case COLLPROF_REDOP_SUM: SELF_LOOP((T)((U)x[i] + (U)y[i]));                                \
        case COLLPROF_REDOP_PROD: SELF_LOOP((T)((U)x[i] * (U)y[i]));                               \
        case COLLPROF_REDOP_MIN: SELF_LOOP(y[i] < x[i] ? y[i] : x[i]);                             \
        default: SELF_LOOP(y[i] > x[i] ? y[i] : x[i]);                                             \
        }                                                                                          \
    }
SELF_DEF_INT(i8, int8_t, uint32_t)
SELF_DEF_INT(u8, uint8_t, uint32_t)
SELF_DEF_INT(i32, int32_t, uint32_t)
SELF_DEF_INT(u32, uint32_t, uint32_t)
SELF_DEF_INT(i64, int64_t, uint64_t)
SELF_DEF_INT(u64, uint64_t, uint64_t)
SELF_DEF_INT(f32, float, float)
SELF_DEF_INT(f64, double, double)

static float self_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t bits;
    float f;
    if (e == 0x1f) {
        bits = sign | 0x7f800000u | (m << 13); /* inf, nan */
    } else if (e != 0) {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    } else {
        f = (float)m * 0x1p-24f; /* zero and subnormals */
        return sign ? -f : f;
    }
    memcpy(&f, &bits, sizeof(f));
    return f;
}

/* Round to nearest even; overflow gives infinity. */
static uint16_t self_float_to_half(float f)
{
    uint32_t bits, sign, m;
    int e;
    memcpy(&bits, &f, sizeof(bits));
    sign = (bits >> 16) & 0x8000u;
    e = (int)((bits >> 23) & 0xffu) - 127 + 15;
    m = bits & 0x7fffffu;
    if (((bits >> 23) & 0xffu) == 0xffu) {
        return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
    }
    if (e >= 31) {
        return (uint16_t)(sign | 0x7c00u);
    }
    if (e <= 0) { /* subnormal half, or zero */
        if (e < -10) {
            return (uint16_t)sign;
        }
        m |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), half = m >> shift, rest = m & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        half += rest > mid || (rest == mid && (half & 1u));
        return (uint16_t)(sign | half);
    }
    uint32_t h = ((uint32_t)e << 10) | (m >> 13), rest = m & 0x1fffu;
    h += rest > 0x1000u || (rest == 0x1000u && (h & 1u)); /* a carry may make it inf: right */
    return (uint16_t)(sign | h);
}

static float self_bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static uint16_t self_float_to_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((bits >> 16) | 0x40u); /* quiet nan */
    }
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/* 16-bit floats: through float and back (collprof's values convert exactly). */
static void self_red_16(void *d, const void *s, size_t n, int op, int bf)
{
    uint16_t *x = d;
    const uint16_t *y = s;
    for (size_t i = 0; i < n; i++) {
        float a = bf ? self_bf16_to_float(x[i]) : self_half_to_float(x[i]);
        float b = bf ? self_bf16_to_float(y[i]) : self_half_to_float(y[i]);
        switch (op) {
        case COLLPROF_REDOP_SUM: a = a + b; break;
        case COLLPROF_REDOP_PROD: a = a * b; break;
        case COLLPROF_REDOP_MIN: a = b < a ? b : a; break;
        default: a = b > a ? b : a; break;
        }
        x[i] = bf ? self_float_to_bf16(a) : self_float_to_half(a);
    }
}

/* d[i] = d[i] op s[i] for n elements */
static void self_reduce(void *d, const void *s, size_t n, int dtype, int op)
{
    switch (dtype) {
    case COLLPROF_DTYPE_INT8: self_red_i8(d, s, n, op); break;
    case COLLPROF_DTYPE_UINT8: self_red_u8(d, s, n, op); break;
    case COLLPROF_DTYPE_INT32: self_red_i32(d, s, n, op); break;
    case COLLPROF_DTYPE_UINT32: self_red_u32(d, s, n, op); break;
    case COLLPROF_DTYPE_INT64: self_red_i64(d, s, n, op); break;
    case COLLPROF_DTYPE_UINT64: self_red_u64(d, s, n, op); break;
    case COLLPROF_DTYPE_FLOAT16: self_red_16(d, s, n, op, 0); break;
    case COLLPROF_DTYPE_BFLOAT16: self_red_16(d, s, n, op, 1); break;
    case COLLPROF_DTYPE_FLOAT32: self_red_f32(d, s, n, op); break;
    default: self_red_f64(d, s, n, op); break;
    }
}

/* ---- operations -------------------------------------------------------- */

/* One operation's view of the buffers, in bytes. */
typedef struct self_op {
    const collprof_args_t *a;
    size_t esz;               /* bytes per element */
    const unsigned char *src; /* the input (sendbuf, or recvbuf in place) */
    unsigned char *dst;       /* recvbuf */
} self_op_t;

static unsigned char *self_slot(const self_ctx_t *ctx, int q)
{
    return ctx->slots + (size_t)q * ctx->slot;
}

static size_t self_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* [lo, hi): rank r's share of c elements of e bytes, in whole cache lines */
static void self_share(const self_ctx_t *ctx, int r, size_t c, size_t e, size_t *lo, size_t *hi)
{
    size_t per = SELF_LINE / e, lines = (c + per - 1) / per, n = (size_t)ctx->n;
    *lo = self_min(c, lines * (size_t)r / n * per);
    *hi = self_min(c, lines * ((size_t)r + 1) / n * per);
}

/*
 * allreduce (root < 0) and reduce, per chunk: every rank copies its input
 * into the slots area, share by share: the n ranks' pieces of rank s's share
 * [lo, hi) lie side by side from n * lo elements on, rank q's at q * (hi - lo)
 * (share-major); barrier; rank r reduces its share over those n pieces, one
 * contiguous run, into result area k; barrier; every rank (reduce: the root)
 * copies result area k out.  Share-major, the rank that reduces a share reads
 * n x its share's bytes in a row: with one slot per rank it read one page in
 * each of the n slots, n pages resident in every reducing rank (4 MiB at
 * 1,024 ranks for a 1K allreduce); now a writer touches one page per share
 * it writes, at most min(lines, n).  Chunks alternate between the two result
 * areas, so the reductions of chunk k + 1 never write an area still being
 * read: the barrier of chunk k + 1 comes after every rank's copy of chunk
 * k - 1.
 */
static void self_op_reduce(self_ctx_t *ctx, const self_op_t *o, int root)
{
    size_t e = o->esz, cap = ctx->slot / e, count = o->a->count, lo, hi, n = (size_t)ctx->n;
    int k = 0;
    for (size_t off = 0; off < count; off += cap, k ^= 1) {
        size_t c = self_min(cap, count - off);
        unsigned char *res = ctx->results + (size_t)k * ctx->slot;
        const unsigned char *in = o->src + off * e;
        /* the shares that are not empty: all n, or one line each when there are fewer lines */
        size_t per = SELF_LINE / e, lines = (c + per - 1) / per;
        for (size_t i = 0; i < self_min(lines, n); i++) {
            if (lines >= n) {
                self_share(ctx, (int)i, c, e, &lo, &hi);
            } else {
                lo = i * per;
                hi = self_min(c, lo + per);
            }
            memcpy(ctx->slots + (n * lo + (size_t)ctx->rank * (hi - lo)) * e, in + lo * e,
                   (hi - lo) * e);
        }
        self_barrier(ctx);
        self_share(ctx, ctx->rank, c, e, &lo, &hi);
        const unsigned char *run = ctx->slots + n * lo * e;
        size_t w = (hi - lo) * e;
        memcpy(res + lo * e, run, w);
        for (size_t q = 1; w > 0 && q < n; q++) {
            self_reduce(res + lo * e, run + q * w, hi - lo, o->a->dtype, o->a->redop);
        }
        self_barrier(ctx);
        if (root < 0 || ctx->rank == root) {
            memcpy(o->dst + off * e, res, c * e);
        }
    }
}

/*
 * every rank publishes a sub-slot per block; rank r reduces block r over the
 * n slots: n blocks of count / n elements, O(count) per rank already
 */
static void self_op_reducescatter(self_ctx_t *ctx, const self_op_t *o)
{
    int n = ctx->n, r = ctx->rank;
    size_t e = o->esz, cap = ctx->slot / ((size_t)n * e), b = o->a->count / (size_t)n;
    for (size_t off = 0; off < b; off += cap) {
        size_t c = self_min(cap, b - off);
        for (int p = 0; p < n; p++) {
            memcpy(self_slot(ctx, r) + (size_t)p * cap * e, o->src + ((size_t)p * b + off) * e,
                   c * e);
        }
        self_barrier(ctx);
        unsigned char *d = o->dst + off * e;
        memcpy(d, self_slot(ctx, 0) + (size_t)r * cap * e, c * e);
        for (int q = 1; q < n; q++) {
            self_reduce(d, self_slot(ctx, q) + (size_t)r * cap * e, c, o->a->dtype, o->a->redop);
        }
        self_barrier(ctx);
    }
}

/* allgather (root < 0) and gather */
static void self_op_gather(self_ctx_t *ctx, const self_op_t *o, int root)
{
    int n = ctx->n, r = ctx->rank;
    size_t e = o->esz, cap = ctx->slot / e, b = o->a->count / (size_t)n;
    const unsigned char *src = o->a->in_place ? o->dst + (size_t)r * b * e : o->src;
    for (size_t off = 0; off < b; off += cap) {
        size_t c = self_min(cap, b - off);
        memcpy(self_slot(ctx, r), src + off * e, c * e);
        self_barrier(ctx);
        for (int q = 0; (root < 0 || r == root) && q < n; q++) {
            if (q != r || !o->a->in_place) {
                memcpy(o->dst + ((size_t)q * b + off) * e, self_slot(ctx, q), c * e);
            }
        }
        self_barrier(ctx);
    }
}

/* the largest of the n blocks of recvcounts[] (allgatherv, gatherv, scatterv) */
static size_t self_most(const self_ctx_t *ctx, const collprof_args_t *a)
{
    size_t most = 0;
    for (int q = 0; q < ctx->n; q++) {
        most = a->recvcounts[q] > most ? a->recvcounts[q] : most;
    }
    return most;
}

/*
 * allgatherv (root < 0) and gatherv: rank q's block of recvcounts[q] lands
 * at rdispls[q].  Every rank holds the same counts, so all run the same
 * number of rounds.
 */
static void self_op_allgatherv(self_ctx_t *ctx, const self_op_t *o, int root)
{
    const collprof_args_t *a = o->a;
    int n = ctx->n, r = ctx->rank;
    size_t e = o->esz, cap = ctx->slot / e, most = self_most(ctx, a);
    const unsigned char *src = a->in_place ? o->dst + a->rdispls[r] * e : o->src;
    for (size_t off = 0; off < most; off += cap) {
        size_t mine = a->recvcounts[r] > off ? self_min(cap, a->recvcounts[r] - off) : 0;
        memcpy(self_slot(ctx, r), src + off * e, mine * e);
        self_barrier(ctx);
        for (int q = 0; (root < 0 || r == root) && q < n; q++) {
            size_t c = a->recvcounts[q] > off ? self_min(cap, a->recvcounts[q] - off) : 0;
            if (q != r || !a->in_place) {
                memcpy(o->dst + (a->rdispls[q] + off) * e, self_slot(ctx, q), c * e);
            }
        }
        self_barrier(ctx);
    }
}

/* the root fills every rank's slot with that rank's block */
static void self_op_scatter(self_ctx_t *ctx, const self_op_t *o)
{
    int n = ctx->n, r = ctx->rank, root = o->a->root, ip = o->a->in_place;
    size_t e = o->esz, cap = ctx->slot / e, b = o->a->count / (size_t)n;
    unsigned char *dst = ip ? o->dst + (size_t)r * b * e : o->dst;
    for (size_t off = 0; off < b; off += cap) {
        size_t c = self_min(cap, b - off);
        for (int p = 0; r == root && p < n; p++) {
            memcpy(self_slot(ctx, p), o->src + ((size_t)p * b + off) * e, c * e);
        }
        self_barrier(ctx);
        if (!(ip && r == root)) { /* in place, the root's block stays where it is */
            memcpy(dst + off * e, self_slot(ctx, r), c * e);
        }
        self_barrier(ctx);
    }
}

/* scatterv: the root fills every rank's slot with that rank's block of recvcounts[p] */
static void self_op_scatterv(self_ctx_t *ctx, const self_op_t *o)
{
    const collprof_args_t *a = o->a;
    int n = ctx->n, r = ctx->rank, root = a->root, ip = a->in_place;
    size_t e = o->esz, cap = ctx->slot / e, most = self_most(ctx, a);
    unsigned char *dst = ip ? o->dst + a->rdispls[r] * e : o->dst;
    for (size_t off = 0; off < most; off += cap) {
        for (int p = 0; r == root && p < n; p++) {
            size_t c = a->recvcounts[p] > off ? self_min(cap, a->recvcounts[p] - off) : 0;
            memcpy(self_slot(ctx, p), o->src + (a->rdispls[p] + off) * e, c * e);
        }
        self_barrier(ctx);
        size_t mine = a->recvcounts[r] > off ? self_min(cap, a->recvcounts[r] - off) : 0;
        if (!(ip && r == root)) { /* in place, the root's block stays where it is */
            memcpy(dst + off * e, self_slot(ctx, r), mine * e);
        }
        self_barrier(ctx);
    }
}

/* the root's input is in recvbuf; it uses every slot as one area */
static void self_op_broadcast(self_ctx_t *ctx, const self_op_t *o)
{
    size_t e = o->esz, cap = ctx->slot * (size_t)ctx->n / e, count = o->a->count;
    int root = o->a->root;
    for (size_t off = 0; off < count; off += cap) {
        size_t c = self_min(cap, count - off);
        if (ctx->rank == root) {
            memcpy(ctx->slots, o->dst + off * e, c * e);
        }
        self_barrier(ctx);
        if (ctx->rank != root) {
            memcpy(o->dst + off * e, ctx->slots, c * e);
        }
        self_barrier(ctx);
    }
}

/*
 * alltoall and alltoallv: sub-slot p of rank q's slot carries what q sends to
 * p.  Round k moves elements [k*cap, (k+1)*cap) of every peer's block, and
 * reads them before anyone writes the same range, so in place works too.
 * sc/sd: what this rank sends to each peer and from where, rc/rd: what it
 * receives from each and where to; NULL for alltoall's blocks of b at p * b.
 * A rank knows both sides from its own arguments (recvcounts[q] is what q
 * sends it), so no rank reads another's counts.
 */
static void self_a2a_rounds(self_ctx_t *ctx, const self_op_t *o, const size_t *sc, const size_t *sd,
                            const size_t *rc, const size_t *rd, size_t b, size_t rounds_max)
{
    int n = ctx->n, r = ctx->rank;
    size_t e = o->esz, cap = ctx->slot / ((size_t)n * e);
    for (size_t off = 0; off < rounds_max; off += cap) {
        for (int p = 0; p < n; p++) {
            size_t send = sc ? sc[p] : b, from = sd ? sd[p] : (size_t)p * b;
            size_t c = send > off ? self_min(cap, send - off) : 0;
            memcpy(self_slot(ctx, r) + (size_t)p * cap * e, o->src + (from + off) * e, c * e);
        }
        self_barrier(ctx);
        for (int q = 0; q < n; q++) {
            size_t have = rc ? rc[q] : b, to = rd ? rd[q] : (size_t)q * b;
            size_t c = have > off ? self_min(cap, have - off) : 0;
            memcpy(o->dst + (to + off) * e, self_slot(ctx, q) + (size_t)r * cap * e, c * e);
        }
        self_barrier(ctx);
    }
}

/*
 * alltoallv: every rank runs as many rounds as the largest block of any rank
 * needs; each publishes its largest send count in the header (n counts), and
 * reads the n of them after a barrier.  (An n x n header of every rank's
 * counts took n^2 x 8 bytes of the segment, 8 MiB at 1,024 ranks and 2 GiB at
 * 16,384, and n^2 steps per call on every rank.)
 */
static void self_op_alltoallv(self_ctx_t *ctx, const self_op_t *o)
{
    const collprof_args_t *a = o->a;
    int n = ctx->n;
    const size_t *sc = a->in_place ? a->recvcounts : a->sendcounts;
    const size_t *sd = a->in_place ? a->rdispls : a->sdispls;
    size_t most = 0;
    for (int p = 0; p < n; p++) {
        most = sc[p] > most ? sc[p] : most;
    }
    ctx->most[ctx->rank] = most;
    self_barrier(ctx);
    for (int q = 0; q < n; q++) {
        most = ctx->most[q] > most ? ctx->most[q] : most;
    }
    if (most == 0) {
        self_barrier(ctx); /* no round: keep the next call from rewriting the counts early */
    }
    self_a2a_rounds(ctx, o, sc, sd, a->recvcounts, a->rdispls, 0, most);
}

/* alltoall: blocks of b = count/n at p * b */
static void self_op_alltoall(self_ctx_t *ctx, const self_op_t *o)
{
    size_t b = o->a->count / (size_t)ctx->n;
    self_a2a_rounds(ctx, o, NULL, NULL, NULL, NULL, b, b);
}

static void self_op_sendrecv(self_ctx_t *ctx, const self_op_t *o)
{
    size_t e = o->esz, cap = ctx->slot / e, count = o->a->count;
    for (size_t off = 0; off < count; off += cap) {
        size_t c = self_min(cap, count - off);
        memcpy(self_slot(ctx, ctx->rank), o->src + off * e, c * e);
        self_barrier(ctx);
        memcpy(o->dst + off * e, self_slot(ctx, o->a->peer_recv), c * e);
        self_barrier(ctx);
    }
}

/* ---- slots ------------------------------------------------------------- */

static int self_check_args(self_ctx_t *ctx, const collprof_args_t *a)
{
    if (a->op < 0 || a->op >= COLLPROF_OP_COUNT || collprof_dtype_size((int)a->dtype) == 0 ||
        (int)a->redop < 0 || a->redop >= COLLPROF_REDOP_COUNT) {
        self_set_error(ctx, "run: op %d, dtype %d or redop %d out of range", (int)a->op,
                       (int)a->dtype, (int)a->redop);
        return COLLPROF_ERR_INVALID;
    }
    if (a->memtype != COLLPROF_MEM_HOST) {
        self_set_error(ctx, "run: %s memory is not supported (host only)",
                       collprof_memtype_name(a->memtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if ((collprof_op_info((int)a->op)->flags & COLLPROF_OPF_ROOTED) &&
        (a->root < 0 || a->root >= ctx->n)) {
        self_set_error(ctx, "run: %s root %d out of range", collprof_op_name((int)a->op), a->root);
        return COLLPROF_ERR_INVALID;
    }
    if (a->op == COLLPROF_OP_SENDRECV && (a->peer_recv < 0 || a->peer_recv >= ctx->n)) {
        self_set_error(ctx, "run: sendrecv peer %d out of range", a->peer_recv);
        return COLLPROF_ERR_INVALID;
    }
    return COLLPROF_OK;
}

static int self_run(void *vctx, const collprof_args_t *a)
{
    self_ctx_t *ctx = vctx;
    self_op_t o;
    int rc = self_check_args(ctx, a);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    o.a = a;
    o.esz = collprof_dtype_size((int)a->dtype);
    o.dst = a->recvbuf;
    o.src = a->in_place ? (const unsigned char *)a->recvbuf : (const unsigned char *)a->sendbuf;
    /* a non-blocking op completes inside the "post": nothing is left to overlap */
    switch ((collprof_op_t)collprof_op_blocking((int)a->op)) {
    case COLLPROF_OP_ALLREDUCE: self_op_reduce(ctx, &o, -1); break;
    case COLLPROF_OP_REDUCE: self_op_reduce(ctx, &o, a->root); break;
    case COLLPROF_OP_REDUCESCATTER: self_op_reducescatter(ctx, &o); break;
    case COLLPROF_OP_ALLGATHER: self_op_gather(ctx, &o, -1); break;
    case COLLPROF_OP_ALLGATHERV: self_op_allgatherv(ctx, &o, -1); break;
    case COLLPROF_OP_GATHERV: self_op_allgatherv(ctx, &o, a->root); break;
    case COLLPROF_OP_SCATTERV: self_op_scatterv(ctx, &o); break;
    case COLLPROF_OP_GATHER: self_op_gather(ctx, &o, a->root); break;
    case COLLPROF_OP_SCATTER: self_op_scatter(ctx, &o); break;
    case COLLPROF_OP_BROADCAST: self_op_broadcast(ctx, &o); break;
    case COLLPROF_OP_ALLTOALL: self_op_alltoall(ctx, &o); break;
    case COLLPROF_OP_ALLTOALLV: self_op_alltoallv(ctx, &o); break;
    case COLLPROF_OP_SENDRECV: self_op_sendrecv(ctx, &o); break;
    default: self_barrier(ctx); break; /* barrier */
    }
    if ((collprof_op_info((int)a->op)->flags & COLLPROF_OPF_NONBLOCKING) && a->overlap != NULL) {
        a->overlap(a->overlap_arg);
    }
    return COLLPROF_OK;
}

static int self_query(void *ctx, collprof_caps_t *caps)
{
    (void)ctx; /* the same answer before and after init */
    if (!caps) {
        self_set_error(NULL, "query: caps is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if (caps->size < COLLPROF_CAPS_SIZE_V1) {
        self_set_error(NULL, "query: caps->size %zu is smaller than ABI 1's %zu", caps->size,
                       (size_t)COLLPROF_CAPS_SIZE_V1);
        return COLLPROF_ERR_ABI;
    }
    caps->library_version = "collprof self " PACKAGE_VERSION " (POSIX shared memory)";
    caps->ops = COLLPROF_BIT(COLLPROF_OP_COUNT) - 1u;
    caps->dtypes = COLLPROF_BIT(COLLPROF_DTYPE_COUNT) - 1u;
    caps->redops = COLLPROF_BIT(COLLPROF_REDOP_COUNT) - 1u;
    caps->memtypes = COLLPROF_BIT(COLLPROF_MEM_HOST);
    caps->variants = NULL;
    caps->nvariants = 0;
    return COLLPROF_OK;
}

/* The slot size in bytes from self-slot-kib; 0 (and last_error) when it is bad. */
static size_t self_slot_bytes(const collprof_host_t *h)
{
    const char *opt = h->get_option ? h->get_option("self-slot-kib") : NULL;
    char *end = NULL;
    unsigned long long kib = SELF_SLOT_KIB;
    if (opt != NULL) {
        errno = 0;
        kib = strtoull(opt, &end, 10);
        if (errno || end == opt || *end != '\0' || kib == 0 || kib > (1ull << 22)) {
            self_set_error(NULL, "self-slot-kib: '%s' is not a size in KiB (1 to 4194304)", opt);
            return 0;
        }
    }
    /* an alltoall sub-slot must hold at least one element of every type */
    if (kib * 1024 < (unsigned long long)h->nranks * SELF_MAX_ALIGN) {
        self_set_error(NULL, "self-slot-kib %llu is too small for %d ranks", kib, h->nranks);
        return 0;
    }
    return (size_t)kib * 1024;
}

/* The pid in a segment name collprof-self-<pid>-<ns>-<i> (self_create), else 0. */
static long self_segment_pid(const char *name)
{
    long pid = 0, ns = 0;
    int i = 0, used = 0;
    if (sscanf(name, "collprof-self-%ld-%ld-%d%n", &pid, &ns, &i, &used) != 3 ||
        name[used] != '\0') {
        return 0;
    }
    return pid;
}

/* Rank 0: a fresh segment of len bytes; its name in name, "" on failure. */
static void self_create(size_t len, char *name)
{
    int fd = -1;
    for (int i = 0; i < 16 && fd < 0; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        snprintf(name, SELF_NAME_LEN, "/collprof-self-%ld-%ld-%d", (long)getpid(), (long)ts.tv_nsec,
                 i);
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno != EEXIST) {
            break;
        }
    }
    if (fd < 0) {
        self_set_error(NULL, "shm_open: %s", strerror(errno));
        name[0] = '\0';
        return;
    }
    if (ftruncate(fd, (off_t)len) != 0 || posix_fallocate(fd, 0, (off_t)len) != 0) {
        self_set_error(NULL, "cannot size the %zu-byte shared memory segment %s", len, name);
        shm_unlink(name);
        name[0] = '\0';
    }
    close(fd);
}

static void *self_map(const char *name, size_t len)
{
    int fd = shm_open(name, O_RDWR, 0600);
    void *p;
    if (fd < 0) {
        self_set_error(NULL, "shm_open %s: %s", name, strerror(errno));
        return NULL;
    }
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        self_set_error(NULL, "mmap of %zu bytes: %s", len, strerror(errno));
        return NULL;
    }
    return p;
}

static size_t self_header_bytes(int n)
{
    size_t h = sizeof(self_bar_t) + (size_t)n * sizeof(size_t);
    return (h + SELF_PAGE - 1) / SELF_PAGE * SELF_PAGE;
}

/* Every rank maps rank 0's segment; all agree on the outcome; rank 0 unlinks it. */
static int self_attach(const collprof_host_t *h, self_ctx_t *ctx)
{
    char name[SELF_NAME_LEN] = "";
    int mine, *all, bad = 0;
    if (h->rank == 0) {
        /* segments a rank 0 killed between creating and unlinking left behind */
        collprof_shm_sweep(self_segment_pid, h, "self");
        self_create(ctx->seglen, name);
    }
    if (h->oob_bcast(name, sizeof(name), 0) != COLLPROF_OK) {
        self_set_error(NULL, "init: out-of-band broadcast of the segment name failed");
        return COLLPROF_ERR_BOOTSTRAP; /* the core's agreement covers this */
    }
    if (name[0] == '\0' && h->rank != 0) {
        self_set_error(NULL, "init: rank 0 could not create the shared memory segment");
    }
    ctx->seg = name[0] != '\0' ? self_map(name, ctx->seglen) : NULL;
    mine = ctx->seg != NULL;
    all = calloc((size_t)h->nranks, sizeof(int));
    if (!all || h->oob_allgather(&mine, all, sizeof(int)) != COLLPROF_OK) {
        bad = 1;
    }
    for (int q = 0; !bad && q < h->nranks; q++) {
        bad = !all[q];
    }
    free(all);
    if (h->rank == 0 && name[0] != '\0') {
        shm_unlink(name); /* every rank has it mapped (or gave up): nothing is left behind */
    }
    if (bad && mine) {
        self_set_error(NULL, "init: another rank could not map the shared memory segment");
    }
    if (bad) {
        if (ctx->seg) {
            munmap(ctx->seg, ctx->seglen);
        }
        return COLLPROF_ERR_BACKEND;
    }
    return COLLPROF_OK;
}

static int self_init(const collprof_host_t *h, void **out)
{
    self_ctx_t *ctx;
    size_t slot;
    int rc;
    if (!h || !out || h->nranks < 1) {
        self_set_error(NULL, "init: bad arguments");
        return COLLPROF_ERR_INVALID;
    }
    if (h->nnodes != 1) {
        self_set_error(NULL, "self needs all ranks on one node (this run has %d nodes)", h->nnodes);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if ((slot = self_slot_bytes(h)) == 0) {
        return COLLPROF_ERR_INVALID;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        self_set_error(NULL, "init: out of memory");
        return COLLPROF_ERR_NO_MEMORY; /* the core agrees on failures before going on */
    }
    ctx->host = h;
    ctx->rank = h->rank;
    ctx->n = h->nranks;
    ctx->slot = slot;
    ctx->seglen = self_header_bytes(h->nranks) + ((size_t)h->nranks + 2) * slot;
    rc = self_attach(h, ctx);
    if (rc != COLLPROF_OK) {
        free(ctx);
        return rc;
    }
    ctx->bar = ctx->seg;
    ctx->most = (size_t *)(ctx->bar + 1);
    ctx->slots = (unsigned char *)ctx->seg + self_header_bytes(h->nranks);
    ctx->results = ctx->slots + (size_t)h->nranks * slot;
    *out = ctx;
    return COLLPROF_OK;
}

static int self_finalize(void *vctx)
{
    self_ctx_t *ctx = vctx;
    if (!ctx) {
        return COLLPROF_OK;
    }
    self_barrier(ctx);
    munmap(ctx->seg, ctx->seglen);
    free(ctx);
    return COLLPROF_OK;
}

static int self_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr)
{
    self_ctx_t *ctx = vctx;
    void *p = NULL;
    if (memtype != COLLPROF_MEM_HOST) {
        self_set_error(ctx, "mem_alloc: %s memory is not supported (host only)",
                       collprof_memtype_name(memtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (posix_memalign(&p, SELF_PAGE, bytes ? bytes : 1) != 0) {
        self_set_error(ctx, "mem_alloc: %zu bytes: out of memory", bytes);
        return COLLPROF_ERR_NO_MEMORY;
    }
    *ptr = p;
    return COLLPROF_OK;
}

static int self_mem_free(void *vctx, int memtype, void *ptr)
{
    if (memtype != COLLPROF_MEM_HOST) {
        self_set_error(vctx, "mem_free: %s memory is not supported (host only)",
                       collprof_memtype_name(memtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    free(ptr);
    return COLLPROF_OK;
}

static const char *self_last_error(void *vctx)
{
    const self_ctx_t *ctx = vctx;
    return ctx ? ctx->err : self_err;
}

static int self_describe(void *vctx, int memtype, collprof_provenance_t *out)
{
    const self_ctx_t *ctx = vctx;
    if (ctx == NULL || out == NULL || memtype != COLLPROF_MEM_HOST) {
        self_set_error(vctx, "describe: host memory only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    snprintf(out->memory, sizeof(out->memory), "posix_memalign, %d-byte aligned", SELF_PAGE);
    snprintf(out->device, sizeof(out->device), "host");
    snprintf(out->transport, sizeof(out->transport), "POSIX shared memory, %zu KiB slot per rank",
             ctx->slot / 1024);
    return COLLPROF_OK;
}

#define SELF_STR_(x) #x
#define SELF_STR(x)  SELF_STR_(x)
static const collprof_option_t self_options[] = {
    {"self-slot-kib", COLLPROF_OPT_INT, SELF_STR(SELF_SLOT_KIB), 1, 1ll << 22, NULL,
     "KiB of shared memory each rank exchanges per step", 0},
};

/* tests/plugins/perrank.c builds this file again under another name, with its own describe() */
#ifndef SELF_ENTRY_NAME
#define SELF_ENTRY_NAME     "self"
#define SELF_ENTRY_DESCRIBE self_describe
#endif

__attribute__((visibility("default"))) const collprof_backend_t collprof_backend_v1 = {
    .size = sizeof(collprof_backend_t),
    .abi_version = COLLPROF_PLUGIN_ABI_VERSION,
    .name = SELF_ENTRY_NAME,
    .version = PACKAGE_VERSION,
    .description = "collprof's own shared-memory collectives, no library (overhead baseline)",
    /* GROUPS: a second context beside the first is a second segment (collprof --repeats) */
    .flags =
        COLLPROF_BACKEND_ON_REQUEST | COLLPROF_BACKEND_GROUPS | COLLPROF_BACKEND_SHARED_BUFFERS,
    .query = self_query,
    .init = self_init,
    .finalize = self_finalize,
    .select_variant = collprof_no_select_variant,
    .mem_alloc = self_mem_alloc,
    .mem_free = self_mem_free,
    .mem_copy = collprof_no_mem_copy,
    .run = self_run,
    .run_batch = collprof_no_run_batch,
    .last_error = self_last_error,
    .options = self_options,
    .noptions = sizeof(self_options) / sizeof(self_options[0]),
    .study_ops = 0,
    .describe = SELF_ENTRY_DESCRIBE,
};
