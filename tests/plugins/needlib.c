/*
 * Test plugin whose own library dependency (libcpgone) cannot be found at
 * run time: the loader must report the dynamic linker's reason and skip
 * it while the other backends run.
 */
#include "config.h"

#include "stub_plugin.h"

int cp_gone_answer(void);

static int nl_query(void *ctx, collprof_caps_t *caps)
{
    (void)ctx;
    return stub_query(caps, cp_gone_answer() == 42 ? "libcpgone (test plugin)" : "?", NULL, 0);
}

static const char *nl_last_error(void *ctx)
{
    (void)ctx;
    return "needlib test plugin";
}

STUB_PLUGIN("needlib", "test plugin whose library is missing", nl_query, nl_last_error);
