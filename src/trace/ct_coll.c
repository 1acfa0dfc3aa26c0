/*
 * collprof-trace's collectives (ct.h): each blocking call and its I form.
 * The counts are the trace model's (docs/hdf5-schema.md, /trace_ops): "in" the
 * elements a rank's input buffer holds, "out" its output's, for every member
 * alike where MPI makes them alike (a gather's output is its input times the
 * group size on every rank, not only at the root).  With MPI_IN_PLACE the
 * receive side's count and type stand for both.  An I form's record carries
 * the request it issued; MPI_Wait and friends (ct_p2p.c) record its end.
 */
#include "config.h"

#include "trace/ct.h"

/* the issue time, read only while recording */
#define T0() (ct.on ? ct_now() : 0)

static int me(MPI_Comm comm)
{
    int r = 0;
    PMPI_Comm_rank(comm, &r);
    return r;
}

static uint64_t sum(const int *c, MPI_Comm comm)
{
    int n = 0;
    uint64_t s = 0;
    PMPI_Comm_size(comm, &n);
    for (int i = 0; c != NULL && i < n; i++) {
        s += c[i] > 0 ? (uint64_t)c[i] : 0;
    }
    return s;
}

/* a record of fn at t, in and out elements of dt, root (comm rank, -1 none), req or NULL */
static void rec(int fn, int64_t t, int rc, uint64_t in, uint64_t out, unsigned flags, int root,
                MPI_Datatype dt, MPI_Comm comm, const MPI_Request *req)
{
    if (!ct.on || rc != MPI_SUCCESS) {
        return;
    }
    ct_rec_t r = ct_rec(fn, t);
    r.in = in;
    r.out = out;
    r.flags = (uint8_t)flags;
    r.root = root;
    ct_put(&r, comm, dt, req, 0);
}

#define IN_PLACE(s) ((s) == MPI_IN_PLACE)

/* ---- barrier, broadcast, reductions ---------------------------------------------------- */

CT_API int MPI_Barrier(MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Barrier(comm);
    rec(CT_BARRIER, t, rc, 0, 0, 0, -1, MPI_DATATYPE_NULL, comm, NULL);
    return rc;
}

CT_API int MPI_Ibarrier(MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Ibarrier(comm, q);
    rec(CT_IBARRIER, t, rc, 0, 0, 0, -1, MPI_DATATYPE_NULL, comm, q);
    return rc;
}

CT_API int MPI_Bcast(void *b, int c, MPI_Datatype d, int root, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Bcast(b, c, d, root, comm);
    rec(CT_BCAST, t, rc, (uint64_t)c, (uint64_t)c, 0, root, d, comm, NULL);
    return rc;
}

CT_API int MPI_Ibcast(void *b, int c, MPI_Datatype d, int root, MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Ibcast(b, c, d, root, comm, q);
    rec(CT_IBCAST, t, rc, (uint64_t)c, (uint64_t)c, 0, root, d, comm, q);
    return rc;
}

CT_API int MPI_Reduce(const void *s, void *b, int c, MPI_Datatype d, MPI_Op o, int root,
                      MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Reduce(s, b, c, d, o, root, comm);
    rec(CT_REDUCE, t, rc, (uint64_t)c, (uint64_t)c, 0, root, d, comm, NULL);
    return rc;
}

CT_API int MPI_Ireduce(const void *s, void *b, int c, MPI_Datatype d, MPI_Op o, int root,
                       MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Ireduce(s, b, c, d, o, root, comm, q);
    rec(CT_IREDUCE, t, rc, (uint64_t)c, (uint64_t)c, 0, root, d, comm, q);
    return rc;
}

CT_API int MPI_Allreduce(const void *s, void *b, int c, MPI_Datatype d, MPI_Op o, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Allreduce(s, b, c, d, o, comm);
    rec(CT_ALLREDUCE, t, rc, (uint64_t)c, (uint64_t)c, 0, -1, d, comm, NULL);
    return rc;
}

CT_API int MPI_Iallreduce(const void *s, void *b, int c, MPI_Datatype d, MPI_Op o, MPI_Comm comm,
                          MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Iallreduce(s, b, c, d, o, comm, q);
    rec(CT_IALLREDUCE, t, rc, (uint64_t)c, (uint64_t)c, 0, -1, d, comm, q);
    return rc;
}

CT_API int MPI_Reduce_scatter(const void *s, void *b, const int rcs[], MPI_Datatype d, MPI_Op o,
                              MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Reduce_scatter(s, b, rcs, d, o, comm);
    if (ct.on) {
        rec(CT_REDSCAT, t, rc, sum(rcs, comm), (uint64_t)rcs[me(comm)], 0, -1, d, comm, NULL);
    }
    return rc;
}

