#include "config.h"

/*
 * The options (cli.h, cli_int.h): one table drives getopt_long, the parsing and --help;
 * then the specs are finished and checked together.
 */

#include "cli/cli_int.h"

#include "colls/colls.h"
#include "colls/data.h"
#include "runner/replay_gaps.h"
#include "runner/split.h"
#include "base/util.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECTION(title)                                                                             \
    {                                                                                              \
        NULL, 0, NULL, NULL, NULL, 0, 0, title, NULL                                               \
    }
#define NOTE(text)                                                                                 \
    {                                                                                              \
        "", 0, NULL, NULL, NULL, 0, 0, text, NULL                                                  \
    }
#define SPEC(name, s, arg, key, help)                                                              \
    {                                                                                              \
        name, s, arg, cli_h_spec, key, 0, 0, help, NULL                                            \
    }

const cli_opt_t cli_opts[] = {
    SECTION("Launching (ranks bootstrap through PMIx):"),
    {"np", 0, "N", cli_h_int, "--np 1 1024", OPT_FIELD(np),
     "self-launch N local ranks (embedded PMIx server)", NULL},
    {"launcher", 0, "MODE", cli_h_launcher, NULL, 0, 0, "embedded or mpirun, for --np", "embedded"},
    NOTE("(or run under: mpirun -np N collprof ... | srun --mpi=pmix -n N collprof ...)"),
    SECTION("The matrix (each list is comma-separated; 'all' selects everything):"),
    SPEC("backends", 0, "LIST", "backends", "backends to run (default: all that load)"),
    {"variants", 0, "LIST", cli_h_variants, "variants", 0, 0,
     "variants, e.g. default,ring (default: all; a replay:\n"
     "default, or once per variant given)",
     NULL},
    SPEC("ops", 0, "LIST", "ops", NULL),
    {"counts", 0, "LIST", cli_h_counts, "counts", 0, 0, "element counts, K/M/G suffixes", NULL},
    {"minbytes", 'b', "SIZE", cli_h_sweep_bound, NULL, 0, 0,
     "byte sweep start, as in nccl-tests (replaces --counts)", NULL},
    {"maxbytes", 'e', "SIZE", cli_h_sweep_bound, NULL, 0, 0, "byte sweep end", NULL},
    {"stepfactor", 'f', "F", cli_h_sweep_factor, NULL, 0, 0, "byte sweep multiplier (default: 2)",
     NULL},
    SPEC("dtype", 'd', "LIST", "dtypes", NULL),
    SPEC("redop", 'o', "LIST", "redops", NULL),
    SPEC("root", 'r', "N", "root", "root rank of rooted operations"),
    SPEC("inplace", 0, "MODE", "inplace", "out, in or both"),
    SPEC("imbalance", 0, "LIST", "imbalance",
         "alltoallv traffic; allgatherv, gatherv, scatterv block\n"
         "sizes: uniform, linear, spread:S, moe[:HOT[:BIAS]],\n"
         "file:PATH"),
    SPEC("mem", 0, "LIST", "mem",
         "buffer memory: host, pinned, device, or auto (default:\n"
         "auto, the backend's own: host where it offers host\n"
         "memory, else its first kind, e.g. device)"),
    {"matrix", 0, "FILE", cli_h_string, NULL, OPT_FIELD(matrix_file),
     "read the matrix from FILE (see collprof(1))", NULL},
    SECTION("Measurement:"),
    SPEC("iters", 'n', "N", "iters", "timed iterations per cell"),
    SPEC("warmup", 'w', "N", "warmup", "warm-up iterations per cell"),
    {"check", 'c', "MODE", cli_h_check, NULL, 0, 0,
     "which results are verified exactly (the warm-up never):\n"
     "last: one extra run after the timed loop, not the timed\n"
     "iterations' own outputs; every: each timed iteration's\n"
     "output (fresh inputs before each, the fill and check\n"
     "not timed); sample:K: timed iterations K, 2K, ... and\n"
     "the last; 0: none; 1: the default (default: last)",
     NULL},
    {"sync", 0, "MODE", cli_h_sync, NULL, 0, 0,
     "barrier: a barrier (not timed) before each operation;\n"
     "none: operations back to back; batch[:N]: a barrier,\n"
     "then N operations timed together, divided by N, each\n"
     "sample (nccl-tests' way; N default 20)",
     "barrier"},
    {"counters", 0, "LIST", cli_h_counters, NULL, 0, 0,
     "hardware and host counters each node's first rank reads\n"
     "just before and after every cell's loop (not timed;\n"
     "--screen: each pair's NICs, its path check):\n"
     "auto (all there are), none, or a list of net, ib\n"
     "(InfiniBand and EFA), host, gpu (NVML) (default: auto)",
     "auto"},
    {"alloc", 0, "KIND", cli_h_alloc, NULL, 0, 0,
     "host buffers: malloc (the backend's own), mmap, or\n"
     "hugepages (MAP_HUGETLB, else transparent huge pages)\n"
     "(default: malloc)",
     NULL},
    {"rotate-buffers", 0, "N", cli_h_int, "--rotate-buffers 1 1024", OPT_FIELD(rotate),
     "cycle operations through N copies of the buffers, so\n"
     "that one does not find the last one's data in cache",
     "1"},
    {"timeout", 0, "SECONDS", cli_h_timeout, NULL, 0, 0,
     "watchdog: longest one operation (or any other step) may\n"
     "take before the run stops with a report of the ranks\n"
     "that did not arrive (default: 60 s + 1 s per 10 MB of\n"
     "the cell's largest buffer; 0: no watchdog)",
     NULL},
    {"repeats", 0, "R", cli_h_int, "--repeats 1 1000", OPT_FIELD(repeats),
     "run each cell R times, each on fresh communicators, and\n"
     "report the median of the repeats' p50s with its 95 %\n"
     "interval (from 6 repeats) and bimodal cells (default: 1)",
     NULL},
    {"fresh-buffers", 0, NULL, cli_h_flag, NULL, OPT_FIELD(fresh_buffers),
     "with repeats: new buffers for every repeat too (default:\n"
     "the cell's buffers, where its backend can share them)",
     NULL},
    {"min-time", 0, "SECONDS", cli_h_adaptive, NULL, OPT_FIELD(min_time_s),
     "repeat each cell until its repeats took SECONDS", NULL},
    {"target-ci", 0, "PCT", cli_h_adaptive, NULL, OPT_FIELD(target_ci_pct),
     "repeat each cell until its 95 % interval is at most PCT\n"
     "percent of the median wide (6 repeats or more)",
     NULL},
    {"max-time", 0, "SECONDS", cli_h_adaptive, NULL, OPT_FIELD(max_time_s),
     "start no further repeat of a cell after SECONDS in it\n"
     "(default: none; 60, or --min-time if longer, with\n"
     "--min-time or --target-ci)",
     NULL},
    {"link-sweep", 0, NULL, cli_h_flag, NULL, OPT_FIELD(link_sweep),
     "measure every pair of nodes instead of the matrix:\n"
     "node x node bandwidth and latency (see collprof(1))",
     NULL},
    {"screen", 0, NULL, cli_h_flag, NULL, OPT_FIELD(screen),
     "find the bad nodes and links: random pairings of the\n"
     "nodes, each pair judged against the median of all (of\n"
     "its path class, same-switch or cross-switch, under a\n"
     "Slurm tree topology), suspects confirmed with another\n"
     "partner (collprof(1)); exit status 0 healthy, 1 flagged,\n"
     "2 inconclusive",
     NULL},
    {"screen-rounds", 0, "R", cli_h_int, "--screen-rounds 1 64", OPT_FIELD(screen_rounds),
     "random rounds of the screen before its confirmation\n"
     "round (default: 3)",
     NULL},
    {"screen-threshold", 0, "X", cli_h_screen_thr, NULL, 0, 0,
     "a pair is slow below X times the reference (default:\n"
     "0.8; a noisy cluster may want less)",
     NULL},
    {"screen-validate", 0, "on|off", cli_h_screen_validate, NULL, 0, 0,
     "after the rounds, one allreduce of the healthy nodes,\n"
     "halved in parallel when it fails (default: on)",
     NULL},
    {"baseline", 0, "FILE", cli_h_string, NULL, OPT_FIELD(baseline),
     "judge the screen against a baseline (collprof-report\n"
     "baseline) instead of its own median: each pair against\n"
     "its path class's row, else the \"any\" row",
     NULL},
    {"seed", 0, "N", cli_h_int, "--seed 1 2147483647", OPT_FIELD(seed),
     "the screen's pairings (default: drawn, printed and\n"
     "recorded, so that a run can be repeated)",
     NULL},
    {"split", 0, "LIST", cli_h_split, NULL, 0, 0,
     "also run each cell on node (the ranks of each node) and\n"
     "cross (one rank per node) groups, every group at once\n"
     "(nccl-tests' split communicators; default: none)",
     NULL},
    {"replay", 0, "TRACE", cli_h_string, NULL, OPT_FIELD(replay),
     "replay a trace (collprof-report import --trace) instead\n"
     "of the matrix: its groups, its ops in order, each op\n"
     "checked exactly in the replays --check names (last:\n"
     "the last replay alone; every; sample:K; 0: none)",
     NULL},
    {"replay-iters", 0, "N", cli_h_int, "--replay-iters 1 100000", OPT_FIELD(replay_iters),
     "times the whole trace is replayed (default: 5)", NULL},
    {"shrink", 0, NULL, cli_h_flag, NULL, OPT_FIELD(replay_shrink),
     "replay a trace recorded on more ranks than the run\n"
     "has: trace rank r on rank r mod N (docs/replay.md)",
     NULL},
    {"gaps", 0, "MODE", cli_h_string, NULL, OPT_FIELD(gaps),
     "time between a replay's ops: none (back to back, the\n"
     "default), trace[:SCALE] (each op at its recorded offset,\n"
     "the gaps times SCALE) or compute[:SCALE] (each gap\n"
     "filled with work: a busy kernel on the device where\n"
     "the backend has one (nccl), else a memory-bandwidth\n"
     "loop on the host)",
     NULL},
    {"replay-ops", 0, "RANGE", cli_h_string, NULL, OPT_FIELD(replay_ops),
     "replay only the ops whose seq is in RANGE (A-B, A-,\n"
     "-B or A; each rank's own seqs), with their gaps",
     NULL},
    {"replay-order", 0, "ORDER", cli_h_string, NULL, OPT_FIELD(replay_order),
     "nccl (each op posted on its group's queue, completed\n"
     "at the next op of its group, as NCCL runs it) or\n"
     "program (in order, collectives blocking); default:\n"
     "nccl for a trace imported from NCCL, else program",
     NULL},
    {"sweep-sizes", 0, "S,L", cli_h_sweep_sizes, NULL, 0, 0,
     "link sweep messages: latency at S, bandwidth at L\n"
     "bytes (default: 8,4M)",
     NULL},
    {"backend-opt", 'B', "K=V", cli_h_backend_opt, NULL, 0, 0,
     "option for a backend plugin (the last one of a key wins)", NULL},
    NOTE("(a backend's options marked --NAME in --help-backend also take --NAME VALUE)"),
    {"link-gbps", 0, "X", cli_h_link_gbps, NULL, 0, 0,
     "link rate in Gbit/s for 'BusBW as % of link rate' when\n"
     "the provider reports none (recorded with the run)",
     NULL},
    SECTION("Health check (this node alone; exit 0 ok, 1 failed, 2 misconfigured):"),
    {"healthcheck", 0, NULL, cli_h_flag, NULL, OPT_FIELD(healthcheck),
     "check this node alone: host memory copy, every\n"
     "operation of the local backends (exact), each NIC's\n"
     "loopback; prints one line (NHC's form on failure)",
     NULL},
    {"healthcheck-time", 0, "S", cli_h_real, "--healthcheck-time 5 3600", OPT_FIELD(hc_time_s),
     "the whole check's budget; a check still running then\n"
     "fails by name (default: 50; Slurm kills at 60)",
     NULL},
    {"healthcheck-drain", 0, NULL, cli_h_flag, NULL, OPT_FIELD(hc_drain),
     "on failure drain this node (scontrol, reason\n"
     "'collprof: healthcheck: ...'), for HealthCheckProgram",
     NULL},
    {"healthcheck-confirm", 0, "K", cli_h_int, "--healthcheck-confirm 1 100", OPT_FIELD(hc_confirm),
     "failures in a row before a drain (default: 2)", NULL},
    {"healthcheck-state", 0, "FILE", cli_h_string, NULL, OPT_FIELD(hc_state),
     "where the failures in a row are counted (default:\n"
     "/run/collprof/healthcheck-NODE)",
     NULL},
    {"healthcheck-min-copy", 0, "GBS", cli_h_real, "--healthcheck-min-copy 0.001 10000",
     OPT_FIELD(hc_min_copy), "host memcpy floor in GB/s (default: 1)", NULL},
    {"healthcheck-max-ms", 0, "MS", cli_h_real, "--healthcheck-max-ms 0.001 100000",
     OPT_FIELD(hc_max_ms),
     "ceiling on each cell's p50 in ms (the medium cells\n"
     "move 1 MiB per rank; default: 1000)",
     NULL},
    {"healthcheck-nics", 0, "LIST", cli_h_string, NULL, OPT_FIELD(hc_nics),
     "interfaces whose loopback is checked, or none\n"
     "(default: every interface up with an IPv4 address\n"
     "but lo)",
     NULL},
    SECTION("Output:"),
    {"output-dir", 0, "DIR", cli_h_string, NULL, OPT_FIELD(output_dir),
     "where the summary goes (default: $SLURM_SUBMIT_DIR\n"
     "under Slurm, else the current directory)",
     NULL},
    {"tag", 0, "TEXT", cli_h_text, NULL, OPT_FIELD(tag), "label recorded in the summary", NULL},
    {"log-dir", 0, "DIR", cli_h_string, NULL, OPT_FIELD(log_dir),
     "also write one log per rank to DIR: every step with an\n"
     "ISO-8601 timestamp, whatever -v says (default: none)",
     NULL},
    {"list", 0, NULL, cli_h_flag, NULL, OPT_FIELD(list),
     "list backends, operations, dtypes, variants, options", NULL},
    {"help-backend", 0, "NAME", cli_h_string, NULL, OPT_FIELD(help_backend),
     "a backend's operations, variants and options, in full", NULL},
    {"dry-run", 0, NULL, cli_h_flag, NULL, OPT_FIELD(dry_run),
     "print the plan and exit without communicating", NULL},
    {"verbose", 'v', NULL, cli_h_more, NULL, OPT_FIELD(verbose),
     "timestamped per-rank progress (twice: debug)", NULL},
    {"help", 'h', NULL, cli_h_flag, NULL, OPT_FIELD(help), "this help", NULL},
    {"version", 'V', NULL, cli_h_flag, NULL, OPT_FIELD(version), "version", NULL},
};

