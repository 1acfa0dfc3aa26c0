/*
 * `collprof-report import --trace FORMAT FILE... -o OUT.h5` (trace.h): the
 * files read by the format's reader into one trace file, published only when
 * complete; one error line and nothing written otherwise.
 */
#include "config.h"

#include "report/import/import.h"
#include "report/import/trace.h"
#include "report/report.h"

#include "base/util.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NCCL Inspector's files, and those of collprof's NCCL profiler plugin (its fields added). */
static int inspector(cp_trace_t *t, char **paths, int n)
{
    return cp_trace_inspector(t, paths, n, 0);
}

static int nccl_collprof(cp_trace_t *t, char **paths, int n)
{
    return cp_trace_inspector(t, paths, n, 1);
}

/* The formats and their readers. */
static const struct {
    const char *name;
    int (*read)(cp_trace_t *, char **, int);
} formats[] = {{"param", cp_trace_param},
               {"nccl-inspector", inspector},
               {"nccl-collprof", nccl_collprof},
               {"flight-recorder", cp_trace_fr},
               {"collprof-trace", cp_trace_ctrace},
               {"pytorch-et", cp_trace_pytorch_et},
               {"chakra-json", cp_trace_chakra_json},
               {"chakra-et", cp_trace_chakra_et}};

int cp_trace_format_known(const char *format)
{
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        if (!strcmp(format, formats[i].name)) {
            return 0;
        }
    }
    return -1;
}

/* HDF5 allocates a chunk's buffers (1.4 MB of rows, their shuffled and deflated copies) for
 * every block it writes and frees them after: above glibc's mmap threshold, each is mapped and
 * unmapped again, and its pages faulted in anew (a tenth of the import's time).  Kept in the
 * heap instead, they are reused: a few MiB more, the same whatever the trace's size. */
static void reuse_large_blocks(void)
{
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, 16 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

int cp_import_trace(const char *format, char **paths, int n, const char *out, const char *command)
{
    reuse_large_blocks();
    cp_trace_t *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        cp_report_error("out of memory");
        return -1;
    }
    int rc = cp_trace_open(t, out);
    if (rc == 0) { /* errors name the file as given: the error line is made printable */
        rc = -1;
        for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
            rc = !strcmp(format, formats[i].name) ? formats[i].read(t, paths, n) : rc;
        }
    }
    uint64_t nops = t->nops + t->nbuf;
    if (rc == 0 && nops == 0) {
        t->shown = NULL;
        rc = cp_trace_fail(t, 0, "no operations in %s", n > 1 ? "the files" : "the file");
    }
    t->shown = n > 0 ? paths[n - 1] : NULL;
    size_t ngroups = t->ngroups;
    int world = 0;
    for (int r = 0; r < t->nseq; r++) {
        world = t->next_seq[r] > 0 ? r + 1 : world;
    }
    if (rc == 0) {
        rc = cp_trace_close(t, out, command);
    }
    if (rc != 0) {
        char safe[1100];
        cp_text_sanitize(t->err, safe, sizeof(safe));
        cp_report_error("%s", safe);
    } else {
        printf("%d file%s: %llu operations of %d ranks in %zu groups (%s) written to %s\n", n,
               n == 1 ? "" : "s", (unsigned long long)nops, world, ngroups, t->format, out);
        printf("note: %s\n", t->note);
    }
    cp_trace_free(t);
    free(t);
    return rc;
}
