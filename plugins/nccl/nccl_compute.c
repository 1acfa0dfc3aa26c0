/*
 * The compute slot (collprof --replay --gaps compute, docs/replay.md "Gaps"): the gap before
 * an op filled on the device with work that contends with the collectives for its memory
 * bandwidth and its multiprocessors.
 *
 * A busy kernel, written in PTX below (no nvcc at build time): every thread of a grid that
 * fills every multiprocessor (NB_BUSY_PER_SM blocks of NB_BUSY_THREADS each) walks a device
 * buffer larger than the L2 cache (4 x L2, at least 64 MiB) with the grid's stride, reading,
 * multiplying-adding and writing each float, and looks at the device's %globaltimer every 16
 * elements, until the nanoseconds it was given have passed since its first block started.  It
 * is loaded once per process through the driver API (cuModuleLoadData, cuModuleGetFunction,
 * cuLaunchKernel), whose entry points come from the CUDA runtime
 * (cudaGetDriverEntryPointByVersion: the driver the runtime loaded, never a -lcuda), and
 * launched on a stream of its own beside the collectives' (an op posted before it progresses
 * meanwhile: they contend).  The call returns when a CUDA event after the kernel is done
 * (polled): a gap of us microseconds asks the kernel for us less the round trip of an empty
 * one (launch to end seen, timed at set-up).
 *
 * Where the module does not load (no JIT for PTX: CUDA_DISABLE_PTX_JIT=1, a driver without the
 * entry points), device-to-device cudaMemcpyAsync copies on the same stream, as many bytes as
 * the copy rate timed at set-up moves in the gap; a note says so.  Process-wide: every context
 * of a rank is on one device; freed with the last context (nb_compute_hold).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include "nccl_internal.h"

#define NB_BUSY_THREADS   256
#define NB_BUSY_PER_SM    8 /* 2048 threads: a multiprocessor full */
#define NB_BUSY_MIN_BYTES (64u << 20)
#define NB_BUSY_CAL       5   /* empty kernels timed at set-up: the median round trip */
#define NB_BUSY_END       256 /* after the buffer: the kernel's end (one u64) */

/* cp_busy(buf, n, ns, end): n floats at buf, each thread from its index by the grid's stride
 * (back to its index at n), x = 0.5 x + 1 four times per element, until ns have passed since
 * the first block started: thread 0 of each block takes its start plus ns to *end with an
 * atomic min (*end all ones before the launch) and keeps the smaller, so a block the SMs could
 * not hold at once (an NCCL kernel on some of them) stops with the others */
