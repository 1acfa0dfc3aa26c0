#include "config.h"

#include "format/format.h"

#include "colls/colls.h"
#include "colls/data.h"
#include "base/util.h"

#include <string.h>

static int measured(const collprof_result_row_t *r)
{
    return !strcmp(r->status, "ok") || !strcmp(r->status, "wrong");
}

void cp_format_label(const collprof_result_row_t *r, char *buf, size_t len)
{
    int op = cp_coll_from_name(r->op);
    const collprof_op_info_t *coll = collprof_op_info(op);
    char extra[200] = "";
    if (coll && (coll->flags & COLLPROF_OPF_REDUCES) && strcmp(r->redop, "sum") != 0) {
        snprintf(extra, sizeof(extra), "%s", r->redop);
    }
    if (r->in_place) {
        strncat(extra, extra[0] ? ", in-place" : "in-place", sizeof(extra) - strlen(extra) - 1);
    }
    if (r->imbalance[0] != '\0' && strcmp(r->imbalance, "uniform") != 0) {
        strncat(extra, extra[0] ? ", " : "", sizeof(extra) - strlen(extra) - 1);
        strncat(extra, r->imbalance, sizeof(extra) - strlen(extra) - 1);
    }
    if (r->memory[0] != '\0' && strcmp(r->memory, "host") != 0) {
        strncat(extra, extra[0] ? ", " : "", sizeof(extra) - strlen(extra) - 1);
        strncat(extra, r->memory, sizeof(extra) - strlen(extra) - 1);
    }
    if (coll && (coll->flags & COLLPROF_OPF_ROOTED) && r->root != 0) {
        char rt[32];
        snprintf(rt, sizeof(rt), "%sroot %d", extra[0] ? ", " : "", r->root);
        strncat(extra, rt, sizeof(extra) - strlen(extra) - 1);
    }
    if (r->split[0] != '\0') {
        char sp[64];
        snprintf(sp, sizeof(sp), "%s%s groups of %d", extra[0] ? ", " : "", r->split,
                 r->group_ranks);
        strncat(extra, sp, sizeof(extra) - strlen(extra) - 1);
    }
    const char *name = coll ? coll->label : r->op;
    if (extra[0]) {
        snprintf(buf, len, "%s (%s)", name, extra);
    } else {
        snprintf(buf, len, "%s", name);
    }
}

void cp_format_limit(const collprof_result_row_t *r, char *buf, size_t len)
{
    /* a device cell's limit is its device copy; a host cell's, memcpy (never the other's) */
    int device = !strcmp(r->memory, collprof_memtype_name(COLLPROF_MEM_DEVICE));
    double gbs = device ? r->dcopy_gbs : r->copy_gbs;
    buf[0] = '\0';
    if (gbs > 0 && measured(r)) {
        /* one rank: the bus factor is 0 (nothing crosses a link) and the collective is a copy,
         * so algBW is the figure to hold against the copy rate */
        int alg = r->busbw_gbs <= 0 && r->algbw_gbs > 0;
        double pct = 100.0 * (alg ? r->algbw_gbs : r->busbw_gbs) / gbs;
        snprintf(buf, len, " | %s %.*f%% of %s %.2f GB/s", alg ? "AlgBW" : "BusBW",
                 pct < 10 ? 1 : 0, pct, device ? "device copy" : "memcpy", gbs);
    }
}

/* us as "1.234 ms"; "-" for a 0 beside a mean above it: a figure the source did not record
 * (a file of collprof-report import) */
static void ms_or_dash(double us, double mean_us, char *buf, size_t len)
{
    if (us > 0 || mean_us <= 0) {
        snprintf(buf, len, "%.3f ms", us / 1e3);
    } else {
        snprintf(buf, len, "-");
    }
}

void cp_format_summary_line(const collprof_result_row_t *r, char *buf, size_t len)
{
    char label[256];
    cp_format_label(r, label, sizeof(label));
    strncat(label, ":", sizeof(label) - strlen(label) - 1);
    if (measured(r)) {
        char limit[96] = "", p50[32], p99[32];
        cp_format_limit(r, limit, sizeof(limit));
        ms_or_dash(r->time_p50_us, r->time_mean_us, p50, sizeof(p50));
        ms_or_dash(r->time_p99_us, r->time_mean_us, p99, sizeof(p99));
        snprintf(buf, len,
                 "  %-24s %9.3f ms | AlgBW: %7.2f GB/s | BusBW: %7.2f GB/s | #wrong: %llu | "
                 "p50 %s | p99 %s%s%s",
                 label, r->time_mean_us / 1e3, r->algbw_gbs, r->busbw_gbs,
                 (unsigned long long)r->wrong, p50, p99, limit,
                 !strcmp(r->status, "wrong") ? " | WRONG" : "");
    } else {
        snprintf(buf, len, "  %-24s %s: %s", label, r->status, r->error);
    }
}

