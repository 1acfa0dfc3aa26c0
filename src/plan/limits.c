#include "config.h"

#include "plan/limits.h"

#include "base/log.h"
#include "base/util.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COPY_MIN_US 5000.0 /* each timed round copies at least this long */
#define COPY_ROUNDS 3      /* the best of these rounds counts */

typedef struct copier {
    size_t bytes;
    int reps;
    char *src, *dst;
    const int *go; /* set by the main thread: every copier starts at once */
} copier_t;

static void copy_reps(const copier_t *c)
{
    for (int i = 0; i < c->reps; i++) {
        memcpy(c->dst, c->src, c->bytes);
        __asm__ volatile("" ::: "memory"); /* every copy happens */
    }
}

static void *copy_loop(void *arg)
{
    copier_t *c = arg;
    while (!__atomic_load_n(c->go, __ATOMIC_ACQUIRE)) {
    }
    copy_reps(c);
    return NULL;
}

/* One round: reps copies on every thread; the wall time from the start to the last
 * finish, us; -1 when a thread could not start. */
static double round_us(copier_t *cs, pthread_t *tid, int threads)
{
    int go = 0, started = 1;
    for (int t = 0; t < threads; t++) {
        cs[t].go = &go;
    }
    while (started < threads && pthread_create(&tid[started], NULL, copy_loop, &cs[started]) == 0) {
        started++;
    }
    double t0 = cp_now_us();
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    if (started == threads) {
        copy_reps(&cs[0]);
    }
    for (int t = 1; t < started; t++) {
        pthread_join(tid[t], NULL);
    }
    return started == threads ? cp_now_us() - t0 : -1.0;
}

double cp_copy_gbs(size_t bytes, int threads)
{
    if (bytes == 0 || threads < 1) {
        return 0.0;
    }
    copier_t *cs = calloc((size_t)threads, sizeof(*cs));
    pthread_t *tid = calloc((size_t)threads, sizeof(*tid));
    int ok = cs != NULL && tid != NULL;
    for (int t = 0; ok && t < threads; t++) {
        cs[t] = (copier_t){.bytes = bytes, .reps = 1};
        cs[t].src = cp_alloc_pages(bytes);
        cs[t].dst = cp_alloc_pages(bytes);
        ok = cs[t].src != NULL && cs[t].dst != NULL;
        if (ok) {
            memset(cs[t].src, 1, bytes); /* touched: no page faults in the timed copies */
            memset(cs[t].dst, 2, bytes);
        }
    }
    double best = 0.0;
    if (ok) {
        double us = round_us(cs, tid, threads); /* one copy each: warm, and a first time */
        int reps = us > 0 && us < COPY_MIN_US ? (int)(COPY_MIN_US / us) + 1 : 1;
        for (int t = 0; t < threads; t++) {
            cs[t].reps = reps;
        }
        for (int r = 0; r < COPY_ROUNDS && us > 0; r++) {
            us = round_us(cs, tid, threads);
            double gbs = us > 0 ? (double)bytes * reps * threads / us * 1e-3 : 0.0;
            best = gbs > best ? gbs : best;
        }
    }
    for (int t = 0; cs != NULL && t < threads; t++) {
        cp_free_pages(cs[t].src, bytes);
        cp_free_pages(cs[t].dst, bytes);
    }
    free(cs);
    free(tid);
    return best;
}

static int has_size(const cp_limits_t *l, uint64_t bytes)
{
    for (int i = 0; i < l->n; i++) {
        if (l->bytes[i] == bytes) {
            return 1;
        }
    }
    return 0;
}

/* Rank 0: the host rate of every distinct host-memory buffer size of the plan. */
static void measure_host(const cp_plan_t *plan, cp_limits_t *out)
{
    int cap = plan->ncells > 0 ? plan->ncells : 1;
    out->bytes = calloc((size_t)cap, sizeof(uint64_t));
    out->one = calloc((size_t)cap, sizeof(double));
    out->all = calloc((size_t)cap, sizeof(double));
    for (int i = 0; out->bytes && out->one && out->all && i < plan->ncells; i++) {
        const cp_cell_t *c = &plan->cells[i];
        uint64_t bytes = c->count * collprof_dtype_size(c->dtype);
        if (c->memtype != COLLPROF_MEM_HOST || bytes == 0 || has_size(out, bytes)) {
            continue;
        }
        out->bytes[out->n] = bytes;
        out->one[out->n] = cp_copy_gbs((size_t)bytes, 1);
        out->all[out->n] =
            out->threads > 1 ? cp_copy_gbs((size_t)bytes, out->threads) : out->one[out->n];
        out->n++;
    }
}

