/*
 * replay_check_cost: the time and memory of collprof --replay's check before the replay
 * (src/runner/replay_check.c, replay_sim.c; docs/replay.md) on a synthetic trace of R ranks
 * and N ops each, built in memory: allreduces of 1 KiB on the world, every 4th on the rank's
 * pair instead, every 8th a blocking send (even rank) and recv (odd rank) on the pair.  With
 * -d the last pair's second rank has its first two pair ops in the other order (a cycle: the
 * check refuses it); with -N the check simulates --replay-order nccl (every op posted on its
 * group's queue).  Prints the ops, the check's wall time, its result and the process's
 * peak resident memory (VmHWM), beside the load average.
 * Usage: make bench/replay_check_cost && bench/replay_check_cost [-r R] [-n N] [-d] [-N]
 */
#include "config.h"

#include "runner/replay_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long hwm_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = atol(line + 6);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kib;
}

/* Op k of rank r (the pattern above) into row */
static void op_of(int r, long k, int nr, int cycle, collprof_trace_op_row_t *row)
{
    memset(row, 0, sizeof(*row));
    row->rank = r;
    row->seq = k;
    row->req = row->coalesced = row->split_off = row->root = row->peer = -1;
    row->in_count = row->out_count = 256;
    row->bytes = 1024;
    snprintf(row->dtype, sizeof(row->dtype), "float32");
    snprintf(row->op, sizeof(row->op), "allreduce");
    long j = cycle && r == nr - 1 && k < 8 ? (k == 0 ? 7 : k == 7 ? 0 : k) : k;
    if (j % 8 == 7) {
        snprintf(row->op, sizeof(row->op), "%s", r % 2 == 0 ? "send" : "recv");
        row->peer = r ^ 1;
        row->group = 1 + r / 2;
    } else if (j % 4 == 3) {
        row->group = 1 + r / 2;
    }
}

int main(int argc, char **argv)
{
    int nr = 1024, cycle = 0, nccl = 0, c;
    long n = 10000;
    while ((c = getopt(argc, argv, "r:n:dN")) != -1) {
        nr = c == 'r' ? atoi(optarg) : nr;
        n = c == 'n' ? atol(optarg) : n;
        cycle |= c == 'd';
        nccl |= c == 'N';
    }
    if (nr < 2 || nr % 2 != 0 || n < 8) {
        fprintf(stderr, "usage: replay_check_cost [-r EVEN_RANKS] [-n OPS>=8] [-d] [-N]\n");
        return 2;
    }
    cp_trace_t t = {.nranks = nr, .ngroups = 1 + (size_t)nr / 2, .nmembers = 2 * (size_t)nr};
    t.groups = calloc(t.ngroups, sizeof(*t.groups));
    t.members = calloc(t.nmembers, sizeof(*t.members));
    for (size_t g = 0; g < t.ngroups; g++) {
        t.groups[g].group = (int)g;
        t.groups[g].size = g == 0 ? nr : 2;
        t.groups[g].member_off = g == 0 ? 0 : nr + 2 * ((int64_t)g - 1);
    }
    for (int r = 0; r < nr; r++) {
        t.members[r].rank = r;
        t.members[nr + r].rank = r;
    }
    collprof_trace_op_row_t row;
    char err[1024] = "";
    cp_replay_check_order(nccl, ~(uint32_t)0);
    double t0 = now_s();
    cp_replay_check_begin();
    for (long k = 0; k < n; k++) { /* (a file's order: rank by rank per block; any order) */
        for (int r = 0; r < nr; r++) {
            op_of(r, k, nr, cycle, &row);
            cp_replay_check_row(&t, &row);
        }
    }
    double t1 = now_s();
    int rc = cp_replay_check_end(&t, err, sizeof(err));
    double t2 = now_s();
    double load[1] = {0};
    getloadavg(load, 1);
    printf("replay_check_cost ranks %d ops_per_rank %ld ops %.0f gather_s %.3f check_s %.3f "
           "ns_per_op %.1f hwm_mib %.0f load1 %.2f order %s result %s%s\n",
           nr, n, (double)nr * (double)n, t1 - t0, t2 - t1, (t2 - t1) * 1e9 / ((double)nr * n),
           (double)hwm_kib() / 1024, load[0], nccl ? "nccl" : "program",
           rc == 0 ? "ok" : "refused: ", rc == 0 ? "" : err);
    free(t.groups);
    free(t.members);
    return 0;
}