#define N_CLI_OPTS (sizeof(cli_opts) / sizeof(cli_opts[0]))
const size_t cli_nopts = N_CLI_OPTS;
/* getopt_long's value for a long-only option: OPT_LONG + its row */
#define OPT_LONG 256

/* getopt_long's tables from cli_opts; longs has N_CLI_OPTS + 1 entries. */
static void getopt_tables(struct option *longs, char *shorts)
{
    size_t k = 0, s = 0;
    shorts[s++] = ':';
    for (size_t i = 0; i < N_CLI_OPTS; i++) {
        const cli_opt_t *o = &cli_opts[i];
        if (o->handle == NULL) {
            continue;
        }
        int has_arg = o->arg != NULL ? required_argument : no_argument;
        longs[k++] = (struct option){o->name, has_arg, NULL,
                                     o->short_name ? o->short_name : OPT_LONG + (int)i};
        if (o->short_name != 0) {
            shorts[s++] = (char)o->short_name;
            if (has_arg) {
                shorts[s++] = ':';
            }
        }
    }
    longs[k] = (struct option){NULL, 0, NULL, 0};
    shorts[s] = '\0';
}

/* The row getopt_long's return value c names; NULL for ':' and '?'. */
static const cli_opt_t *find_opt(int c)
{
    if (c >= OPT_LONG && c < OPT_LONG + (int)N_CLI_OPTS) {
        return &cli_opts[c - OPT_LONG];
    }
    for (size_t i = 0; i < N_CLI_OPTS; i++) {
        if (cli_opts[i].handle != NULL && cli_opts[i].short_name == c) {
            return &cli_opts[i];
        }
    }
    return NULL;
}

