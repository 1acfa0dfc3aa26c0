/*
 * collprof-trace's point-to-point calls, the calls that complete requests,
 * and the communicator constructors (ct.h).  A send or receive to or from
 * MPI_PROC_NULL is not recorded (it moves nothing); MPI_Ssend and MPI_Issend
 * are sends.  A receive from
 * MPI_ANY_SOURCE gets its peer from the status (an Irecv's when its request
 * completes, while its record is still in the buffer).  MPI_Sendrecv is a
 * send and a receive sharing a "co" number (issued as one call).
 */
#include "config.h"

#include "trace/ct.h"

#include <stdlib.h>

#define T0() (ct.on ? ct_now() : 0)

static void rec_p2p(int fn, int64_t t, uint64_t n, int peer, MPI_Datatype d, MPI_Comm comm,
                    const MPI_Request *q, int anysrc, int64_t co)
{
    ct_rec_t r = ct_rec(fn, t);
    r.in =
        fn == CT_SEND || fn == CT_ISEND || fn == CT_SENDRECV_S || fn == CT_SSEND || fn == CT_ISSEND
            ? n
            : 0;
    r.out = r.in ? 0 : n;
    r.peer = peer;
    r.co = co;
    ct_put(&r, comm, d, q, anysrc);
}

CT_API int MPI_Send(const void *b, int c, MPI_Datatype d, int dest, int tag, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Send(b, c, d, dest, tag, comm);
    if (ct.on && rc == MPI_SUCCESS && dest != MPI_PROC_NULL) {
        rec_p2p(CT_SEND, t, (uint64_t)c, dest, d, comm, NULL, 0, -1);
    }
    return rc;
}

CT_API int MPI_Ssend(const void *b, int c, MPI_Datatype d, int dest, int tag, MPI_Comm comm)
{
    int64_t t = T0();
    int rc = PMPI_Ssend(b, c, d, dest, tag, comm);
    if (ct.on && rc == MPI_SUCCESS && dest != MPI_PROC_NULL) {
        rec_p2p(CT_SSEND, t, (uint64_t)c, dest, d, comm, NULL, 0, -1);
    }
    return rc;
}

CT_API int MPI_Issend(const void *b, int c, MPI_Datatype d, int dest, int tag, MPI_Comm comm,
                      MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Issend(b, c, d, dest, tag, comm, q);
    if (ct.on && rc == MPI_SUCCESS && dest != MPI_PROC_NULL) {
        rec_p2p(CT_ISSEND, t, (uint64_t)c, dest, d, comm, q, 0, -1);
    }
    return rc;
}

CT_API int MPI_Recv(void *b, int c, MPI_Datatype d, int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    int64_t t = T0();
    MPI_Status own;
    int any = src == MPI_ANY_SOURCE && ct.on;
    int rc = PMPI_Recv(b, c, d, src, tag, comm, any && st == MPI_STATUS_IGNORE ? &own : st);
    if (ct.on && rc == MPI_SUCCESS && src != MPI_PROC_NULL) {
        src = any ? (st == MPI_STATUS_IGNORE ? &own : st)->MPI_SOURCE : src;
        rec_p2p(CT_RECV, t, (uint64_t)c, src, d, comm, NULL, 0, -1);
    }
    return rc;
}

CT_API int MPI_Isend(const void *b, int c, MPI_Datatype d, int dest, int tag, MPI_Comm comm,
                     MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Isend(b, c, d, dest, tag, comm, q);
    if (ct.on && rc == MPI_SUCCESS && dest != MPI_PROC_NULL) {
        rec_p2p(CT_ISEND, t, (uint64_t)c, dest, d, comm, q, 0, -1);
    }
    return rc;
}

CT_API int MPI_Irecv(void *b, int c, MPI_Datatype d, int src, int tag, MPI_Comm comm,
                     MPI_Request *q)
{
    int64_t t = T0();
    int rc = PMPI_Irecv(b, c, d, src, tag, comm, q);
    if (ct.on && rc == MPI_SUCCESS && src != MPI_PROC_NULL) {
        rec_p2p(CT_IRECV, t, (uint64_t)c, src, d, comm, q, src == MPI_ANY_SOURCE, -1);
    }
    return rc;
}

