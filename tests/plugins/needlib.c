/*
 * Test plugin whose own library dependency (libcpgone) cannot be found at
 * run time: the loader must report the dynamic linker's reason and skip
 * it while the other backends run.
 */
#include "config.h"

#include <collprof/plugin.h>

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

static int nl_finalize(void *ctx)
{
    (void)ctx;
    return COLLPROF_OK;
}

static int nl_mem_alloc(void *ctx, int memtype, size_t bytes, void **ptr)
{
    (void)ctx, (void)memtype, (void)bytes, (void)ptr;
    return COLLPROF_ERR_NOT_SUPPORTED;
}

static int nl_mem_free(void *ctx, int memtype, void *ptr)
{
    (void)ctx, (void)memtype, (void)ptr;
    return COLLPROF_OK;
}

static int nl_run(void *ctx, const collprof_args_t *args)
{
    (void)ctx, (void)args;
    return COLLPROF_ERR_NOT_SUPPORTED;
}

static const char *nl_last_error(void *ctx)
{
    (void)ctx;
    return "needlib test plugin";
}

const collprof_backend_t collprof_backend_v1 = {
    .size = sizeof(collprof_backend_t),
    .abi_version = COLLPROF_PLUGIN_ABI_VERSION,
    .name = "needlib",
    .version = "0",
    .description = "test plugin whose library is missing",
    .flags = 0,
    .query = nl_query,
    .init = nl_init,
    .finalize = nl_finalize,
    .select_variant = collprof_no_select_variant,
    .mem_alloc = nl_mem_alloc,
    .mem_free = nl_mem_free,
    .mem_copy = collprof_no_mem_copy,
    .run = nl_run,
    .run_batch = collprof_no_run_batch,
    .last_error = nl_last_error,
};
