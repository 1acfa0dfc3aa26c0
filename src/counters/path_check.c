/*
 * The path check over a cell's /counters rows (path_check.h, docs/metrics.md "Path check").
 */
#include "config.h"

#include "counters/path_check.h"

#include <stdio.h>
#include <string.h>

#define MAX_IFACES 32

typedef struct iface {
    char name[64];
    double tx, rx;
} iface_t;

static int is_op(const char *op, const char *a, const char *b)
{
    return strcmp(op, a) == 0 || (b != NULL && strcmp(op, b) == 0);
}

double cp_path_bound(const cp_path_cell_t *c, int is_root_node)
{
    if (c->op == NULL || c->nodes < 2) {
        return 0;
    }
    const double n = c->nodes, b = (double)c->bytes, f = (n - 1) / n;
    const double ppn = c->ppn > 0 ? c->ppn : 1;
    if (c->pair) {
        return b; /* each end sends and receives the message once per operation */
    }
    if (is_op(c->op, "allreduce", "iallreduce")) {
        return 2 * f * b;
    }
    if (is_op(c->op, "allgather", "iallgather") || is_op(c->op, "reducescatter", NULL)) {
        return f * b;
    }
    if (is_op(c->op, "alltoall", "ialltoall")) {
        return ppn * f * b;
    }
    if (is_op(c->op, "broadcast", "ibroadcast") || is_op(c->op, "reduce", NULL)) {
        return b;
    }
    if (is_op(c->op, "gather", "scatter")) {
        return is_root_node ? f * b : b / n;
    }
    return 0; /* barrier, sendrecv (pairs unknown), the variable ops */
}

static int ends_with(const char *s, const char *suffix, size_t *stem)
{
    size_t a = strlen(s), b = strlen(suffix);
    if (a <= b || strcmp(s + a - b, suffix) != 0) {
        return 0;
    }
    *stem = a - b;
    return 1;
}

/* Direction of a byte row (1 tx, 2 rx, 0 not a byte row) and its interface's name length. */
static int byte_row(const collprof_counter_row_t *r, size_t *stem)
{
    if (strcmp(r->kind, "counter") != 0) {
        return 0;
    }
    if (strcmp(r->source, "net") == 0 || strcmp(r->source, "efa") == 0) {
        return ends_with(r->name, "/tx_bytes", stem)   ? 1
               : ends_with(r->name, "/rx_bytes", stem) ? 2
                                                       : 0;
    }
    if (strcmp(r->source, "ib") == 0) {
        return ends_with(r->name, "/port_xmit_data", stem)  ? 1
               : ends_with(r->name, "/port_rcv_data", stem) ? 2
                                                            : 0;
    }
    return 0;
}

/* The node's byte rows into t (lo left out; IPoIB interfaces ib* left out when a port has byte
 * counters of its own, not to count the bytes twice).  The number of interfaces. */
static int gather(const collprof_counter_row_t *rows, size_t n, int node, iface_t *t, int64_t *ops)
{
    int nt = 0, ports = 0;
    for (size_t k = 0; k < n; k++) {
        size_t stem;
        if (rows[k].node == node && strcmp(rows[k].source, "net") != 0 &&
            byte_row(&rows[k], &stem)) {
            ports = 1;
        }
        if (rows[k].node == node && rows[k].ops > *ops) {
            *ops = rows[k].ops;
        }
    }
    for (size_t k = 0; k < n; k++) {
        const collprof_counter_row_t *r = &rows[k];
        size_t stem = 0;
        int dir = r->node == node ? byte_row(r, &stem) : 0;
        if (dir == 0 || stem >= sizeof(t[0].name)) {
            continue;
        }
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)stem, r->name);
        if (strcmp(r->source, "net") == 0 &&
            (strcmp(name, "lo") == 0 || (ports && strncmp(name, "ib", 2) == 0))) {
            continue;
        }
        int i = 0;
        while (i < nt && strcmp(t[i].name, name) != 0) {
            i++;
        }
        if (i == nt) {
            if (nt == MAX_IFACES) {
                continue;
            }
            memset(&t[nt], 0, sizeof(t[nt]));
            snprintf(t[nt++].name, sizeof(t[0].name), "%s", name);
        }
        *(dir == 1 ? &t[i].tx : &t[i].rx) += r->delta > 0 ? r->delta : 0;
    }
    return nt;
}

