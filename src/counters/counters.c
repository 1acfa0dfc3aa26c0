#include "config.h"

#include "counters/counters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned bit;
} sources[] = {{"net", CP_CNT_NET}, {"ib", CP_CNT_IB}, {"host", CP_CNT_HOST}, {"gpu", CP_CNT_GPU}};
#define NSOURCES ((int)(sizeof(sources) / sizeof(sources[0])))

int cp_counters_parse(const char *s, unsigned *mask, char *err, size_t errlen)
{
    if (strcmp(s, "auto") == 0) {
        *mask = CP_CNT_ALL;
        return 0;
    }
    if (strcmp(s, "none") == 0) {
        *mask = 0;
        return 0;
    }
    unsigned m = 0;
    const char *p = s;
    while (*p != '\0') {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < NSOURCES &&
               (strlen(sources[k].name) != len || strncmp(p, sources[k].name, len))) {
            k++;
        }
        if (k == NSOURCES) {
            snprintf(err, errlen,
                     "--counters: '%.*s' is not auto, none or a list of net, ib, host, gpu",
                     (int)(len > 32 ? 32 : len), p);
            return -1;
        }
        m |= sources[k].bit;
        p += len + (p[len] == ',');
    }
    if (m == 0) {
        snprintf(err, errlen, "--counters: an empty list (none: no counters)");
        return -1;
    }
    *mask = m;
    return 0;
}

const char *cp_counters_name(unsigned mask, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < NSOURCES; k++) {
        if ((mask & sources[k].bit) && at < len) {
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "," : "", sources[k].name);
        }
    }
    if (at == 0) {
        snprintf(buf, len, "none");
    }
    return buf;
}

int cp_counters_read(unsigned mask, cp_cnt_snap_t *s)
{
    s->n = 0;
    int rc = 0;
    if (mask & CP_CNT_NET) {
        rc |= cp_counters_read_net(s);
    }
    if (mask & CP_CNT_IB) {
        rc |= cp_counters_read_ib(s);
    }
    if (mask & CP_CNT_HOST) {
        rc |= cp_counters_read_host(s);
    }
    if (mask & CP_CNT_GPU) {
        rc |= cp_counters_read_gpu(s);
    }
    return rc != 0 ? -1 : s->n;
}

void cp_counters_free(cp_cnt_snap_t *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

uint64_t cp_counters_wrap(uint64_t a, uint64_t b, int bits)
{
    if (b >= a) {
        return b - a;
    }
    if (bits == 32 && a <= 0xffffffffull) {
        return (0xffffffffull - a) + b + 1;
    }
    if (bits == 64) {
        return (UINT64_MAX - a) + b + 1;
    }
    return b; /* reset to zero in between */
}

/* The entry of after with c's source and name: snapshots of one node list the counters in
 * the same order, so the entry at the same index is tried first. */
static const cp_cnt_t *match(const cp_cnt_snap_t *after, const cp_cnt_t *c, int at)
{
    if (at < after->n && strcmp(after->v[at].name, c->name) == 0 &&
        strcmp(after->v[at].source, c->source) == 0) {
        return &after->v[at];
    }
    for (int k = 0; k < after->n; k++) {
        if (strcmp(after->v[k].name, c->name) == 0 && strcmp(after->v[k].source, c->source) == 0) {
            return &after->v[k];
        }
    }
    return NULL;
}

static double value_of(const cp_cnt_delta_t *d, int n, const char *name)
{
    for (int k = 0; k < n; k++) {
        if (strcmp(d[k].source, "host") == 0 && strcmp(d[k].name, name) == 0) {
            return d[k].delta;
        }
    }
    return -1;
}

/* The shares of the CPU time that went to steal and to work, from the jiffies' increases. */
static int derived(cp_cnt_delta_t *out, int n)
{
    double total = value_of(out, n, "cpu_total"), steal = value_of(out, n, "cpu_steal");
    double idle = value_of(out, n, "cpu_idle");
    int m = n;
    if (total > 0 && steal >= 0) {
        out[m] = (cp_cnt_delta_t){.unit = "%", .source = "host", .kind = CP_CNT_GAUGE};
        snprintf(out[m].name, sizeof(out[m].name), "cpu_steal_pct");
        out[m++].delta = 100.0 * steal / total;
    }
    if (total > 0 && idle >= 0) {
        out[m] = (cp_cnt_delta_t){.unit = "%", .source = "host", .kind = CP_CNT_GAUGE};
        snprintf(out[m].name, sizeof(out[m].name), "cpu_busy_pct");
        out[m++].delta = 100.0 * (total - idle) / total;
    }
    return m;
}

int cp_counters_delta(const cp_cnt_snap_t *before, const cp_cnt_snap_t *after, cp_cnt_delta_t *out)
{
    int n = 0;
    for (int k = 0; k < before->n; k++) {
        const cp_cnt_t *a = &before->v[k], *b = match(after, a, k);
        if (b == NULL) {
            continue; /* gone in between: absent */
        }
        cp_cnt_delta_t *d = &out[n++];
        memset(d, 0, sizeof(*d));
        memcpy(d->name, a->name, sizeof(d->name));
        memcpy(d->unit, a->unit, sizeof(d->unit));
        memcpy(d->source, a->source, sizeof(d->source));
        d->kind = a->kind;
        d->delta = a->kind == CP_CNT_GAUGE
                       ? (double)b->raw * b->scale
                       : (double)cp_counters_wrap(a->raw, b->raw, a->bits) * a->scale;
    }
    return derived(out, n);
}
