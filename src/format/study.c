#include "config.h"

#include "format/study.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STUDY_MAX 64 /* sizes and variants shown */

double cp_study_link_pct(double busbw_gbs, double link_gbps)
{
    if (!(link_gbps > 0)) {
        return -1.0;
    }
    return busbw_gbs / (link_gbps / 8.0) * 100.0; /* Gbit/s -> GB/s */
}

static int measured(const collprof_result_row_t *r)
{
    return !strcmp(r->status, "ok") || !strcmp(r->status, "wrong");
}

/* "4 MiB", "512 KiB", "100 B" */
static void fmt_size(uint64_t b, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && b >= 1024 && b % 1024 == 0) {
        b /= 1024;
        u++;
    }
    snprintf(buf, len, "%llu %s", (unsigned long long)b, unit[u]);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One table row: the measured cells of size bytes, one per variant. */
static void print_row(FILE *f, const collprof_result_row_t *rows, size_t n, const char *backend,
                      const char *op, uint64_t bytes, const char *const *var, int nv,
                      double link_gbps)
{
    char sz[32];
    uint64_t count = 0;
    const collprof_result_row_t *cell[STUDY_MAX];
    for (int v = 0; v < nv; v++) {
        cell[v] = NULL;
        for (size_t i = 0; i < n && cell[v] == NULL; i++) {
            const collprof_result_row_t *r = &rows[i];
            if (r->bytes == bytes && !strcmp(r->variant, var[v]) && !strcmp(r->backend, backend) &&
                !strcmp(r->op, op) && measured(r)) {
                cell[v] = r;
                count = count ? count : r->count;
            }
        }
    }
    fmt_size(bytes, sz, sizeof(sz));
    fprintf(f, "| %s | %llu |", sz, (unsigned long long)count);
    for (int v = 0; v < nv; v++) {
        const collprof_result_row_t *r = cell[v];
        if (r == NULL) {
            fprintf(f, " - | - | - |");
            continue;
        }
        double pct = cp_study_link_pct(r->busbw_gbs, link_gbps);
        char p[32];
        if (pct < 0) {
            snprintf(p, sizeof(p), "n/a");
        } else {
            snprintf(p, sizeof(p), "%.1f%%", pct);
        }
        fprintf(f, " %.2f | %.2f (%s) | %.1f |", r->algbw_gbs, r->busbw_gbs, p, r->time_mean_us);
    }
    fprintf(f, "\n");
}

int cp_study_print(FILE *f, const collprof_result_row_t *rows, size_t n, const char *backend,
                   const char *op, double link_gbps, const char *link_from)
{
    const char *var[STUDY_MAX];
    uint64_t size[STUDY_MAX];
    int nv = 0, ns = 0;
    for (size_t i = 0; i < n; i++) {
        const collprof_result_row_t *r = &rows[i];
        if (strcmp(r->backend, backend) != 0 || strcmp(r->op, op) != 0 || !measured(r)) {
            continue;
        }
        int v = 0, s = 0;
        while (v < nv && strcmp(var[v], r->variant) != 0) {
            v++;
        }
        if (v == nv && nv < STUDY_MAX) {
            var[nv++] = r->variant;
        }
        while (s < ns && size[s] != r->bytes) {
            s++;
        }
        if (s == ns && ns < STUDY_MAX) {
            size[ns++] = r->bytes;
        }
    }
    if (ns == 0) {
        return 0;
    }
    qsort(size, (size_t)ns, sizeof(size[0]), cmp_u64);
    if (link_gbps > 0) {
        fprintf(f, "link rate: %g Gbit/s = %g GB/s (%s)\n", link_gbps, link_gbps / 8.0,
                link_from ? link_from : "given");
    } else {
        fprintf(f, "link rate: unknown (the provider reports none and no --link-gbps was given)\n");
    }
    fprintf(f, "columns: <variant> = algBW GB/s; BusBW (%%) = busBW GB/s (%% of link rate); "
               "Lat (us) = mean time\n");
    fprintf(f, "| Size | Count |");
    for (int v = 0; v < nv; v++) {
        fprintf(f, " %s | BusBW (%%) | Lat (us) |", var[v]);
    }
    fprintf(f, "\n|---:|---:|");
    for (int v = 0; v < nv; v++) {
        fprintf(f, "---:|---:|---:|");
    }
    fprintf(f, "\n");
    for (int s = 0; s < ns; s++) {
        print_row(f, rows, n, backend, op, size[s], var, nv, link_gbps);
    }
    return ns;
}

/* The next op name of a comma-separated list at *list into buf; 0 at the end. */
static int next_op(const char **list, char *buf, size_t len)
{
    size_t l = strcspn(*list, ",");
    if (l == 0) {
        return 0;
    }
    snprintf(buf, len, "%.*s", (int)l, *list);
    *list += l + ((*list)[l] == ',');
    return 1;
}

int cp_study_print_all(FILE *f, const collprof_result_row_t *rows, size_t n,
                       const collprof_backend_row_t *backends, size_t nbackends,
                       double run_link_gbps)
{
    int tables = 0;
    for (size_t b = 0; b < nbackends; b++) {
        const collprof_backend_row_t *be = &backends[b];
        const char *list = be->study;
        char op[32];
        while (next_op(&list, op, sizeof(op))) {
            int any = 0;
            for (size_t i = 0; i < n && !any; i++) {
                any = !strcmp(rows[i].backend, be->name) && !strcmp(rows[i].op, op);
            }
            if (!any) {
                continue;
            }
            double link = be->link_gbps > 0 ? be->link_gbps : run_link_gbps;
            const char *from = be->link_gbps > 0   ? "reported by the provider"
                               : run_link_gbps > 0 ? "--link-gbps"
                                                   : NULL;
            fprintf(f, "\n== %s %s study (every variant side by side) ==\n", be->name, op);
            cp_study_print(f, rows, n, be->name, op, link, from);
            tables++;
        }
    }
    return tables;
}

int cp_study_first(const collprof_backend_row_t *backends, size_t nbackends, const char **backend,
                   char *op_buf, size_t op_len)
{
    for (size_t b = 0; b < nbackends; b++) {
        const char *list = backends[b].study;
        if (next_op(&list, op_buf, op_len)) {
            *backend = backends[b].name;
            return 0;
        }
    }
    return -1;
}