static const char nb_busy_ptx[] =
    ".version 6.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry cp_busy(.param .u64 p_buf, .param .u64 p_n, .param .u64 p_ns, .param .u64 "
    "p_end)\n"
    "{\n"
    "  .reg .pred %p<5>;\n"
    "  .reg .b32 %r<8>;\n"
    "  .reg .b64 %rd<16>;\n"
    "  .reg .f32 %f<4>;\n"
    "  .shared .align 8 .b64 s_end;\n"
    "  ld.param.u64 %rd1, [p_buf];\n"
    "  ld.param.u64 %rd2, [p_n];\n"
    "  ld.param.u64 %rd3, [p_ns];\n"
    "  ld.param.u64 %rd13, [p_end];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  cvta.to.global.u64 %rd13, %rd13;\n"
    "  mov.u32 %r1, %ctaid.x;\n"
    "  mov.u32 %r2, %ntid.x;\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  mov.u32 %r4, %nctaid.x;\n"
    "  setp.ne.u32 %p4, %r3, 0;\n"
    "  @%p4 bra SYNC;\n"
    "  mov.u64 %rd7, %globaltimer;\n"
    "  add.u64 %rd8, %rd7, %rd3;\n"
    "  atom.global.min.u64 %rd14, [%rd13], %rd8;\n" /* the first block's end, all blocks' */
    "  min.u64 %rd8, %rd8, %rd14;\n"
    "  st.shared.u64 [s_end], %rd8;\n"
    "SYNC:\n"
    "  bar.sync 0;\n" /* the end, thread 0's, to the block */
    "  ld.shared.u64 %rd8, [s_end];\n"
    "  mul.wide.u32 %rd4, %r1, %r2;\n"
    "  cvt.u64.u32 %rd5, %r3;\n"
    "  add.u64 %rd4, %rd4, %rd5;\n"    /* i: the thread's first element */
    "  mul.wide.u32 %rd6, %r4, %r2;\n" /* the grid's stride */
    "  mov.u64 %rd9, %rd4;\n"
    "  setp.ge.u64 %p1, %rd4, %rd2;\n"
    "  @%p1 bra DONE;\n"
    "PASS:\n"
    "  mov.u32 %r5, 16;\n"
    "STEP:\n"
    "  shl.b64 %rd10, %rd4, 2;\n"
    "  add.u64 %rd11, %rd1, %rd10;\n"
    "  ld.global.f32 %f1, [%rd11];\n"
    "  fma.rn.f32 %f1, %f1, 0f3F000000, 0f3F800000;\n"
    "  fma.rn.f32 %f1, %f1, 0f3F000000, 0f3F800000;\n"
    "  fma.rn.f32 %f1, %f1, 0f3F000000, 0f3F800000;\n"
    "  fma.rn.f32 %f1, %f1, 0f3F000000, 0f3F800000;\n"
    "  st.global.f32 [%rd11], %f1;\n"
    "  add.u64 %rd4, %rd4, %rd6;\n"
    "  setp.lt.u64 %p2, %rd4, %rd2;\n"
    "  selp.b64 %rd4, %rd4, %rd9, %p2;\n"
    "  sub.u32 %r5, %r5, 1;\n"
    "  setp.ne.u32 %p3, %r5, 0;\n"
    "  @%p3 bra STEP;\n"
    "  mov.u64 %rd12, %globaltimer;\n"
    "  setp.lt.u64 %p1, %rd12, %rd8;\n"
    "  @%p1 bra PASS;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

typedef CUresult (*nb_load_fn)(CUmodule *, const void *);
typedef CUresult (*nb_getfn_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*nb_launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*nb_unload_fn)(CUmodule);
typedef CUresult (*nb_errstr_fn)(CUresult, const char **);

enum { NB_DC_NONE = 0, NB_DC_KERNEL = 1, NB_DC_COPIES = 2, NB_DC_FAILED = -1 };

static struct {
    int state; /* NB_DC_* */
    int dev;
    char *buf; /* the device buffer the work reads and writes */
    size_t bytes;
    cudaStream_t s;
    cudaEvent_t ev[2];
    CUmodule mod;
    CUfunction fn;
    nb_launch_fn launch;
    nb_unload_fn unload;
    nb_errstr_fn errstr;
    unsigned blocks;
    double over_us;       /* the round trip of an empty kernel or copy: launch to end seen */
    double bpus;          /* copies: bytes copied per us */
    double cal_us;        /* the kernel: what 1000 us of it took on the device (cudaEvent) */
    char why[NB_ERR_LEN]; /* the kernel's absence, or the set-up's failure */
} D;

static int nb_live; /* contexts alive in the process (nb_compute_hold) */

/* a driver entry point through the runtime; 0, or -1 and why */
static int nb_driver_sym(const char *name, void **fn)
{
    int old = 0; /* the driver has it, in an older version only */
    *fn = NULL;
#if CUDART_VERSION >= 12000
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q);
#else
    cudaError_t e = cudaGetDriverEntryPoint(name, fn, cudaEnableDefault, &q);
#endif
    old = q == cudaDriverEntryPointVersionNotSufficent;
    *fn = q == cudaDriverEntryPointSuccess ? *fn : NULL;
#elif CUDART_VERSION >= 11030
    cudaError_t e = cudaGetDriverEntryPoint(name, fn, cudaEnableDefault);
