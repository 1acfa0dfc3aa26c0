/*
 * Test plugin whose own library dependency (libcpgone) cannot be found at
 * run time: the loader must report the dynamic linker's reason and skip
 * it while the other backends run.
 */
#include "config.h"

#include <collprof/plugin_util.h>

int cp_gone_answer(void);

static int nl_query(collprof_caps_t *caps)
{
    caps->library_version = cp_gone_answer() == 42 ? "libcpgone (test plugin)" : "?";
    caps->ops = COLLPROF_BIT(COLLPROF_OP_ALLREDUCE);
    caps->dtypes = COLLPROF_BIT(COLLPROF_DTYPE_FLOAT32);
    caps->redops = COLLPROF_BIT(COLLPROF_REDOP_SUM);
    caps->memtypes = COLLPROF_BIT(COLLPROF_MEM_HOST);
    caps->variants = NULL;
    caps->nvariants = 0;
    return COLLPROF_OK;
}

static int nl_init(const collprof_host_t *host, void **ctx)
{
    (void)host;
    *ctx = NULL;
    return COLLPROF_ERR_BACKEND;
}

static const char *nl_last_error(void *ctx)
{
    (void)ctx;
    return "needlib test plugin";
}

COLLPROF_PLUGIN_ENTRY = {
    COLLPROF_BACKEND_HEAD("needlib", "0", "test plugin whose library is missing"),
    .flags = 0,
    .query = nl_query,
    .init = nl_init,
    .finalize = collprof_ok_finalize,
    .select_variant = collprof_no_select_variant,
    .mem_alloc = collprof_unsup_mem_alloc,
    .mem_free = collprof_unsup_mem_free,
    .mem_copy = collprof_no_mem_copy,
    .run = collprof_unsup_run,
    .run_batch = collprof_no_run_batch,
    .last_error = nl_last_error,
};