CT_API int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype sd, int dest, int stag, void *rb,
                        int rcnt, MPI_Datatype rd, int src, int rtag, MPI_Comm comm, MPI_Status *st)
{
    int64_t t = T0();
    MPI_Status own;
    int any = src == MPI_ANY_SOURCE && ct.on;
    int rc = PMPI_Sendrecv(sb, sc, sd, dest, stag, rb, rcnt, rd, src, rtag, comm,
                           any && st == MPI_STATUS_IGNORE ? &own : st);
    if (ct.on && rc == MPI_SUCCESS) {
        int64_t co = __atomic_fetch_add(&ct.next_co, 1, __ATOMIC_RELAXED);
        src = any ? (st == MPI_STATUS_IGNORE ? &own : st)->MPI_SOURCE : src;
        if (dest != MPI_PROC_NULL) {
            rec_p2p(CT_SENDRECV_S, t, (uint64_t)sc, dest, sd, comm, NULL, 0, co);
        }
        if (src != MPI_PROC_NULL) {
            rec_p2p(CT_SENDRECV_R, t, (uint64_t)rcnt, src, rd, comm, NULL, 0, co);
        }
    }
    return rc;
}

/* ---- completing requests ----------------------------------------------------------------- */

CT_API int MPI_Wait(MPI_Request *q, MPI_Status *st)
{
    MPI_Request h = *q;
    int k = ct.on ? ct_req_known(h) : 0;
    int64_t t = k ? ct_now() : 0;
    MPI_Status own;
    MPI_Status *s = k == 2 && st == MPI_STATUS_IGNORE ? &own : st;
    int rc = PMPI_Wait(q, s);
    if (k && rc == MPI_SUCCESS) {
        ct_req_done(h, CT_WAIT, t, s == MPI_STATUS_IGNORE ? NULL : s);
    }
    return rc;
}

CT_API int MPI_Test(MPI_Request *q, int *flag, MPI_Status *st)
{
    MPI_Request h = *q;
    int k = ct.on ? ct_req_known(h) : 0;
    int64_t t = k ? ct_now() : 0;
    MPI_Status own;
    MPI_Status *s = k == 2 && st == MPI_STATUS_IGNORE ? &own : st;
    int rc = PMPI_Test(q, flag, s);
    if (k && rc == MPI_SUCCESS && *flag) {
        ct_req_done(h, CT_TEST, t, s == MPI_STATUS_IGNORE ? NULL : s);
    }
    return rc;
}

/* the handles of n requests before a call completes them (NULL: none of ours); *any: an
 * any-source receive among them */
static MPI_Request *before(int n, const MPI_Request *q, int *any)
{
    int k = 0;
    *any = 0;
    for (int i = 0; ct.on && i < n; i++) {
        int ki = ct_req_known(q[i]);
        k |= ki;
        *any |= ki == 2;
    }
    MPI_Request *h = k ? malloc((size_t)n * sizeof(*h)) : NULL;
    for (int i = 0; h != NULL && i < n; i++) {
        h[i] = q[i];
    }
    return h;
}

static void all_done(int fn, int n, MPI_Request *h, int64_t t, MPI_Status *s)
{
    for (int i = 0; i < n; i++) {
        ct_req_done(h[i], fn, t, s != MPI_STATUSES_IGNORE ? &s[i] : NULL);
    }
}

CT_API int MPI_Waitall(int n, MPI_Request q[], MPI_Status st[])
{
    int any;
    MPI_Request *h = before(n, q, &any);
    int64_t t = h != NULL ? ct_now() : 0;
    MPI_Status *own = any && st == MPI_STATUSES_IGNORE ? malloc((size_t)n * sizeof(*own)) : NULL;
    MPI_Status *s = own != NULL ? own : st;
    int rc = PMPI_Waitall(n, q, s);
    if (h != NULL && rc == MPI_SUCCESS) {
        all_done(CT_WAITALL, n, h, t, s);
    }
    free(own);
    free(h);
    return rc;
}

CT_API int MPI_Testall(int n, MPI_Request q[], int *flag, MPI_Status st[])
{
    int any;
    MPI_Request *h = before(n, q, &any);
    int64_t t = h != NULL ? ct_now() : 0;
    MPI_Status *own = any && st == MPI_STATUSES_IGNORE ? malloc((size_t)n * sizeof(*own)) : NULL;
    MPI_Status *s = own != NULL ? own : st;
    int rc = PMPI_Testall(n, q, flag, s);
    if (h != NULL && rc == MPI_SUCCESS && *flag) {
        all_done(CT_TESTALL, n, h, t, s);
    }
    free(own);
    free(h);
    return rc;
}

CT_API int MPI_Waitany(int n, MPI_Request q[], int *index, MPI_Status *st)
{
    int any;
    MPI_Request *h = before(n, q, &any);
    int64_t t = h != NULL ? ct_now() : 0;
    MPI_Status own;
    MPI_Status *s = any && st == MPI_STATUS_IGNORE ? &own : st;
    int rc = PMPI_Waitany(n, q, index, s);
    if (h != NULL && rc == MPI_SUCCESS && *index != MPI_UNDEFINED) {
        ct_req_done(h[*index], CT_WAITANY, t, s == MPI_STATUS_IGNORE ? NULL : s);
    }
    free(h);
    return rc;
}

