#include "config.h"

/*
 * The collectives over the TCP control tree (tcp_tree.h), at any depth: a
 * gather goes up, each leader sending its subtree's blocks in one message; a broadcast goes up
 * from its root to member 0 and then down; an allgather is a gather and a
 * broadcast; a scatter goes down, each leader receiving its node's blocks
 * in one message; an all-to-all gathers the rows to member 0 and scatters
 * the columns.  Through member 0 a gather moves n len bytes in one message
 * per child, where the star moved them in n - 1 messages.
 */

#include "chan/tcp_sock.h"
#include "chan/tcp_tree.h"
#include "collprof/status.h"
#include "base/log.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TCP_MAGIC 0x43504f42u /* "CPOB" */

typedef struct hdr {
    uint32_t magic, seq, len_hi, len_lo;
} hdr_t;

/* The job rank of member i (for messages). */
static int rank_of(const cp_tree_t *t, int i)
{
    return t->spec.ranks != NULL ? t->spec.ranks[i] : i;
}

static int kid_rank(const cp_tree_t *t, int k)
{
    return rank_of(t, t->order[t->kid_first[k]]);
}

/* The tree is unusable from now on: close everything so that the peers see EOF. */
static int broken(cp_tree_t *t)
{
    cp_tree_close(t);
    return COLLPROF_ERR_BOOTSTRAP;
}

/* Header and iov[1..niov) to fd (peer: the job rank there, for messages). */
static int send_iov(cp_tree_t *t, int fd, int peer, struct iovec *iov, int niov)
{
    hdr_t h;
    uint64_t len = 0;
    for (int i = 1; i < niov; i++) {
        len += iov[i].iov_len;
    }
    h.magic = htonl(TCP_MAGIC);
    h.seq = htonl(t->seq);
    h.len_hi = htonl((uint32_t)(len >> 32));
    h.len_lo = htonl((uint32_t)len);
    iov[0].iov_base = &h;
    iov[0].iov_len = sizeof(h);
    if (cp_sock_send_all(fd, iov, niov) != 0) {
        cp_log(CP_LOG_ERROR, "control channel: sending to rank %d failed: %s%s", peer,
               strerror(errno),
               errno == EPIPE || errno == ECONNRESET ? " (it exited or was killed?)" : "");
        return broken(t);
    }
    t->stats.sent_bytes += len;
    return COLLPROF_OK;
}

static int send_to(cp_tree_t *t, int fd, int peer, const void *buf, size_t len)
{
    struct iovec iov[2] = {{NULL, 0}, {(void *)buf, len}};
    return send_iov(t, fd, peer, iov, len > 0 ? 2 : 1);
}

static int recv_failed(cp_tree_t *t, int peer, int rc)
{
    if (rc > 0) {
        cp_log(CP_LOG_ERROR,
               "control channel: rank %d closed its connection (it exited or was killed?)", peer);
    } else if ((errno == EAGAIN || errno == EWOULDBLOCK) && t->spec.wait_s > 0) {
        cp_log(CP_LOG_WARN, "control channel: nothing from rank %d within %.0f s (stopped?)", peer,
               t->spec.wait_s);
    } else {
        cp_log(CP_LOG_ERROR, "control channel: receiving from rank %d failed: %s", peer,
               strerror(errno));
    }
    return broken(t);
}

static int recv_from(cp_tree_t *t, int fd, int peer, void *buf, size_t len)
{
    hdr_t h;
    int rc = cp_sock_recv_all(fd, &h, sizeof(h));
    if (rc != 0) {
        return recv_failed(t, peer, rc);
    }
    uint64_t got = ((uint64_t)ntohl(h.len_hi) << 32) | ntohl(h.len_lo);
    if (ntohl(h.magic) != TCP_MAGIC || ntohl(h.seq) != t->seq || got != len) {
        cp_log(CP_LOG_ERROR,
               "control channel: from rank %d: message %u of %llu bytes (magic %08x), expected "
               "message %u of %zu bytes: ranks out of step",
               peer, ntohl(h.seq), (unsigned long long)got, ntohl(h.magic), t->seq, len);
        return broken(t);
    }
    rc = cp_sock_recv_all(fd, buf, len);
    if (rc != 0) {
        return recv_failed(t, peer, rc);
    }
    t->stats.got_bytes += len;
    return COLLPROF_OK;
}

static int to_parent(cp_tree_t *t, const void *buf, size_t len)
{
    return send_to(t, t->parent, rank_of(t, t->parent_index), buf, len);
}

