/*
 * The path check's rows of a cell (path_rows.h).
 */
#include "config.h"

#include "output/path_rows.h"

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

/* Nodes of the job, the ranks of its largest node, and the node of rank root. */
static void shape(const cp_boot_t *b, int root, int *nodes, int *ppn, int *root_node)
{
    *nodes = b->nnodes > 0 ? b->nnodes : 1;
    *ppn = b->local_size > 0 ? b->local_size : 1;
    *root_node = 0;
    if (b->node_ids == NULL) {
        return;
    }
    int *per = calloc((size_t)*nodes, sizeof(int));
    for (int q = 0; per != NULL && q < b->nranks; q++) {
        if (b->node_ids[q] >= 0 && b->node_ids[q] < *nodes && ++per[b->node_ids[q]] > *ppn) {
            *ppn = per[b->node_ids[q]];
        }
    }
    free(per);
    *root_node = root >= 0 && root < b->nranks ? b->node_ids[root] : 0;
}

collprof_counter_row_t *cp_path_add_rows(const collprof_result_row_t *row, const cp_result_t *res,
                                         const cp_boot_t *b, int *n)
{
    *n = 0;
    if (res->ncounters <= 0 || b == NULL || b->nnodes < 2) {
        return NULL;
    }
    char exp[256];
    cp_path_cell_t c = {.op = row->op,
                        .bytes = row->bytes, /* count x size for every op the bound covers */
                        .expected = cp_path_expected(row->backend, exp, sizeof(exp))};
    shape(b, row->root, &c.nodes, &c.ppn, &c.root_node);
    size_t room = (size_t)res->ncounters + (size_t)c.nodes * CP_PATH_ROWS;
    collprof_counter_row_t *out = calloc(room, sizeof(*out));
    if (out == NULL) {
        return NULL;
    }
    memcpy(out, res->counters, (size_t)res->ncounters * sizeof(*out));
    int k = res->ncounters;
    for (int node = 0; node < c.nodes; node++) {
        const char *host = NULL;
        for (int i = 0; i < res->ncounters && host == NULL; i++) {
            host = res->counters[i].node == node ? res->counters[i].host : NULL;
        }
        if (host == NULL) {
            continue; /* no rows from this node */
        }
        cp_path_node_t p;
        cp_path_check(&c, res->counters, (size_t)res->ncounters, node, &p);
        k += cp_path_rows(&c, &p, host, &out[k]);
    }
    *n = k;
    return out;
}
