#include "config.h"

/*
 * The text summary's header (summary.h): the job (command, tag, world, launcher, Slurm), the
 * backends with their provenance, and the method (repeats, the memory limit, the check, the
 * timing policy), as the run prints them before its first cell; and the /backends rows.
 */

#include "output/summary.h"

#include "colls/colls.h"
#include "cli/bopts.h"
#include "colls/data.h"
#include "screen/links.h"
#include "screen/screen_out.h"
#include "base/log.h"
#include "runner/prov.h"
#include "runner/repeat.h"
#include "base/util.h"
#include "format/best.h"
#include "format/format.h"
#include "format/overlap.h"
#include "format/study.h"
#include "format/world.h"
#include "slurm/slurm_meta.h"
#ifdef CP_HAVE_HDF5
#include "output/h5writer.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

extern char **environ;

void cp_run_backend_row(const cp_run_info_t *ri, int i, collprof_backend_row_t *r)
{
    const cp_plugin_t *p = &ri->plugins[i];
    snprintf(r->name, sizeof(r->name), "%s", p->name);
    snprintf(r->plugin_version, sizeof(r->plugin_version), "%s", p->be ? p->be->version : "");
    snprintf(r->library_version, sizeof(r->library_version), "%s",
             p->caps.library_version ? p->caps.library_version : "");
    if (p->ctx != NULL) {
        snprintf(r->state, sizeof(r->state), "initialised");
    } else if (!cp_plan_uses(ri->plan, i) && p->usable) {
        snprintf(r->state, sizeof(r->state), "not used");
    } else {
        snprintf(r->state, sizeof(r->state), "failed: %.240s", p->error);
    }
    r->link_gbps = p->caps.link_gbps > 0 ? p->caps.link_gbps : 0.0;
    snprintf(r->variants, sizeof(r->variants), "default");
    for (size_t v = 0; v < p->caps.nvariants; v++) {
        strncat(r->variants, ",", sizeof(r->variants) - strlen(r->variants) - 1);
        strncat(r->variants, p->caps.variants[v].name,
                sizeof(r->variants) - strlen(r->variants) - 1);
    }
    cp_bopts_effective(ri->opt, p->be, r->options, sizeof(r->options));
    r->study[0] = '\0';
    for (int op = 0; p->be != NULL && op < COLLPROF_OP_COUNT; op++) {
        if (p->be->study_ops & COLLPROF_BIT(op)) {
            strncat(r->study, r->study[0] ? "," : "", sizeof(r->study) - strlen(r->study) - 1);
            strncat(r->study, collprof_op_name(op), sizeof(r->study) - strlen(r->study) - 1);
        }
    }
}

/* cp_world_node_fn over the boot tables. */
static int boot_node_of(const void *arg, int rank, const char **host)
{
    const cp_boot_t *b = arg;
    *host = cp_boot_host(b, rank);
    return b->node_ids[rank];
}

/* Header lines about the job: command, tag, world, launcher, Slurm. */
static void print_job(FILE *f, const cp_run_info_t *ri)
{
    const cp_boot_t *b = ri->boot;
    char iso[64];
    cp_utc_iso(iso, sizeof(iso));
    fprintf(f, "# collprof %s text summary\n", PACKAGE_VERSION);
    fprintf(f, "created:    %s\n", iso);
    fprintf(f, "command:   ");
    for (int i = 0; i < ri->argc; i++) {
        fprintf(f, " %s", ri->argv[i]);
    }
    fprintf(f, "\n");
    if (ri->opt->tag[0]) {
        fprintf(f, "tag:        %s\n", ri->opt->tag);
    }
    cp_world_print(f, "world:      ", b->nranks, b->nnodes, boot_node_of, b);
    char log0[4400], line[4500];
    if (cp_log_path(0, log0, sizeof(log0)) == 0) {
        cp_format_logs_line(log0, line, sizeof(line));
        fprintf(f, "%s\n", line);
    }
    fprintf(f, "launcher:   %s%s%s\n", b->launcher, b->pmix_version[0] ? ", PMIx " : "",
            b->pmix_version);
    char ch[400];
    fprintf(f, "control:    %s\n", cp_oob_channel(ch, sizeof(ch)));
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    if (job != NULL) {
        fprintf(f, "slurm:      job %s step %s\n", job, step ? step : "-");
    }
    cp_slurm_kv_t kv[CP_SLURM_META_MAX];
    int nkv = cp_slurm_meta(kv, CP_SLURM_META_MAX);
    for (int i = 0; i < nkv; i++) {
        fprintf(f, "slurm:      %s = %s\n", kv[i].key + 6, kv[i].value);
    }
}

