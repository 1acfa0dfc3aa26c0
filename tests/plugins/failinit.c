/*
 * Test plugin: loads and answers query(), but init() fails.  The core must
 * report it, skip its cells, and let the other backends run.
 */
#include "config.h"

#include "stub_plugin.h"

static const collprof_variant_t variants[] = {
    {"failinit_variant", "a variant of the failing test backend",
     COLLPROF_BIT(COLLPROF_OP_ALLREDUCE)},
};

static int fi_query(void *ctx, collprof_caps_t *caps)
{
    (void)ctx;
    return stub_query(caps, "none (test plugin)", variants, 1);
}

static const char *fi_last_error(void *ctx)
{
    (void)ctx;
    return "simulated initialisation failure (test plugin)";
}

STUB_PLUGIN("failinit", "test plugin whose initialisation always fails", fi_query, fi_last_error);
