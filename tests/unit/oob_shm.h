/*
 * An out-of-band channel for tests of forked ranks on one machine: the
 * host table's allgather/bcast/barrier (and the core's gather) over an anonymous shared mapping
 * made before fork (oob_shm_create), any length (chunked).  Header only:
 * each test program has one channel, and each forked rank sets its rank
 * with oob_shm_attach.
 */
#ifndef COLLPROF_TESTS_OOB_SHM_H
#define COLLPROF_TESTS_OOB_SHM_H

#include <collprof/plugin.h>
#include <collprof/status.h>

#include <stddef.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define OOB_SHM_SLOT 65536 /* bytes per rank per round */

typedef struct oob_shm {
    volatile unsigned count, gen;
    int nranks;
    char slot[][OOB_SHM_SLOT];
} oob_shm_t;

static oob_shm_t *oob_shm;
static int oob_shm_rank;

/* Before fork: the channel for nranks ranks; 0 or -1. */
static inline int oob_shm_create(int nranks)
{
    size_t len = sizeof(oob_shm_t) + (size_t)nranks * OOB_SHM_SLOT;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return -1;
    }
    oob_shm = (oob_shm_t *)p;
    oob_shm->nranks = nranks;
    return 0;
}

/* In each forked rank. */
static inline void oob_shm_attach(int rank)
{
    oob_shm_rank = rank;
}

static inline int oob_shm_barrier(void)
{
    oob_shm_t *s = oob_shm;
    unsigned gen = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&s->count, 1, __ATOMIC_ACQ_REL) == (unsigned)s->nranks) {
        __atomic_store_n(&s->count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->gen, gen + 1, __ATOMIC_RELEASE);
        return COLLPROF_OK;
    }
    while (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == gen) {
        usleep(10);
    }
    return COLLPROF_OK;
}

static inline int oob_shm_allgather(const void *in, void *out, size_t len)
{
    for (size_t off = 0; off < len; off += OOB_SHM_SLOT) {
        size_t c = len - off < OOB_SHM_SLOT ? len - off : OOB_SHM_SLOT;
        memcpy(oob_shm->slot[oob_shm_rank], (const char *)in + off, c);
        oob_shm_barrier();
        for (int r = 0; r < oob_shm->nranks; r++) {
            memcpy((char *)out + (size_t)r * len + off, oob_shm->slot[r], c);
        }
        oob_shm_barrier();
    }
    return COLLPROF_OK;
}

/* every rank's block to rank 0 alone (out untouched elsewhere) */
static inline int oob_shm_gather(const void *in, void *out, size_t len)
{
    for (size_t off = 0; off < len; off += OOB_SHM_SLOT) {
        size_t c = len - off < OOB_SHM_SLOT ? len - off : OOB_SHM_SLOT;
        memcpy(oob_shm->slot[oob_shm_rank], (const char *)in + off, c);
        oob_shm_barrier();
        for (int r = 0; r < oob_shm->nranks && oob_shm_rank == 0; r++) {
            memcpy((char *)out + (size_t)r * len + off, oob_shm->slot[r], c);
        }
        oob_shm_barrier();
    }
    return COLLPROF_OK;
}

static inline int oob_shm_bcast(void *buf, size_t len, int root)
{
    for (size_t off = 0; off < len; off += OOB_SHM_SLOT) {
        size_t c = len - off < OOB_SHM_SLOT ? len - off : OOB_SHM_SLOT;
        if (oob_shm_rank == root) {
            memcpy(oob_shm->slot[root], (char *)buf + off, c);
        }
        oob_shm_barrier();
        memcpy((char *)buf + off, oob_shm->slot[root], c);
        oob_shm_barrier();
    }
    return COLLPROF_OK;
}

/* Fork the channel's ranks: each attaches, gets an alarm of alarm_s seconds
 * and exits with fn(rank, arg); status[r] is rank r's wait status. */
static inline void oob_shm_fork(int (*fn)(int rank, void *arg), void *arg, unsigned alarm_s,
                                int *status)
{
    pid_t pid[64];
    int n = oob_shm->nranks < 64 ? oob_shm->nranks : 64;
    fflush(stdout);
    for (int r = 0; r < n; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            oob_shm_attach(r);
            alarm(alarm_s);
            _exit(fn(r, arg));
        }
    }
    for (int r = 0; r < n; r++) {
        status[r] = -1;
        if (pid[r] > 0) {
            waitpid(pid[r], &status[r], 0);
        }
    }
}

/* The host table of this rank: every rank on one node, the channel above. */
static inline collprof_host_t oob_shm_host(void (*log)(int, const char *, ...),
                                           const char *(*get_option)(const char *))
{
    collprof_host_t h = {.size = sizeof(h),
                         .rank = oob_shm_rank,
                         .nranks = oob_shm->nranks,
                         .local_rank = oob_shm_rank,
                         .local_size = oob_shm->nranks,
                         .node_id = 0,
                         .nnodes = 1,
                         .hostname = "localhost",
                         .launcher = "test",
                         .log = log,
                         .oob_allgather = oob_shm_allgather,
                         .oob_bcast = oob_shm_bcast,
                         .oob_barrier = oob_shm_barrier,
                         .get_option = get_option};
    return h;
}

#ifdef COLLPROF_CORE_RUNNER_H
/* The core's cell runner over this channel, for one plugin (tests that link libcpoutput and
 * include runner/runner.h first): the exact check on, no watchdog, every rank on one node. */
typedef struct oob_shm_runner {
    cp_options_t opt;
    cp_boot_t boot;
    cp_oob_t oob;
    cp_runner_t r;
} oob_shm_runner_t;

/* hosts: one name per rank, each rank on a node of its own (node_ids the identity; a test
 * that places ranks otherwise sets node_ids and node_names itself) */
static inline void oob_shm_runner(oob_shm_runner_t *k, cp_plugin_t *p, char (*hosts)[256])
{
    static int self_node[256];
    for (int r = 0; r < 256; r++) {
        self_node[r] = r;
    }
    memset(k, 0, sizeof(*k));
    k->opt.check = 1;
    k->boot.rank = oob_shm_rank;
    k->boot.nranks = oob_shm->nranks;
    k->boot.node_names = hosts;
    k->boot.node_ids = oob_shm->nranks <= 256 ? self_node : NULL;
    k->oob = (cp_oob_t){.allgather = oob_shm_allgather,
                        .gather = oob_shm_gather,
                        .bcast = oob_shm_bcast,
                        .barrier = oob_shm_barrier};
    k->r = (cp_runner_t){
        .opt = &k->opt, .boot = &k->boot, .plugins = p, .nplugins = 1, .oob = &k->oob};
}
#endif

#endif /* COLLPROF_TESTS_OOB_SHM_H */
