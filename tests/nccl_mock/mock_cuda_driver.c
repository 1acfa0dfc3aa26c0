/*
 * The stand-in's CUDA driver side (beside mock_cuda_nccl.c, linked into the test copy of the
 * NCCL plugin): what the plugin's device compute (nccl_compute.c, collprof --replay --gaps
 * compute) reaches through the runtime's cudaGetDriverEntryPointByVersion: cuModuleLoadData,
 * cuModuleGetFunction, cuLaunchKernel, cuModuleUnload, cuGetErrorString; and the runtime calls
 * it adds (cudaDeviceGetAttribute: 4 multiprocessors, 1 MiB of L2; cudaMemsetAsync).
 *
 * The module must be PTX text with a .version, a .target and the .entry asked for; a launch
 * must name a function of a loaded module, a grid and a block of sensible sizes, no shared
 * memory, a stream, and parameters (buf, n, ns, end) whose buffer holds n floats and then the
 * u64 at end, set to all ones (where the kernel's blocks agree on its end by an atomic min).  It
 * "runs": one step of its arithmetic (x = 0.5 x + 1, four times) on the first 4096 floats, then a
 * sleep of ns (the stream runs everything at submission, so the event after it is ns later).
 *
 *   CPMOCK_KERNEL_LOG=FILE  one line per module load and per launch, appended (every rank):
 *                           "load PID BYTES", "launch PID grid G block B stream S n N ns NS
 *                           buf ok|short|null|stale-end"
 *   CPMOCK_PTX_OUT=FILE     the PTX image of the last load (for ptxas, where there is one)
 *   CPMOCK_PTX=nojit        cuModuleLoadData fails (CUDA_ERROR_JIT_COMPILER_NOT_FOUND, as
 *                           under CUDA_DISABLE_PTX_JIT=1); =nosym: the runtime gives no
 *                           cuModuleLoadData; =launch: cuLaunchKernel fails
 *                           (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
 */
#include "config.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

#define MOCK_SMS 4
#define MOCK_L2  (1 << 20)

struct CUmod_st {
    char *image;
    struct CUfunc_st *fns; /* its functions: freed with it, as CUDA's are */
};
struct CUfunc_st {
    struct CUmod_st *mod;
    struct CUfunc_st *next;
    char name[64];
};

static unsigned long g_kernel_loads, g_kernel_launches;

/* module loads and launches so far (exported from the test plugin) */
__attribute__((visibility("default"))) void cpmock_kernels(unsigned long out[2]);
void cpmock_kernels(unsigned long out[2])
{
    out[0] = g_kernel_loads;
    out[1] = g_kernel_launches;
}

static int mock_ptx(const char *what)
{
    const char *e = getenv("CPMOCK_PTX");
    return e != NULL && !strcmp(e, what);
}

