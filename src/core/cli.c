#include "config.h"

#include "core/cli.h"

#include "colls/colls.h"
#include "core/data.h"
#include "core/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_NP = 256,
    OPT_BACKENDS,
    OPT_OPS,
    OPT_COUNTS,
    OPT_VARIANTS,
    OPT_MATRIX,
    OPT_OUTDIR,
    OPT_TAG,
    OPT_LIST,
    OPT_DRYRUN,
    OPT_INPLACE,
    OPT_IMBALANCE,
    OPT_SYNC,
    OPT_LAUNCHER,
    OPT_TIMEOUT,
    OPT_MEM,
    OPT_OFI_PROVIDER,
    OPT_OFI_CHANNELS,
    OPT_LINK_GBPS
};

static const struct option long_opts[] = {
    {"np", required_argument, NULL, OPT_NP},
    {"backends", required_argument, NULL, OPT_BACKENDS},
    {"ops", required_argument, NULL, OPT_OPS},
    {"counts", required_argument, NULL, OPT_COUNTS},
    {"minbytes", required_argument, NULL, 'b'},
    {"maxbytes", required_argument, NULL, 'e'},
    {"stepfactor", required_argument, NULL, 'f'},
    {"iters", required_argument, NULL, 'n'},
    {"warmup", required_argument, NULL, 'w'},
    {"check", required_argument, NULL, 'c'},
    {"dtype", required_argument, NULL, 'd'},
    {"redop", required_argument, NULL, 'o'},
    {"root", required_argument, NULL, 'r'},
    {"variants", required_argument, NULL, OPT_VARIANTS},
    {"matrix", required_argument, NULL, OPT_MATRIX},
    {"output-dir", required_argument, NULL, OPT_OUTDIR},
    {"tag", required_argument, NULL, OPT_TAG},
    {"list", no_argument, NULL, OPT_LIST},
    {"dry-run", no_argument, NULL, OPT_DRYRUN},
    {"inplace", required_argument, NULL, OPT_INPLACE},
    {"imbalance", required_argument, NULL, OPT_IMBALANCE},
    {"sync", required_argument, NULL, OPT_SYNC},
    {"launcher", required_argument, NULL, OPT_LAUNCHER},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"mem", required_argument, NULL, OPT_MEM},
    {"backend-opt", required_argument, NULL, 'B'},
    {"ofi-provider", required_argument, NULL, OPT_OFI_PROVIDER},
    {"ofi-channels", required_argument, NULL, OPT_OFI_CHANNELS},
    {"link-gbps", required_argument, NULL, OPT_LINK_GBPS},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

