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
 *   static COLLPROF_DEFINE_SET_ERROR(fn, ctx_t, field, global);
 *   static COLLPROF_DEFINE_LAST_ERROR(fn, ctx_t, field, global);
 *       the printf-style error setter and the last_error slot over a
 *       per-context buffer ctx->field and a buffer for calls without a
 *       context (query, a failed init): global.  Both are char arrays.
 *
 *   .flags = ..., COLLPROF_BACKEND_SLOTS(prefix, mem_copy, run_batch),
 *   COLLPROF_BACKEND_EXTRAS(options, noptions, study_ops, describe)
 *       the slots, named prefix_query, prefix_init, ... (see the macro),
 *       then the option table, the study ops and the describe slot.
 *
 *   collprof_check_caps(caps, err, len), collprof_check_layout(args, n, err, len)
 *       query()'s check of the caps struct;
 *       run()'s checks that follow from the op's facts (count, root, peers).
 *
 *   collprof_unsup_mem_alloc, collprof_unsup_mem_free, collprof_unsup_run
 *       "not supported" slots for backends that never get that far (test
 *       plugins), alongside plugin.h's collprof_no_* stubs.
 *
 *   collprof_env_default(name, kv)
 *       a variable the library reads from the environment, set unless the
 *       user set it, while collprof's threads run (see COLLPROF_ENV_SLOT).
 */
