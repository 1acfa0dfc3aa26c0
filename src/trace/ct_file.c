/*
 * collprof-trace's file (ct.h): started in MPI_Init when COLLPROF_TRACE_DIR is
 * set, one JSON object a line in DIR/collprof-trace.RANK.jsonl:
 *
 *   {"collprof_trace": 1, "rank", "size", "host", "pid", "clock", "library", ...}
 *   {"comm": I, "key", "size", "members": [world ranks], "from"}   before its first op
 *   {"op", "mpi", "comm", "dtype", "in", "out", "bytes", "esize", "t", "dur",
 *    "root", "peer", "req", "co", "in_split", "out_split"}          (the last six where set)
 *   {"end": true, "ops", "comms", "open_requests", "finalized"}
 *
 * "t" is ns since the common reference: every rank reads its clock right after
 * the second of two barriers on MPI_COMM_WORLD at MPI_Init.  The buffer is
 * written (ct_write.c) when it is full and at MPI_Finalize (or at exit
 * without it).
 */
#include "config.h"

#include "trace/ct.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the first line of MPI_Get_library_version, quotes and controls made spaces */
static void library(char *out, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0;
    MPI_Get_library_version(v, &n);
    size_t i = 0;
    for (; v[i] != '\0' && v[i] != '\n' && i + 1 < len; i++) {
        out[i] = v[i] == '"' || v[i] == '\\' || (unsigned char)v[i] < 0x20 ? ' ' : v[i];
    }
    out[i] = '\0';
}

static void header(int provided)
{
    char host[256] = "", lib[256];
    gethostname(host, sizeof(host) - 1);
    for (char *p = host; *p != '\0'; p++) {
        *p = *p == '"' || *p == '\\' || (unsigned char)*p < 0x20 ? '_' : *p;
    }
    library(lib, sizeof(lib));
    fprintf(ct.out,
            "{\"collprof_trace\": 1, \"rank\": %d, \"size\": %d, \"host\": \"%s\", \"pid\": %ld, "
            "\"clock\": \"CLOCK_MONOTONIC\", \"reference\": \"MPI_Init: after two barriers on "
            "MPI_COMM_WORLD\", \"thread_level\": %d, \"buffer\": %zu, \"library\": \"%s\"}\n",
            ct.rank, ct.size, host, (long)getpid(), provided, ct.cap, lib);
}

static void stop(int finalized)
{
    ct_lock();
    if (ct.on) {
        ct_flush();
        fprintf(ct.out,
                "{\"end\": true, \"ops\": %llu, \"comms\": %zu, \"open_requests\": %zu, "
                "\"finalized\": %s}\n",
                (unsigned long long)ct.flushed, ct.ncomms, ct.req_of.n,
                finalized ? "true" : "false");
        if (fclose(ct.out) != 0) {
            fprintf(stderr, "collprof-trace: rank %d: %s: %s\n", ct.rank, ct.path, strerror(errno));
        }
        ct.out = NULL;
        ct.on = 0;
    }
    ct_unlock();
}

static void at_exit(void)
{
    stop(0);
}

void ct_stop(void)
{
    stop(1);
}

/* COLLPROF_TRACE_BUFFER: records in the buffer (80 bytes each) */
static size_t buffer_size(void)
{
    const char *e = getenv("COLLPROF_TRACE_BUFFER");
    char *end = NULL;
    long long n = e != NULL ? strtoll(e, &end, 10) : 0;
    if (e == NULL || end == e || *end != '\0' || n < 16 || n > (1LL << 28)) {
        if (e != NULL && ct.rank == 0) {
            fprintf(stderr,
                    "collprof-trace: COLLPROF_TRACE_BUFFER='%s' is not 16..%lld records: "
                    "65536\n",
                    e, 1LL << 28);
        }
        return 65536;
    }
    return (size_t)n;
}

static int open_file(const char *dir)
{
    snprintf(ct.path, sizeof(ct.path), "%s/collprof-trace.%d.jsonl", dir, ct.rank);
    int fd = open(ct.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        fprintf(stderr, "collprof-trace: rank %d: %s: %s: not recording\n", ct.rank, ct.path,
                strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    ct.out = f;
    return 0;
}

void ct_start(int provided)
{
    const char *dir = getenv("COLLPROF_TRACE_DIR");
    if (dir == NULL || dir[0] == '\0' || ct.out != NULL) {
        return;
    }
    PMPI_Comm_rank(MPI_COMM_WORLD, &ct.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &ct.size);
    ct.mt = provided == MPI_THREAD_MULTIPLE;
    ct.cap = buffer_size();
    ct.ring = malloc(ct.cap * sizeof(*ct.ring));
    ct.scap = 1 << 16;
    ct.splits = malloc(ct.scap * sizeof(*ct.splits));
    int ok = ct.ring != NULL && ct.splits != NULL && open_file(dir) == 0;
    if (ok) {
        memset(ct.ring, 0, ct.cap * sizeof(*ct.ring)); /* no page faults while recording */
    } else if (ct.ring == NULL || ct.splits == NULL) {
        fprintf(stderr, "collprof-trace: rank %d: out of memory: not recording\n", ct.rank);
    }
    PMPI_Comm_group(MPI_COMM_WORLD, &ct.world_group);
    ct_types_init();
    ct.last_comm = -1;
    /* the common reference: every rank leaves the second barrier within the barrier's skew */
    PMPI_Barrier(MPI_COMM_WORLD);
    PMPI_Barrier(MPI_COMM_WORLD);
    ct.t0 = ct_now();
    if (!ok) {
        return;
    }
    header(provided);
    ct.on = 1;
    ct_comm_index(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    atexit(at_exit);
}

CT_API int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int provided = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&provided);
        ct_start(provided);
    }
    return rc;
}

CT_API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        ct_start(*provided);
    }
    return rc;
}

CT_API int MPI_Finalize(void)
{
    ct_stop();
    return PMPI_Finalize();
}
