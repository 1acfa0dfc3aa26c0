/* libFuzzer harness: the traffic-matrix file and the alltoallv, allgatherv, gatherv and
 * scatterv matrices it makes. */
#include "config.h"

#include "core/imbalance.h"
#include "fuzz_files.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[256], spec[300], err[1024];
    if (size > 65536 || fuzz_tmpfile(data, size, path, sizeof(path)) != 0) {
        return 0;
    }
    snprintf(spec, sizeof(spec), "file:%s", path);
    cp_imbalance_t imb;
    if (cp_imbalance_parse(spec, &imb, err, sizeof(err)) == 0) {
        int n = imb.file_n;
        if (n <= 64 && cp_imbalance_validate(&imb, n, err, sizeof(err)) == 0) {
            uint64_t *m = calloc((size_t)n * (size_t)n, sizeof(uint64_t));
            if (m != NULL) {
                /* the per-rank counts' matrices first; the matrix is refilled below */
                cp_imbalance_op_matrix(COLLPROF_OP_ALLGATHERV, &imb, n, 1u << 20, 0, m);
                cp_imbalance_op_matrix(COLLPROF_OP_GATHERV, &imb, n, 1u << 20, n - 1, m);
                cp_imbalance_op_matrix(COLLPROF_OP_SCATTERV, &imb, n, 1u << 20, n / 2, m);
                cp_imbalance_matrix(&imb, n, 1u << 20, m);
                cp_a2av_t a;
                if (cp_a2av_build(&a, m, n, 0) == 0) {
                    cp_a2av_free(&a); /* frees m */
                } else {
                    free(m);
                }
            }
        }
        cp_imbalance_free(&imb);
    }
    unlink(path);
    return 0;
}
