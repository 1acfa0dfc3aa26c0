/*
 * collprof plugin helpers: the set-up boilerplate every backend repeats,
 * written once.  Header-only and optional (a plugin still needs nothing but
 * <collprof/plugin.h>); C and C++.
 *
 *   COLLPROF_PLUGIN_ENTRY = {COLLPROF_BACKEND_HEAD("name", version, "description"),
 *                            .flags = ..., .query = ..., ...};
 *       exports collprof_backend_v1 (default visibility, C linkage) and
 *       fills the fields every entry struct starts with.
 *
 *   static COLLPROF_DEFINE_SET_ERROR(fn, ctx_t, field, global)
 *   static COLLPROF_DEFINE_LAST_ERROR(fn, ctx_t, field, global)
 *       the printf-style error setter and the last_error slot over a
 *       per-context buffer ctx->field and a buffer for calls without a
 *       context (query, a failed init): global.  Both are char arrays.
 *
 *   collprof_unsup_mem_alloc, collprof_unsup_mem_free, collprof_unsup_run
 *       "not supported" slots for backends that never get that far (test
 *       plugins), alongside plugin.h's collprof_no_* stubs.
 */
#ifndef COLLPROF_PLUGIN_UTIL_H
#define COLLPROF_PLUGIN_UTIL_H

#include <stdarg.h>
#include <stdio.h>

#include <collprof/plugin.h>

#ifdef __cplusplus
#define COLLPROF_EXTERN_C extern "C"
#else
#define COLLPROF_EXTERN_C
#endif

/** The definition of the one exported symbol; follow it with = {...}. */
#define COLLPROF_PLUGIN_ENTRY                                                                      \
    COLLPROF_EXTERN_C __attribute__((visibility("default")))                                       \
    const collprof_backend_t collprof_backend_v1

/** The designated initialisers every entry struct starts with. */
#define COLLPROF_BACKEND_HEAD(name_, version_, description_)                                       \
    .size = sizeof(collprof_backend_t), .abi_version = COLLPROF_PLUGIN_ABI_VERSION,                \
    .name = (name_), .version = (version_), .description = (description_)

/** vsnprintf into buf[len], always terminated. */
static inline void collprof_errbuf_vset(char *buf, size_t len, const char *fmt, va_list ap)
{
    if (buf != NULL && len > 0) {
        vsnprintf(buf, len, fmt, ap);
    }
}

/**
 * void fn(ctx_t *ctx, const char *fmt, ...): into ctx->field, or global
 * without ctx.  Write `static COLLPROF_DEFINE_SET_ERROR(...)` for a static one.
 */
#define COLLPROF_DEFINE_SET_ERROR(fn, ctx_t, field, global)                                        \
    __attribute__((format(printf, 2, 3))) void fn(ctx_t *ctx, const char *fmt, ...)                \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, fmt);                                                                         \
        if (ctx != NULL) {                                                                         \
            collprof_errbuf_vset(ctx->field, sizeof(ctx->field), fmt, ap);                         \
        } else {                                                                                   \
            collprof_errbuf_vset(global, sizeof(global), fmt, ap);                                 \
        }                                                                                          \
        va_end(ap);                                                                                \
    }

/** const char *fn(void *vctx): the last_error slot over the same buffers (static: as above). */
#define COLLPROF_DEFINE_LAST_ERROR(fn, ctx_t, field, global)                                       \
    const char *fn(void *vctx)                                                                     \
    {                                                                                              \
        const ctx_t *ctx = (const ctx_t *)vctx;                                                    \
        return ctx != NULL ? ctx->field : (global);                                                \
    }

static inline int collprof_unsup_mem_alloc(void *ctx, int memtype, size_t bytes, void **ptr)
{
    (void)ctx, (void)memtype, (void)bytes, (void)ptr;
    return COLLPROF_ERR_NOT_SUPPORTED;
}

static inline int collprof_unsup_mem_free(void *ctx, int memtype, void *ptr)
{
    (void)ctx, (void)memtype, (void)ptr;
    return COLLPROF_ERR_NOT_SUPPORTED;
}

static inline int collprof_unsup_run(void *ctx, const collprof_args_t *args)
{
    (void)ctx, (void)args;
    return COLLPROF_ERR_NOT_SUPPORTED;
}

static inline int collprof_ok_finalize(void *ctx)
{
    (void)ctx;
    return COLLPROF_OK;
}

#endif /* COLLPROF_PLUGIN_UTIL_H */
