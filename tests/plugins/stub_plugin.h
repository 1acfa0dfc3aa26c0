/*
 * What the test plugins whose init fails have in common: they offer one
 * allreduce of float32 sums on host memory, their init() fails, and every
 * other slot is a "not supported" stub.  Each names itself with
 * STUB_PLUGIN(name, description, query, last_error).
 */
#ifndef CP_TEST_STUB_PLUGIN_H
#define CP_TEST_STUB_PLUGIN_H

#include <collprof/plugin_util.h>

/* query() of a stub: library_version and variants are the plugin's own */
static inline int stub_query(collprof_caps_t *caps, const char *library_version,
                             const collprof_variant_t *variants, size_t nvariants)
{
    caps->library_version = library_version;
    caps->ops = COLLPROF_BIT(COLLPROF_OP_ALLREDUCE);
    caps->dtypes = COLLPROF_BIT(COLLPROF_DTYPE_FLOAT32);
    caps->redops = COLLPROF_BIT(COLLPROF_REDOP_SUM);
    caps->memtypes = COLLPROF_BIT(COLLPROF_MEM_HOST);
    caps->variants = variants;
    caps->nvariants = nvariants;
    return COLLPROF_OK;
}

static inline int stub_init(const collprof_host_t *host, void **ctx)
{
    (void)host;
    (void)ctx;
    return COLLPROF_ERR_BACKEND;
}

#define STUB_PLUGIN(name_, description_, query_, last_error_)                                      \
    COLLPROF_PLUGIN_ENTRY = {                                                                      \
        COLLPROF_BACKEND_HEAD(name_, "0", description_),                                           \
        .flags = 0,                                                                                \
        .query = query_,                                                                           \
        .init = stub_init,                                                                         \
        .finalize = collprof_ok_finalize,                                                          \
        .select_variant = collprof_no_select_variant,                                              \
        .mem_alloc = collprof_unsup_mem_alloc,                                                     \
        .mem_free = collprof_unsup_mem_free,                                                       \
        .mem_copy = collprof_no_mem_copy,                                                          \
        .run = collprof_unsup_run,                                                                 \
        .run_batch = collprof_no_run_batch,                                                        \
        .last_error = last_error_,                                                                 \
        COLLPROF_BACKEND_EXTRAS(NULL, 0, 0, collprof_no_describe),                                 \
    }

#endif /* CP_TEST_STUB_PLUGIN_H */
