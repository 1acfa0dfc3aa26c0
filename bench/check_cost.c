/*
 * bench/check_cost: what the exact check of a reduction costs one rank, as
 * the ranks grow (issue 26: O(count) whatever n).  For each n it fills a
 * buffer with the expected allreduce result and times
 *   - "table": the check collprof runs (cp_coll_check_reduced: a table of
 *     the expected values, periodic in the element index);
 *   - "loop": the check as it was before (every element reduces every
 *     rank's contribution), on a prefix of the buffer only and scaled to
 *     the whole, since at thousands of ranks it takes minutes;
 * and prints ns per element and the whole check's seconds.  Both counts of
 * wrong elements must be 0, else it exits 1.  CPU time of this thread
 * (CLOCK_THREAD_CPUTIME_ID), best of --reps; a benchmark, not a test.
 *
 *   bench/check_cost [--count 16M] [--ranks 4,64,1024,4096] [--dtype float32]
 *                    [--redop sum] [--loop-elems 65536] [--reps 3]
 */
#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The check before: each element reduces all n contributions. */
static uint64_t check_loop(const cp_xfer_t *x, const void *buf, uint64_t len)
{
    uint64_t wrong = 0;
    for (uint64_t j = 0; j < len; j++) {
        int64_t acc = cp_data_contrib(x->dtype, x->redop, x->n, 0, j), v;
        for (int r = 1; r < x->n; r++) {
            int64_t c = cp_data_contrib(x->dtype, x->redop, x->n, r, j);
            switch (x->redop) {
            case COLLPROF_REDOP_SUM: acc += c; break;
            case COLLPROF_REDOP_PROD: acc *= c; break;
            case COLLPROF_REDOP_MIN: acc = c < acc ? c : acc; break;
            default: acc = c > acc ? c : acc; break;
            }
        }
        if (cp_data_get(x->dtype, buf, j, &v) != 0 || v != acc) {
            wrong++;
        }
    }
    return wrong;
}

static uint64_t parse_count(const char *s)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) {
        return 0;
    }
    if (*end == 'K' || *end == 'k') {
        v <<= 10, end++;
    } else if (*end == 'M' || *end == 'm') {
        v <<= 20, end++;
    }
    return *end == '\0' ? (uint64_t)v : 0;
}

static int usage(const char *why)
{
    fprintf(stderr,
            "check_cost: %s\nusage: check_cost [--count N[K|M]] [--ranks N,N,...] "
            "[--dtype T] [--redop OP] [--loop-elems N] [--reps R]\n",
            why);
    return 2;
}

typedef struct opts {
    uint64_t count, loop_elems;
    int reps, dtype, redop;
    char ranks[256];
} opts_t;

static int parse(int argc, char **argv, opts_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            return usage("every option takes a value");
        }
        i++;
        if (!strcmp(a, "--count")) {
            o->count = parse_count(v);
        } else if (!strcmp(a, "--loop-elems")) {
            o->loop_elems = parse_count(v);
        } else if (!strcmp(a, "--reps")) {
            o->reps = atoi(v);
        } else if (!strcmp(a, "--ranks")) {
            snprintf(o->ranks, sizeof(o->ranks), "%s", v);
        } else if (!strcmp(a, "--dtype")) {
            o->dtype = cp_dtype_from_name(v);
        } else if (!strcmp(a, "--redop")) {
            o->redop = cp_redop_from_name(v);
        } else {
            return usage("unknown option");
        }
    }
    if (o->count == 0 || o->loop_elems == 0 || o->reps < 1 || o->dtype < 0 || o->redop < 0) {
        return usage("bad value");
    }
    return 0;
}

/* One rank count: both checks, one line. */
static int measure(const opts_t *o, int n, void *buf)
{
    cp_xfer_t x = {.op = COLLPROF_OP_ALLREDUCE,
                   .dtype = (collprof_dtype_t)o->dtype,
                   .redop = (collprof_redop_t)o->redop,
                   .n = n,
                   .count = o->count};
    for (uint64_t i = 0; i < o->count; i++) {
        cp_data_set(x.dtype, buf, i, cp_data_reduced(x.dtype, x.redop, n, i));
    }
    uint64_t lel = o->loop_elems < o->count ? o->loop_elems : o->count, bad = 0;
    double table = 1e30, loop = 1e30;
    for (int r = 0; r < o->reps; r++) {
        double t0 = cpu_s();
        bad += cp_coll_check_reduced(&x, buf, 0, o->count);
        double t1 = cpu_s();
        bad += check_loop(&x, buf, lel);
        double t2 = cpu_s();
        table = t1 - t0 < table ? t1 - t0 : table;
        loop = t2 - t1 < loop ? t2 - t1 : loop;
    }
    double per_table = table * 1e9 / (double)o->count, per_loop = loop * 1e9 / (double)lel;
    printf("%7d %12.2f %10.3f %12.2f %10.1f %8.0f %s\n", n, per_table, table, per_loop,
           per_loop * (double)o->count * 1e-9, per_loop / per_table, bad ? "WRONG" : "exact");
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    opts_t o = {.count = 16u << 20,
                .loop_elems = 65536,
                .reps = 3,
                .dtype = COLLPROF_DTYPE_FLOAT32,
                .redop = COLLPROF_REDOP_SUM,
                .ranks = "4,64,1024,4096"};
    int rc = parse(argc, argv, &o);
    if (rc != 0) {
        return rc;
    }
    void *buf = malloc(o.count * collprof_dtype_info((collprof_dtype_t)o.dtype)->size);
    if (buf == NULL) {
        fprintf(stderr, "check_cost: out of memory\n");
        return 1;
    }
    printf("# check of an allreduce of %llu %s (%s), CPU time of one thread, best of %d; "
           "loop measured on %llu elements and scaled\n",
           (unsigned long long)o.count, collprof_dtype_info((collprof_dtype_t)o.dtype)->name,
           collprof_redop_name((collprof_redop_t)o.redop), o.reps,
           (unsigned long long)o.loop_elems);
    printf("# %5s %12s %10s %12s %10s %8s %s\n", "ranks", "table_ns/el", "table_s", "loop_ns/el",
           "loop_s", "loop/tab", "result");
    for (char *save = NULL, *tok = strtok_r(o.ranks, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        int n = atoi(tok);
        if (n < 1) {
            free(buf);
            return usage("--ranks takes positive numbers");
        }
        rc |= measure(&o, n, buf);
    }
    free(buf);
    return rc;
}