/*
 * --link-sweep: the spec becomes its own (sendrecv of float32 at the two
 * sizes, out of place, the default variant); the backends, memory,
 * iterations and warm-up given stay.
 */
static int sweep_spec(cli_state_t *st, char *err, size_t errlen)
{
    cp_options_t *opt = st->opt;
    cp_spec_t *s = &st->base;
    if (opt->matrix_file[0] != '\0' || st->have_counts || st->have_sweep) {
        snprintf(err, errlen,
                 "%s sets its own sizes (--sweep-sizes): it takes no "
                 "--matrix, --counts or -b/-e/-f",
                 opt->screen ? "--screen" : "--link-sweep");
        return -1;
    }
    s->ops[0] = COLLPROF_OP_SENDRECV;
    s->nops = 1;
    s->dtypes[0] = COLLPROF_DTYPE_FLOAT32;
    s->ndtypes = 1;
    s->sizes[0] = opt->sweep_bytes[0];
    s->sizes[1] = opt->sweep_bytes[1];
    s->nsizes = 2;
    s->sizes_are_bytes = 1;
    s->inplace[0] = 0;
    s->ninplace = 1;
    snprintf(s->variants[0], sizeof(s->variants[0]), "default");
    s->nvariants = 1;
    return 0;
}

/* --screen runs as a link sweep of its own rounds; its options need it. */
static int screen_options(cp_options_t *opt, char *err, size_t errlen)
{
    if (opt->screen && opt->link_sweep) {
        snprintf(err, errlen,
                 "--screen and --link-sweep: choose one (the screen measures "
                 "a few random pairings, the sweep every pair)");
        return -1;
    }
    if (!opt->screen && (opt->screen_rounds != 0 || opt->seed != 0 || opt->screen_thr > 0 ||
                         opt->baseline[0] != '\0' || opt->screen_validate != 0)) {
        snprintf(err, errlen,
                 "--screen-rounds, --screen-threshold, --screen-validate, --seed and "
                 "--baseline shape the screen: add --screen");
        return -1;
    }
    if (opt->screen) {
        opt->link_sweep = 1;
        opt->screen_rounds = opt->screen_rounds ? opt->screen_rounds : 3;
        opt->screen_thr = opt->screen_thr > 0 ? opt->screen_thr : 0.8;
        opt->screen_validate = opt->screen_validate >= 0;
    }
    return 0;
}