static const char *or_unknown(const char *s)
{
    return s[0] ? s : "not reported";
}

void cp_format_provenance(const collprof_result_row_t *r, char *buf, size_t len)
{
    int n = snprintf(buf, len, "  measured: %s memory: timer %s; buffers %s; device %s", r->memory,
                     or_unknown(r->timer), or_unknown(r->allocation), or_unknown(r->device));
    if (r->sync[0] && n >= 0 && (size_t)n < len) { /* the policy, from schema 1.5 */
        char batch[32] = "";
        if (r->batch > 1) {
            snprintf(batch, sizeof(batch), ":%d (time / %d)", r->batch, r->batch);
        }
        n += snprintf(buf + n, len - (size_t)n, "; sync %s%s; rotation %d", r->sync, batch,
                      r->rotate);
    }
    if (r->check[0] && n >= 0 && (size_t)n < len) { /* from schema 1.7 */
        snprintf(buf + n, len - (size_t)n, "; check %s", r->check);
    }
}

void cp_format_tensor_header(const collprof_result_row_t *r, char *buf, size_t len)
{
    int t = cp_dtype_from_name(r->dtype);
    uint64_t size = t >= 0 ? collprof_dtype_info((collprof_dtype_t)t)->size : 0;
    char th[32], hb[32];
    snprintf(buf, len, "Tensor Size: %s elements (%s), %s",
             cp_fmt_thousands(r->count, th, sizeof(th)),
             cp_fmt_bytes(r->count * size, hb, sizeof(hb)), r->dtype);
}

/* A duration in us as "41.2 us", "4.10 ms" or "1.25 s". */
static void duration(double us, char *buf, size_t len)
{
    if (us < 10) {
        snprintf(buf, len, "%.2f us", us);
    } else if (us < 1000) {
        snprintf(buf, len, "%.1f us", us);
    } else if (us < 1e6) {
        snprintf(buf, len, "%.2f ms", us / 1e3);
    } else {
        snprintf(buf, len, "%.2f s", us / 1e6);
    }
}

void cp_format_repeats(const collprof_result_row_t *r, char *buf, size_t len)
{
    char med[32], lo[32], hi[32];
    buf[0] = '\0';
    if (r->repeats < 2) {
        return;
    }
    duration(r->rep_p50_us, med, sizeof(med));
    duration(r->ci_lo_us, lo, sizeof(lo));
    duration(r->ci_hi_us, hi, sizeof(hi));
    if (r->ci_level >= CP_FORMAT_CI_LEVEL) {
        snprintf(buf, len, "    repeats %d: p50 %s, 95%% interval %s .. %s (%.0f%% coverage)",
                 r->repeats, med, lo, hi, r->ci_level * 100);
    } else {
        snprintf(buf, len,
                 "    repeats %d: p50 %s, range %s .. %s covers %.2g%%: too few repeats for a 95%% "
                 "interval (6 needed)",
                 r->repeats, med, lo, hi, r->ci_level * 100);
    }
}

void cp_format_bimodal(const collprof_result_row_t *r, char *buf, size_t len)
{
    char a[32], b[32];
    buf[0] = '\0';
    if (!r->bimodal) {
        return;
    }
    duration(r->mode_lo_us, a, sizeof(a));
    duration(r->mode_hi_us, b, sizeof(b));
    snprintf(buf, len, "    bimodal: %s (%d repeat%s) and %s (%d)", a, r->mode_lo_n,
             r->mode_lo_n == 1 ? "" : "s", b, r->mode_hi_n);
}

