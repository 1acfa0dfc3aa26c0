/*
 * The interfaces a backend was meant to use (path_check.h cp_path_expected), for the path check
 * of the cells (src/output/path_rows.c) and of the screen's pairs (src/screen/run).
 */
#include "config.h"

#include "counters/path_check.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The interface of this node with an IPv4 address in the subnet tok ("A.B.C.D/BITS", Open MPI's
 * if_include form) into out; 0, or -1 when tok is no subnet or no interface is in it. */
static int iface_of_subnet(const char *tok, size_t tlen, char *out, size_t len)
{
    char net[64];
    struct in_addr a;
    int bits = 32;
    snprintf(net, sizeof(net), "%.*s", (int)(tlen < 63 ? tlen : 63), tok);
    char *slash = strchr(net, '/');
    if (slash != NULL) {
        *slash = '\0';
        bits = atoi(slash + 1);
    }
    struct ifaddrs *all = NULL;
    if (inet_pton(AF_INET, net, &a) != 1 || bits < 0 || bits > 32 || getifaddrs(&all) != 0) {
        return -1;
    }
    uint32_t mask = bits == 0 ? 0 : htonl(~0u << (32 - bits));
    int rc = -1;
    for (struct ifaddrs *i = all; i != NULL && rc != 0; i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
            ((((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr ^ a.s_addr) & mask) ==
                0) {
            snprintf(out, len, "%s", i->ifa_name);
            rc = 0;
        }
    }
    freeifaddrs(all);
    return rc;
}

/* v's comma-separated tokens into buf, a subnet replaced by this node's interface in it. */
static void names_of(const char *v, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (const char *p = v; *p != '\0' && at < len;) {
        size_t n = strcspn(p, ",");
        char name[64];
        if (iface_of_subnet(p, n, name, sizeof(name)) != 0) {
            snprintf(name, sizeof(name), "%.*s", (int)(n < 63 ? n : 63), p);
        }
        at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "," : "", name);
        p += n + (p[n] == ',');
    }
}

const char *cp_path_expected(const char *backend, char *buf, size_t len)
{
    static const struct {
        const char *backend, *var;
    } vars[] = {{"gloo", "GLOO_SOCKET_IFNAME"},
                {"ofi", "FI_TCP_IFACE"},
                {"ofi", "FI_SOCKETS_IFACE"},
                {"mpi", "OMPI_MCA_btl_tcp_if_include"},
                {"nccl", "NCCL_SOCKET_IFNAME"}};
    const char *v = getenv("COLLPROF_PATH_IFACE");
    for (size_t i = 0; (v == NULL || v[0] == '\0') && i < sizeof(vars) / sizeof(vars[0]); i++) {
        if (backend != NULL && strcmp(backend, vars[i].backend) == 0) {
            v = getenv(vars[i].var);
            v = v != NULL && v[0] == '^' ? NULL : v; /* an exclusion list names no interface */
            v = v != NULL && v[0] == '=' ? v + 1 : v;
        }
    }
    if (v == NULL || v[0] == '\0') {
        v = getenv("COLLPROF_OOB_IFACE");
    }
    names_of(v != NULL ? v : "", buf, len);
    return buf;
}