/* 1 when iface is one of the comma-separated list (or a port of a device it names). */
static int expected(const char *list, const char *iface)
{
    for (const char *p = list; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len > 0 && strncmp(iface, p, len) == 0 && (iface[len] == '\0' || iface[len] == '/')) {
            return 1;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

/* The carriers, the largest first, into p; p->other set. */
static void carriers(const cp_path_cell_t *c, const iface_t *t, int nt, cp_path_node_t *p)
{
    int used[MAX_IFACES] = {0};
    for (;;) {
        int best = -1;
        double bb = 0;
        for (int i = 0; i < nt; i++) {
            double b = t[i].tx > t[i].rx ? t[i].tx : t[i].rx;
            if (!used[i] && b >= CP_PATH_SHARE * p->nic && b >= CP_PATH_FLOOR * (double)p->ops &&
                b > bb) {
                best = i;
                bb = b;
            }
        }
        if (best < 0) {
            return;
        }
        used[best] = 1;
        if (c->expected != NULL && c->expected[0] != '\0' && !expected(c->expected, t[best].name)) {
            p->other = 1;
        }
        if (p->nvia < CP_PATH_VIA) {
            snprintf(p->via[p->nvia], sizeof(p->via[0]), "%s", t[best].name);
            p->via_bytes[p->nvia++] = bb;
        }
    }
}

cp_path_verdict_t cp_path_check(const cp_path_cell_t *c, const collprof_counter_row_t *rows,
                                size_t n, int node, cp_path_node_t *p)
{
    iface_t t[MAX_IFACES];
    memset(p, 0, sizeof(*p));
    p->node = node;
    p->bound = cp_path_bound(c, node == c->root_node);
    int nt = gather(rows, n, node, t, &p->ops);
    if (nt == 0 || p->ops <= 0) {
        return p->verdict = CP_PATH_UNKNOWN;
    }
    double tx = 0, rx = 0;
    for (int i = 0; i < nt; i++) {
        tx += t[i].tx;
        rx += t[i].rx;
    }
    p->nic = tx > rx ? tx : rx;
    const double per_op = p->nic / (double)p->ops;
    p->ratio = p->bound > 0 ? per_op / p->bound : 0;
    carriers(c, t, nt, p);
    if (p->bound > 0 && per_op < CP_PATH_MISSING * p->bound) {
        p->verdict = CP_PATH_UNKNOWN;
    } else if (p->other) {
        p->verdict = CP_PATH_OTHER_NIC;
    } else if (p->bound > 0 &&
               per_op > CP_PATH_EXCESS * (p->bound * (1 + CP_PATH_OVERHEAD) + CP_PATH_FIXED)) {
        p->verdict = CP_PATH_EXCESS_V;
    } else {
        p->verdict = CP_PATH_OK;
    }
    return p->verdict;
}

static const char *const names[] = {"unknown", "ok", "excess", "other-nic"};

const char *cp_path_verdict_name(cp_path_verdict_t v)
{
    return (int)v >= 0 && (int)v < 4 ? names[v] : "unknown";
}

int cp_path_verdict_of(const char *s)
{
    for (int v = 0; v < 4; v++) {
        if (strcmp(s, names[v]) == 0) {
            return v;
        }
    }
    return -1;
}

static collprof_counter_row_t *row(collprof_counter_row_t *r, const cp_path_node_t *p,
                                   const char *host, const char *name, const char *unit, int gauge,
                                   double delta)
{
    memset(r, 0, sizeof(*r));
    r->node = p->node;
    snprintf(r->host, sizeof(r->host), "%s", host != NULL ? host : "");
    snprintf(r->source, sizeof(r->source), "path");
    snprintf(r->name, sizeof(r->name), "%s", name);
    snprintf(r->unit, sizeof(r->unit), "%s", unit);
    snprintf(r->kind, sizeof(r->kind), "%s", gauge ? "gauge" : "counter");
    r->delta = delta;
    r->ops = p->ops;
    r->per_op = gauge || p->ops <= 0 ? 0 : delta / (double)p->ops;
    return r;
}

int cp_path_rows(const cp_path_cell_t *c, const cp_path_node_t *p, const char *host,
                 collprof_counter_row_t *out)
{
    int k = 0;
    char name[80];
    row(&out[k++], p, host, "verdict", cp_path_verdict_name(p->verdict), 1, p->ratio);
    row(&out[k++], p, host, "nic", "B", 0, p->nic);
    row(&out[k++], p, host, "bound", "B", 0, p->bound * (double)p->ops);
    for (int i = 0; i < p->nvia; i++) {
        snprintf(name, sizeof(name), "via/%.59s", p->via[i]);
        row(&out[k++], p, host, name, "B", 0, p->via_bytes[i]);
    }
    for (const char *e = c->expected; e != NULL && *e != '\0' && k < CP_PATH_ROWS;) {
        size_t len = strcspn(e, ",");
        if (len > 0) {
            snprintf(name, sizeof(name), "expected/%.*s", (int)(len < 54 ? len : 54), e);
            row(&out[k++], p, host, name, "", 1, 0);
        }
        e += len + (e[len] == ',');
    }
    return k;
}
