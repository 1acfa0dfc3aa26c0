/*
 * Data patterns and exact checks of every operation, against an in-process
 * reference of each collective over n simulated ranks: a correct result
 * has #wrong == 0 in every dtype, reduction and placement, and a single
 * corrupted element is counted.  Also the busBW factors and byte counts.
 */
#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"
#include "colls/imbalance.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 8

typedef struct sim {
    int n;
    cp_xfer_t x[MAXN];
    cp_a2av_t a2av[MAXN];
    void *send[MAXN], *recv[MAXN], *snap[MAXN];
    size_t bytes;
} sim_t;

static int64_t get(const cp_xfer_t *x, const void *b, uint64_t i)
{
    int64_t v = -99999;
    cp_data_get(x->dtype, b, i, &v);
    return v;
}

static int64_t reduce2(collprof_redop_t op, int64_t a, int64_t b)
{
    switch (op) {
    case COLLPROF_REDOP_SUM: return a + b;
    case COLLPROF_REDOP_PROD: return a * b;
    case COLLPROF_REDOP_MIN: return a < b ? a : b;
    default: return a > b ? a : b;
    }
}

/* What a correct library computes, reading snapshots of the inputs. */
static void reference(sim_t *s)
{
    int n = s->n;
    const cp_xfer_t *x0 = &s->x[0];
    collprof_dtype_t t = x0->dtype;
    uint64_t cnt = x0->count, blk = cnt / (uint64_t)n;
    for (int r = 0; r < n; r++) {
        int from_recv =
            s->x[r].in_place || collprof_op_blocking(s->x[r].op) == COLLPROF_OP_BROADCAST;
        memcpy(s->snap[r], from_recv ? s->recv[r] : s->send[r], s->bytes);
    }
    for (int r = 0; r < n; r++) {
        const cp_xfer_t *x = &s->x[r];
        void *out = s->recv[r];
        switch (collprof_op_blocking(x->op)) { /* a non-blocking op: its twin's result */
        case COLLPROF_OP_ALLREDUCE:
        case COLLPROF_OP_REDUCE:
            if (x->op == COLLPROF_OP_REDUCE && r != x->root) {
                break;
            }
            for (uint64_t i = 0; i < cnt; i++) {
                int64_t acc = get(x, s->snap[0], i);
                for (int q = 1; q < n; q++) {
                    acc = reduce2(x->redop, acc, get(x, s->snap[q], i));
                }
                cp_data_set(t, out, i, acc);
            }
            break;
        case COLLPROF_OP_REDUCESCATTER:
            for (uint64_t j = 0; j < blk; j++) {
                int64_t acc = get(x, s->snap[0], (uint64_t)r * blk + j);
                for (int q = 1; q < n; q++) {
                    acc = reduce2(x->redop, acc, get(x, s->snap[q], (uint64_t)r * blk + j));
                }
                cp_data_set(t, out, j, acc);
            }
            break;
        case COLLPROF_OP_ALLGATHER:
        case COLLPROF_OP_GATHER:
            if (x->op == COLLPROF_OP_GATHER && r != x->root) {
                break;
            }
            for (int q = 0; q < n; q++) {
                uint64_t off = x->in_place ? (uint64_t)q * blk : 0;
                for (uint64_t j = 0; j < blk; j++) {
                    cp_data_set(t, out, (uint64_t)q * blk + j, get(x, s->snap[q], off + j));
                }
            }
            break;
        case COLLPROF_OP_SCATTER:
            for (uint64_t j = 0; j < blk; j++) {
                uint64_t at = x->in_place ? (uint64_t)r * blk + j : j;
                cp_data_set(t, out, at, get(x, s->snap[x->root], (uint64_t)r * blk + j));
            }
            break;
        case COLLPROF_OP_BROADCAST:
            for (uint64_t i = 0; i < cnt; i++) {
                /* broadcast's input is the root's recvbuf */
                cp_data_set(t, out, i, get(x, s->snap[x->root], i));
            }
            break;
        case COLLPROF_OP_ALLTOALL:
            for (int q = 0; q < n; q++) {
                for (uint64_t j = 0; j < blk; j++) {
                    cp_data_set(t, out, (uint64_t)q * blk + j,
                                get(x, s->snap[q], (uint64_t)r * blk + j));
                }
            }
            break;
        case COLLPROF_OP_ALLTOALLV:
            for (int q = 0; q < n; q++) {
                const cp_a2av_t *aq = &s->a2av[q];
                uint64_t from = x->in_place ? aq->rdispls[r] : aq->sdispls[r];
                for (uint64_t j = 0; j < s->a2av[r].recvcounts[q]; j++) {
                    cp_data_set(t, out, s->a2av[r].rdispls[q] + j, get(x, s->snap[q], from + j));
                }
            }
            break;
        case COLLPROF_OP_ALLGATHERV:
            for (int q = 0; q < n; q++) {
                uint64_t from = x->in_place ? s->a2av[q].rdispls[q] : 0;
                for (uint64_t j = 0; j < s->a2av[r].recvcounts[q]; j++) {
                    cp_data_set(t, out, s->a2av[r].rdispls[q] + j, get(x, s->snap[q], from + j));
                }
            }
            break;
        case COLLPROF_OP_GATHERV:
            for (int q = 0; q < n && r == x->root; q++) {
                const cp_a2av_t *aq = &s->a2av[q];
                uint64_t from = x->in_place ? aq->bdispls[q] : 0;
                for (uint64_t j = 0; j < aq->bcounts[q]; j++) {
                    cp_data_set(t, out, aq->bdispls[q] + j, get(x, s->snap[q], from + j));
                }
            }
            break;
        case COLLPROF_OP_SCATTERV: {
            /* the root's blocks as it laid them out; in place, ours lands at our displacement */
            const cp_a2av_t *ar = &s->a2av[x->root];
            uint64_t to = x->in_place ? s->a2av[r].bdispls[r] : 0;
            for (uint64_t j = 0; j < ar->bcounts[r]; j++) {
                cp_data_set(t, out, to + j, get(x, s->snap[x->root], ar->bdispls[r] + j));
            }
            break;
        }
        case COLLPROF_OP_SENDRECV:
            for (uint64_t i = 0; i < cnt; i++) {
                cp_data_set(t, out, i, get(x, s->snap[(r - 1 + n) % n], i));
            }
            break;
        default: break;
        }
    }
}