#else
    cudaError_t e = cudaErrorNotSupported; /* (no cudaGetDriverEntryPoint before 11.3) */
#endif
    if (e == cudaSuccess && *fn != NULL) {
        return 0;
    }
    snprintf(D.why, sizeof(D.why), "the CUDA driver gives no %s (%s)", name,
             e != cudaSuccess ? cudaGetErrorString(e)
             : old            ? "driver too old"
                              : "not found");
    return -1;
}

/* the kernel's module and function; 0, or -1 and why (D.why) */
static int nb_busy_load(void)
{
    nb_load_fn load = NULL;
    nb_getfn_fn getfn = NULL;
    if (nb_driver_sym("cuGetErrorString", (void **)&D.errstr) != 0 ||
        nb_driver_sym("cuModuleLoadData", (void **)&load) != 0 ||
        nb_driver_sym("cuModuleGetFunction", (void **)&getfn) != 0 ||
        nb_driver_sym("cuLaunchKernel", (void **)&D.launch) != 0 ||
        nb_driver_sym("cuModuleUnload", (void **)&D.unload) != 0) {
        return -1;
    }
    const char *s = NULL;
    CUresult r = load(&D.mod, nb_busy_ptx);
    if (r != CUDA_SUCCESS) {
        D.mod = NULL;
        D.errstr(r, &s);
        snprintf(D.why, sizeof(D.why), "cuModuleLoadData of its PTX failed: %s (%d)",
                 s != NULL ? s : "?", (int)r);
        return -1;
    }
    if ((r = getfn(&D.fn, D.mod, "cp_busy")) != CUDA_SUCCESS) {
        D.errstr(r, &s);
        snprintf(D.why, sizeof(D.why), "cuModuleGetFunction cp_busy failed: %s (%d)",
                 s != NULL ? s : "?", (int)r);
        return -1;
    }
    return 0;
}

/* put us of work on D.s: the kernel, or copies of D.bpus bytes per us */
static int nb_dc_put(nb_ctx_t *ctx, double us)
{
    if (D.state == NB_DC_KERNEL) {
        CUdeviceptr p = (CUdeviceptr)(uintptr_t)D.buf, end = p + D.bytes;
        unsigned long long n = D.bytes / sizeof(float), ns = (unsigned long long)(us * 1e3);
        void *args[] = {&p, &n, &ns, &end};
        cudaError_t e = cudaMemsetAsync(D.buf + D.bytes, 0xff, sizeof(uint64_t), D.s);
        if (e != cudaSuccess) {
            return nb_cuda_fail(ctx, "cudaMemsetAsync (the busy kernel's end)", e);
        }
        CUresult r =
            D.launch(D.fn, D.blocks, 1, 1, NB_BUSY_THREADS, 1, 1, 0, (CUstream)D.s, args, NULL);
        if (r != CUDA_SUCCESS) {
            const char *s = NULL;
            D.errstr(r, &s);
            nb_set_error(ctx, "cuLaunchKernel (the busy kernel) failed: %s (%d)", s ? s : "?",
                         (int)r);
            return COLLPROF_ERR_BACKEND;
        }
        return COLLPROF_OK;
    }
    size_t half = D.bytes / 2;
    double left = us * D.bpus;
    for (int k = 0; left >= 1 || k == 0; k++) { /* at least one copy */
        size_t b = left < (double)half ? (size_t)left + 1 : half;
        cudaError_t e = cudaMemcpyAsync(D.buf + (k % 2 ? 0 : half), D.buf + (k % 2 ? half : 0), b,
                                        cudaMemcpyDeviceToDevice, D.s);
        if (e != cudaSuccess) {
            return nb_cuda_fail(ctx, "cudaMemcpyAsync (device compute)", e);
        }
        left -= (double)b;
    }
    return COLLPROF_OK;
}