CT_API int MPI_Testany(int n, MPI_Request q[], int *index, int *flag, MPI_Status *st)
{
    int any;
    MPI_Request *h = before(n, q, &any);
    int64_t t = h != NULL ? ct_now() : 0;
    MPI_Status own;
    MPI_Status *s = any && st == MPI_STATUS_IGNORE ? &own : st;
    int rc = PMPI_Testany(n, q, index, flag, s);
    if (h != NULL && rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED) {
        ct_req_done(h[*index], CT_TESTANY, t, s == MPI_STATUS_IGNORE ? NULL : s);
    }
    free(h);
    return rc;
}

/* Waitsome, Testsome: the requests at the indices out[0..*outn) completed */
static int some(int fn, int n, MPI_Request q[], int *outn, int out[], MPI_Status st[])
{
    int any;
    MPI_Request *h = before(n, q, &any);
    int64_t t = h != NULL ? ct_now() : 0;
    MPI_Status *own = any && st == MPI_STATUSES_IGNORE ? malloc((size_t)n * sizeof(*own)) : NULL;
    MPI_Status *s = own != NULL ? own : st;
    int rc =
        fn == CT_WAITSOME ? PMPI_Waitsome(n, q, outn, out, s) : PMPI_Testsome(n, q, outn, out, s);
    for (int i = 0; h != NULL && rc == MPI_SUCCESS && *outn != MPI_UNDEFINED && i < *outn; i++) {
        ct_req_done(h[out[i]], fn, t, s != MPI_STATUSES_IGNORE ? &s[i] : NULL);
    }
    free(own);
    free(h);
    return rc;
}

CT_API int MPI_Waitsome(int n, MPI_Request q[], int *outn, int out[], MPI_Status st[])
{
    return some(CT_WAITSOME, n, q, outn, out, st);
}

CT_API int MPI_Testsome(int n, MPI_Request q[], int *outn, int out[], MPI_Status st[])
{
    return some(CT_TESTSOME, n, q, outn, out, st);
}

CT_API int MPI_Request_free(MPI_Request *q)
{
    ct_req_forget(*q);
    return PMPI_Request_free(q);
}

/* ---- communicators: members resolved when made ------------------------------------------ */

CT_API int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out)
{
    int rc = PMPI_Comm_split(comm, color, key, out);
    if (rc == MPI_SUCCESS) {
        ct_comm_made(*out, "MPI_Comm_split");
    }
    return rc;
}

CT_API int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out)
{
    int rc = PMPI_Comm_split_type(comm, type, key, info, out);
    if (rc == MPI_SUCCESS) {
        ct_comm_made(*out, "MPI_Comm_split_type");
    }
    return rc;
}

CT_API int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out)
{
    int rc = PMPI_Comm_dup(comm, out);
    if (rc == MPI_SUCCESS) {
        ct_comm_made(*out, "MPI_Comm_dup");
    }
    return rc;
}

CT_API int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *out)
{
    int rc = PMPI_Comm_dup_with_info(comm, info, out);
    if (rc == MPI_SUCCESS) {
        ct_comm_made(*out, "MPI_Comm_dup_with_info");
    }
    return rc;
}

CT_API int MPI_Comm_create(MPI_Comm comm, MPI_Group g, MPI_Comm *out)
{
    int rc = PMPI_Comm_create(comm, g, out);
    if (rc == MPI_SUCCESS) {
        ct_comm_made(*out, "MPI_Comm_create");
    }
    return rc;
}

CT_API int MPI_Comm_create_group(MPI_Comm comm, MPI_Group g, int tag, MPI_Comm *out)
{
    int rc = PMPI_Comm_create_group(comm, g, tag, out);
    if (rc == MPI_SUCCESS) {
        ct_comm_made(*out, "MPI_Comm_create_group");
    }
    return rc;
}

CT_API int MPI_Cart_create(MPI_Comm comm, int nd, const int dims[], const int periods[],
                           int reorder, MPI_Comm *out)
{
    int rc = PMPI_Cart_create(comm, nd, dims, periods, reorder, out);
    if (rc == MPI_SUCCESS) {
        ct_comm_made(*out, "MPI_Cart_create");
    }
    return rc;
}

CT_API int MPI_Comm_free(MPI_Comm *c)
{
    ct_comm_forget(*c);
    return PMPI_Comm_free(c);
}