static void sim_free(sim_t *s)
{
    for (int r = 0; r < s->n; r++) {
        free(s->send[r]);
        free(s->recv[r]);
        free(s->snap[r]);
        cp_a2av_free(&s->a2av[r]);
    }
}

/* Run one case; returns 1 when correct data checks clean and a corruption is caught. */
static int run_case(collprof_op_t op, collprof_dtype_t t, collprof_redop_t red, int n, int in_place,
                    uint64_t count, const cp_imbalance_t *imb, char *why, size_t len)
{
    sim_t s;
    memset(&s, 0, sizeof(s));
    s.n = n;
    const cp_coll_t *coll = cp_coll_get(op);
    int root = n > 1 ? 1 : 0;
    count = cp_coll_effective_count(op, count, n);
    uint64_t maxelems = 0;
    for (int r = 0; r < n; r++) {
        cp_xfer_t *x = &s.x[r];
        *x = (cp_xfer_t){.op = op,
                         .dtype = t,
                         .redop = red,
                         .root = root,
                         .in_place = in_place,
                         .rank = r,
                         .n = n,
                         .count = count};
        if (cp_op_flags(op) & COLLPROF_OPF_VARIABLE) {
            cp_a2av_build(&s.a2av[r], op, imb, n, count, root, r);
            x->a2av = &s.a2av[r];
        }
        uint64_t e = cp_coll_buffer_elems(x);
        maxelems = e > maxelems ? e : maxelems;
    }
    if (op == COLLPROF_OP_ALLTOALLV && in_place && !s.a2av[0].symmetric) {
        sim_free(&s);
        return 1; /* the runner reports such cells as unsupported */
    }
    s.bytes = (size_t)(maxelems * collprof_dtype_info(t)->size);
    for (int r = 0; r < n; r++) {
        s.send[r] = malloc(s.bytes);
        s.recv[r] = malloc(s.bytes);
        s.snap[r] = malloc(s.bytes);
        memset(s.send[r], 0xff, s.bytes);
        memset(s.recv[r], 0xff, s.bytes);
        coll->fill(&s.x[r], s.send[r], s.recv[r]);
    }
    reference(&s);
    uint64_t wrong = 0;
    for (int r = 0; r < n; r++) {
        wrong += coll->check(&s.x[r], s.recv[r]);
    }
    int good = wrong == 0;
    /* corrupt one element the check must look at */
    int victim = (cp_op_flags(op) & COLLPROF_OPF_ROOTED) && op != COLLPROF_OP_SCATTER &&
                         op != COLLPROF_OP_SCATTERV && op != COLLPROF_OP_BROADCAST
                     ? root
                     : 0;
    uint64_t at =
        (op == COLLPROF_OP_SCATTER && in_place) ? (count / (uint64_t)n) * (uint64_t)victim : 0;
    if (op == COLLPROF_OP_SCATTERV) {
        while (s.a2av[0].bcounts[victim] == 0) { /* a rank that receives something */
            victim++;
        }
        at = cp_coll_result_at(&s.x[victim]);
    } else if (cp_op_flags(op) & COLLPROF_OPF_VARIABLE) {
        at = s.a2av[victim].recvcounts[0] ? s.a2av[victim].rdispls[0] : s.a2av[victim].rdispls[1];
    }
    cp_data_set(t, s.recv[victim], at, get(&s.x[victim], s.recv[victim], at) + 1);
    uint64_t wrong2 = 0;
    for (int r = 0; r < n; r++) {
        wrong2 += coll->check(&s.x[r], s.recv[r]);
    }
    int caught = op == COLLPROF_OP_BARRIER || wrong2 == 1;
    snprintf(why, len, "wrong=%llu after corruption=%llu", (unsigned long long)wrong,
             (unsigned long long)wrong2);
    sim_free(&s);
    return good && caught;
}