/* --replay replays a trace instead of the matrix; its options need it. */
static int replay_options(cp_options_t *opt, char *err, size_t errlen)
{
    if (opt->replay[0] == '\0' &&
        (opt->replay_iters != 0 || opt->gaps[0] != '\0' || opt->replay_ops[0] != '\0' ||
         opt->replay_shrink || opt->replay_order[0] != '\0')) {
        snprintf(err, errlen,
                 "--replay-iters, --replay-ops, --replay-order, --gaps and --shrink shape a "
                 "replay: add --replay TRACE");
        return -1;
    }
    int mode;
    double scale;
    int64_t lo, hi;
    if (cp_gaps_parse(opt->gaps, &mode, &scale, err, errlen) != 0 ||
        (opt->replay_ops[0] != '\0' &&
         cp_replay_ops_parse(opt->replay_ops, &lo, &hi, err, errlen) != 0)) {
        return -1;
    }
    if (opt->replay_order[0] != '\0' && strcmp(opt->replay_order, "nccl") != 0 &&
        strcmp(opt->replay_order, "program") != 0) {
        snprintf(err, errlen, "--replay-order %s: nccl or program", opt->replay_order);
        return -1;
    }
    if (opt->replay[0] != '\0' && (opt->link_sweep || opt->screen || opt->healthcheck)) {
        snprintf(err, errlen,
                 "--replay replays a trace: leave out --screen, --link-sweep and "
                 "--healthcheck");
        return -1;
    }
    opt->replay_iters = opt->replay_iters > 0 ? opt->replay_iters : 5;
    return 0;
}