void cp_cli_usage(FILE *f)
{
    fputs("Usage: collprof [OPTIONS]\n"
          "Profile collective communication on every backend that loads, check every result\n"
          "exactly, print an nccl-tests-style table and write a timestamped text summary.\n"
          "\n"
          "Launching (ranks bootstrap through PMIx):\n"
          "  --np N                 self-launch N local ranks (embedded PMIx server)\n"
          "  --launcher MODE        auto (default), embedded or mpirun, for --np\n"
          "  (or run under: mpirun -np N collprof ... | srun --mpi=pmix -n N collprof ...)\n"
          "\n"
          "The matrix (each list is comma-separated; 'all' selects everything):\n"
          "  --backends LIST        backends to run (default: all that load)\n"
          "  --variants LIST        variants, e.g. default,ring (default: all)\n"
          "  --ops LIST             allreduce,allgather,reducescatter,alltoall,alltoallv,\n"
          "                         broadcast,reduce,gather,scatter,barrier,sendrecv\n"
          "                         (default: allreduce,allgather,reducescatter,alltoall)\n"
          "  --counts LIST          element counts, K/M/G suffixes (default: 1M,4M,16M)\n"
          "  -b, --minbytes SIZE    byte sweep start, as in nccl-tests (replaces --counts)\n"
          "  -e, --maxbytes SIZE    byte sweep end\n"
          "  -f, --stepfactor F     byte sweep multiplier (default: 2)\n"
          "  -d, --dtype LIST       int8,uint8,int32,uint32,int64,uint64,float16,bfloat16,\n"
          "                         float32,float64 (default: float32)\n"
          "  -o, --redop LIST       sum,prod,min,max (default: sum)\n"
          "  -r, --root N           root rank of rooted operations (default: 0)\n"
          "  --inplace MODE         out, in or both (default: out)\n"
          "  --imbalance LIST       alltoallv traffic: uniform, linear, spread:S,\n"
          "                         moe[:HOT[:BIAS]], file:PATH (default: uniform)\n"
          "  --mem LIST             buffer memory: host, pinned, device, or auto (default:\n"
          "                         auto, the backend's own: device for nccl, else host)\n"
          "  --matrix FILE          read the matrix from FILE (see collprof(1))\n"
          "\n"
          "Measurement:\n"
          "  -n, --iters N          timed iterations per cell (default: 20)\n"
          "  -w, --warmup N         warm-up iterations per cell (default: 5)\n"
          "  -c, --check 0|1        verify every result exactly (default: 1)\n"
          "  --sync barrier|none    barrier before each iteration (default: barrier)\n"
          "  --timeout SECONDS      watchdog: longest one operation (or any other step) may\n"
          "                         take before the run stops with a report of the ranks\n"
          "                         that did not arrive (default: 60 s + 1 s per 10 MB of\n"
          "                         the cell's largest buffer; 0: no watchdog)\n"
          "  -B, --backend-opt K=V  option for a backend plugin (the last one of a key wins)\n"
          "  --ofi-provider NAME    libfabric provider, e.g. shm or 'tcp;ofi_rxm' (default:\n"
          "                         $FI_PROVIDER, else shm on one node, tcp;ofi_rxm on more)\n"
          "  --ofi-channels N       libfabric endpoints (channels), 1..64 (default: 4)\n"
          "  --link-gbps X          link rate in Gbit/s for 'BusBW as % of link rate' when\n"
          "                         the provider reports none (recorded with the run)\n"
          "\n"
          "Output:\n"
          "  --output-dir DIR       where the summary goes (default: $SLURM_SUBMIT_DIR\n"
          "                         under Slurm, else the current directory)\n"
          "  --tag TEXT             label recorded in the summary\n"
          "  --list                 list backends, operations, dtypes and variants\n"
          "  --dry-run              print the plan and exit without communicating\n"
          "  -v, --verbose          timestamped per-rank progress (twice: debug)\n"
          "  -h, --help             this help\n"
          "  -V, --version          version\n"
          "\n"
          "Exit status: 0 success, 1 a wrong result or a failed operation, 2 bad input,\n"
          "124 an operation timed out, 128+N stopped by signal N (results so far kept).\n"
          "See collprof(1) for details.\n",
          f);
}

static void spec_defaults(cp_spec_t *s)
{
    memset(s, 0, sizeof(*s));
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        if (collprof_op_info(op)->flags & COLLPROF_OPF_DEFAULT) {
            s->ops[s->nops++] = op;
        }
    }
    s->dtypes[0] = COLLPROF_DTYPE_FLOAT32;
    s->ndtypes = 1;
    s->redops[0] = COLLPROF_REDOP_SUM;
    s->nredops = 1;
    s->sizes[0] = UINT64_C(1) << 20;
    s->sizes[1] = UINT64_C(4) << 20;
    s->sizes[2] = UINT64_C(16) << 20;
    s->nsizes = 3;
    s->inplace[0] = 0;
    s->ninplace = 1;
    s->imb[0].kind = CP_IMB_UNIFORM;
    snprintf(s->imb[0].label, sizeof(s->imb[0].label), "uniform");
    s->nimb = 1;
    s->iters = 20;
    s->warmup = 5;
    s->root = 0;
}

