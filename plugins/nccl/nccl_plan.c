/*
 * collprof NCCL backend: variant planning and everything else that can be
 * tested without a GPU (see nccl_plan.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_plan.h"

#include <collprof/plugin_util.h>

extern char **environ;

#define OPB(x) COLLPROF_BIT(COLLPROF_OP_##x)

#define OPS_ALL                                                                                    \
    (OPB(ALLREDUCE) | OPB(ALLGATHER) | OPB(REDUCESCATTER) | OPB(ALLTOALL) | OPB(ALLTOALLV) |       \
     OPB(BROADCAST) | OPB(REDUCE) | OPB(GATHER) | OPB(SCATTER) | OPB(BARRIER) | OPB(SENDRECV) |    \
     OPB(ALLGATHERV) | OPB(GATHERV) | OPB(SCATTERV))
#define OPS_P2P (OPB(ALLTOALL) | OPB(GATHER) | OPB(SCATTER))

enum { PR_LL = 1, PR_LL128 = 2, PR_SIMPLE = 4, PR_ALL = 7 };

/*
 * NCCL_ALGO values and the collectives NCCL implements with each, as in
 * NCCL 2.28's device code generator (src/device/generate.py: algos_of_coll)
 * and its rule that CollNet, NVLS, NVLSTree and PAT run the Simple protocol
 * only.  Whether an algorithm is usable on a machine (NVLink SHARP,
 * CollNet plugin, one GPU per node for PAT...) is checked at run time.
 */
static const struct {
    const char *name, *nccl;
    uint32_t ops;
    unsigned protos;
    const char *what;
} algos[] = {
    {"ring", "Ring",
     OPB(ALLREDUCE) | OPB(ALLGATHER) | OPB(REDUCESCATTER) | OPB(BROADCAST) | OPB(REDUCE), PR_ALL,
     "ring"},
    {"tree", "Tree", OPB(ALLREDUCE), PR_ALL, "double binary tree"},
    {"collnetdirect", "CollNetDirect", OPB(ALLREDUCE) | OPB(ALLGATHER) | OPB(REDUCESCATTER),
     PR_SIMPLE, "CollNet (in-network reduction, e.g. SHARP) direct"},
    {"collnetchain", "CollNetChain", OPB(ALLREDUCE), PR_SIMPLE, "CollNet chain"},
    {"nvls", "NVLS", OPB(ALLREDUCE) | OPB(ALLGATHER) | OPB(REDUCESCATTER), PR_SIMPLE,
     "NVLink SHARP (NVSwitch multicast)"},
    {"nvlstree", "NVLSTree", OPB(ALLREDUCE), PR_SIMPLE, "NVLink SHARP within nodes, tree across"},
    {"pat", "PAT", OPB(ALLGATHER) | OPB(REDUCESCATTER), PR_SIMPLE,
     "parallel aggregated trees (one GPU per node)"},
};

static const struct {
    unsigned bit;
    const char *name, *nccl;
} protos[] = {{PR_LL, "ll", "LL"}, {PR_LL128, "ll128", "LL128"}, {PR_SIMPLE, "simple", "Simple"}};

/*
 * NCCLX CTran algorithms, selected per operation with NCCL_<OP>_ALGO once
 * NCCL_CTRAN_ENABLE=1 (names as NCCLX's cvars spell them).  Offered only
 * when the linked library is NCCLX.
 */
static const struct {
    const char *algo;
    uint32_t ops;
} ctran[] = {
    {"ctdirect", OPB(ALLGATHER) | OPB(REDUCESCATTER) | OPB(ALLREDUCE) | OPB(BROADCAST)},
    {"ctring", OPB(ALLGATHER) | OPB(REDUCESCATTER) | OPB(ALLREDUCE)},
    {"ctrd", OPB(ALLGATHER)},
    {"ctrhd", OPB(REDUCESCATTER)},
    {"ctbtree", OPB(BROADCAST)},
    {"ctran", OPB(ALLTOALL) | OPB(ALLTOALLV) | OPB(SENDRECV)},
};