/* allgatherv's S is the whole gathered output; each buffer holds it; rank 0 is hot. */
static void allgatherv_bytes(const cp_imbalance_t *moe)
{
    cp_a2av_t a;
    cp_a2av_build(&a, COLLPROF_OP_ALLGATHERV, moe, 4, 1000, 0, 2);
    cp_xfer_t x = {.op = COLLPROF_OP_ALLGATHERV,
                   .dtype = COLLPROF_DTYPE_FLOAT64,
                   .rank = 2,
                   .n = 4,
                   .count = 1000,
                   .a2av = &a};
    ok(cp_coll_bytes(&x) == 8000 && cp_coll_buffer_elems(&x) == 1000,
       "allgatherv S = gathered total x 8 bytes, buffers of the total");
    ok(a.recvcounts[0] == 501 && a.recvcounts[1] == 167 && a.recvcounts[3] == 166 &&
           a.rdispls[3] == 834 && a.sendcounts[0] == a.recvcounts[2],
       "allgatherv moe:1:3 on 4 ranks: counts %zu %zu %zu %zu", a.recvcounts[0], a.recvcounts[1],
       a.recvcounts[2], a.recvcounts[3]);
    cp_a2av_free(&a);
}

/* alltoallv from a file's matrix (3 ranks; blocks up to count x n apart in the values), a
 * skewed one out of place and a symmetric one in place too. */
static void alltoallv_file(void)
{
    double skew[9] = {0, 1, 5, 2, 0, 1, 1, 1, 0}, sym[9] = {1, 2, 3, 2, 1, 4, 3, 4, 1};
    double *ws[2] = {skew, sym};
    int cases = 0, passed = 0;
    char why[128] = "";
    for (int k = 0; k < 2; k++) {
        cp_imbalance_t f = {.kind = CP_IMB_FILE, .file_n = 3, .weights = ws[k]};
        for (int i = 0; i < 9; i++) {
            f.file_total += ws[k][i];
        }
        for (int t = 0; t < COLLPROF_DTYPE_COUNT; t++) {
            for (int ip = 0; ip < 2; ip++) {
                cases++;
                passed += run_case(COLLPROF_OP_ALLTOALLV, (collprof_dtype_t)t, COLLPROF_REDOP_SUM,
                                   3, ip, 3000, &f, why, sizeof(why));
            }
        }
    }
    ok(passed == cases, "alltoallv from a file's matrix: %d/%d cases exact (%s)", passed, cases,
       why);
}

