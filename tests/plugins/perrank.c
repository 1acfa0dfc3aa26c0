/*
 * Test plugin "perrank": the self backend, but every rank describes a
 * device of its own ("fake:<rank>"), so that the ranks' provenance
 * differs: the result file must then say "per rank" in /results and keep
 * each rank's value in /cells/<cell>/provenance.  It is the self plugin's
 * code (self_backend.c included, self_ops.c linked), built again under another name with
 * another describe().
 */
#include <collprof/plugin.h>

static int perrank_describe(void *vctx, int memtype, collprof_provenance_t *out);

#define SELF_ENTRY_NAME     "perrank"
#define SELF_ENTRY_DESCRIBE perrank_describe
#include "../../plugins/self/self_backend.c"

static int perrank_describe(void *vctx, int memtype, collprof_provenance_t *out)
{
    const self_ctx_t *ctx = vctx;
    int rc = self_describe(vctx, memtype, out);
    if (rc == COLLPROF_OK) {
        snprintf(out->device, sizeof(out->device), "fake:%d", ctx->rank);
    }
    return rc;
}