static const char *ctran_env_of(collprof_op_t op)
{
    switch (op) {
    case COLLPROF_OP_ALLREDUCE: return "NCCL_ALLREDUCE_ALGO";
    case COLLPROF_OP_ALLGATHER: return "NCCL_ALLGATHER_ALGO";
    case COLLPROF_OP_REDUCESCATTER: return "NCCL_REDUCESCATTER_ALGO";
    case COLLPROF_OP_BROADCAST: return "NCCL_BROADCAST_ALGO";
    case COLLPROF_OP_ALLTOALL: return "NCCL_ALLTOALL_ALGO";
    case COLLPROF_OP_ALLTOALLV: return "NCCL_ALLTOALLV_ALGO";
    case COLLPROF_OP_SENDRECV: return "NCCL_SENDRECV_ALGO";
    default: return NULL;
    }
}

static cp_nccl_variant_t *add(cp_nccl_plan_t *p, const char *name, uint32_t ops)
{
    if (p->n >= CP_NCCL_MAX_VARS) {
        return NULL;
    }
    cp_nccl_variant_t *v = &p->v[p->n++];
    memset(v, 0, sizeof(*v));
    snprintf(v->name, sizeof(v->name), "%s", name);
    v->ops = ops;
    return v;
}

static void env_add(cp_nccl_variant_t *v, const char *name, const char *value)
{
    if (v->nenv < CP_NCCL_MAX_ENV) {
        v->env_name[v->nenv] = name;
        v->env_value[v->nenv] = value;
        v->nenv++;
    }
}

/* the modifiers of one base variant: "", +reg, +graph, +reg+graph */
static int add_modified(cp_nccl_plan_t *p, const cp_nccl_variant_t *base, const char *prefix,
                        const char *what)
{
    static const struct {
        const char *suffix;
        int reg, graph;
        const char *desc;
    } mods[] = {{"", 0, 0, ""},
                {"reg", 1, 0, ", buffers registered (ncclCommRegister)"},
                {"graph", 0, 1, ", captured in a CUDA graph and replayed"},
                {"reg+graph", 1, 1, ", registered buffers, CUDA graph replay"}};
    for (size_t m = 0; m < sizeof(mods) / sizeof(mods[0]); m++) {
        char name[CP_NCCL_NAME_LEN];
        if (mods[m].reg && !(p->features & CP_NCCL_HAVE_REGISTER)) {
            continue;
        }
        if (prefix[0] == '\0' && mods[m].suffix[0] == '\0') {
            continue; /* that is "default" itself */
        }
        snprintf(name, sizeof(name), "%s%s%s", prefix, prefix[0] && mods[m].suffix[0] ? "+" : "",
                 mods[m].suffix);
        cp_nccl_variant_t *v = add(p, name, base->ops);
        if (v == NULL) {
            return -1;
        }
        *v = *base;
        snprintf(v->name, sizeof(v->name), "%s", name);
        snprintf(v->desc, sizeof(v->desc), "%s%s", what, mods[m].desc);
        v->reg = mods[m].reg;
        v->graph = mods[m].graph;
    }
    return 0;
}

