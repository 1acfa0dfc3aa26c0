/* NCCL backend logic that needs no GPU: variants, environment, versions,
 * NCCLX detection, status/dtype maps, send/recv schedules. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "base/util.h"
#include "nccl_plan.h"
#include "tap.h"

extern char **environ;

#define OPB(x) COLLPROF_BIT(COLLPROF_OP_##x)

static int count_prefix(const cp_nccl_plan_t *p, const char *prefix)
{
    int n = 0;
    for (size_t i = 0; i < p->npub; i++) {
        n += !strncmp(p->pub[i].name, prefix, strlen(prefix));
    }
    return n;
}

static int fake_syms(const char *sym, void *arg)
{
    const char **list = arg;
    for (int i = 0; list[i] != NULL; i++) {
        if (!strcmp(list[i], sym)) {
            return 1;
        }
    }
    return 0;
}

static void test_variants(void)
{
    static cp_nccl_plan_t p;
    unsigned all =
        CP_NCCL_HAVE_ALLTOALL | CP_NCCL_HAVE_GATHER | CP_NCCL_HAVE_SCATTER | CP_NCCL_HAVE_REGISTER;
    ok(cp_nccl_plan_build(&p, all) == 0, "plan builds");
    ok(p.npub == p.n - 1 && !strcmp(p.v[0].name, "default"), "default is implied, not published");
    int names_ok = 1, unique = 1;
    for (size_t i = 0; i < p.npub; i++) {
        const char *s = p.pub[i].name;
        names_ok &= s[0] != '\0' && strpbrk(s, " ,ABCDEFGHIJKLMNOPQRSTUVWXYZ") == NULL &&
                    p.pub[i].description[0] != '\0' && p.pub[i].ops != 0;
        for (size_t j = 0; j < i; j++) {
            unique &= strcmp(s, p.pub[j].name) != 0;
        }
    }
    ok(names_ok, "variant names lower case, no spaces or commas; descriptions and ops set");
    ok(unique, "variant names are unique");

    const cp_nccl_variant_t *v = cp_nccl_plan_find(&p, "tree-ll128");
    ok(v && v->ops == OPB(ALLREDUCE) && !strcmp(v->algo, "Tree") && !strcmp(v->proto, "LL128"),
       "tree-ll128: allreduce only, NCCL_ALGO=Tree NCCL_PROTO=LL128");
    v = cp_nccl_plan_find(&p, "pat-simple");
    ok(v && v->ops == (OPB(ALLGATHER) | OPB(REDUCESCATTER)), "pat: allgather and reducescatter");
    ok(cp_nccl_plan_find(&p, "pat-ll") == NULL && cp_nccl_plan_find(&p, "nvls-ll128") == NULL &&
           cp_nccl_plan_find(&p, "collnetchain-ll") == NULL,
       "pat, nvls, collnet: Simple protocol only");
    v = cp_nccl_plan_find(&p, "ring-ll");
    ok(v && (v->ops & OPB(BROADCAST)) && (v->ops & OPB(REDUCE)) && !(v->ops & OPB(ALLTOALL)),
       "ring: the five ring collectives, not alltoall");
    ok(cp_nccl_plan_find(&p, "nvlstree-simple") != NULL &&
           cp_nccl_plan_find(&p, "collnetdirect-simple") != NULL,
       "nvlstree and collnetdirect offered");
    ok(count_prefix(&p, "ring-") == 12, "ring x {ll,ll128,simple} x {'',+reg,+graph,+reg+graph}");
    v = cp_nccl_plan_find(&p, "ring-simple+reg+graph");
    ok(v && v->reg && v->graph && !strcmp(v->algo, "Ring"), "ring-simple+reg+graph modifiers");
    v = cp_nccl_plan_find(&p, "graph");
    ok(v && v->graph && !v->reg && v->algo == NULL && v->ops == p.v[0].ops,
       "graph: default algorithm under CUDA graph replay, every op");
    ok(cp_nccl_plan_find(&p, NULL) == &p.v[0] && cp_nccl_plan_find(&p, "") == &p.v[0] &&
           cp_nccl_plan_find(&p, "default") == &p.v[0],
       "NULL, empty and 'default' find the default");
    ok(cp_nccl_plan_find(&p, "ring") == NULL, "unknown name: NULL");
    ok(count_prefix(&p, "ctran-") == 0, "plain NCCL: no CTran variants");

    /* p2p vs native */
    v = cp_nccl_plan_find(&p, "p2p");
    const cp_nccl_variant_t *d = cp_nccl_plan_find(&p, NULL);
    ok(v && v->ops == (OPB(ALLTOALL) | OPB(GATHER) | OPB(SCATTER)),
       "p2p: alltoall, gather, scatter");
    ok(cp_nccl_uses_p2p(&p, v, COLLPROF_OP_ALLTOALL) &&
           !cp_nccl_uses_p2p(&p, d, COLLPROF_OP_ALLTOALL),
       "alltoall: p2p variant groups send/recv, default uses ncclAlltoAll");
    ok(cp_nccl_uses_p2p(&p, d, COLLPROF_OP_ALLTOALLV) &&
           cp_nccl_uses_p2p(&p, d, COLLPROF_OP_SENDRECV) &&
           cp_nccl_uses_p2p(&p, d, COLLPROF_OP_ALLGATHERV) &&
           cp_nccl_uses_p2p(&p, d, COLLPROF_OP_GATHERV) &&
           cp_nccl_uses_p2p(&p, d, COLLPROF_OP_SCATTERV) &&
           !cp_nccl_uses_p2p(&p, d, COLLPROF_OP_ALLREDUCE),
       "alltoallv, allgatherv, gatherv, scatterv and sendrecv always p2p, allreduce never");

    /* an older NCCL: no native alltoall/gather/scatter, no registration */
    static cp_nccl_plan_t old;
    cp_nccl_plan_build(&old, 0);
    d = cp_nccl_plan_find(&old, NULL);
    ok(cp_nccl_uses_p2p(&old, d, COLLPROF_OP_ALLTOALL) &&
           cp_nccl_uses_p2p(&old, d, COLLPROF_OP_GATHER),
       "without ncclAlltoAll/ncclGather the default is grouped send/recv");
    ok(cp_nccl_plan_find(&old, "reg") == NULL && cp_nccl_plan_find(&old, "ring-ll+reg") == NULL &&
           cp_nccl_plan_find(&old, "ring-ll+graph") != NULL,
       "without ncclCommRegister: no +reg variants");

    /* NCCLX */
    static cp_nccl_plan_t x;
    cp_nccl_plan_build(&x, all | CP_NCCL_IS_NCCLX);
    v = cp_nccl_plan_find(&x, "ctran-ctring");
    ok(v && (v->ops & OPB(ALLGATHER)) && v->nenv >= 2 &&
           !strcmp(v->env_name[0], "NCCL_CTRAN_ENABLE"),
       "NCCLX: ctran-ctring with NCCL_CTRAN_ENABLE=1");
    char key[CP_NCCL_KEY_LEN];
    cp_nccl_variant_key(v, key, sizeof(key));
    ok(strstr(key, "NCCL_ALLGATHER_ALGO=ctring") && strstr(key, "NCCL_REDUCESCATTER_ALGO=ctring"),
       "ctran-ctring sets NCCL_<OP>_ALGO for each of its ops (%s)", key);
    v = cp_nccl_plan_find(&x, "ctran-ctran");
    ok(v && v->ops == (OPB(ALLTOALL) | OPB(ALLTOALLV) | OPB(SENDRECV)),
       "ctran-ctran: alltoall(v), sendrecv");
    ok(x.npub < CP_NCCL_MAX_VARS, "table fits (%zu variants)", x.npub);

    /* communicator keys: modifiers share, algorithms do not */
    char k1[CP_NCCL_KEY_LEN], k2[CP_NCCL_KEY_LEN], k3[CP_NCCL_KEY_LEN];
    cp_nccl_variant_key(cp_nccl_plan_find(&p, "ring-ll"), k1, sizeof(k1));
    cp_nccl_variant_key(cp_nccl_plan_find(&p, "ring-ll+reg+graph"), k2, sizeof(k2));
    cp_nccl_variant_key(cp_nccl_plan_find(&p, "ring-ll128"), k3, sizeof(k3));
    ok(!strcmp(k1, "NCCL_ALGO=Ring;NCCL_PROTO=LL") && !strcmp(k1, k2) && strcmp(k1, k3),
       "communicator key: ring-ll and ring-ll+reg+graph share, ring-ll128 does not");
    cp_nccl_variant_key(cp_nccl_plan_find(&p, "p2p+graph"), k1, sizeof(k1));
    ok(k1[0] == '\0', "p2p variants use the default communicator");
}