#ifndef COLLPROF_PLUGIN_UTIL_H
#define COLLPROF_PLUGIN_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/**
 * The slots, in declaration order (C++ needs it): those a backend names
 * after itself (p##_query, p##_init, p##_finalize, p##_select_variant,
 * p##_mem_alloc, p##_mem_free, p##_run, p##_last_error), and mem_copy and
 * run_batch, which are often a collprof_no_* stub.
 */
#define COLLPROF_BACKEND_SLOTS(p, mem_copy_, run_batch_)                                           \
    .query = p##_query, .init = p##_init, .finalize = p##_finalize,                                \
    .select_variant = p##_select_variant, .mem_alloc = p##_mem_alloc, .mem_free = p##_mem_free,    \
    .mem_copy = (mem_copy_), .run = p##_run, .run_batch = (run_batch_),                            \
    .last_error = p##_last_error

/**
 * The ABI 2 fields that follow the slots: the option table (a static array,
 * or NULL), the study ops and the describe slot.  Write
 * COLLPROF_BACKEND_EXTRAS(NULL, 0, 0, collprof_no_describe) for none.
 */
#define COLLPROF_BACKEND_EXTRAS(options_, noptions_, study_ops_, describe_)                        \
    .options = (options_), .noptions = (noptions_), .study_ops = (study_ops_),                     \
    .describe = (describe_)

/** The number of rows of a static array (an option table). */
#define COLLPROF_NROWS(a) (sizeof(a) / sizeof((a)[0]))

/** vsnprintf into buf[len], always terminated. */
static inline void collprof_errbuf_vset(char *buf, size_t len, const char *fmt, va_list ap)
{
    if (buf != NULL && len > 0) {
        vsnprintf(buf, len, fmt, ap);
    }
}

/**
 * void fn(ctx_t *ctx, const char *fmt, ...): into ctx->field, or global
 * without ctx.  Write `static COLLPROF_DEFINE_SET_ERROR(...);` for a static one (the
 * expansion ends with a redeclaration, so it takes a semicolon like any declaration).
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
    }                                                                                              \
    void fn(ctx_t *ctx, const char *fmt, ...)

/** const char *fn(void *vctx): the last_error slot over the same buffers (static: as above). */
#define COLLPROF_DEFINE_LAST_ERROR(fn, ctx_t, field, global)                                       \
    const char *fn(void *vctx)                                                                     \
    {                                                                                              \
        const ctx_t *ctx = (const ctx_t *)vctx;                                                    \
        return ctx != NULL ? ctx->field : (global);                                                \
    }                                                                                              \
    const char *fn(void *vctx)

/**
 * query()'s check of the caller's struct: NULL (COLLPROF_ERR_INVALID) or
 * smaller than ABI 1's (COLLPROF_ERR_ABI), with the message in err[len];
 * else COLLPROF_OK.
 */
static inline int collprof_check_caps(const collprof_caps_t *caps, char *err, size_t len)
{
    if (caps == NULL) {
        snprintf(err, len, "query: caps is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if (caps->size < COLLPROF_CAPS_SIZE_V1) {
        snprintf(err, len, "query: caps->size %zu is smaller than ABI 1's %zu", caps->size,
                 (size_t)COLLPROF_CAPS_SIZE_V1);
        return COLLPROF_ERR_ABI;
    }
    return COLLPROF_OK;
}

/**
 * The checks of a run()'s arguments that follow from the op's facts alone
 * (vocab.h): a split count divisible by the n ranks, a root in 0..n-1, the
 * sendrecv peers in 0..n-1.  COLLPROF_ERR_INVALID with the message in
 * err[len], else COLLPROF_OK.  op must be a valid id.
 */
static inline int collprof_check_layout(const collprof_args_t *a, int n, char *err, size_t len)
{
    const unsigned flags = collprof_op_info(a->op)->flags;
    /* a reducescatter with recvcounts (caps->var_ops): per-rank blocks, count their sum */
    int blocks = a->op == COLLPROF_OP_REDUCESCATTER && a->recvcounts != NULL;
    if ((flags & COLLPROF_OPF_SPLIT) && !blocks && a->count % (size_t)n != 0) {
        snprintf(err, len, "run: %s count %zu is not a multiple of %d ranks",
                 collprof_op_name(a->op), a->count, n);
        return COLLPROF_ERR_INVALID;
    }
    if ((flags & COLLPROF_OPF_ROOTED) && (a->root < 0 || a->root >= n)) {
        snprintf(err, len, "run: root %d outside 0..%d", a->root, n - 1);
        return COLLPROF_ERR_INVALID;
    }
    if ((flags & COLLPROF_OPF_VARIABLE) && (a->recvcounts == NULL || a->rdispls == NULL)) {
        snprintf(err, len, "run: %s counts or displacements missing", collprof_op_name(a->op));
        return COLLPROF_ERR_INVALID;
    }
    if (a->op == COLLPROF_OP_SENDRECV &&
        (a->peer_send < 0 || a->peer_send >= n || a->peer_recv < 0 || a->peer_recv >= n)) {
        snprintf(err, len, "run: sendrecv peers %d/%d outside 0..%d", a->peer_send, a->peer_recv,
                 n - 1);
        return COLLPROF_ERR_INVALID;
    }
    return COLLPROF_OK;
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

/**
 * The spare environment entries (COLLPROF_ENV_SLOT, <collprof/plugin.h>):
 * collprof_env_find gives the index in environ of the entry kv (by address) when kv is not
 * NULL, else of NAME=... when set, else of the first spare entry; -1 for none.
 * collprof_env_store puts kv at index i with one atomic pointer store, seen whole by a getenv
 * in another thread; kv must live as long as it stays there.
 */
static inline int collprof_env_find(const char *kv, const char *name)
{
    extern char **environ;
    size_t nl = name != NULL ? strlen(name) : 0, sl = sizeof(COLLPROF_ENV_SLOT) - 1;
    int spare = -1;
    for (int i = 0; environ != NULL && environ[i] != NULL; i++) {
        const char *e = environ[i];
        if (kv != NULL && e == kv) {
            return i;
        }
        if (name != NULL && !strncmp(e, name, nl) && e[nl] == '=') {
            return i;
        }
        if (spare < 0 && !strncmp(e, COLLPROF_ENV_SLOT, sl) && e[sl] == '=') {
            spare = i;
        }
    }
    return kv != NULL ? -1 : spare;
}

static inline void collprof_env_store(int i, const char *kv)
{
    extern char **environ;
    __atomic_store_n(&environ[i], (char *)kv, __ATOMIC_RELEASE);
}

/**
 * NAME=value into the environment unless NAME is set (a user's value is kept), safe while
 * other threads call getenv: into a spare entry with collprof_env_store, so that the
 * environment keeps its shape; setenv where none is left.  kv is "NAME=value" and must live
 * as long as the process (a string literal); name is NAME.  0, or setenv's -1.
 */
static inline int collprof_env_default(const char *name, const char *kv)
{
    extern char **environ;
    size_t sl = sizeof(COLLPROF_ENV_SLOT) - 1;
    int at = collprof_env_find(NULL, name);
    if (at >= 0 && !(strncmp(environ[at], COLLPROF_ENV_SLOT, sl) == 0 && environ[at][sl] == '=')) {
        return 0; /* NAME is set */
    }
    if (at >= 0) {
        collprof_env_store(at, kv);
        return 0;
    }
    return setenv(name, kv + strlen(name) + 1, 0);
}

/**
 * Remove the /dev/shm entries that processes of this user left behind when
 * they died without unlinking them (SIGKILL): every regular file of this
 * user whose name pid_of() maps to a pid > 0 that no longer exists (a pid in
 * use again keeps its entry: a later sweep gets it).  Each removal is logged
 * at INFO through h (when it has a log) as "WHAT: removing PATH".
 */
static inline void collprof_shm_sweep(long (*pid_of)(const char *name), const collprof_host_t *h,
                                      const char *what)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        long pid = pid_of(e->d_name);
        char path[PATH_MAX];
        struct stat st;
        if (pid <= 0 ||
            (size_t)snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name) >= sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
            continue;
        }
        if (h != NULL && h->log != NULL) {
            h->log(COLLPROF_LOG_INFO, "%s: removing %s, left by process %ld that is gone", what,
                   path, pid);
        }
        shm_unlink(path + strlen("/dev/shm"));
    }
    if (d != NULL) {
        closedir(d);
    }
}

#endif /* COLLPROF_PLUGIN_UTIL_H */