void cp_format_summary_row(cp_format_state_t *st, const collprof_result_row_t *r, FILE *f)
{
    char line[1024];
    if (!st->started || strcmp(st->backend, r->backend) != 0 ||
        strcmp(st->variant, r->variant) != 0) {
        fprintf(f, "== %s / %s ==\n", r->backend, r->variant);
        snprintf(st->backend, sizeof(st->backend), "%s", r->backend);
        snprintf(st->variant, sizeof(st->variant), "%s", r->variant);
        st->dtype[0] = '\0';
        st->started = 1;
    }
    if (strcmp(st->dtype, r->dtype) != 0 || st->count != r->count) {
        cp_format_tensor_header(r, line, sizeof(line));
        fprintf(f, "%s\n", line);
        snprintf(st->dtype, sizeof(st->dtype), "%s", r->dtype);
        st->count = r->count;
    }
    cp_format_summary_line(r, line, sizeof(line));
    fprintf(f, "%s\n", line);
    cp_format_repeats(r, line, sizeof(line));
    if (line[0] != '\0') {
        fprintf(f, "%s\n", line);
    }
    cp_format_bimodal(r, line, sizeof(line));
    if (line[0] != '\0') {
        fprintf(f, "%s\n", line);
    }
}

#define TABLE_FMT "  %-7s %-20s %-14s %12s %11s %-8s %-5s %4s "

void cp_format_table_header(FILE *f)
{
    fprintf(f, "# %-7s %-20s %-14s %12s %11s %-8s %-5s %4s %10s %9s %9s %7s %10s %10s\n", "backend",
            "variant", "op", "size(B)", "count", "type", "redop", "root", "time(us)", "algbw",
            "busbw", "#wrong", "p50(us)", "p99(us)");
    fprintf(f, "# %-7s %-20s %-14s %12s %11s %-8s %-5s %4s %10s %9s %9s %7s %10s %10s\n", "", "",
            "", "", "(elements)", "", "", "", "", "(GB/s)", "(GB/s)", "", "", "");
}

void cp_format_table_row(const collprof_result_row_t *r, FILE *f)
{
    int op = cp_coll_from_name(r->op);
    const collprof_op_info_t *coll = collprof_op_info(op);
    char root[16], size[32], count[32];
    snprintf(root, sizeof(root), "%s", "-");
    if (coll && (coll->flags & COLLPROF_OPF_ROOTED)) {
        snprintf(root, sizeof(root), "%d", r->root);
    }
    snprintf(size, sizeof(size), "%llu", (unsigned long long)r->bytes);
    snprintf(count, sizeof(count), "%llu", (unsigned long long)r->count);
    fprintf(f, TABLE_FMT, r->backend, r->variant, r->op, size, count, r->dtype, r->redop, root);
    if (measured(r)) {
        int other_mem = r->memory[0] != '\0' && strcmp(r->memory, "host") != 0;
        char split[32] = "";
        if (r->split[0] != '\0') {
            snprintf(split, sizeof(split), " %s/%d", r->split, r->group_ranks);
        }
        fprintf(f, "%10.1f %9.2f %9.2f %7llu %10.1f %10.1f%s%s%s%s%s%s\n", r->time_mean_us,
                r->algbw_gbs, r->busbw_gbs, (unsigned long long)r->wrong, r->time_p50_us,
                r->time_p99_us, r->in_place ? " in-place" : "", other_mem ? " " : "",
                other_mem ? r->memory : "", r->imbalance[0] ? " " : "", r->imbalance, split);
    } else if (r->split[0] != '\0') {
        fprintf(f, " %s/%d %s: %s\n", r->split, r->group_ranks, r->status, r->error);
    } else {
        fprintf(f, " %s: %s\n", r->status, r->error);
    }
}

void cp_format_logs_line(const char *rank0_log, char *buf, size_t len)
{
    const char *tail = "_r0.log";
    size_t n = strlen(rank0_log), t = strlen(tail);
    if (n > t && !strcmp(rank0_log + n - t, tail)) {
        snprintf(buf, len, "logs:       %.*s_r*.log (one per rank)", (int)(n - t), rank0_log);
    } else {
        snprintf(buf, len, "logs:       %s (rank 0's)", rank0_log);
    }
}

void cp_format_status_counts(const int *counts, char *buf, size_t len)
{
    size_t at = 0;
    snprintf(buf, len, "none");
    for (int i = 0; i < COLLPROF_CELL_STATUS_COUNT; i++) {
        if (counts[i] > 0 && at < len) {
            int k = snprintf(buf + at, len - at, "%s%d %s", at > 0 ? ", " : "", counts[i],
                             collprof_cell_status_name(i));
            at += k > 0 ? (size_t)k : 0;
        }
    }
}