/* Copy a spec; file weights are shared read-only, so duplicate them. */
static int spec_copy(cp_spec_t *dst, const cp_spec_t *src)
{
    *dst = *src;
    for (int i = 0; i < src->nimb; i++) {
        if (src->imb[i].weights != NULL) {
            size_t bytes = (size_t)src->imb[i].file_n * (size_t)src->imb[i].file_n * sizeof(double);
            dst->imb[i].weights = malloc(bytes);
            if (dst->imb[i].weights == NULL) {
                return -1;
            }
            memcpy(dst->imb[i].weights, src->imb[i].weights, bytes);
        }
    }
    return 0;
}

static void spec_free(cp_spec_t *s)
{
    for (int i = 0; i < s->nimb; i++) {
        cp_imbalance_free(&s->imb[i]);
    }
    s->nimb = 0;
}

/* Parse a comma list into a scratch copy; err names the option. */
static int split(const char *what, const char *value, char *scratch, size_t len, char **tok,
                 int max, char *err, size_t errlen)
{
    if (strlen(value) >= len) {
        snprintf(err, errlen, "%s: list is too long", what);
        return -1;
    }
    strcpy(scratch, value);
    int n = cp_split_list(scratch, tok, max);
    if (n < 0) {
        snprintf(err, errlen, "%s: '%s' is not a comma-separated list (empty item or more than %d)",
                 what, value, max);
    }
    return n;
}

static int parse_names(const char *what, const char *value, int (*lookup)(const char *), int count,
                       const char *choices, int *out, int *nout, char *err, size_t errlen)
{
    char scratch[4096], *tok[CP_MAX_LIST];
    if (!strcmp(value, "all")) {
        for (int i = 0; i < count; i++) {
            out[i] = i;
        }
        *nout = count;
        return 0;
    }
    int n = split(what, value, scratch, sizeof(scratch), tok, CP_MAX_LIST, err, errlen);
    if (n < 0) {
        return -1;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        int v = lookup(tok[i]);
        if (v < 0) {
            snprintf(err, errlen, "unknown %s '%s' (choose from %s, or all)", what, tok[i],
                     choices);
            return -1;
        }
        int dup = 0;
        for (int j = 0; j < m; j++) {
            dup |= out[j] == v;
        }
        if (!dup) {
            if (m >= count) {
                break;
            }
            out[m++] = v;
        }
    }
    *nout = m;
    return 0;
}

static int parse_sizes(const char *what, const char *value, cp_spec_t *s, char *err, size_t errlen)
{
    char scratch[4096], *tok[CP_MAX_LIST];
    int n = split(what, value, scratch, sizeof(scratch), tok, CP_MAX_LIST, err, errlen);
    if (n < 0) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char why[256];
        if (cp_parse_size(tok[i], &s->sizes[i], why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s: %s", what, why);
            return -1;
        }
    }
    s->nsizes = n;
    s->sizes_are_bytes = 0;
    return 0;
}

static int parse_names_into(const char *what, const char *value, char (*out)[64], int *nout,
                            char *err, size_t errlen)
{
    char scratch[4096], *tok[CP_MAX_LIST];
    if (!strcmp(value, "all")) {
        *nout = 0;
        return 0;
    }
    int n = split(what, value, scratch, sizeof(scratch), tok, CP_MAX_LIST, err, errlen);
    if (n < 0) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (strlen(tok[i]) >= 64) {
            snprintf(err, errlen, "%s: name '%.40s...' is too long", what, tok[i]);
            return -1;
        }
        snprintf(out[i], 64, "%s", tok[i]);
    }
    *nout = n;
    return 0;
}

static int parse_inplace(const char *value, cp_spec_t *s, char *err, size_t errlen)
{
    if (!strcmp(value, "out")) {
        s->inplace[0] = 0;
        s->ninplace = 1;
    } else if (!strcmp(value, "in")) {
        s->inplace[0] = 1;
        s->ninplace = 1;
    } else if (!strcmp(value, "both")) {
        s->inplace[0] = 0;
        s->inplace[1] = 1;
        s->ninplace = 2;
    } else {
        snprintf(err, errlen, "--inplace: '%s' is not out, in or both", value);
        return -1;
    }
    return 0;
}