static void klog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void klog(const char *fmt, ...)
{
    const char *path = getenv("CPMOCK_KERNEL_LOG");
    FILE *f = path != NULL ? fopen(path, "a") : NULL;
    if (f == NULL) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static CUresult mock_load(CUmodule *m, const void *image)
{
    const char *s = image, *out = getenv("CPMOCK_PTX_OUT");
    if (mock_ptx("nojit")) {
        return CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
    }
    if (s == NULL || strncmp(s, ".version ", 9) != 0 || strstr(s, "\n.target ") == NULL ||
        strstr(s, ".entry ") == NULL) {
        return CUDA_ERROR_INVALID_PTX;
    }
    FILE *f = out != NULL ? fopen(out, "w") : NULL;
    if (f != NULL) {
        fputs(s, f);
        fclose(f);
    }
    *m = calloc(1, sizeof(**m));
    (*m)->image = strdup(s);
    g_kernel_loads++;
    klog("load %d %zu\n", (int)getpid(), strlen(s));
    return CUDA_SUCCESS;
}

static CUresult mock_getfn(CUfunction *f, CUmodule m, const char *name)
{
    char entry[96];
    snprintf(entry, sizeof(entry), ".entry %s(", name);
    if (m == NULL || strstr(m->image, entry) == NULL) {
        return CUDA_ERROR_NOT_FOUND;
    }
    *f = calloc(1, sizeof(**f));
    (*f)->mod = m;
    (*f)->next = m->fns;
    m->fns = *f;
    snprintf((*f)->name, sizeof((*f)->name), "%s", name);
    return CUDA_SUCCESS;
}

static CUresult mock_unload(CUmodule m)
{
    while (m->fns != NULL) {
        struct CUfunc_st *f = m->fns;
        m->fns = f->next;
        free(f);
    }
    free(m->image);
    free(m);
    return CUDA_SUCCESS;
}

/* the kernel's work: one step on the first floats, then ns of device time */
static void mock_busy(float *buf, unsigned long long n, unsigned long long ns)
{
    for (unsigned long long i = 0; i < n && i < 4096; i++) {
        for (int k = 0; k < 4; k++) {
            buf[i] = buf[i] * 0.5f + 1.0f;
        }
    }
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

static CUresult mock_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                            void **extra)
{
    if (mock_ptx("launch")) {
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    }
    if (f == NULL || f->mod == NULL || strcmp(f->name, "cp_busy") != 0 || params == NULL ||
        extra != NULL || gx == 0 || gy != 1 || gz != 1 || bx == 0 || bx > 1024 || by != 1 ||
        bz != 1 || shmem != 0 || s == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUdeviceptr p = *(CUdeviceptr *)params[0], e = *(CUdeviceptr *)params[3];
    unsigned long long n = *(unsigned long long *)params[1], ns = *(unsigned long long *)params[2];
    float *buf = (float *)(uintptr_t)p;
    uint64_t *end = (uint64_t *)(uintptr_t)e;
    size_t have = buf != NULL ? malloc_usable_size(buf) : 0;
    const char *ok = "ok";
    if (buf == NULL || end == NULL) {
        ok = "null";
    } else if (have < n * sizeof(float) || e < p + n * sizeof(float) ||
               e + sizeof(uint64_t) > p + have) {
        ok = "short";
    } else if (*end != UINT64_MAX) {
        ok = "stale-end"; /* not reset since the last launch: the blocks would stop at once */
    }
    g_kernel_launches++;
    klog("launch %d grid %u block %u stream %p n %llu ns %llu buf %s\n", (int)getpid(), gx, bx,
         (void *)s, n, ns, ok);
    if (strcmp(ok, "ok") != 0) {
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    *end = ns; /* (the first block's start, 0 here, plus ns) */
    mock_busy(buf, n, ns);
    return CUDA_SUCCESS;
}

static CUresult mock_errstr(CUresult r, const char **s)
{
    *s = r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND ? "PTX JIT compiler library not found (mock)"
         : r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
             ? "too many resources requested for launch (mock)"
             : "mock CUDA driver error";
    return CUDA_SUCCESS;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int ver,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *q)
{
    static const struct {
        const char *name;
        void *fn;
    } syms[] = {{"cuModuleLoadData", (void *)mock_load},
                {"cuModuleGetFunction", (void *)mock_getfn},
                {"cuLaunchKernel", (void *)mock_launch},
                {"cuModuleUnload", (void *)mock_unload},
                {"cuGetErrorString", (void *)mock_errstr}};
    (void)flags;
    *fn = NULL;
    *q = cudaDriverEntryPointSymbolNotFound;
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        if (!strcmp(symbol, syms[i].name) && ver >= 4000 &&
            !(mock_ptx("nosym") && !strcmp(symbol, "cuModuleLoadData"))) {
            *fn = syms[i].fn;
            *q = cudaDriverEntryPointSuccess;
        }
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int dev)
{
    (void)dev;
    *v = a == cudaDevAttrMultiProcessorCount ? MOCK_SMS : a == cudaDevAttrL2CacheSize ? MOCK_L2 : 0;
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s)
{
    (void)s;
    memset(p, v, bytes);
    return cudaSuccess;
}