/* --healthcheck sets its own matrix; its options need it.  Fills its defaults. */
static int health_options(const cli_state_t *st, char *err, size_t errlen)
{
    cp_options_t *opt = st->opt;
    if (!opt->healthcheck) {
        if (opt->hc_time_s > 0 || opt->hc_drain || opt->hc_confirm || opt->hc_min_copy > 0 ||
            opt->hc_max_ms > 0 || opt->hc_nics[0] != '\0' || opt->hc_state[0] != '\0') {
            snprintf(err, errlen,
                     "the --healthcheck-* options shape the health check: add "
                     "--healthcheck");
            return -1;
        }
        return 0;
    }
    if (opt->screen || opt->link_sweep || opt->split || opt->dry_run || opt->list ||
        opt->matrix_file[0] != '\0' || st->have_counts || st->have_sweep) {
        snprintf(err, errlen,
                 "--healthcheck runs its own fixed checks: it takes no --screen, "
                 "--link-sweep, --split, --dry-run, --list, --matrix, --counts or "
                 "-b/-e/-f");
        return -1;
    }
    if (!opt->hc_drain && (opt->hc_confirm || opt->hc_state[0] != '\0')) {
        snprintf(err, errlen,
                 "--healthcheck-confirm and --healthcheck-state count the failures "
                 "before a drain: add --healthcheck-drain");
        return -1;
    }
    opt->hc_time_s = opt->hc_time_s > 0 ? opt->hc_time_s : 50;
    opt->hc_confirm = opt->hc_confirm > 0 ? opt->hc_confirm : 2;
    opt->hc_min_copy = opt->hc_min_copy > 0 ? opt->hc_min_copy : 1;
    opt->hc_max_ms = opt->hc_max_ms > 0 ? opt->hc_max_ms : 1000;
    return 0;
}