int cp_nccl_plan_build(cp_nccl_plan_t *p, unsigned features)
{
    memset(p, 0, sizeof(*p));
    p->features = features;
    cp_nccl_variant_t *def = add(p, "default", OPS_ALL);
    snprintf(def->desc, sizeof(def->desc), "the library's own choice");
    cp_nccl_variant_t base = *def;
    if (add_modified(p, &base, "", "the library's own algorithm") != 0) {
        return -1;
    }
    /* grouped send/recv for the operations NCCL may also offer natively */
    memset(&base, 0, sizeof(base));
    base.ops = OPS_P2P;
    base.p2p = 1;
    if (add_modified(p, &base, "p2p", "alltoall, gather, scatter as grouped ncclSend/ncclRecv") !=
        0) {
        return -1;
    }
    for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        for (size_t r = 0; r < sizeof(protos) / sizeof(protos[0]); r++) {
            char prefix[CP_NCCL_NAME_LEN], what[CP_NCCL_DESC_LEN];
            if (!(algos[a].protos & protos[r].bit)) {
                continue;
            }
            memset(&base, 0, sizeof(base));
            base.ops = algos[a].ops;
            base.algo = algos[a].nccl;
            base.proto = protos[r].nccl;
            env_add(&base, "NCCL_ALGO", algos[a].nccl);
            env_add(&base, "NCCL_PROTO", protos[r].nccl);
            snprintf(prefix, sizeof(prefix), "%s-%s", algos[a].name, protos[r].name);
            snprintf(what, sizeof(what), "NCCL_ALGO=%s NCCL_PROTO=%s: %s", algos[a].nccl,
                     protos[r].nccl, algos[a].what);
            if (add_modified(p, &base, prefix, what) != 0) {
                return -1;
            }
        }
    }
    if (features & CP_NCCL_IS_NCCLX) {
        for (size_t c = 0; c < sizeof(ctran) / sizeof(ctran[0]); c++) {
            char name[CP_NCCL_NAME_LEN];
            snprintf(name, sizeof(name), "ctran-%s", ctran[c].algo);
            cp_nccl_variant_t *v = add(p, name, ctran[c].ops);
            if (v == NULL) {
                return -1;
            }
            v->ctran_algo = ctran[c].algo;
            env_add(v, "NCCL_CTRAN_ENABLE", "1");
            for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
                if (ctran[c].ops & COLLPROF_BIT(op)) {
                    env_add(v, ctran_env_of((collprof_op_t)op), ctran[c].algo);
                }
            }
            snprintf(v->desc, sizeof(v->desc),
                     "NCCLX CTran: NCCL_CTRAN_ENABLE=1, NCCL_<OP>_ALGO=%s", ctran[c].algo);
        }
    }
    for (size_t i = 1; i < p->n; i++) {
        p->pub[i - 1].name = p->v[i].name;
        p->pub[i - 1].description = p->v[i].desc;
        p->pub[i - 1].ops = p->v[i].ops;
    }
    p->npub = p->n - 1;
    return 0;
}

const cp_nccl_variant_t *cp_nccl_plan_find(const cp_nccl_plan_t *p, const char *name)
{
    if (name == NULL || name[0] == '\0') {
        name = "default";
    }
    for (size_t i = 0; i < p->n; i++) {
        if (!strcmp(p->v[i].name, name)) {
            return &p->v[i];
        }
    }
    return NULL;
}

int cp_nccl_uses_p2p(const cp_nccl_plan_t *p, const cp_nccl_variant_t *v, collprof_op_t op)
{
    switch (op) {
    case COLLPROF_OP_ALLTOALLV:
    case COLLPROF_OP_ALLGATHERV:
    case COLLPROF_OP_GATHERV:
    case COLLPROF_OP_SCATTERV:
    case COLLPROF_OP_SENDRECV: return 1;
    case COLLPROF_OP_ALLTOALL: return v->p2p || !(p->features & CP_NCCL_HAVE_ALLTOALL);
    case COLLPROF_OP_GATHER: return v->p2p || !(p->features & CP_NCCL_HAVE_GATHER);
    case COLLPROF_OP_SCATTER: return v->p2p || !(p->features & CP_NCCL_HAVE_SCATTER);
    default: return 0;
    }
}

void cp_nccl_variant_key(const cp_nccl_variant_t *v, char *key, size_t len)
{
    key[0] = '\0';
    for (int i = 0; i < v->nenv; i++) {
        size_t l = strlen(key);
        snprintf(key + l, len - l, "%s%s=%s", i ? ";" : "", v->env_name[i], v->env_value[i]);
    }
}

/* "NAME=value", made once and never freed: getenv in another thread may hold it.  The
 * variants' names and values are few (their table), so is this list. */
static const char *env_entry(const char *name, const char *value)
{
    static struct entry {
        struct entry *next;
        char kv[];
    } * entries;
    size_t nl = strlen(name), vl = strlen(value);
    for (struct entry *e = entries; e != NULL; e = e->next) {
        if (!strncmp(e->kv, name, nl) && e->kv[nl] == '=' && !strcmp(e->kv + nl + 1, value)) {
            return e->kv;
        }
    }
    struct entry *e = malloc(sizeof(*e) + nl + vl + 2);
    if (e == NULL) {
        return NULL;
    }
    snprintf(e->kv, nl + vl + 2, "%s=%s", name, value);
    e->next = entries;
    entries = e;
    return e->kv;
}

