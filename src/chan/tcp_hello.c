#include "config.h"

/*
 * What the TCP control tree's set-up files share (tcp_tree_int.h), at the bottom of them: a
 * member's introduction to a listener (the challenge, the introduction with its proof, the
 * listener's proof: tcp_tree.c's join and tcp_side.c's side links), a side link's purpose, a
 * word of an introduction, the join's waits, and closing a descriptor.
 */

#include "chan/tcp_tree.h"
#include "chan/tcp_tree_int.h"
#include "chan/tcp_sock.h"
#include "base/log.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

void cp_tree_close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

void cp_tree_side_purpose(const cp_tree_t *t, char *buf)
{
    snprintf(buf, CP_AUTH_PURPOSE_LEN, "%.*s side", CP_AUTH_PURPOSE_LEN - 6, t->purpose);
}

int cp_tree_hello(const cp_tree_t *t, int fd, const char *addr, uint32_t magic, const char *purpose,
                  uint32_t shape, const int *idx, size_t cnt, double wait_s, char *why, size_t wlen)
{
    unsigned char ch[CHALLENGE_LEN], nc[CP_AUTH_NONCE_LEN], theirs[CP_AUTH_MAC_LEN];
    if (cp_sock_recv_within(fd, ch, sizeof(ch), wait_s) != 0) {
        int closed = errno == ECONNRESET;
        snprintf(why, wlen, "%s %s within %.0f s",
                 closed ? "closed before its challenge by" : "no challenge from", addr, wait_s);
        return closed ? -2 : -1;
    }
    if (cp_tree_word(ch, 0) != CHALLENGE_MAGIC) {
        snprintf(why, wlen, "%s is not a collprof control channel", addr);
        return -1;
    }
    if (cp_auth_random(nc, sizeof(nc), why, wlen) != 0) {
        return -1;
    }
    unsigned char *msg = malloc(INTRO_LEN + cnt * sizeof(uint32_t));
    if (msg == NULL) {
        snprintf(why, wlen, "out of memory");
        return -1;
    }
    uint32_t h[5] = {htonl(magic), htonl((uint32_t)t->me), htonl(shape), htonl((uint32_t)t->n),
                     htonl((uint32_t)cnt)};
    memcpy(msg, h, sizeof(h));
    memcpy(msg + sizeof(h), nc, sizeof(nc));
    cp_auth_mac(t->key, purpose, CP_AUTH_CONNECTOR, ch + 4, nc, (uint32_t)t->me, (uint32_t)t->n,
                msg + sizeof(h) + sizeof(nc));
    for (size_t i = 0; i < cnt; i++) {
        uint32_t x = htonl((uint32_t)idx[i]);
        memcpy(msg + INTRO_LEN + 4 * i, &x, sizeof(x));
    }
    struct iovec iov = {msg, INTRO_LEN + cnt * sizeof(uint32_t)};
    int rc = cp_sock_send_all(fd, &iov, 1);
    free(msg);
    if (rc != 0) {
        int closed = errno == EPIPE || errno == ECONNRESET;
        snprintf(why, wlen, "introducing this member to %s: %s", addr, strerror(errno));
        return closed ? -2 : -1;
    }
    if (cp_sock_recv_within(fd, theirs, sizeof(theirs), wait_s) != 0) {
        int closed = errno == ECONNRESET;
        snprintf(why, wlen,
                 "no proof from %s within %.0f s (it refused this member's, or went away)", addr,
                 wait_s);
        return closed ? -2 : -1;
    }
    if (!cp_auth_check(t->key, purpose, CP_AUTH_ACCEPTOR, ch + 4, nc, (uint32_t)t->me,
                       (uint32_t)t->n, theirs)) {
        snprintf(why, wlen, "the listener at %s did not prove the run's secret", addr);
        cp_log(CP_LOG_WARN, "control channel: %s", why);
        return -1;
    }
    return 0;
}

int cp_tree_dial_hello(const cp_tree_t *t, const char *addr, uint32_t magic, const char *purpose,
                       uint32_t shape, const int *idx, size_t cnt, double dial_s, double wait_s,
                       char *why, size_t wlen)
{
    double until = cp_now_s() + wait_s, pause = 0.02, hear = CHALLENGE_S;
    for (int k = 0; k < DIAL_TRIES; k++) {
        double left = until - cp_now_s();
        int fd = cp_sock_dial(addr, left < dial_s ? left : dial_s, why, wlen);
        if (fd < 0) {
            return -1; /* nobody listens, or the dial's own wait ran out */
        }
        left = until - cp_now_s();
        /* the listener speaks first: a connection whose challenge does not come within hear
         * (doubling) is dialled again while time is left.  Past a full accept queue (a flood
         * of silent connections) the kernel answers with a SYN cookie and may drop the
         * handshake's last ACK: the connect succeeds, and the listener never sees it. */
        if (k + 1 < DIAL_TRIES && hear < left && cp_sock_wait(fd, POLLIN, hear) != 1) {
            close(fd);
            snprintf(why, wlen, "no challenge from %s within %.0f s", addr, hear);
            cp_log(CP_LOG_INFO, "control channel: %s; dialling again", why);
            hear *= 2;
            continue;
        }
        int rc = left > 0
                     ? cp_tree_hello(t, fd, addr, magic, purpose, shape, idx, cnt, left, why, wlen)
                     : -1;
        if (rc == 0) {
            return fd;
        }
        close(fd);
        if (rc != -2 || until - cp_now_s() < 2 * pause) {
            break; /* a timeout, or a listener that answered without the secret */
        }
        if (k + 1 < DIAL_TRIES) {
            cp_log(CP_LOG_INFO, "control channel: %s; dialling again", why);
            usleep((useconds_t)(pause * 1e6));
            pause = pause < 0.3 ? 2 * pause : pause;
        }
    }
    return -1;
}

uint32_t cp_tree_word(const unsigned char *p, int i)
{
    uint32_t v;
    memcpy(&v, p + 4 * i, sizeof(v));
    return ntohl(v);
}

/* A wait of the join: def, or the spec's bound when it has one. */
double cp_tree_join_wait(const cp_tree_t *t, double def)
{
    return t->spec.wait_s > 0 && t->spec.wait_s < def ? t->spec.wait_s : def;
}
