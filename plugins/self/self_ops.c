#include "config.h"

/*
 * The self plugin's operations (self_internal.h): the barrier, the reductions (every dtype
 * and operator, 16-bit floats through float) and each operation in chunks through the slots
 * of the shared segment (the layout: self_backend.c).
 */

#include "self_internal.h"

#include <collprof/plugin_util.h>

#include <sched.h>
#include <string.h>
#include <time.h>

/* ---- barrier ----------------------------------------------------------- */

void self_barrier(self_ctx_t *ctx)
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
void self_reduce(void *d, const void *s, size_t n, int dtype, int op)
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

void self_run_op(self_ctx_t *ctx, const collprof_args_t *a)
{
    self_op_t o;
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
}
