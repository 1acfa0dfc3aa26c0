/*
 * The ofi plugin on a machine without a GPU (or built without CUDA): query
 * must not offer device memory, and device allocations and copies must be
 * refused cleanly after a real one-rank init on shm.  Loads the plugin
 * from $COLLPROF_PLUGIN_PATH like collprof does; skips when it is absent.
 */
#include "config.h"

#include "oob_shm.h"
#include "tap.h"

#include <collprof/plugin.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *get_option(const char *key)
{
    return !strcmp(key, "ofi-provider") ? "shm" : NULL;
}
static void host_log(int level, const char *fmt, ...)
{
    va_list ap;
    (void)level;
    va_start(ap, fmt);
    fputs("# ", stdout);
    vprintf(fmt, ap);
    fputs("\n", stdout);
    va_end(ap);
}

int main(void)
{
    if (oob_shm_create(1) != 0) {
        return 1;
    }
    const char *dir = getenv("COLLPROF_PLUGIN_PATH");
    char path[4096];
    snprintf(path, sizeof(path), "%s/collprof_ofi.so", dir ? dir : ".");
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        printf("1..0 # SKIP no ofi plugin at %s\n", path);
        return 0; /* "1..0 # SKIP": the TAP driver counts it as skipped */
    }
    const collprof_backend_t *be = dlsym(dl, COLLPROF_BACKEND_SYMBOL);
    ok(be != NULL, "collprof_backend_v1 found");
    if (be == NULL) {
        return tap_done();
    }
    collprof_caps_t caps;
    memset(&caps, 0, sizeof(caps));
    caps.size = sizeof(caps);
    ok(be->query(NULL, &caps) == COLLPROF_OK, "query");
    ok(!(caps.memtypes & COLLPROF_BIT(COLLPROF_MEM_DEVICE)),
       "no GPU here: device memory is not offered (memtypes 0x%x)", caps.memtypes);
    ok(caps.link_gbps >= 0, "link_gbps written (%g)", caps.link_gbps);

    /* an old core's smaller caps: the appended field is left alone */
    struct {
        collprof_caps_t c;
    } old;
    memset(&old, 0, sizeof(old));
    old.c.size = offsetof(collprof_caps_t, link_gbps);
    old.c.link_gbps = -7;
    ok(be->query(NULL, &old.c) == COLLPROF_OK && old.c.link_gbps == -7,
       "caps->size without link_gbps: the plugin does not write it");

    collprof_host_t host = oob_shm_host(host_log, get_option);
    void *ctx = NULL;
    int rc = be->init(&host, &ctx);
    ok(rc == COLLPROF_OK, "one-rank init on shm (%d: %s)", rc, rc ? be->last_error(NULL) : "ok");
    if (rc == COLLPROF_OK) {
        void *p = NULL;
        rc = be->mem_alloc(ctx, COLLPROF_MEM_DEVICE, 4096, &p);
        ok(rc == COLLPROF_ERR_NOT_SUPPORTED && p == NULL, "device allocation refused: %s",
           be->last_error(ctx));
        char host_buf[16] = {0};
        rc = be->mem_copy(ctx, COLLPROF_MEM_DEVICE, host_buf, host_buf, sizeof(host_buf), 1);
        ok(rc == COLLPROF_ERR_NOT_SUPPORTED, "device copy refused");
        rc = be->mem_alloc(ctx, COLLPROF_MEM_HOST, 4096, &p);
        ok(rc == COLLPROF_OK && p != NULL, "host allocation still works");
        if (rc == COLLPROF_OK) {
            be->mem_free(ctx, COLLPROF_MEM_HOST, p);
        }
        memset(&caps, 0, sizeof(caps));
        caps.size = sizeof(caps);
        ok(be->query(ctx, &caps) == COLLPROF_OK &&
               !(caps.memtypes & COLLPROF_BIT(COLLPROF_MEM_DEVICE)),
           "query with the context after init: still no device memory");
        ok(be->finalize(ctx) == COLLPROF_OK, "finalize");
    }
    return tap_done();
}
