/*
 * bench/pmix_floor: the least a PMIx program does at start-up, as the floor
 * that bench/scale_np.sh sets collprof's per-rank costs against.  Every rank
 * runs PMIx_Init, puts its host name (as collprof's bootstrap does), one
 * fence that collects the data, reads rank 0's name, and PMIx_Finalize.  Run
 * it under collprof's own launcher, so that both see the same embedded
 * server:
 *
 *   COLLPROF_BENCH_EXEC=$PWD/bench/pmix_floor collprof --np 256 ...
 *
 * Rank 0 prints one line: ranks, seconds from its PMIx_Init to the end of
 * the fence; then every rank one line with its CPU time and peak resident
 * memory (as collprof's -v 'resources:' line).  Exit 1 on any PMIx error
 * (with the call that failed).
 */
#include <pmix.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time (user + system) of this process so far, in ms */
static double cpu_ms(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0;
    }
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
}

static int fail(const char *what, pmix_status_t rc)
{
    fprintf(stderr, "pmix_floor: %s: %s\n", what, PMIx_Error_string(rc));
    return 1;
}

int main(void)
{
    pmix_proc_t me, zero;
    double c_start = cpu_ms(); /* exec, the dynamic linker (PMIx's libraries) */
    double t0 = now_s();
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    double c_init = cpu_ms();
    if (rc != PMIX_SUCCESS) {
        return fail("PMIx_Init", rc);
    }
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    pmix_value_t v = {.type = PMIX_STRING};
    v.data.string = host;
    if ((rc = PMIx_Put(PMIX_GLOBAL, "floor.host", &v)) != PMIX_SUCCESS ||
        (rc = PMIx_Commit()) != PMIX_SUCCESS) {
        return fail("PMIx_Put/Commit", rc);
    }
    pmix_info_t collect;
    int yes = 1;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
    if ((rc = PMIx_Fence(&all, 1, &collect, 1)) != PMIX_SUCCESS) {
        return fail("PMIx_Fence", rc);
    }
    double t1 = now_s(), c_fence = cpu_ms();
    pmix_value_t *got = NULL, *size = NULL;
    PMIX_LOAD_PROCID(&zero, me.nspace, 0);
    if ((rc = PMIx_Get(&zero, "floor.host", NULL, 0, &got)) != PMIX_SUCCESS) {
        return fail("PMIx_Get", rc);
    }
    PMIX_VALUE_RELEASE(got);
    if (me.rank == 0 && PMIx_Get(&all, PMIX_JOB_SIZE, NULL, 0, &size) == PMIX_SUCCESS) {
        printf("pmix_floor: %u ranks, init to fence done %.3f s on rank 0\n", size->data.uint32,
               t1 - t0);
        PMIX_VALUE_RELEASE(size);
    }
    double c_get = cpu_ms();
    if ((rc = PMIx_Finalize(NULL, 0)) != PMIX_SUCCESS) {
        return fail("PMIx_Finalize", rc);
    }
    double c_end = cpu_ms();
    printf("pmix_floor: rank %u phases (CPU ms): start %.2f init %.2f fence %.2f get %.2f "
           "finalize %.2f\n",
           me.rank, c_start, c_init - c_start, c_fence - c_init, c_get - c_fence, c_end - c_get);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
        printf("pmix_floor: rank %u resources: CPU %.3f s, peak RSS %.1f MB\n", me.rank, cpu,
               (double)ru.ru_maxrss / 1024.0);
    }
    return 0;
}