/* What a backend's cells are measured with, per memory kind, as the file's rows say it. */
static void print_provenance(FILE *f, const cp_options_t *opt, const cp_plugin_t *p)
{
    for (int m = 0; m < COLLPROF_MEM_COUNT; m++) {
        if (p->prov[m] == NULL) {
            continue;
        }
        collprof_result_row_t row;
        char line[512];
        memset(&row, 0, sizeof(row));
        snprintf(row.memory, sizeof(row.memory), "%s", collprof_memtype_name(m));
        cp_prov_row(p->prov[m], &row);
        if (opt->replay[0] != '\0') { /* a replay: no sync, rotation nor --alloc; its check */
            cp_check_name(cp_check_applied(opt->check, opt->check_mode), opt->check_k, row.check,
                          sizeof(row.check));
        } else {
            cp_policy_row(opt, p->be, m, &row);
        }
        cp_format_provenance(&row, line, sizeof(line));
        fprintf(f, "%s\n", line);
    }
}

/* Header lines about the backends in use and the link rate. */
static void print_backends(FILE *f, const cp_run_info_t *ri)
{
    for (int i = 0; i < ri->nplugins; i++) {
        const cp_plugin_t *p = &ri->plugins[i];
        if (!cp_plan_uses(ri->plan, i)) {
            continue;
        }
        char link[64] = "";
        if (p->caps.link_gbps > 0) {
            snprintf(link, sizeof(link), ", link %g Gbit/s", p->caps.link_gbps);
        }
        fprintf(f, "backend:    %s %s (%s%s)%s%s\n", p->name, p->be ? p->be->version : "?",
                p->caps.library_version ? p->caps.library_version : "?", link,
                p->ctx ? "" : " NOT INITIALISED: ", p->ctx ? "" : p->error);
        char eff[1024];
        cp_bopts_effective(ri->opt, p->be, eff, sizeof(eff));
        if (eff[0] != '\0') {
            fprintf(f, "  options:  %s\n", eff);
        }
        print_provenance(f, ri->opt, p);
    }
    if (ri->opt->link_gbps > 0) {
        fprintf(f, "link:       %g Gbit/s (--link-gbps; used where a backend reports none)\n",
                ri->opt->link_gbps);
    }
}

/* Header lines about how figures are measured, and the environment captured. */
/* The repeats policy (--repeats, --min-time, --target-ci, --max-time, --fresh-buffers). */
static void print_repeats(FILE *f, const cp_run_info_t *ri)
{
    const cp_options_t *o = ri->opt;
    if (!cp_repeat_on(o)) {
        return;
    }
    fprintf(f, "repeats:    each cell %d time%s", o->repeats, o->repeats == 1 ? "" : "s");
    if (o->min_time_s > 0) {
        fprintf(f, ", and on until its repeats took %g s", o->min_time_s);
    }
    if (o->target_ci_pct > 0) {
        fprintf(f, ", and on until its 95%% interval is %g%% of the median wide", o->target_ci_pct);
    }
    if (o->max_time_s > 0) {
        fprintf(f, "; none started after %g s in the cell", o->max_time_s);
    }
    char shared[256] = "";
    for (int i = 0; i < ri->nplugins && !o->fresh_buffers; i++) {
        const cp_plugin_t *p = &ri->plugins[i];
        size_t used = strlen(shared);
        if (p->be != NULL && (p->be->flags & COLLPROF_BACKEND_SHARED_BUFFERS) &&
            used < sizeof(shared)) {
            snprintf(shared + used, sizeof(shared) - used, "%s%s", used ? ", " : "", p->name);
        }
    }
    fprintf(f, ";\n            each on a fresh context of its backend (new communicators), ");
    if (o->fresh_buffers) {
        fprintf(f, "with new buffers");
    } else if (shared[0]) {
        fprintf(f,
                "on the cell's buffers\n            where the backend can share them (%s), "
                "else new ones",
                shared);
    } else {
        fprintf(f, "with new buffers (no backend here shares them)");
    }
    fprintf(f, ";\n            figure: the median of the repeats' p50s with its interval "
               "(docs/metrics.md)\n");
}