/* gatherv and scatterv rooted at 2 of 4, linear: S is the total, every rank
 * knows every block, and only the root's column (row) carries traffic. */
static void rooted_v_bytes(const cp_imbalance_t *linear)
{
    for (int k = 0; k < 2; k++) {
        collprof_op_t op = k ? COLLPROF_OP_SCATTERV : COLLPROF_OP_GATHERV;
        uint64_t peers = 0;
        cp_a2av_t a;
        cp_traffic_t t;
        cp_a2av_build(&a, op, linear, 4, 1000, 2, 1);
        cp_traffic_init(&t, op, linear, 4, 1000, 2);
        for (int i = 0; i < 16; i++) {
            peers += cp_traffic_cell(&t, i / 4, i % 4) != 0;
        }
        cp_xfer_t x = {.op = op, .dtype = COLLPROF_DTYPE_INT32, .rank = 1, .n = 4, .count = 1000};
        x.a2av = &a;
        ok(cp_coll_bytes(&x) == 4000 && cp_coll_buffer_elems(&x) == 1000 && peers == 4 &&
               a.bcounts[0] == 100 && a.bcounts[3] == 400 && a.bdispls[3] == 600 &&
               (k ? a.recvcounts[2] : a.sendcounts[2]) == 200 &&
               (k ? cp_traffic_cell(&t, 2, 3) : cp_traffic_cell(&t, 3, 2)) == 400,
           "%s linear on 4 ranks, root 2: S = total x 4, blocks %zu..%zu, rank 1 moves %zu",
           collprof_op_name(op), a.bcounts[0], a.bcounts[3], k ? a.recvcounts[2] : a.sendcounts[2]);
        cp_a2av_free(&a);
        cp_traffic_free(&t);
    }
    cp_a2av_t a;
    ok(cp_a2av_build(&a, COLLPROF_OP_GATHERV, linear, 4, 1000, 4, 0) == COLLPROF_ERR_INVALID,
       "a root outside the ranks is refused");
}

/* A reducescatter of per-rank blocks (collprof --replay's reduce-scatter of unequal blocks, x.a2av
 * set): 3 ranks, blocks 4, 8, 4 of 16; each rank's result, summed here from the ranks' fills,
 * is exact in every type and operator, and one element off is counted. */
static void reducescatter_blocks(void)
{
    size_t cnt[3] = {4, 8, 4}, dsp[3] = {0, 4, 12};
    cp_a2av_t a = {.n = 3, .recvcounts = cnt, .rdispls = dsp, .recv_total = 16, .send_total = 16};
    int cases = 0, passed = 0;
    for (int t = 0; t < COLLPROF_DTYPE_COUNT; t++) {
        for (int red = 0; red < COLLPROF_REDOP_COUNT; red++) {
            unsigned char in[3][16 * 8], out[16 * 8];
            cp_xfer_t x[3];
            for (int r = 0; r < 3; r++) {
                x[r] = (cp_xfer_t){.op = COLLPROF_OP_REDUCESCATTER,
                                   .dtype = (collprof_dtype_t)t,
                                   .redop = (collprof_redop_t)red,
                                   .rank = r,
                                   .n = 3,
                                   .count = 16,
                                   .a2av = &a};
                cp_coll_get(COLLPROF_OP_REDUCESCATTER)->fill(&x[r], in[r], out);
            }
            for (int r = 0; r < 3; r++, cases++) {
                for (size_t j = 0; j < cnt[r]; j++) { /* element dsp[r] + j of the reduction */
                    int64_t v = get(&x[0], in[0], dsp[r] + j);
                    for (int q = 1; q < 3; q++) {
                        v = reduce2((collprof_redop_t)red, v, get(&x[q], in[q], dsp[r] + j));
                    }
                    cp_data_set((collprof_dtype_t)t, out, j, v);
                }
                const cp_coll_t *c = cp_coll_get(COLLPROF_OP_REDUCESCATTER);
                uint64_t good = c->check(&x[r], out);
                int64_t v = get(&x[r], out, cnt[r] - 1);
                cp_data_set((collprof_dtype_t)t, out, cnt[r] - 1, v > 0 ? v - 1 : v + 1);
                passed += good == 0 && c->check(&x[r], out) == 1 &&
                          cp_coll_bytes(&x[r]) == 16 * collprof_dtype_size((collprof_dtype_t)t);
            }
        }
    }
    ok(passed == cases,
       "reducescatter of blocks 4, 8, 4: each rank's block exact, one off "
       "counted, S the total (%d/%d)",
       passed, cases);
}