static int parse_imbalance(const char *value, cp_spec_t *s, char *err, size_t errlen)
{
    char scratch[4096], *tok[CP_MAX_IMB];
    int n = split("--imbalance", value, scratch, sizeof(scratch), tok, CP_MAX_IMB, err, errlen);
    if (n < 0) {
        return -1;
    }
    cp_imbalance_t imb[CP_MAX_IMB];
    for (int i = 0; i < n; i++) {
        if (cp_imbalance_parse(tok[i], &imb[i], err, errlen) != 0) {
            for (int j = 0; j < i; j++) {
                cp_imbalance_free(&imb[j]);
            }
            return -1;
        }
    }
    spec_free(s);
    memcpy(s->imb, imb, sizeof(imb[0]) * (size_t)n);
    s->nimb = n;
    return 0;
}

static int parse_count_opt(const char *what, const char *value, long lo, long hi, int *out,
                           char *err, size_t errlen)
{
    long v;
    if (cp_parse_int(value, lo, hi, &v) != 0) {
        snprintf(err, errlen, "%s: '%s' is not a whole number in %ld..%ld", what, value, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Byte sweep: minbytes..maxbytes multiplying by factor, as nccl-tests -b/-e/-f. */
static int build_sweep(cp_spec_t *s, uint64_t minb, uint64_t maxb, long factor, char *err,
                       size_t errlen)
{
    if (minb > maxb) {
        snprintf(err, errlen, "-b %llu is larger than -e %llu", (unsigned long long)minb,
                 (unsigned long long)maxb);
        return -1;
    }
    int n = 0;
    for (uint64_t b = minb; b <= maxb; b *= (uint64_t)factor) {
        if (n == CP_MAX_LIST) {
            snprintf(err, errlen, "-b/-e/-f: the sweep has more than %d sizes; raise -f",
                     CP_MAX_LIST);
            return -1;
        }
        s->sizes[n++] = b;
        if (b > maxb / (uint64_t)factor) {
            break;
        }
    }
    s->nsizes = n;
    s->sizes_are_bytes = 1;
    return 0;
}

static int lookup_op(const char *n)
{
    return cp_coll_from_name(n);
}

static int lookup_mem(const char *n)
{
    for (int m = 0; m < COLLPROF_MEM_COUNT; m++) {
        if (!strcmp(n, collprof_memtype_name(m))) {
            return m;
        }
    }
    return -1;
}

int cp_spec_set(cp_spec_t *s, const char *key, const char *value, char *err, size_t errlen)
{
    if (!strcmp(key, "mem") || !strcmp(key, "memory")) {
        if (!strcmp(value, "auto")) {
            s->nmems = 0;
            return 0;
        }
        return parse_names("memory type", value, lookup_mem, COLLPROF_MEM_COUNT,
                           "host, pinned, device, auto", s->mems, &s->nmems, err, errlen);
    }
    if (!strcmp(key, "ops")) {
        return parse_names("operation", value, lookup_op, COLLPROF_OP_COUNT,
                           "allreduce, allgather, reducescatter, alltoall, alltoallv, broadcast, "
                           "reduce, gather, scatter, barrier, sendrecv",
                           s->ops, &s->nops, err, errlen);
    }
    if (!strcmp(key, "dtypes") || !strcmp(key, "dtype")) {
        return parse_names("dtype", value, cp_dtype_from_name, COLLPROF_DTYPE_COUNT,
                           "int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, "
                           "float64",
                           s->dtypes, &s->ndtypes, err, errlen);
    }
    if (!strcmp(key, "redops") || !strcmp(key, "redop")) {
        return parse_names("reduction", value, cp_redop_from_name, COLLPROF_REDOP_COUNT,
                           "sum, prod, min, max", s->redops, &s->nredops, err, errlen);
    }
    if (!strcmp(key, "counts")) {
        return parse_sizes("counts", value, s, err, errlen);
    }
    if (!strcmp(key, "bytes")) {
        if (parse_sizes("bytes", value, s, err, errlen) != 0) {
            return -1;
        }
        s->sizes_are_bytes = 1;
        return 0;
    }
    if (!strcmp(key, "backends")) {
        return parse_names_into("backends", value, s->backends, &s->nbackends, err, errlen);
    }
    if (!strcmp(key, "variants")) {
        return parse_names_into("variants", value, s->variants, &s->nvariants, err, errlen);
    }
    if (!strcmp(key, "inplace")) {
        return parse_inplace(value, s, err, errlen);
    }
    if (!strcmp(key, "imbalance")) {
        return parse_imbalance(value, s, err, errlen);
    }
    if (!strcmp(key, "iters")) {
        return parse_count_opt("iters", value, 1, 1000000, &s->iters, err, errlen);
    }
    if (!strcmp(key, "warmup")) {
        return parse_count_opt("warmup", value, 0, 1000000, &s->warmup, err, errlen);
    }
    if (!strcmp(key, "root")) {
        return parse_count_opt("root", value, 0, 1 << 24, &s->root, err, errlen);
    }
    snprintf(err, errlen,
             "unknown key '%s' (use backends, variants, ops, dtypes, redops, counts, bytes, "
             "inplace, imbalance, mem, iters, warmup or root)",
             key);
    return -1;
}

int cp_matrix_load(const char *path, const cp_spec_t *base, cp_options_t *opt, char *err,
                   size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot read matrix file '%s': %s", path, strerror(errno));
        return -1;
    }
    char line[8192];
    int lineno = 0, rc = -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            snprintf(err, errlen, "%s:%d: line too long", path, lineno);
            goto out;
        }
        char *hash = strchr(line, '#');
        if (hash != NULL) {
            *hash = '\0';
        }
        char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
        if (tok == NULL) {
            continue;
        }
        cp_spec_t *grown = realloc(opt->specs, sizeof(cp_spec_t) * (size_t)(opt->nspecs + 1));
        if (grown == NULL) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        opt->specs = grown;
        cp_spec_t *s = &opt->specs[opt->nspecs];
        if (spec_copy(s, base) != 0) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        opt->nspecs++;
        s->line = lineno;
        for (; tok != NULL; tok = strtok_r(NULL, " \t\r\n", &save)) {
            char *eq = strchr(tok, '=');
            if (eq == NULL || eq == tok || eq[1] == '\0') {
                snprintf(err, errlen, "%s:%d: '%s' is not key=value", path, lineno, tok);
                goto out;
            }
            *eq = '\0';
            char why[1024];
            if (cp_spec_set(s, tok, eq + 1, why, sizeof(why)) != 0) {
                snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
                goto out;
            }
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read matrix file '%s': %s", path, strerror(errno));
        goto out;
    }
    if (opt->nspecs == 0) {
        snprintf(err, errlen, "matrix file '%s' has no lines to run", path);
        goto out;
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}

int cp_cli_parse(int argc, char **argv, cp_options_t *opt, char *err, size_t errlen)
{
    cp_spec_t base;
    uint64_t minb = 0, maxb = 0;
    long factor = 2;
    int have_counts = 0, have_sweep = 0;

    memset(opt, 0, sizeof(*opt));
    opt->check = 1;
    opt->sync_barrier = 1;
    opt->timeout_s = -1; /* derived per cell */
    spec_defaults(&base);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":b:e:f:n:w:c:d:o:r:B:vhV", long_opts, NULL)) != -1) {
        char why[1024];
        int rc = 0;
        why[0] = '\0';
        switch (c) {
        case OPT_NP:
            rc = parse_count_opt("--np", optarg, 1, 1024, &opt->np, why, sizeof(why));
            break;
        case OPT_BACKENDS: rc = cp_spec_set(&base, "backends", optarg, why, sizeof(why)); break;
        case OPT_OPS: rc = cp_spec_set(&base, "ops", optarg, why, sizeof(why)); break;
        case OPT_COUNTS:
            rc = cp_spec_set(&base, "counts", optarg, why, sizeof(why));
            have_counts = 1;
            break;
        case 'b':
        case 'e':
            rc = cp_parse_size(optarg, c == 'b' ? &minb : &maxb, why, sizeof(why));
            have_sweep = 1;
            break;
        case 'f':
            if (cp_parse_int(optarg, 2, 1024, &factor) != 0) {
                snprintf(why, sizeof(why), "-f: '%s' is not a whole number in 2..1024", optarg);
                rc = -1;
            }
            have_sweep = 1;
            break;
        case 'n': rc = cp_spec_set(&base, "iters", optarg, why, sizeof(why)); break;
        case 'w': rc = cp_spec_set(&base, "warmup", optarg, why, sizeof(why)); break;
        case 'c': rc = parse_count_opt("-c", optarg, 0, 1, &opt->check, why, sizeof(why)); break;
        case 'd': rc = cp_spec_set(&base, "dtypes", optarg, why, sizeof(why)); break;
        case 'o': rc = cp_spec_set(&base, "redops", optarg, why, sizeof(why)); break;
        case 'r': rc = cp_spec_set(&base, "root", optarg, why, sizeof(why)); break;
        case OPT_VARIANTS: rc = cp_spec_set(&base, "variants", optarg, why, sizeof(why)); break;
        case OPT_INPLACE: rc = cp_spec_set(&base, "inplace", optarg, why, sizeof(why)); break;
        case OPT_IMBALANCE: rc = cp_spec_set(&base, "imbalance", optarg, why, sizeof(why)); break;
        case OPT_MEM: rc = cp_spec_set(&base, "mem", optarg, why, sizeof(why)); break;
        case OPT_MATRIX:
        case OPT_OUTDIR:
        case OPT_TAG: {
            char *dst = c == OPT_MATRIX   ? opt->matrix_file
                        : c == OPT_OUTDIR ? opt->output_dir
                                          : opt->tag;
            size_t cap = c == OPT_TAG ? sizeof(opt->tag) : sizeof(opt->output_dir);
            if (optarg[0] == '\0' || strlen(optarg) >= cap) {
                snprintf(why, sizeof(why), "%s: value is empty or too long", argv[optind - 1]);
                rc = -1;
            } else {
                snprintf(dst, cap, "%s", optarg);
            }
            break;
        }
        case OPT_LIST: opt->list = 1; break;
        case OPT_DRYRUN: opt->dry_run = 1; break;
        case OPT_SYNC:
            if (!strcmp(optarg, "barrier") || !strcmp(optarg, "none")) {
                opt->sync_barrier = !strcmp(optarg, "barrier");
            } else {
                snprintf(why, sizeof(why), "--sync: '%s' is not barrier or none", optarg);
                rc = -1;
            }
            break;
        case OPT_TIMEOUT: {
            char *end = NULL;
            errno = 0;
            double t = strtod(optarg, &end);
            if (errno != 0 || end == optarg || *end != '\0' || !(t >= 0 && t <= 1e6)) {
                snprintf(why, sizeof(why),
                         "--timeout: '%s' is not a number of seconds in 0..1000000 (0: none)",
                         optarg);
                rc = -1;
            } else {
                opt->timeout_s = t;
            }
            break;
        }
        case OPT_LAUNCHER:
            if (!strcmp(optarg, "auto")) {
                opt->launch_mode = CP_LAUNCH_AUTO;
            } else if (!strcmp(optarg, "embedded")) {
                opt->launch_mode = CP_LAUNCH_EMBEDDED;
            } else if (!strcmp(optarg, "mpirun")) {
                opt->launch_mode = CP_LAUNCH_MPIRUN;
            } else {
                snprintf(why, sizeof(why), "--launcher: '%s' is not auto, embedded or mpirun",
                         optarg);
                rc = -1;
            }
            break;
        case 'B':
            if (strchr(optarg, '=') == NULL || optarg[0] == '=' || strlen(optarg) >= 256 ||
                opt->nbackend_opts >= 32) {
                snprintf(why, sizeof(why), "-B: '%s' is not KEY=VALUE (at most 32, 255 chars)",
                         optarg);
                rc = -1;
            } else {
                snprintf(opt->backend_opts[opt->nbackend_opts++], 256, "%s", optarg);
            }
            break;
        case OPT_OFI_PROVIDER:
        case OPT_OFI_CHANNELS: {
            /* first-class spellings of -B ofi-provider=NAME / -B ofi-channels=N */
            const char *key = c == OPT_OFI_PROVIDER ? "ofi-provider" : "ofi-channels";
            long v;
            if (c == OPT_OFI_CHANNELS && cp_parse_int(optarg, 1, CP_OFI_MAX_CHANNELS, &v) != 0) {
                snprintf(why, sizeof(why), "--ofi-channels: '%s' is not a whole number in 1..%d",
                         optarg, CP_OFI_MAX_CHANNELS);
                rc = -1;
            } else if (optarg[0] == '\0' || strlen(optarg) + strlen(key) + 1 >= 256 ||
                       opt->nbackend_opts >= 32) {
                snprintf(why, sizeof(why), "%s: '%s' is empty or too long (or over 32 options)",
                         argv[optind - 1], optarg);
                rc = -1;
            } else {
                snprintf(opt->backend_opts[opt->nbackend_opts++], 256, "%s=%s", key, optarg);
            }
            break;
        }
        case OPT_LINK_GBPS: {
            char *end = NULL;
            errno = 0;
            double v = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || errno != 0 || !(v > 0.0) || v > 1e6) {
                snprintf(why, sizeof(why), "--link-gbps: '%s' is not a number in (0, 1e6]", optarg);
                rc = -1;
            } else {
                opt->link_gbps = v;
            }
            break;
        }
        case 'v': opt->verbose++; break;
        case 'h': opt->help = 1; break;
        case 'V': opt->version = 1; break;
        case ':':
            snprintf(why, sizeof(why), "option '%s' needs a value", argv[optind - 1]);
            rc = -1;
            break;
        case '?':
        default:
            snprintf(why, sizeof(why), "unknown option '%s' (see collprof --help)",
                     argv[optind - 1]);
            rc = -1;
            break;
        }
        if (rc != 0) {
            snprintf(err, errlen, "%s", why);
            goto fail;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s' (see collprof --help)", argv[optind]);
        goto fail;
    }
    if (have_counts && have_sweep) {
        snprintf(err, errlen, "use either --counts or -b/-e/-f, not both");
        goto fail;
    }
    if (have_sweep) {
        if (minb == 0) {
            minb = maxb ? maxb : UINT64_C(32) << 20;
        }
        if (maxb == 0) {
            maxb = minb;
        }
        if (build_sweep(&base, minb, maxb, factor, err, errlen) != 0) {
            goto fail;
        }
    }
    if (opt->matrix_file[0] != '\0') {
        if (cp_matrix_load(opt->matrix_file, &base, opt, err, errlen) != 0) {
            goto fail;
        }
        spec_free(&base);
    } else {
        opt->specs = malloc(sizeof(cp_spec_t));
        if (opt->specs == NULL) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        opt->specs[0] = base; /* takes ownership of base's file weights */
        opt->nspecs = 1;
    }
    return 0;
fail:
    spec_free(&base);
    cp_cli_free(opt);
    return -1;
}

void cp_cli_free(cp_options_t *opt)
{
    for (int i = 0; i < opt->nspecs; i++) {
        spec_free(&opt->specs[i]);
    }
    free(opt->specs);
    opt->specs = NULL;
    opt->nspecs = 0;
}