int cp_nccl_env_push(const cp_nccl_variant_t *v, cp_nccl_env_saved_t *s)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < v->nenv; i++) {
        const char *kv = env_entry(v->env_name[i], v->env_value[i]);
        int at = kv != NULL ? collprof_env_find(NULL, v->env_name[i]) : -1;
        snprintf(s->name[i], sizeof(s->name[i]), "%s", v->env_name[i]);
        s->n = i + 1;
        if (at >= 0) { /* swapped in place: the environment keeps its shape */
            s->was[i] = environ[at];
            s->put[i] = kv;
            collprof_env_store(at, kv);
            continue;
        }
        const char *old = getenv(v->env_name[i]);
        s->old[i] = old ? strdup(old) : NULL;
        if ((old != NULL && s->old[i] == NULL) || setenv(v->env_name[i], v->env_value[i], 1) != 0) {
            cp_nccl_env_pop(s);
            return -1;
        }
    }
    return 0;
}

void cp_nccl_env_pop(cp_nccl_env_saved_t *s)
{
    for (int i = s->n - 1; i >= 0; i--) {
        if (s->put[i] != NULL) {
            /* where it is now: a setenv since (NCCL's of its configuration file) copies environ */
            int at = collprof_env_find(s->put[i], NULL);
            if (at >= 0) {
                collprof_env_store(at, s->was[i]);
            }
            s->put[i] = s->was[i] = NULL;
        } else if (s->old[i] != NULL) {
            setenv(s->name[i], s->old[i], 1);
            free(s->old[i]);
            s->old[i] = NULL;
        } else {
            unsetenv(s->name[i]);
        }
    }
    s->n = 0;
}

void cp_nccl_version_string(int code, char *buf, size_t len)
{
    int major, minor, patch;
    if (code <= 0) {
        snprintf(buf, len, "unknown");
        return;
    }
    if (code < 10000) { /* up to 2.8: X*1000 + Y*100 + Z */
        major = code / 1000;
        minor = (code % 1000) / 100;
        patch = code % 100;
    } else { /* since 2.9: X*10000 + Y*100 + Z */
        major = code / 10000;
        minor = (code % 10000) / 100;
        patch = code % 100;
    }
    snprintf(buf, len, "%d.%d.%d", major, minor, patch);
}

int cp_nccl_detect_ncclx(int (*has_symbol)(const char *sym, void *arg), void *arg)
{
    /*
     * Entry points NCCLX adds and upstream NCCL does not have, under the
     * names its library exports: ncclAllToAllv has C linkage; ncclCommDump
     * (comm, std::unordered_map<std::string, std::string>&) and ncclCommDumpAll
     * (a map of such maps) are C++ functions, exported mangled (Itanium ABI,
     * libstdc++'s __cxx11 strings).  The plain names are kept for a build
     * that declares them extern "C".
     */
    static const char *ncclx_only[] = {
        "ncclAllToAllv",
        "_Z12ncclCommDumpP8ncclCommRSt13unordered_mapINSt7__cxx1112basic_stringIcSt11char_"
        "traitsIcESaIcEEES7_St4hashIS7_ESt8equal_toIS7_ESaISt4pairIKS7_S7_EEE",
        "_Z15ncclCommDumpAllRSt13unordered_mapINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcE"
        "EES_IS5_S5_St4hashIS5_ESt8equal_toIS5_ESaISt4pairIKS5_S5_EEES7_S9_SaISA_ISB_SE_EEE",
        "ncclCommDump",
        "ncclCommDumpAll",
        NULL};
    for (int i = 0; ncclx_only[i] != NULL; i++) {
        if (has_symbol(ncclx_only[i], arg)) {
            return 1;
        }
    }
    return 0;
}