/* The vocabulary tables: ids run 0, 1, 2... in row order (their rows are
 * positional), names are unique and round-trip. */
#define ID_AT(ID, id, ...) id,
static void vocab_tests(void)
{
    static const int op_ids[] = {COLLPROF_OP_TABLE(ID_AT)};
    static const int dt_ids[] = {COLLPROF_DTYPE_TABLE(ID_AT)};
    static const int red_ids[] = {COLLPROF_REDOP_TABLE(ID_AT)};
    static const int mem_ids[] = {COLLPROF_MEM_TABLE(ID_AT)};
    static const int st_ids[] = {COLLPROF_CELL_STATUS_TABLE(ID_AT)};
    int bad = 0;
    for (int i = 0; i < COLLPROF_OP_COUNT; i++) {
        bad += op_ids[i] != i || collprof_op_from_name(collprof_op_name(i)) != i ||
               cp_coll_get((collprof_op_t)i) == NULL || (int)cp_coll_get((collprof_op_t)i)->op != i;
    }
    for (int i = 0; i < COLLPROF_DTYPE_COUNT; i++) {
        bad += dt_ids[i] != i || cp_dtype_from_name(collprof_dtype_name(i)) != i;
    }
    for (int i = 0; i < COLLPROF_REDOP_COUNT; i++) {
        bad += red_ids[i] != i || cp_redop_from_name(collprof_redop_name(i)) != i;
    }
    for (int i = 0; i < COLLPROF_MEM_COUNT; i++) {
        bad += mem_ids[i] != i;
    }
    for (int i = 0; i < COLLPROF_CELL_STATUS_COUNT; i++) {
        bad += st_ids[i] != i || collprof_cell_status_from_name(collprof_cell_status_name(i)) != i;
    }
    ok(bad == 0, "vocabulary: ids in row order, names round-trip (%d bad)", bad);
    ok(cp_dtype_from_name("BF16") == COLLPROF_DTYPE_BFLOAT16 &&
           cp_dtype_from_name("double") == COLLPROF_DTYPE_FLOAT64 && cp_dtype_from_name("x") == -1,
       "dtype aliases");
    ok(!strcmp(collprof_op_name(COLLPROF_OP_COUNT), "?") && collprof_op_info(-1) == NULL,
       "out-of-range ids are refused");
}