/* wait until the event after D.s's work is done, under the timeout (us: the work's length) */
static int nb_dc_wait(nb_ctx_t *ctx, cudaEvent_t ev, double us)
{
    cudaError_t e = cudaEventRecord(ev, D.s);
    double t0 = nb_now();
    while (e == cudaSuccess && (e = cudaEventQuery(ev)) == cudaErrorNotReady) {
        if (nb_now() - t0 > ctx->timeout_s + us * 1e-6) {
            nb_set_error(ctx, "the device compute of %.0f us not done after %.0f s", us,
                         nb_now() - t0);
            return COLLPROF_ERR_TIMEOUT;
        }
    }
    return e == cudaSuccess ? COLLPROF_OK : nb_cuda_fail(ctx, "cudaEventQuery (device compute)", e);
}

/* us of work put and waited for; *host: the round trip seen on the host, us */
static int nb_dc_run(nb_ctx_t *ctx, double us, double *host)
{
    double t0 = nb_now();
    int rc = nb_dc_put(ctx, us);
    rc = rc == COLLPROF_OK ? nb_dc_wait(ctx, D.ev[1], us) : rc;
    *host = (nb_now() - t0) * 1e6;
    return rc;
}

static int nb_cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the round trip of empty work (the median of NB_BUSY_CAL), and what 1000 us of it took on
 * the device (the kernel), or the copy rate (copies) */
static int nb_dc_calibrate(nb_ctx_t *ctx)
{
    double rt[NB_BUSY_CAL] = {0}, h = 0;
    float ms = 0;
    int rc = COLLPROF_OK;
    if (D.state == NB_DC_COPIES) {      /* half the buffer, once to warm up, once timed */
        D.bpus = (double)(D.bytes / 2); /* (1 us: one copy of half) */
        for (int k = 0; k < 2 && rc == COLLPROF_OK; k++) {
            cudaEventRecord(D.ev[0], D.s);
            rc = nb_dc_run(ctx, 1, &h);
        }
        cudaEventElapsedTime(&ms, D.ev[0], D.ev[1]);
        D.bpus = (double)(D.bytes / 2) / (ms > 0 ? (double)ms * 1e3 : 1.0);
    }
    for (int k = 0; k < NB_BUSY_CAL && rc == COLLPROF_OK; k++) {
        rc = nb_dc_run(ctx, 0, &rt[k]);
    }
    qsort(rt, NB_BUSY_CAL, sizeof(double), nb_cmp_dbl);
    D.over_us = rt[NB_BUSY_CAL / 2];
    if (rc == COLLPROF_OK && D.state == NB_DC_KERNEL) {
        cudaEventRecord(D.ev[0], D.s);
        rc = nb_dc_run(ctx, 1000, &h);
        cudaEventElapsedTime(&ms, D.ev[0], D.ev[1]);
        D.cal_us = (double)ms * 1e3;
    }
    return rc;
}

/* the buffer (4 x L2, at least NB_BUSY_MIN_BYTES, zeroed), the stream, the events, the grid */
static int nb_dc_alloc(nb_ctx_t *ctx)
{
    int l2 = 0, sms = 0;
    cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->dev);
    if (e != cudaSuccess ||
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ctx->dev) != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaDeviceGetAttribute", e != cudaSuccess ? e : cudaErrorUnknown);
    }
    D.blocks = (unsigned)(sms > 0 ? sms : 1) * NB_BUSY_PER_SM;
    D.bytes = (size_t)l2 * 4 > NB_BUSY_MIN_BYTES ? (size_t)l2 * 4 : NB_BUSY_MIN_BYTES;
    D.dev = ctx->dev;
    if ((e = cudaMalloc((void **)&D.buf, D.bytes + NB_BUSY_END)) != cudaSuccess) {
        D.buf = NULL;
        return nb_cuda_fail(ctx, "cudaMalloc (the device compute's buffer)", e);
    }
    if ((e = cudaStreamCreateWithFlags(&D.s, cudaStreamNonBlocking)) != cudaSuccess) {
        D.s = NULL;
        return nb_cuda_fail(ctx, "cudaStreamCreateWithFlags", e);
    }
    for (int k = 0; k < 2; k++) {
        if ((e = cudaEventCreate(&D.ev[k])) != cudaSuccess) {
            D.ev[k] = NULL;
            return nb_cuda_fail(ctx, "cudaEventCreate", e);
        }
    }
    if ((e = cudaMemsetAsync(D.buf, 0, D.bytes, D.s)) != cudaSuccess ||
        (e = cudaStreamSynchronize(D.s)) != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaMemsetAsync", e);
    }
    return COLLPROF_OK;
}

