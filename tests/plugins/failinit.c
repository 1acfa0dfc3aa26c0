/*
 * Test plugin: loads and answers query(), but init() fails.  The core must
 * report it, skip its cells, and let the other backends run.
 */
#include "config.h"

#include <collprof/plugin_util.h>

static const collprof_variant_t variants[] = {
    {"failinit_variant", "a variant of the failing test backend",
     COLLPROF_BIT(COLLPROF_OP_ALLREDUCE)},
};

static int fi_query(collprof_caps_t *caps)
{
    caps->library_version = "none (test plugin)";
    caps->ops = COLLPROF_BIT(COLLPROF_OP_ALLREDUCE);
    caps->dtypes = COLLPROF_BIT(COLLPROF_DTYPE_FLOAT32);
    caps->redops = COLLPROF_BIT(COLLPROF_REDOP_SUM);
    caps->memtypes = COLLPROF_BIT(COLLPROF_MEM_HOST);
    caps->variants = variants;
    caps->nvariants = 1;
    return COLLPROF_OK;
}

static int fi_init(const collprof_host_t *host, void **ctx)
{
    (void)host;
    (void)ctx;
    return COLLPROF_ERR_BACKEND;
}

static const char *fi_last_error(void *ctx)
{
    (void)ctx;
    return "simulated initialisation failure (test plugin)";
}

COLLPROF_PLUGIN_ENTRY = {
    COLLPROF_BACKEND_HEAD("failinit", "0", "test plugin whose initialisation always fails"),
    .flags = 0,
    .query = fi_query,
    .init = fi_init,
    .finalize = collprof_ok_finalize,
    .select_variant = collprof_no_select_variant,
    .mem_alloc = collprof_unsup_mem_alloc,
    .mem_free = collprof_unsup_mem_free,
    .mem_copy = collprof_no_mem_copy,
    .run = collprof_unsup_run,
    .run_batch = collprof_no_run_batch,
    .last_error = fi_last_error,
};