/* What the % beside busBW refers to: memcpy on host memory, the device's own copy on device
 * memory (the backend's copy_rate, on rank 0's device). */
static void print_limit(FILE *f, const cp_run_info_t *ri)
{
    int device = 0;
    for (int i = 0; i < ri->plan->ncells; i++) {
        device |= ri->plan->cells[i].memtype == COLLPROF_MEM_DEVICE;
    }
    fprintf(f,
            "limit:      'BusBW N%% of memcpy R' (host memory): R = host memcpy rate at the\n"
            "            cell's size, with one thread per rank of %s's node (at most one per\n"
            "            CPU) copying at once, measured before the cells; /results copy_gbs,\n"
            "            and copy1_gbs with one\n"
            "            thread; see docs/metrics.md; where busBW is 0 (one rank: the\n"
            "            collective is a copy), 'AlgBW N%% of ...' instead\n",
            cp_boot_host(ri->boot, 0));
    if (device) {
        fprintf(
            f, "            'BusBW N%% of device copy R' (device memory): R = device-to-device\n"
               "            copy rate at the cell's size on rank 0's device, timed by its backend\n"
               "            before the cells (/results dcopy_gbs; none: the backend has no such\n"
               "            measurement)\n");
    }
}

/* What --check verified, and what it leaves out. */
static void print_check(FILE *f, const cp_options_t *o)
{
    if (!o->check) {
        fprintf(f, "check:      disabled (--check 0): no result is verified\n");
        return;
    }
    cp_check_t mode = cp_check_applied(o->check, o->check_mode);
    if (mode == CP_CHECK_LAST) {
        fprintf(f, "check:      --check last: exact, every element of one extra run after the\n"
                   "            timed loop, on fresh inputs; the timed iterations' own outputs\n"
                   "            are not checked (a fault in one of them goes unseen: --check\n"
                   "            every or sample:K);");
    } else if (mode == CP_CHECK_EVERY) {
        fprintf(f, "check:      --check every: exact, every element of every timed iteration's\n"
                   "            output, fresh inputs written before each (fill and check not\n"
                   "            timed);");
    } else {
        fprintf(f,
                "check:      --check sample:%d: exact, every element of the output of timed\n"
                "            iterations %d, %d, ... and the last, fresh inputs written before\n"
                "            each of them (fill and check not timed);",
                o->check_k, o->check_k, 2 * o->check_k);
    }
    fprintf(f, " the warm-up is not checked;\n"
               "            #wrong = elements that differ (the worst checked output per rank,\n"
               "            summed over ranks)\n");
}