int main(void)
{
    static const int ns[] = {1, 2, 3, 4, 7};
    cp_imbalance_t imbs[4];
    char err[256];
    cp_imbalance_parse("uniform", &imbs[0], err, sizeof(err));
    cp_imbalance_parse("linear", &imbs[1], err, sizeof(err));
    cp_imbalance_parse("spread:0.7", &imbs[2], err, sizeof(err));
    cp_imbalance_parse("moe:1:3", &imbs[3], err, sizeof(err));

    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        int cases = 0, passed = 0;
        char first_fail[512] = "";
        for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
            for (int t = 0; t < COLLPROF_DTYPE_COUNT; t++) {
                int nred = (cp_op_flags((collprof_op_t)op) & COLLPROF_OPF_REDUCES)
                               ? COLLPROF_REDOP_COUNT
                               : 1;
                for (int red = 0; red < nred; red++) {
                    for (int ip = 0; ip < 2; ip++) {
                        int var = cp_op_flags((collprof_op_t)op) & COLLPROF_OPF_VARIABLE;
                        int nimb = var ? 4 : 1;
                        for (int im = 0; im < nimb; im++) {
                            if (var && imbs[im].kind == CP_IMB_MOE && ns[k] < 2) {
                                continue;
                            }
                            char why[128];
                            cases++;
                            if (run_case((collprof_op_t)op, (collprof_dtype_t)t,
                                         (collprof_redop_t)red, ns[k], ip, 1000, &imbs[im], why,
                                         sizeof(why))) {
                                passed++;
                            } else if (!first_fail[0]) {
                                snprintf(first_fail, sizeof(first_fail),
                                         " (first failure: n=%d %s %s in_place=%d imb=%s: %s)",
                                         ns[k], collprof_dtype_info((collprof_dtype_t)t)->name,
                                         collprof_redop_name((collprof_redop_t)red), ip,
                                         imbs[im].label, why);
                            }
                        }
                    }
                }
            }
        }
        ok(passed == cases, "%s: %d/%d cases exact, corruption caught%s", collprof_op_name(op),
           passed, cases, first_fail);
    }

    ok(fabs(collprof_busbw_factor(COLLPROF_OP_ALLREDUCE, 4) - 1.5) < 1e-12, "allreduce 2(n-1)/n");
    ok(fabs(collprof_busbw_factor(COLLPROF_OP_ALLGATHER, 4) - 0.75) < 1e-12, "allgather (n-1)/n");
    ok(fabs(collprof_busbw_factor(COLLPROF_OP_REDUCESCATTER, 8) - 0.875) < 1e-12,
       "reducescatter (n-1)/n");
    ok(fabs(collprof_busbw_factor(COLLPROF_OP_ALLTOALL, 2) - 0.5) < 1e-12, "alltoall (n-1)/n");
    ok(fabs(collprof_busbw_factor(COLLPROF_OP_ALLTOALLV, 4) - 0.75) < 1e-12, "alltoallv (n-1)/n");
    ok(fabs(collprof_busbw_factor(COLLPROF_OP_ALLGATHERV, 4) - 0.75) < 1e-12, "allgatherv (n-1)/n");
    ok(collprof_busbw_factor(COLLPROF_OP_GATHER, 4) == 0.75 &&
           collprof_busbw_factor(COLLPROF_OP_SCATTER, 4) == 0.75,
       "gather/scatter (n-1)/n");
    ok(collprof_busbw_factor(COLLPROF_OP_GATHERV, 4) == 0.75 &&
           collprof_busbw_factor(COLLPROF_OP_SCATTERV, 4) == 0.75,
       "gatherv/scatterv (n-1)/n");
    ok(collprof_busbw_factor(COLLPROF_OP_BROADCAST, 4) == 1 &&
           collprof_busbw_factor(COLLPROF_OP_REDUCE, 4) == 1 &&
           collprof_busbw_factor(COLLPROF_OP_SENDRECV, 4) == 1,
       "broadcast/reduce/sendrecv 1");
    ok(collprof_busbw_factor(COLLPROF_OP_ALLREDUCE, 1) == 0, "one rank moves no bus traffic");

    cp_xfer_t x = {
        .op = COLLPROF_OP_ALLREDUCE, .dtype = COLLPROF_DTYPE_FLOAT32, .n = 4, .count = 1u << 20};
    ok(cp_coll_bytes(&x) == 4u << 20, "allreduce S = count x 4 bytes");
    x.op = COLLPROF_OP_BARRIER;
    ok(cp_coll_bytes(&x) == 0, "barrier moves no bytes");
    allgatherv_bytes(&imbs[3]);
    rooted_v_bytes(&imbs[1]);
    alltoallv_file();
    ok(cp_coll_effective_count(COLLPROF_OP_ALLGATHER, 10, 4) == 8 &&
           cp_coll_effective_count(COLLPROF_OP_ALLREDUCE, 10, 4) == 10 &&
           cp_coll_effective_count(COLLPROF_OP_ALLGATHER, 3, 4) == 0,
       "split counts round down to a multiple of n");
    ok(cp_coll_from_name("AllReduce") == COLLPROF_OP_ALLREDUCE &&
           cp_coll_from_name("reduce_scatter") == COLLPROF_OP_REDUCESCATTER &&
           cp_coll_from_name("bcast") == COLLPROF_OP_BROADCAST &&
           cp_coll_from_name("I-Bcast") == COLLPROF_OP_IBROADCAST &&
           cp_coll_from_name("nope") == -1,
       "operation names");
    vocab_tests();
    reducescatter_blocks();
    for (int i = 0; i < 4; i++) {
        cp_imbalance_free(&imbs[i]);
    }
    return tap_done();
}