static int has_dev(const cp_limits_t *l, int plugin, int memtype, uint64_t bytes)
{
    for (int i = 0; i < l->ndev; i++) {
        if (l->dev[i].plugin == plugin && l->dev[i].memtype == memtype &&
            l->dev[i].bytes == bytes) {
            return 1;
        }
    }
    return 0;
}

/* Rank 0: the device copy rate of every distinct (backend, device memory, size) of the plan
 * whose backend is initialised here and has the copy_rate slot.  A failure (buffers that do
 * not fit beside the cell's) leaves that size 0 (no limit printed) and says why, once per
 * backend. */
static void measure_device(const cp_plan_t *plan, const cp_plugin_t *plugins, int nplugins,
                           cp_limits_t *out)
{
    out->dev = calloc((size_t)(plan->ncells > 0 ? plan->ncells : 1), sizeof(*out->dev));
    char *failed = calloc((size_t)(nplugins > 0 ? nplugins : 1), 1);
    for (int i = 0; out->dev != NULL && failed != NULL && i < plan->ncells; i++) {
        const cp_cell_t *c = &plan->cells[i];
        uint64_t bytes = c->count * collprof_dtype_size(c->dtype);
        if (c->memtype != COLLPROF_MEM_DEVICE || c->plugin < 0 || c->plugin >= nplugins ||
            bytes == 0 || has_dev(out, c->plugin, c->memtype, bytes)) {
            continue;
        }
        const cp_plugin_t *p = &plugins[c->plugin];
        struct cp_dev_limit *d = &out->dev[out->ndev++];
        *d = (struct cp_dev_limit){.plugin = c->plugin, .memtype = c->memtype, .bytes = bytes};
        if (p->be == NULL || p->ctx == NULL || !COLLPROF_BACKEND_HAS(p->be, copy_rate)) {
            continue;
        }
        double gbs = 0.0;
        int rc = p->be->copy_rate(p->ctx, c->memtype, (size_t)bytes, &gbs);
        if (rc == COLLPROF_OK && gbs > 0 && gbs < INFINITY) {
            d->gbs = gbs;
        } else if (rc != COLLPROF_ERR_NOT_SUPPORTED && !failed[c->plugin]) {
            const char *why = rc != COLLPROF_OK ? p->be->last_error(p->ctx) : NULL;
            failed[c->plugin] = 1;
            cp_log(CP_LOG_WARN,
                   "%s: the device copy rate of %llu B could not be measured (%s): no device "
                   "limit beside its cells of that size",
                   p->name, (unsigned long long)bytes, why && *why ? why : "no rate");
        }
    }
    free(failed);
}

int cp_limits_measure(const cp_plan_t *plan, const cp_plugin_t *plugins, int nplugins,
                      const cp_boot_t *b, cp_limits_t *out)
{
    memset(out, 0, sizeof(*out));
    /* one copying thread per rank of the node, but no more than it has CPUs: more would only
     * time-slice (and take two buffers each: 1,024 ranks on one machine, 128 GiB at 64 MiB) */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    out->threads = b->local_size > 0 ? b->local_size : 1;
    if (cpus > 0 && out->threads > cpus) {
        out->threads = (int)cpus;
    }
    if (cp_oob_barrier() != 0) {
        return -1;
    }
    if (b->rank == 0) {
        measure_host(plan, out);
        measure_device(plan, plugins, nplugins, out);
    }
    return cp_oob_barrier() != 0 ? -1 : 0;
}

void cp_limits_of(const cp_limits_t *l, uint64_t bytes, double *one, double *all)
{
    *one = *all = 0.0;
    for (int i = 0; i < l->n; i++) {
        if (l->bytes[i] == bytes) {
            *one = l->one[i];
            *all = l->all[i];
        }
    }
}

double cp_limits_device(const cp_limits_t *l, int plugin, int memtype, uint64_t bytes)
{
    for (int i = 0; i < l->ndev; i++) {
        if (l->dev[i].plugin == plugin && l->dev[i].memtype == memtype &&
            l->dev[i].bytes == bytes) {
            return l->dev[i].gbs;
        }
    }
    return 0.0;
}

void cp_limits_free(cp_limits_t *l)
{
    free(l->dev);
    free(l->bytes);
    free(l->one);
    free(l->all);
    memset(l, 0, sizeof(*l));
}