/* what the set-up found, in the log (the kernel: rank 0; the copies: a note on each rank) */
static void nb_dc_log(const nb_ctx_t *ctx)
{
    const collprof_host_t *h = ctx->host;
    if (h->log == NULL) {
        return;
    }
    if (D.state == NB_DC_KERNEL && h->rank == 0) {
        h->log(COLLPROF_LOG_INFO,
               "nccl: --gaps compute: a busy kernel on device %d (PTX, %u blocks x %d threads "
               "over %zu MiB, beside the collectives' stream); 1000 us of it took %.1f us on "
               "the device, launching and seeing the end of an empty one %.1f us",
               D.dev, D.blocks, NB_BUSY_THREADS, D.bytes >> 20, D.cal_us, D.over_us);
    } else if (D.state == NB_DC_COPIES) {
        h->log(COLLPROF_LOG_WARN,
               "nccl: --gaps compute on rank %d: no busy kernel (%s): the gaps are "
               "device-to-device copies at %.1f GB/s (cudaMemcpyAsync over %zu MiB)",
               h->rank, D.why, D.bpus / 1e3, D.bytes >> 20);
    }
}

/* once per process: the buffer, the kernel (else the copies), the calibration */
static int nb_dc_setup(nb_ctx_t *ctx)
{
    int rc = nb_dc_alloc(ctx);
    if (rc == COLLPROF_OK) {
        D.state = nb_busy_load() == 0 ? NB_DC_KERNEL : NB_DC_COPIES;
        rc = nb_dc_calibrate(ctx);
    }
    if (rc != COLLPROF_OK) {
        snprintf(D.why, sizeof(D.why), "%s", ctx->err);
        D.state = NB_DC_FAILED;
        return rc;
    }
    nb_dc_log(ctx);
    return COLLPROF_OK;
}

int nb_compute(void *vctx, double us, const char **how)
{
    nb_ctx_t *ctx = vctx;
    int rc = COLLPROF_OK;
    if (D.state == NB_DC_NONE) {
        rc = nb_dc_setup(ctx);
    } else if (D.state == NB_DC_FAILED) {
        nb_set_error(ctx, "%s", D.why);
        return COLLPROF_ERR_BACKEND;
    } else if (D.dev != ctx->dev) {
        nb_set_error(ctx, "device compute: set up on device %d, asked on %d", D.dev, ctx->dev);
        return COLLPROF_ERR_INVALID;
    }
    double h = 0;
    if (rc == COLLPROF_OK && us > D.over_us) {
        rc = nb_dc_run(ctx, us - D.over_us, &h);
    }
    if (rc == COLLPROF_OK) {
        *how = D.state == NB_DC_KERNEL ? "busy kernel" : "device copies";
    }
    return rc;
}

void nb_compute_hold(int more)
{
    nb_live += more ? 1 : -1;
    if (nb_live > 0 || D.state == NB_DC_NONE) {
        return;
    }
    if (D.mod != NULL) {
        D.unload(D.mod);
    }
    for (int k = 0; k < 2; k++) {
        if (D.ev[k] != NULL) {
            cudaEventDestroy(D.ev[k]);
        }
    }
    if (D.s != NULL) {
        cudaStreamDestroy(D.s);
    }
    if (D.buf != NULL) {
        cudaFree(D.buf);
    }
    memset(&D, 0, sizeof(D));
}