static void test_env(void)
{
    static cp_nccl_plan_t p;
    cp_nccl_plan_build(&p, CP_NCCL_HAVE_REGISTER);
    cp_nccl_env_saved_t s;
    setenv("NCCL_ALGO", "Tree", 1);
    unsetenv("NCCL_PROTO");
    ok(cp_nccl_env_push(cp_nccl_plan_find(&p, "ring-simple"), &s) == 0, "env push");
    ok(!strcmp(getenv("NCCL_ALGO"), "Ring") && !strcmp(getenv("NCCL_PROTO"), "Simple"),
       "variant environment in force while the communicator is created");
    cp_nccl_env_pop(&s);
    ok(getenv("NCCL_ALGO") && !strcmp(getenv("NCCL_ALGO"), "Tree"), "previous NCCL_ALGO restored");
    ok(getenv("NCCL_PROTO") == NULL, "NCCL_PROTO unset again");
    ok(cp_nccl_env_push(cp_nccl_plan_find(&p, "graph"), &s) == 0 && s.n == 0 &&
           !strcmp(getenv("NCCL_ALGO"), "Tree"),
       "default-algorithm variants leave the user's environment alone");
    cp_nccl_env_pop(&s);
    unsetenv("NCCL_ALGO");
}

static int env_count(const char *prefix)
{
    int n = 0;
    for (char **e = environ; *e != NULL; e++) {
        n += !strncmp(*e, prefix, strlen(prefix));
    }
    return n;
}