static int from_parent(cp_tree_t *t, void *buf, size_t len)
{
    return recv_from(t, t->parent, rank_of(t, t->parent_index), buf, len);
}

static int begin(cp_tree_t *t)
{
    if (t == NULL || !t->up) {
        cp_log(CP_LOG_ERROR, "control channel: the TCP tree is not up (it failed earlier)");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    return COLLPROF_OK;
}

static int end(cp_tree_t *t, int rc, double t0)
{
    t->seq++;
    t->stats.ops++;
    t->stats.op_s += (cp_now_us() - t0) * 1e-6;
    return rc;
}

/* ---- gather ------------------------------------------------------------ */

/* This member's subtree's blocks, in order[], into buf (sub * len bytes; in first). */
static int collect(cp_tree_t *t, const void *in, char *buf, size_t len)
{
    int rc = COLLPROF_OK;
    if (len > 0 && buf != in) {
        memmove(buf, in, len);
    }
    for (int k = 0; k < t->nkids && rc == COLLPROF_OK; k++) {
        rc = recv_from(t, t->kid_fd[k], kid_rank(t, k), buf + (size_t)t->kid_first[k] * len,
                       (size_t)t->kid_size[k] * len);
    }
    return rc;
}

static int gather(cp_tree_t *t, const void *in, void *out, size_t len)
{
    size_t bytes = (size_t)t->sub * len;
    int root = t->me == 0;
    char *buf = t->nkids == 0             ? (char *)in
                : root && t->identity     ? out
                : bytes > 0 && t->sub > 0 ? malloc(bytes)
                                          : NULL;
    if (buf == NULL && bytes > 0) {
        cp_log(CP_LOG_ERROR, "control channel: no memory for a gather of %zu bytes", bytes);
        return broken(t); /* the others see EOF and fail too */
    }
    int rc = t->nkids > 0 ? collect(t, in, buf, len) : COLLPROF_OK;
    if (rc == COLLPROF_OK && !root) {
        rc = to_parent(t, buf, bytes);
    } else if (rc == COLLPROF_OK && buf != out && len > 0) {
        for (int i = 0; i < t->n; i++) { /* in the members' order */
            memcpy((char *)out + (size_t)t->order[i] * len, buf + (size_t)i * len, len);
        }
    }
    if (buf != in && buf != out) {
        free(buf);
    }
    return rc;
}

/* One collective op of the tree's sequence, timed; with one member, in is copied to out. */
static int timed(cp_tree_t *t, int (*op)(cp_tree_t *, const void *, void *, size_t), const void *in,
                 void *out, size_t len)
{
    int rc = begin(t);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    double t0 = cp_now_us();
    if (t->n == 1) {
        memmove(out, in, len);
        return end(t, rc, t0);
    }
    return end(t, op(t, in, out, len), t0);
}

int cp_tree_gather(cp_tree_t *t, const void *in, void *out, size_t len)
{
    return timed(t, gather, in, out, len);
}

/* ---- broadcast --------------------------------------------------------- */

/* The child whose subtree holds member i: its slot, -1 when i is this member, -2 when no
 * child's subtree holds it. */
static int kid_holding(const cp_tree_t *t, int i)
{
    if (i == t->me) {
        return -1;
    }
    if (t->kid_of != NULL) { /* member 0, a leader of leaders: every member it holds */
        return t->kid_of[i] >= 0 ? t->kid_of[i] : -2;
    }
    for (int k = 0; k < t->nkids; k++) { /* a leader of its node's members: one each */
        for (int j = t->kid_first[k]; j < t->kid_first[k] + t->kid_size[k]; j++) {
            if (t->order[j] == i) {
                return k;
            }
        }
    }
    return -2;
}

/* Up from the root's subtree to member 0, then down to every member that has not got it. */
static int bcast(cp_tree_t *t, void *buf, size_t len, int root)
{
    int from = kid_holding(t, root);
    int rc = COLLPROF_OK;
    if (from >= 0) {
        rc = recv_from(t, t->kid_fd[from], kid_rank(t, from), buf, len);
    }
    if (rc == COLLPROF_OK && t->me != 0) {
        rc = from != -2 ? to_parent(t, buf, len) : from_parent(t, buf, len);
    }
    for (int k = 0; k < t->nkids && rc == COLLPROF_OK; k++) {
        if (k != from) {
            rc = send_to(t, t->kid_fd[k], kid_rank(t, k), buf, len);
        }
    }
    return rc;
}

int cp_tree_bcast(cp_tree_t *t, void *buf, size_t len, int root)
{
    int rc = begin(t);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    double t0 = cp_now_us();
    return end(t, t->n > 1 ? bcast(t, buf, len, root) : COLLPROF_OK, t0);
}

static int allgather(cp_tree_t *t, const void *in, void *out, size_t len)
{
    /* in may be out + me * len: read before anything lands in out */
    int rc = gather(t, in, out, len);
    t->seq++; /* the broadcast is a collective of its own */
    return rc == COLLPROF_OK ? bcast(t, out, (size_t)t->n * len, 0) : rc;
}

int cp_tree_allgather(cp_tree_t *t, const void *in, void *out, size_t len)
{
    return timed(t, allgather, in, out, len);
}

int cp_tree_barrier(cp_tree_t *t)
{
    char none = 0;
    return cp_tree_allgather(t, &none, &none, 0);
}

/* ---- scatter ----------------------------------------------------------- */

/* Member 0: child k's members' blocks straight from in, one message. */
static int scatter_root(cp_tree_t *t, const char *in, void *out, size_t len)
{
    struct iovec *iov = malloc(((size_t)t->sub + 1) * sizeof(*iov));
    int rc = iov != NULL ? COLLPROF_OK : broken(t);
    for (int k = 0; k < t->nkids && rc == COLLPROF_OK; k++) {
        for (int i = 0; i < t->kid_size[k]; i++) {
            iov[1 + i].iov_base = (void *)(in + (size_t)t->order[t->kid_first[k] + i] * len);
            iov[1 + i].iov_len = len;
        }
        rc = send_iov(t, t->kid_fd[k], kid_rank(t, k), iov, 1 + t->kid_size[k]);
    }
    if (rc == COLLPROF_OK && len > 0) {
        memmove(out, in, len);
    }
    free(iov);
    return rc;
}

/* Another member: its subtree's blocks from its parent, its own kept, the others sent on. */
static int scatter_down(cp_tree_t *t, void *out, size_t len)
{
    size_t bytes = (size_t)t->sub * len;
    char *buf = t->nkids == 0 ? out : bytes > 0 ? malloc(bytes) : NULL;
    if (buf == NULL && bytes > 0) {
        return broken(t);
    }
    int rc = from_parent(t, buf, bytes);
    for (int k = 0; k < t->nkids && rc == COLLPROF_OK; k++) {
        rc = send_to(t, t->kid_fd[k], kid_rank(t, k), buf + (size_t)t->kid_first[k] * len,
                     (size_t)t->kid_size[k] * len);
    }
    if (buf != out) {
        if (rc == COLLPROF_OK && len > 0) {
            memcpy(out, buf, len);
        }
        free(buf);
    }
    return rc;
}

static int scatter(cp_tree_t *t, const void *in, void *out, size_t len)
{
    return t->me == 0 ? scatter_root(t, in, out, len) : scatter_down(t, out, len);
}

int cp_tree_scatter(cp_tree_t *t, const void *in, void *out, size_t len)
{
    return timed(t, scatter, in, out, len);
}

/* ---- all-to-all -------------------------------------------------------- */

/* Member 0 holds every row (n * n * len bytes) and sends each member its column: through it
 * 2 n^2 len bytes, where an allgather of the rows moves n^3 len. */
int cp_tree_alltoall(cp_tree_t *t, const void *in, void *out, size_t len)
{
    size_t n = (size_t)t->n, row = n * len;
    if (t->me != 0) {
        int rc = cp_tree_gather(t, in, NULL, row);
        return rc == COLLPROF_OK ? cp_tree_scatter(t, NULL, out, row) : rc;
    }
    char *all = row > 0 && n <= SIZE_MAX / row ? malloc(row * n) : NULL;
    char *cols = all != NULL ? malloc(row * n) : NULL;
    int rc = cols != NULL ? cp_tree_gather(t, in, all, row) : COLLPROF_ERR_NO_MEMORY;
    if (rc == COLLPROF_ERR_NO_MEMORY) {
        cp_log(CP_LOG_ERROR, "control channel: no memory for an all-to-all of %zu x %zu bytes", n,
               row);
        cp_tree_close(t); /* the other ranks see EOF and fail too */
    }
    for (size_t r = 0; rc == COLLPROF_OK && r < n; r++) {
        for (size_t q = 0; q < n; q++) {
            memcpy(cols + r * row + q * len, all + q * row + r * len, len);
        }
    }
    rc = rc == COLLPROF_OK ? cp_tree_scatter(t, cols, out, row) : rc;
    free(all);
    free(cols);
    return rc;
}