CT_API int MPI_Ireduce_scatter(const void *s, void *b, const int rcs[], MPI_Datatype d, MPI_Op o,
                               MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Ireduce_scatter(s, b, rcs, d, o, comm, q);
    if (ct.on) {
        rec(CT_IREDSCAT, t, rc, sum(rcs, comm), (uint64_t)rcs[me(comm)], 0, -1, d, comm, q);
    }
    return rc;
}

CT_API int MPI_Reduce_scatter_block(const void *s, void *b, int c, MPI_Datatype d, MPI_Op o,
                                    MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Reduce_scatter_block(s, b, c, d, o, comm);
    rec(CT_REDSCATB, t, rc, (uint64_t)c, (uint64_t)c, CT_IN_PER_RANK, -1, d, comm, NULL);
    return rc;
}

CT_API int MPI_Ireduce_scatter_block(const void *s, void *b, int c, MPI_Datatype d, MPI_Op o,
                                     MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Ireduce_scatter_block(s, b, c, d, o, comm, q);
    rec(CT_IREDSCATB, t, rc, (uint64_t)c, (uint64_t)c, CT_IN_PER_RANK, -1, d, comm, q);
    return rc;
}

/* ---- gathers and scatters --------------------------------------------------------------- */

static void rec_gather(int fn, int64_t t, int rc, const void *s, int sc, MPI_Datatype st, int rcnt,
                       MPI_Datatype rt, int root, unsigned flags, MPI_Comm comm,
                       const MPI_Request *q)
{
    uint64_t in = IN_PLACE(s) ? (uint64_t)rcnt : (uint64_t)sc;
    rec(fn, t, rc, in, in, flags, root, IN_PLACE(s) ? rt : st, comm, q);
}

CT_API int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *b, int rcnt, MPI_Datatype rt,
                         MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Allgather(s, sc, st, b, rcnt, rt, comm);
    rec_gather(CT_ALLGATHER, t, rc, s, sc, st, rcnt, rt, -1, CT_OUT_PER_RANK, comm, NULL);
    return rc;
}

CT_API int MPI_Iallgather(const void *s, int sc, MPI_Datatype st, void *b, int rcnt,
                          MPI_Datatype rt, MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Iallgather(s, sc, st, b, rcnt, rt, comm, q);
    rec_gather(CT_IALLGATHER, t, rc, s, sc, st, rcnt, rt, -1, CT_OUT_PER_RANK, comm, q);
    return rc;
}

CT_API int MPI_Gather(const void *s, int sc, MPI_Datatype st, void *b, int rcnt, MPI_Datatype rt,
                      int root, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Gather(s, sc, st, b, rcnt, rt, root, comm);
    rec_gather(CT_GATHER, t, rc, s, sc, st, rcnt, rt, root, CT_OUT_PER_RANK, comm, NULL);
    return rc;
}

CT_API int MPI_Igather(const void *s, int sc, MPI_Datatype st, void *b, int rcnt, MPI_Datatype rt,
                       int root, MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Igather(s, sc, st, b, rcnt, rt, root, comm, q);
    rec_gather(CT_IGATHER, t, rc, s, sc, st, rcnt, rt, root, CT_OUT_PER_RANK, comm, q);
    return rc;
}

/* a scatter: the receive side (in place at the root: the send count) is every rank's share */
CT_API int MPI_Scatter(const void *s, int sc, MPI_Datatype st, void *b, int rcnt, MPI_Datatype rt,
                       int root, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Scatter(s, sc, st, b, rcnt, rt, root, comm);
    rec_gather(CT_SCATTER, t, rc, b, rcnt, rt, sc, st, root, CT_IN_PER_RANK, comm, NULL);
    return rc;
}

CT_API int MPI_Iscatter(const void *s, int sc, MPI_Datatype st, void *b, int rcnt, MPI_Datatype rt,
                        int root, MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Iscatter(s, sc, st, b, rcnt, rt, root, comm, q);
    rec_gather(CT_ISCATTER, t, rc, b, rcnt, rt, sc, st, root, CT_IN_PER_RANK, comm, q);
    return rc;
}

/* the v forms: the counts a rank knows (a gatherv's total only at the root) */
static void rec_gatherv(int fn, int64_t t, int rc, const void *s, int sc, MPI_Datatype st,
                        const int *rcs, MPI_Datatype rt, int root, MPI_Comm comm,
                        const MPI_Request *q)
{
    if (!ct.on || rc != MPI_SUCCESS) {
        return;
    }
    int r = me(comm);
    uint64_t in = IN_PLACE(s) ? (uint64_t)rcs[r] : (uint64_t)sc;
    uint64_t out = root < 0 || r == root ? sum(rcs, comm) : 0;
    rec(fn, t, rc, in, out, 0, root, IN_PLACE(s) ? rt : st, comm, q);
}

CT_API int MPI_Allgatherv(const void *s, int sc, MPI_Datatype st, void *b, const int rcs[],
                          const int dis[], MPI_Datatype rt, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Allgatherv(s, sc, st, b, rcs, dis, rt, comm);
    rec_gatherv(CT_ALLGATHERV, t, rc, s, sc, st, rcs, rt, -1, comm, NULL);
    return rc;
}