/* With collprof's spare entries (cp_env_reserve, before any thread), a variant's environment
 * is swapped in and out without reallocating or moving environ (getenv in other threads). */
static void test_env_slots(void)
{
    static cp_nccl_plan_t p;
    cp_nccl_plan_build(&p, CP_NCCL_HAVE_REGISTER);
    cp_nccl_env_saved_t s;
    setenv("NCCL_ALGO", "Tree", 1);
    unsetenv("NCCL_PROTO");
    cp_env_reserve();
    char **before = environ;
    int entries = env_count("");
    ok(env_count(COLLPROF_ENV_SLOT "=") == COLLPROF_ENV_SLOTS, "spare entries reserved");
    ok(cp_nccl_env_push(cp_nccl_plan_find(&p, "ring-simple"), &s) == 0, "env push (swapped)");
    ok(!strcmp(getenv("NCCL_ALGO"), "Ring") && !strcmp(getenv("NCCL_PROTO"), "Simple"),
       "swapped: variant environment in force");
    ok(environ == before && env_count("") == entries &&
           env_count(COLLPROF_ENV_SLOT "=") == COLLPROF_ENV_SLOTS - 1,
       "swapped: environ neither reallocated nor moved; NCCL_PROTO took one spare entry");
    cp_nccl_env_pop(&s);
    ok(getenv("NCCL_ALGO") && !strcmp(getenv("NCCL_ALGO"), "Tree") && getenv("NCCL_PROTO") == NULL,
       "swapped back: NCCL_ALGO restored, NCCL_PROTO unset");
    ok(environ == before && env_count(COLLPROF_ENV_SLOT "=") == COLLPROF_ENV_SLOTS,
       "swapped back: the spare entry is spare again, environ unmoved");
    ok(cp_nccl_env_push(cp_nccl_plan_find(&p, "ring-simple"), &s) == 0, "env push again");
    setenv("CP_TEST_OTHER", "1", 1); /* a setenv meanwhile copies environ elsewhere */
    cp_nccl_env_pop(&s);
    ok(!strcmp(getenv("NCCL_ALGO"), "Tree") && getenv("NCCL_PROTO") == NULL &&
           env_count(COLLPROF_ENV_SLOT "=") == COLLPROF_ENV_SLOTS,
       "restored where environ is now after another setenv");
    unsetenv("CP_TEST_OTHER");
    unsetenv("NCCL_ALGO");
}

