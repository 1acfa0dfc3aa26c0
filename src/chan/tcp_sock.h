/*
 * Sockets for the TCP control channel (tcp_tree.c, tcp_coll.c): whole-message I/O over
 * blocking sockets, bounded waits, listeners and connections by numeric
 * address, and the addresses of an interface or of a host name.  Internal
 * to src/chan.  Functions that can fail for a reason worth telling write
 * it into why (one line, at most wlen bytes).
 */
#ifndef COLLPROF_CHAN_TCP_SOCK_H
#define COLLPROF_CHAN_TCP_SOCK_H

#include <stddef.h>
#include <sys/uio.h>

/* 0, or -1 with errno set (EPIPE/ECONNRESET: the peer went away). */
int cp_sock_send_all(int fd, struct iovec *iov, int iovcnt);
/* 0; 1 at EOF before len bytes; -1 with errno set. */
int cp_sock_recv_all(int fd, void *buf, size_t len);
/* Wait up to s seconds for fd to be ready for ev (POLLIN/POLLOUT): 1 ready, 0 timed out, -1. */
int cp_sock_wait(int fd, short ev, double s);
/* Read exactly len bytes within s seconds: 0, or -1 with errno (ETIMEDOUT: nothing in time;
 * ECONNRESET: the peer closed or reset). */
int cp_sock_recv_within(int fd, void *buf, size_t len, double s);
/* The kernel's cap on a listener's accept queue in this network namespace
 * (net.core.somaxconn; listen() takes the smaller of it and its backlog), or -1 unknown. */
int cp_sock_somaxconn(void);
/* Listen on host (numeric) at an ephemeral port: the fd and "host:port" ("[h]:p" for IPv6) in
 * pub, or -1. */
int cp_sock_listen(const char *host, int backlog, char *pub, size_t size, char *why, size_t wlen);
/* Connect to "host:port" within s seconds; the fd (blocking, TCP_NODELAY) or -1. */
int cp_sock_dial(const char *hostport, double s, char *why, size_t wlen);
/* The same, tried again within s seconds after a failure a later try may not meet (a timeout,
 * a refusal, a reset: a listener's full accept queue drops or refuses SYNs): each try
 * CP_SOCK_TRY_S, then twice as long as the one before, with pauses from 50 ms doubling up to
 * CP_SOCK_PAUSE_MAX_S between them, each scaled by 0.5-1.5 from seed (so that dialers that
 * failed together do not come back together).  *tries: the connects made. */
#define CP_SOCK_TRY_S       1.0
#define CP_SOCK_PAUSE_MAX_S 1.0
int cp_sock_dial_retry(const char *hostport, double s, unsigned seed, int *tries, char *why,
                       size_t wlen);
/* TCP_NODELAY: a control message goes out at once. */
void cp_sock_nodelay(int fd);
/* The IPv4 (else IPv6) address of interface iface: 0, or -1. */
int cp_sock_iface_addr(const char *iface, char *buf, size_t size, char *why, size_t wlen);
/* The IPv4 (else IPv6) address hostname resolves to: 0; 1 when it is a loopback one; -1. */
int cp_sock_host_addr(const char *hostname, char *buf, size_t size, char *why, size_t wlen);

/*
 * unix_sock.c: a node's members reach its listener over AF_UNIX ("unix:PATH", the address
 * cp_sock_dial and cp_sock_dial_retry take too), in a directory of its own, mode 0700, in the
 * run's private directory (COLLPROF_RUNDIR when private, else $TMPDIR or /tmp), so that no other
 * user can connect.  COLLPROF_CHAN_UNIX=0: none (127.0.0.1 instead).
 */
#define CP_UNIX_PREFIX "unix:"
/* AF_UNIX wanted (COLLPROF_CHAN_UNIX is not "0"). */
int cp_unix_wanted(void);
/* addr is a "unix:PATH" address. */
int cp_unix_addr(const char *addr);
/* The job's name (its PMIx namespace) in the directories' names: set once, at start-up. */
void cp_unix_job(const char *name);
/* Listen in a fresh directory cp.JOB.XXXXXX/s: the fd and "unix:PATH" in pub, or -1 with why
 * (no private directory, a path longer than sun_path takes, ...). */
int cp_unix_listen(int backlog, char *pub, size_t size, char *why, size_t wlen);
/* Remove from base the cp.* directories that killed runs' listeners left (this user's, mode
 * 0700, untouched for CP_UNIX_STALE_S s, their socket refusing connections): how many
 * (unix_sweep.c).  cp_unix_listen sweeps its base first. */
#define CP_UNIX_STALE_S 600
int cp_unix_sweep(const char *base);
/* Close *fd (-1 after); a listener of cp_unix_listen of this process: its socket and
 * directory removed too. */
void cp_unix_close(int *fd);
/* Connect to "unix:PATH", waiting up to s seconds for room in a full accept queue: the fd
 * (blocking), or -1 with the errno in *err (0: a bad address) and why. */
int cp_unix_dial(const char *addr, double s, int *err, char *why, size_t wlen);

#endif /* COLLPROF_CHAN_TCP_SOCK_H */