int cp_nccl_status(int r)
{
    switch (r) {
    case ncclSuccess: return COLLPROF_OK;
    case ncclInvalidArgument: return COLLPROF_ERR_INVALID;
    case ncclInvalidUsage: return COLLPROF_ERR_NOT_SUPPORTED;
    case ncclUnhandledCudaError: /* fall through */
    case ncclSystemError:
    case ncclInternalError:
    case ncclRemoteError:
    case ncclInProgress:
    default: return COLLPROF_ERR_BACKEND;
    }
}

int cp_nccl_cuda_status(int e)
{
    switch (e) {
    case cudaSuccess: return COLLPROF_OK;
    case cudaErrorMemoryAllocation: return COLLPROF_ERR_NO_MEMORY;
    case cudaErrorInvalidValue: return COLLPROF_ERR_INVALID;
    default: return COLLPROF_ERR_BACKEND; /* never "no device": cp_nccl_no_gpu says that */
    }
}

int cp_nccl_no_gpu(int count_err, int count, int driver, int runtime, int rank,
                   const char *load_err, char *why, size_t len)
{
    if (count_err == cudaSuccess && count > 0) {
        return 0;
    }
    if (count_err == cudaSuccess || count_err == cudaErrorNoDevice) {
        snprintf(why, len, "no GPU on rank %d: no CUDA device found", rank);
    } else if (count_err == cudaErrorStubLibrary) {
        snprintf(why, len, "no GPU driver on rank %d: libcuda.so.1 is CUDA's stub, not a driver",
                 rank);
    } else if (driver <= 0 && load_err != NULL) {
        snprintf(why, len, "no GPU driver on rank %d: cannot load libcuda.so.1 (%s)", rank,
                 load_err);
    } else if (driver <= 0) {
        snprintf(why, len, "no GPU driver on rank %d: cudaDriverGetVersion reports none", rank);
    } else if (driver < runtime) {
        snprintf(why, len,
                 "GPU driver too old on rank %d: driver supports CUDA %d.%d, runtime is %d.%d",
                 rank, driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    } else {
        return 0; /* a driver recent enough that fails: an error, not an absence */
    }
    return 1;
}

int cp_nccl_dtype(collprof_dtype_t dt)
{
    switch (dt) {
    case COLLPROF_DTYPE_INT8: return ncclInt8;
    case COLLPROF_DTYPE_UINT8: return ncclUint8;
    case COLLPROF_DTYPE_INT32: return ncclInt32;
    case COLLPROF_DTYPE_UINT32: return ncclUint32;
    case COLLPROF_DTYPE_INT64: return ncclInt64;
    case COLLPROF_DTYPE_UINT64: return ncclUint64;
    case COLLPROF_DTYPE_FLOAT16: return ncclFloat16;
    case COLLPROF_DTYPE_BFLOAT16: return ncclBfloat16;
    case COLLPROF_DTYPE_FLOAT32: return ncclFloat32;
    case COLLPROF_DTYPE_FLOAT64: return ncclFloat64;
    default: return -1; /* fp8 (ncclFloat8e4m3/e5m2): collprof has no such dtype */
    }
}

size_t cp_nccl_dtype_size(collprof_dtype_t dt)
{
    switch (dt) {
    case COLLPROF_DTYPE_INT8:
    case COLLPROF_DTYPE_UINT8: return 1;
    case COLLPROF_DTYPE_FLOAT16:
    case COLLPROF_DTYPE_BFLOAT16: return 2;
    case COLLPROF_DTYPE_INT32:
    case COLLPROF_DTYPE_UINT32:
    case COLLPROF_DTYPE_FLOAT32: return 4;
    case COLLPROF_DTYPE_INT64:
    case COLLPROF_DTYPE_UINT64:
    case COLLPROF_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

int cp_nccl_redop(collprof_redop_t op)
{
    switch (op) {
    case COLLPROF_REDOP_SUM: return ncclSum;
    case COLLPROF_REDOP_PROD: return ncclProd;
    case COLLPROF_REDOP_MIN: return ncclMin;
    case COLLPROF_REDOP_MAX: return ncclMax;
    default: return -1;
    }
}