static void test_versions(void)
{
    char b[32];
    cp_nccl_version_string(22809, b, sizeof(b));
    ok(!strcmp(b, "2.28.9"), "22809 -> 2.28.9");
    cp_nccl_version_string(2804, b, sizeof(b));
    ok(!strcmp(b, "2.8.4"), "2804 (old encoding) -> 2.8.4");
    cp_nccl_version_string(NCCL_VERSION_CODE, b, sizeof(b));
    char want[32];
    snprintf(want, sizeof(want), "%d.%d.%d", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
    ok(!strcmp(b, want), "NCCL_VERSION_CODE of the headers -> %s", want);
    cp_nccl_version_string(0, b, sizeof(b));
    ok(!strcmp(b, "unknown"), "0 -> unknown");

    const char *plain[] = {"ncclAllReduce", "ncclAlltoAll", "ncclGetVersion", NULL};
    const char *ncclx[] = {"ncclAllReduce", "ncclCommDump", NULL};
    ok(!cp_nccl_detect_ncclx(fake_syms, plain), "plain NCCL symbols: not NCCLX");
    ok(cp_nccl_detect_ncclx(fake_syms, ncclx), "ncclCommDump present: NCCLX");
    /* NCCLX's ncclCommDump is a C++ function: exported under its mangled name */
    const char *mangled[] = {"ncclAllReduce",
                             "_Z12ncclCommDumpP8ncclCommRSt13unordered_mapINSt7__cxx1112basic_"
                             "stringIcSt11char_traitsIcESaIcEEES7_St4hashIS7_ESt8equal_toIS7_"
                             "ESaISt4pairIKS7_S7_EEE",
                             NULL};
    ok(cp_nccl_detect_ncclx(fake_syms, mangled), "ncclCommDump under its C++ name: NCCLX");
    const char *a2av[] = {"ncclAllReduce", "ncclAllToAllv", NULL};
    ok(cp_nccl_detect_ncclx(fake_syms, a2av), "ncclAllToAllv (C linkage): NCCLX");
}

/* what is missing, from cudaGetDeviceCount's answer and the versions (why: NULL when it is no
 * absence but a device, or a driver recent enough that fails: an error) */
static void test_no_gpu(void)
{
    static const char *gone = "cannot open shared object file: No such file or directory";
    static const struct {
        int err, count, driver, runtime, rank;
        const char *load_err, *why, *what;
    } cases[] = {
        {cudaSuccess, 2, 12020, 12040, 0, NULL, NULL, "devices counted (12.2 runs 12.4)"},
        {cudaSuccess, 0, 13000, 13000, 3, NULL, "no GPU on rank 3: no CUDA device found",
         "a count of 0"},
        {cudaErrorNoDevice, 0, 13000, 13000, 0, NULL, "no GPU on rank 0: no CUDA device found",
         "cudaErrorNoDevice"},
        {cudaErrorInsufficientDriver, 0, 0, 13000, 1, "x: y",
         "no GPU driver on rank 1: cannot load libcuda.so.1 (x: y)", "no libcuda.so.1"},
        {cudaErrorInsufficientDriver, 0, 0, 13000, 1, NULL,
         "no GPU driver on rank 1: cudaDriverGetVersion reports none", "a driver without version"},
        {cudaErrorStubLibrary, 0, 0, 13000, 0, NULL,
         "no GPU driver on rank 0: libcuda.so.1 is CUDA's stub, not a driver", "CUDA's stub"},
        {cudaErrorInsufficientDriver, 0, 12020, 13000, 0, NULL,
         "GPU driver too old on rank 0: driver supports CUDA 12.2, runtime is 13.0",
         "a driver too old"},
        {cudaErrorSystemDriverMismatch, 0, 13000, 13000, 0, NULL, NULL, "a driver that fails"},
        {cudaErrorInitializationError, 0, 13010, 13000, 0, NULL, NULL, "a newer one that fails"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char why[256] = "";
        int none = cp_nccl_no_gpu(cases[i].err, cases[i].count, cases[i].driver, cases[i].runtime,
                                  cases[i].rank, cases[i].load_err, why, sizeof(why));
        ok(cases[i].why ? none == 1 && !strcmp(why, cases[i].why) : none == 0, "no GPU? %s: %s",
           cases[i].what, none ? why : "no: an error, or a device");
    }
    char why[256];
    cp_nccl_no_gpu(cudaErrorInsufficientDriver, 0, 0, 13000, 0, gone, why, sizeof(why));
    ok(strstr(why, "(cannot open shared object file: No such file or directory)") != NULL,
       "this machine: %s", why);
}

static void test_maps(void)
{
    ok(cp_nccl_status(ncclSuccess) == COLLPROF_OK, "ncclSuccess -> OK");
    ok(cp_nccl_status(ncclInvalidUsage) == COLLPROF_ERR_NOT_SUPPORTED,
       "ncclInvalidUsage -> not supported");
    ok(cp_nccl_status(ncclInvalidArgument) == COLLPROF_ERR_INVALID,
       "ncclInvalidArgument -> invalid");
    ok(cp_nccl_status(ncclSystemError) == COLLPROF_ERR_BACKEND &&
           cp_nccl_status(ncclRemoteError) == COLLPROF_ERR_BACKEND &&
           cp_nccl_status(ncclUnhandledCudaError) == COLLPROF_ERR_BACKEND,
       "system/remote/CUDA errors -> backend");
    ok(cp_nccl_cuda_status(cudaErrorInvalidDevice) == COLLPROF_ERR_BACKEND &&
           cp_nccl_cuda_status(cudaErrorDevicesUnavailable) == COLLPROF_ERR_BACKEND &&
           cp_nccl_cuda_status(cudaErrorInsufficientDriver) == COLLPROF_ERR_BACKEND,
       "a call on a device that was found never maps to 'no device' (cp_nccl_no_gpu says that)");
    ok(cp_nccl_cuda_status(cudaErrorMemoryAllocation) == COLLPROF_ERR_NO_MEMORY,
       "OOM -> no memory");
    ok(cp_nccl_cuda_status(cudaErrorLaunchFailure) == COLLPROF_ERR_BACKEND,
       "launch failure -> backend");
    ok(cp_nccl_dtype(COLLPROF_DTYPE_FLOAT16) == ncclFloat16 &&
           cp_nccl_dtype(COLLPROF_DTYPE_BFLOAT16) == ncclBfloat16 &&
           cp_nccl_dtype(COLLPROF_DTYPE_FLOAT32) == ncclFloat32 &&
           cp_nccl_dtype(COLLPROF_DTYPE_UINT64) == ncclUint64 &&
           cp_nccl_dtype(COLLPROF_DTYPE_INT8) == ncclInt8,
       "dtype map (incl. float16, bfloat16)");
    int all = 1;
    for (int t = 0; t < COLLPROF_DTYPE_COUNT; t++) {
        all &=
            cp_nccl_dtype((collprof_dtype_t)t) >= 0 && cp_nccl_dtype_size((collprof_dtype_t)t) > 0;
    }
    ok(all, "every collprof dtype has an exact NCCL type");
    ok(cp_nccl_dtype(COLLPROF_DTYPE_COUNT) == -1, "out of range: -1");
    ok(cp_nccl_redop(COLLPROF_REDOP_MIN) == ncclMin &&
           cp_nccl_redop(COLLPROF_REDOP_MAX) == ncclMax &&
           cp_nccl_redop(COLLPROF_REDOP_PROD) == ncclProd,
       "redop map");
}

static int find_x(const cp_nccl_xfer_t *x, int nx, int peer, int is_send, int buf, size_t off,
                  size_t count)
{
    for (int i = 0; i < nx; i++) {
        if (x[i].peer == peer && x[i].is_send == is_send && x[i].buf == buf && x[i].off == off &&
            x[i].count == count) {
            return 1;
        }
    }
    return 0;
}

/* gatherv and scatterv on 3 ranks, root 2: blocks of 2, 0 and 4 at 0, 2, 2 */
static void test_rooted_v(cp_nccl_xfer_t *x)
{
    size_t gc[3] = {2, 0, 4}, gd[3] = {0, 2, 2}, stage = 9;
    collprof_args_t a;
    memset(&a, 0, sizeof(a));
    a.op = COLLPROF_OP_GATHERV;
    a.count = 6;
    a.root = 2;
    a.recvcounts = gc, a.rdispls = gd;
    int nx = cp_nccl_p2p_plan(&a, 2, 3, x, &stage);
    ok(nx == 3 && stage == 0 && find_x(x, nx, 0, 0, CP_NCCL_BUF_RECV, 0, 2) &&
           find_x(x, nx, 2, 1, CP_NCCL_BUF_SEND, 0, 4) &&
           find_x(x, nx, 2, 0, CP_NCCL_BUF_RECV, 2, 4),
       "gatherv root: block p from p at rdispls[p] (its own through itself), empty skipped");
    nx = cp_nccl_p2p_plan(&a, 0, 3, x, &stage);
    ok(nx == 1 && find_x(x, nx, 2, 1, CP_NCCL_BUF_SEND, 0, 2), "gatherv: a rank sends its block");
    ok(cp_nccl_p2p_plan(&a, 1, 3, x, &stage) == 0, "gatherv: an empty block makes no transfer");
    a.in_place = 1;
    nx = cp_nccl_p2p_plan(&a, 2, 3, x, &stage);
    ok(nx == 1 && find_x(x, nx, 0, 0, CP_NCCL_BUF_RECV, 0, 2), "in-place gatherv root: no self");
    a.root = 0;
    nx = cp_nccl_p2p_plan(&a, 2, 3, x, &stage);
    ok(nx == 1 && find_x(x, nx, 0, 1, CP_NCCL_BUF_RECV, 2, 4),
       "in-place gatherv: a rank sends from its block at rdispls[rank]");
    a.op = COLLPROF_OP_SCATTERV;
    nx = cp_nccl_p2p_plan(&a, 2, 3, x, &stage);
    ok(nx == 1 && find_x(x, nx, 0, 0, CP_NCCL_BUF_RECV, 2, 4),
       "in-place scatterv: a rank receives at rdispls[rank]");
    a.in_place = 0;
    nx = cp_nccl_p2p_plan(&a, 0, 3, x, &stage);
    ok(nx == 3 && find_x(x, nx, 0, 1, CP_NCCL_BUF_SEND, 0, 2) &&
           find_x(x, nx, 0, 0, CP_NCCL_BUF_RECV, 0, 2) &&
           find_x(x, nx, 2, 1, CP_NCCL_BUF_SEND, 2, 4),
       "scatterv root: block p from rdispls[p] to p, its own into recvbuf, empty skipped");
    a.recvcounts = NULL;
    ok(cp_nccl_p2p_plan(&a, 0, 3, x, &stage) == -1, "scatterv without counts is refused");
}

static void test_p2p(void)
{
    cp_nccl_xfer_t x[16];
    size_t stage = 99;
    collprof_args_t a;
    memset(&a, 0, sizeof(a));
    a.op = COLLPROF_OP_ALLTOALL;
    a.count = 12;
    int nx = cp_nccl_p2p_plan(&a, 1, 3, x, &stage);
    ok(nx == 6 && stage == 0 && find_x(x, nx, 2, 1, CP_NCCL_BUF_SEND, 8, 4) &&
           find_x(x, nx, 0, 0, CP_NCCL_BUF_RECV, 0, 4) &&
           find_x(x, nx, 1, 1, CP_NCCL_BUF_SEND, 4, 4),
       "alltoall 3 ranks: block p to and from rank p, self included");
    a.in_place = 1;
    nx = cp_nccl_p2p_plan(&a, 1, 3, x, &stage);
    ok(nx == 6 && stage == 12 && find_x(x, nx, 2, 1, CP_NCCL_BUF_STAGE, 8, 4),
       "in-place alltoall sends from a staged copy of the whole buffer");

    size_t sc[3] = {1, 0, 5}, sd[3] = {0, 1, 1}, rc[3] = {2, 3, 0}, rd[3] = {0, 2, 5};
    memset(&a, 0, sizeof(a));
    a.op = COLLPROF_OP_ALLTOALLV;
    a.sendcounts = sc, a.sdispls = sd, a.recvcounts = rc, a.rdispls = rd;
    nx = cp_nccl_p2p_plan(&a, 0, 3, x, &stage);
    ok(nx == 4 && find_x(x, nx, 2, 1, CP_NCCL_BUF_SEND, 1, 5) &&
           find_x(x, nx, 1, 0, CP_NCCL_BUF_RECV, 2, 3) &&
           !find_x(x, nx, 1, 1, CP_NCCL_BUF_SEND, 1, 0),
       "alltoallv: counts and displacements, zero counts skipped");
    a.in_place = 1;
    a.sendcounts = NULL, a.sdispls = NULL;
    nx = cp_nccl_p2p_plan(&a, 0, 3, x, &stage);
    ok(nx == 4 && stage == 5 && find_x(x, nx, 1, 1, CP_NCCL_BUF_STAGE, 2, 3),
       "in-place alltoallv: recvcounts/rdispls on both sides, staged");

    /* allgatherv on 3 ranks: blocks of 2, 0 and 4 at 0, 2, 2 */
    size_t gc[3] = {2, 0, 4}, gd[3] = {0, 2, 2};
    memset(&a, 0, sizeof(a));
    a.op = COLLPROF_OP_ALLGATHERV;
    a.count = 6;
    a.recvcounts = gc, a.rdispls = gd;
    nx = cp_nccl_p2p_plan(&a, 2, 3, x, &stage);
    ok(nx == 5 && stage == 0 && find_x(x, nx, 0, 1, CP_NCCL_BUF_SEND, 0, 4) &&
           find_x(x, nx, 2, 1, CP_NCCL_BUF_SEND, 0, 4) &&
           find_x(x, nx, 2, 0, CP_NCCL_BUF_RECV, 2, 4) &&
           find_x(x, nx, 0, 0, CP_NCCL_BUF_RECV, 0, 2) &&
           !find_x(x, nx, 1, 0, CP_NCCL_BUF_RECV, 2, 0),
       "allgatherv: its block to every rank (self too), block p at rdispls[p], empty skipped");
    nx = cp_nccl_p2p_plan(&a, 1, 3, x, &stage);
    ok(nx == 2 && !find_x(x, nx, 0, 1, CP_NCCL_BUF_SEND, 0, 0),
       "allgatherv: a rank with an empty block only receives");
    a.in_place = 1;
    nx = cp_nccl_p2p_plan(&a, 2, 3, x, &stage);
    ok(nx == 3 && stage == 0 && find_x(x, nx, 1, 1, CP_NCCL_BUF_RECV, 2, 4) &&
           !find_x(x, nx, 2, 0, CP_NCCL_BUF_RECV, 2, 4),
       "in-place allgatherv: sends from its block at rdispls[rank], nothing to self");
    a.recvcounts = NULL;
    ok(cp_nccl_p2p_plan(&a, 2, 3, x, &stage) == -1, "allgatherv without counts is refused");
    test_rooted_v(x);

    memset(&a, 0, sizeof(a));
    a.op = COLLPROF_OP_GATHER;
    a.count = 8;
    a.root = 1;
    nx = cp_nccl_p2p_plan(&a, 0, 4, x, &stage);
    ok(nx == 1 && find_x(x, nx, 1, 1, CP_NCCL_BUF_SEND, 0, 2),
       "gather, non-root: one send to root");
    nx = cp_nccl_p2p_plan(&a, 1, 4, x, &stage);
    ok(nx == 5 && find_x(x, nx, 3, 0, CP_NCCL_BUF_RECV, 6, 2) &&
           find_x(x, nx, 1, 1, CP_NCCL_BUF_SEND, 0, 2) &&
           find_x(x, nx, 1, 0, CP_NCCL_BUF_RECV, 2, 2),
       "gather, root: receives every block, its own through send/recv to self");
    a.in_place = 1;
    nx = cp_nccl_p2p_plan(&a, 1, 4, x, &stage);
    ok(nx == 3 && !find_x(x, nx, 1, 0, CP_NCCL_BUF_RECV, 2, 2),
       "in-place gather root: own block stays");
    nx = cp_nccl_p2p_plan(&a, 2, 4, x, &stage);
    ok(nx == 1 && find_x(x, nx, 1, 1, CP_NCCL_BUF_RECV, 4, 2),
       "in-place gather non-root: sends its block at rank*count/n");

    memset(&a, 0, sizeof(a));
    a.op = COLLPROF_OP_SCATTER;
    a.count = 8;
    a.root = 0;
    nx = cp_nccl_p2p_plan(&a, 0, 4, x, &stage);
    ok(nx == 5 && find_x(x, nx, 3, 1, CP_NCCL_BUF_SEND, 6, 2) &&
           find_x(x, nx, 0, 0, CP_NCCL_BUF_RECV, 0, 2),
       "scatter root: block p to rank p");
    a.in_place = 1;
    nx = cp_nccl_p2p_plan(&a, 3, 4, x, &stage);
    ok(nx == 1 && find_x(x, nx, 0, 0, CP_NCCL_BUF_RECV, 6, 2),
       "in-place scatter non-root: receives at rank*count/n");

    memset(&a, 0, sizeof(a));
    a.op = COLLPROF_OP_SENDRECV;
    a.count = 7;
    a.peer_send = 1;
    a.peer_recv = 2;
    a.in_place = 1;
    nx = cp_nccl_p2p_plan(&a, 0, 3, x, &stage);
    ok(nx == 2 && stage == 7 && find_x(x, nx, 1, 1, CP_NCCL_BUF_STAGE, 0, 7) &&
           find_x(x, nx, 2, 0, CP_NCCL_BUF_RECV, 0, 7),
       "in-place sendrecv: staged send, receive replaces the buffer");
    a.op = COLLPROF_OP_ALLREDUCE;
    ok(cp_nccl_p2p_plan(&a, 0, 3, x, &stage) == -1, "allreduce has no p2p schedule");
    a.op = COLLPROF_OP_GATHER;
    a.root = 5;
    ok(cp_nccl_p2p_plan(&a, 0, 3, x, &stage) == -1, "root out of range refused");
}

int main(void)
{
    test_variants();
    test_env();
    test_env_slots();
    test_versions();
    test_maps();
    test_no_gpu();
    test_p2p();
    return tap_done();
}
