/*
 * Test plugin "perrank": the self backend, but every rank describes a
 * device of its own ("fake:<rank>"), so that the ranks' provenance
 * differs: the result file must then say "per rank" in /results and keep
 * each rank's value in /cells/<cell>/provenance.  It reuses the self
 * plugin's code by including it (its own entry is renamed, not used).
 */
#define collprof_backend_v1 cp_test_self_entry
#include "../../plugins/self/self_backend.c"
#undef collprof_backend_v1

static int perrank_describe(void *vctx, int memtype, collprof_provenance_t *out)
{
    const self_ctx_t *ctx = vctx;
    int rc = self_describe(vctx, memtype, out);
    if (rc == COLLPROF_OK) {
        snprintf(out->device, sizeof(out->device), "fake:%d", ctx->rank);
    }
    return rc;
}

__attribute__((visibility("default"))) const collprof_backend_t collprof_backend_v1 = {
    .size = sizeof(collprof_backend_t),
    .abi_version = COLLPROF_PLUGIN_ABI_VERSION,
    .name = "perrank",
    .version = PACKAGE_VERSION,
    .description = "test: the self backend with a different device on every rank",
    .flags = COLLPROF_BACKEND_ON_REQUEST,
    .query = self_query,
    .init = self_init,
    .finalize = self_finalize,
    .select_variant = collprof_no_select_variant,
    .mem_alloc = self_mem_alloc,
    .mem_free = self_mem_free,
    .mem_copy = collprof_no_mem_copy,
    .run = self_run,
    .run_batch = collprof_no_run_batch,
    .last_error = self_last_error,
    .options = self_options,
    .noptions = sizeof(self_options) / sizeof(self_options[0]),
    .study_ops = 0,
    .describe = perrank_describe,
};