/* After the options: the link sweep's spec, the byte sweep, then the matrix file or the one
 * spec. */
static int finish_specs(cli_state_t *st, char *err, size_t errlen)
{
    cp_options_t *opt = st->opt;
    if (health_options(st, err, errlen) != 0 || screen_options(opt, err, errlen) != 0 ||
        replay_options(opt, err, errlen) != 0) {
        return -1;
    }
    if (opt->link_sweep && sweep_spec(st, err, errlen) != 0) {
        return -1;
    }
    if (opt->link_sweep && opt->split != 0) {
        snprintf(err, errlen, "%s measures pairs of nodes: it takes no --split",
                 opt->screen ? "--screen" : "--link-sweep");
        return -1;
    }
    if (st->have_counts && st->have_sweep) {
        snprintf(err, errlen, "use either --counts or -b/-e/-f, not both");
        return -1;
    }
    if (st->have_sweep) {
        if (st->minb == 0) {
            st->minb = st->maxb ? st->maxb : UINT64_C(32) << 20;
        }
        if (st->maxb == 0) {
            st->maxb = st->minb;
        }
        if (cli_build_sweep(&st->base, st->minb, st->maxb, st->factor, err, errlen) != 0) {
            return -1;
        }
    }
    if (opt->matrix_file[0] != '\0') {
        if (cp_matrix_load(opt->matrix_file, &st->base, opt, err, errlen) != 0) {
            return -1;
        }
        cp_spec_free(&st->base);
        return 0;
    }
    opt->specs = malloc(sizeof(cp_spec_t));
    if (opt->specs == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    opt->specs[0] = st->base; /* takes ownership of base's file weights */
    st->base.nimb = 0;
    opt->nspecs = 1;
    return 0;
}

/*
 * err = why, naming option o as the user spelled it (--counts, or -b (--minbytes)): a
 * reason that starts with another name of it ("counts:", "-f:") gets this
 * one instead, any other gets it in front.
 */
static void name_option(const char *spelled, const cli_opt_t *o, const char *why, char *err,
                        size_t errlen)
{
    static const char *labels[] = {"counts", "bytes",     "iters",       "warmup",
                                   "root",   "backends",  "variants",    "operation",
                                   "dtype",  "reduction", "memory type", NULL};
    char name[96];
    if (o->short_name != 0 && strncmp(spelled, "--", 2) != 0) {
        snprintf(name, sizeof(name), "-%c (--%s)", o->short_name, o->name);
    } else {
        snprintf(name, sizeof(name), "--%s", o->name);
    }
    size_t nl = strcspn(name, " ");
    if (!strncmp(why, name, nl) && (why[nl] == ':' || why[nl] == ' ' || why[nl] == '\0')) {
        snprintf(err, errlen, "%s", why);
        return;
    }
    const char *colon = strstr(why, ": ");
    size_t ll = colon ? (size_t)(colon - why) : 0;
    int relabel = colon != NULL && why[0] == '-' && memchr(why, ' ', ll) == NULL;
    for (int i = 0; colon != NULL && labels[i] != NULL; i++) {
        relabel |= ll == strlen(labels[i]) && !strncmp(why, labels[i], ll);
    }
    snprintf(err, errlen, "%s: %s", name, relabel ? colon + 2 : why);
}

int cp_cli_parse(int argc, char **argv, cp_options_t *opt, char *err, size_t errlen)
{
    struct option longs[N_CLI_OPTS + 1];
    char shorts[2 * N_CLI_OPTS + 2];
    cli_state_t st = {.opt = opt, .factor = 2};

    memset(opt, 0, sizeof(*opt));
    opt->check = 1;
    opt->check_mode = CP_CHECK_DEFAULT;
    opt->counters = CP_CNT_ALL;
    opt->check_k = CP_CHECK_DEFAULT_K;
    opt->timeout_s = -1; /* derived per cell */
    opt->sweep_bytes[0] = 8;
    opt->sweep_bytes[1] = UINT64_C(4) << 20;
    cp_spec_defaults(&st.base);
    st.spelled = "(a default)";
    for (size_t i = 0; i < N_CLI_OPTS; i++) { /* the rows' defaults, through their handlers */
        const cli_opt_t *o = &cli_opts[i];
        if (o->dflt != NULL && o->handle(&st, o, o->dflt, err, errlen) != 0) {
            return -1; /* a default its own handler refuses: a bug here, caught by every test */
        }
    }
    getopt_tables(longs, shorts);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const cli_opt_t *o = find_opt(c);
        st.spelled = argv[optind - 1];
        if (optarg != NULL && optarg == argv[optind - 1] && optind >= 2) {
            st.spelled = argv[optind - 2]; /* "--opt VALUE": the option is the word before */
        }
        if (c == ':') {
            snprintf(err, errlen, "option '%s' needs a value", st.spelled);
            goto fail;
        }
        char why[1024] = "";
        if (o == NULL) {
            int used = 0;
            if (cli_defer_long(&st, optind < argc ? argv[optind] : NULL, &used, why, sizeof(why))) {
                snprintf(err, errlen, "%s", why);
                goto fail;
            }
            optind += used;
            continue;
        }
        if (o->handle(&st, o, optarg, why, sizeof(why)) != 0) {
            name_option(st.spelled, o, why, err, errlen);
            goto fail;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s' (see collprof --help)", argv[optind]);
        goto fail;
    }
    if (cli_check_check(opt, err, errlen) != 0) {
        goto fail;
    }
    if (cli_check_repeats(opt, err, errlen) != 0 || finish_specs(&st, err, errlen) != 0) {
        goto fail;
    }
    if (opt->launch_mode == CP_LAUNCH_MPIRUN && opt->np == 0) {
        snprintf(err, errlen, "--launcher says how --np starts its ranks: give --np N with it");
        goto fail;
    }
    return 0;
fail:
    cp_spec_free(&st.base);
    cp_cli_free(opt);
    return -1;
}

void cp_cli_free(cp_options_t *opt)
{
    for (int i = 0; i < opt->nspecs; i++) {
        cp_spec_free(&opt->specs[i]);
    }
    free(opt->specs);
    opt->specs = NULL;
    opt->nspecs = 0;
}