static void print_method(FILE *f, const cp_run_info_t *ri)
{
    const cp_options_t *o = ri->opt;
    if (o->sync == CP_SYNC_BATCH) {
        fprintf(f,
                "timing:     per cell: warm-up, then timed samples (--sync batch:%d): a barrier\n"
                "            (not timed), then %d operations back to back timed together; a\n"
                "            sample is their time / %d (as nccl-tests' -n %d);\n",
                o->batch, o->batch, o->batch, o->batch);
    } else {
        fprintf(f,
                "timing:     per cell: warm-up, then timed iterations (--sync %s);\n"
                "            %s;\n",
                cp_sync_name(o->sync),
                o->sync_barrier ? "a barrier (not timed) before each iteration"
                                : "iterations back to back (skew included)");
    }
    fprintf(f,
            "            each rank times each iteration with the timer its backend's 'measured'\n"
            "            line names (CLOCK_MONOTONIC around each blocking call, or the backend's\n"
            "            device timer, which times a cell's iterations back to back on its\n"
            "            stream without barriers: 'sync none' on that line); an iteration's\n"
            "            time is the max over ranks; 'time' is the mean of those, p50/p95/p99\n"
            "            nearest-rank\n");
    fprintf(
        f, "bandwidth:  algBW = S / time (GB/s = 1e9 B/s); busBW = algBW x factor (allreduce\n"
           "            2(n-1)/n; allgather(v), reducescatter, alltoall(v), gather(v), scatter(v)\n"
           "            (n-1)/n; others 1); see docs/metrics.md\n");
    if (!ri->opt->link_sweep) {
        print_limit(f, ri);
    }
    fprintf(
        f,
        "buffers:    %s,\n            as its 'measured' line says; pages touched before timing;\n",
        o->alloc == CP_ALLOC_MALLOC ? "allocated by the backend (--alloc malloc)"
        : o->alloc == CP_ALLOC_MMAP ? "host ones mmap'ed by collprof (--alloc mmap)"
                                    : "host ones from huge pages (--alloc hugepages)");
    if (o->rotate > 1) {
        fprintf(f,
                "            --rotate-buffers %d: operation k uses copy k mod %d of the buffers,\n"
                "            a page apart, the check the last timed operation's copy;\n",
                o->rotate, o->rotate);
    } else {
        fprintf(f, "            the same buffers every iteration (no cache rotation);\n");
    }
    fprintf(f, "            device memory is filled and checked through host copies\n");
    print_repeats(f, ri);
    print_check(f, ri->opt);
    for (char **e = environ; *e; e++) {
        char name[128];
        const char *value = cp_env_captured(*e, name, sizeof(name));
        if (value != NULL) {
            /* NVIDIA's container images set these as labels of the image: not what was loaded */
            int label = !strcmp(name, "NCCL_VERSION") || !strcmp(name, "CUDA_VERSION");
            fprintf(f, "env:        %s=%s%s\n", name, value,
                    label ? "  (the environment's; what was loaded: the 'backend:' lines)" : "");
        }
    }
}

void cp_summary_print_head(FILE *f, const cp_run_info_t *ri)
{
    print_job(f, ri);
    print_backends(f, ri);
    if (ri->opt->replay[0] != '\0') { /* the matrix's method does not apply */
        const cp_options_t *o = ri->opt;
        cp_check_t c = cp_check_applied(o->check, o->check_mode);
        char rp[256], which[96];
        if (c == CP_CHECK_EVERY) {
            snprintf(which, sizeof(which), "every replay");
        } else if (c == CP_CHECK_SAMPLE) {
            snprintf(which, sizeof(which), "replays %d, %d, ... and the last", o->check_k,
                     2 * o->check_k);
        } else {
            snprintf(which, sizeof(which), "the last replay");
        }
        fprintf(f,
                "replay:     %s (docs/replay.md):\n"
                "            %s;\n"
                "            each rank's ops in recorded order (--replay-order nccl: each\n"
                "            posted on its group's queue; program: collectives blocking),\n"
                "            each op's calls timed with\n"
                "            CLOCK_MONOTONIC, p50 over the replays\n",
                o->replay, cp_summary_replay_policy(o, rp, sizeof(rp)));
        if (c == CP_CHECK_NONE) {
            fprintf(f, "check:      disabled (--check 0): no op's result is verified, no input "
                       "written\n");
        } else {
            fprintf(f,
                    "check:      --check %s: the ops of %s:\n"
                    "            inputs written and outputs poisoned before, every element\n"
                    "            checked exactly after (not timed); the other replays run on\n"
                    "            the buffers as they are;\n"
                    "            #wrong = elements that differ, summed over the checked replays\n",
                    cp_check_name(c, o->check_k, rp, sizeof(rp)), which);
        }
        return;
    }
    print_method(f, ri);
}

const char *cp_summary_replay_policy(const cp_options_t *o, char *buf, size_t len)
{
    char chk[32];
    snprintf(buf, len, "%d replays (--replay-iters), --gaps %s, --check %s%s%s", o->replay_iters,
             o->gaps[0] ? o->gaps : "none",
             cp_check_name(cp_check_applied(o->check, o->check_mode), o->check_k, chk, sizeof(chk)),
             o->replay_order[0] ? ", --replay-order " : "", o->replay_order);
    return buf;
}