CT_API int MPI_Iallgatherv(const void *s, int sc, MPI_Datatype st, void *b, const int rcs[],
                           const int dis[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Iallgatherv(s, sc, st, b, rcs, dis, rt, comm, q);
    rec_gatherv(CT_IALLGATHERV, t, rc, s, sc, st, rcs, rt, -1, comm, q);
    return rc;
}

CT_API int MPI_Gatherv(const void *s, int sc, MPI_Datatype st, void *b, const int rcs[],
                       const int dis[], MPI_Datatype rt, int root, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Gatherv(s, sc, st, b, rcs, dis, rt, root, comm);
    rec_gatherv(CT_GATHERV, t, rc, s, sc, st, rcs, rt, root, comm, NULL);
    return rc;
}

CT_API int MPI_Igatherv(const void *s, int sc, MPI_Datatype st, void *b, const int rcs[],
                        const int dis[], MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Igatherv(s, sc, st, b, rcs, dis, rt, root, comm, q);
    rec_gatherv(CT_IGATHERV, t, rc, s, sc, st, rcs, rt, root, comm, q);
    return rc;
}

static void rec_scatterv(int fn, int64_t t, int rc, const int *scs, MPI_Datatype st, void *b,
                         int rcnt, MPI_Datatype rt, int root, MPI_Comm comm, const MPI_Request *q)
{
    if (!ct.on || rc != MPI_SUCCESS) {
        return;
    }
    int r = me(comm);
    uint64_t out = IN_PLACE(b) ? (uint64_t)scs[r] : (uint64_t)rcnt;
    uint64_t in = r == root ? sum(scs, comm) : 0;
    rec(fn, t, rc, in, out, 0, root, IN_PLACE(b) ? st : rt, comm, q);
}

CT_API int MPI_Scatterv(const void *s, const int scs[], const int dis[], MPI_Datatype st, void *b,
                        int rcnt, MPI_Datatype rt, int root, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Scatterv(s, scs, dis, st, b, rcnt, rt, root, comm);
    rec_scatterv(CT_SCATTERV, t, rc, scs, st, b, rcnt, rt, root, comm, NULL);
    return rc;
}

CT_API int MPI_Iscatterv(const void *s, const int scs[], const int dis[], MPI_Datatype st, void *b,
                         int rcnt, MPI_Datatype rt, int root, MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Iscatterv(s, scs, dis, st, b, rcnt, rt, root, comm, q);
    rec_scatterv(CT_ISCATTERV, t, rc, scs, st, b, rcnt, rt, root, comm, q);
    return rc;
}

/* ---- all-to-all -------------------------------------------------------------------------- */

CT_API int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *b, int rcnt, MPI_Datatype rt,
                        MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Alltoall(s, sc, st, b, rcnt, rt, comm);
    rec(CT_ALLTOALL, t, rc, IN_PLACE(s) ? (uint64_t)rcnt : (uint64_t)sc, (uint64_t)rcnt,
        CT_IN_PER_RANK | CT_OUT_PER_RANK, -1, IN_PLACE(s) ? rt : st, comm, NULL);
    return rc;
}

CT_API int MPI_Ialltoall(const void *s, int sc, MPI_Datatype st, void *b, int rcnt, MPI_Datatype rt,
                         MPI_Comm comm, MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Ialltoall(s, sc, st, b, rcnt, rt, comm, q);
    rec(CT_IALLTOALL, t, rc, IN_PLACE(s) ? (uint64_t)rcnt : (uint64_t)sc, (uint64_t)rcnt,
        CT_IN_PER_RANK | CT_OUT_PER_RANK, -1, IN_PLACE(s) ? rt : st, comm, q);
    return rc;
}

CT_API int MPI_Alltoallv(const void *s, const int scs[], const int sds[], MPI_Datatype st, void *b,
                         const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Alltoallv(s, scs, sds, st, b, rcs, rds, rt, comm);
    if (ct.on && rc == MPI_SUCCESS) {
        ct_rec_t r = ct_rec(CT_ALLTOALLV, t);
        ct_put_v(&r, comm, IN_PLACE(s) ? rt : st, IN_PLACE(s) ? rcs : scs, rcs, NULL);
    }
    return rc;
}

CT_API int MPI_Ialltoallv(const void *s, const int scs[], const int sds[], MPI_Datatype st, void *b,
                          const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm comm,
                          MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Ialltoallv(s, scs, sds, st, b, rcs, rds, rt, comm, q);
    if (ct.on && rc == MPI_SUCCESS) {
        ct_rec_t r = ct_rec(CT_IALLTOALLV, t);
        ct_put_v(&r, comm, IN_PLACE(s) ? rt : st, IN_PLACE(s) ? rcs : scs, rcs, q);
    }
    return rc;
}
