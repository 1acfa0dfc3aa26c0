/* libFuzzer harness: the traffic-matrix file and the alltoallv, allgatherv, gatherv and
 * scatterv traffic it makes (every rank's view). */
#include "config.h"

#include "colls/imbalance.h"
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
            static const collprof_op_t ops[] = {COLLPROF_OP_ALLTOALLV, COLLPROF_OP_ALLGATHERV,
                                                COLLPROF_OP_GATHERV, COLLPROF_OP_SCATTERV};
            for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
                for (int r = 0; r < n; r++) {
                    cp_a2av_t a;
                    if (cp_a2av_build(&a, ops[o], &imb, n, 1u << 20, n / 2, r) == 0) {
                        cp_a2av_free(&a);
                    }
                }
            }
        }
        cp_imbalance_free(&imb);
    }
    unlink(path);
    return 0;
}
