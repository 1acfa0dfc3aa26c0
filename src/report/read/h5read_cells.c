/*
 * The result file's /cells/<cell> groups (h5read_int.h): the samples, the per-rank data and
 * the repeats of each cell, and the cross-check of its row's statistics against them.
 */
#include "config.h"

#include "report/read/h5read_int.h"

#include <collprof/vocab.h>

#include "base/stats.h"
#include "base/util.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- /cells/<cell> ------------------------------------------------------------------ */

/*
 * Read dataset id of a cell, of the expected shape (1-D [d0] when d1 == 0,
 * else [d0 x d1]), into a new buffer of native elements.
 */
static void *read_array(hid_t grp, const char *cell, int id, hsize_t d0, hsize_t d1, char *err,
                        size_t errlen)
{
    const cp_h5_dataset_t *ds = &cp_h5_cell_datasets[id];
    void *buf = NULL;
    hid_t d = H5Dopen2(grp, ds->name, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    hid_t ft = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    hsize_t dims[2] = {0, 0};
    if (sp < 0 || ft < 0) {
        rd_h5_fail(err, errlen, "cannot open /cells/%s/%s", cell, ds->name);
    } else if (H5Sget_simple_extent_ndims(sp) != ds->dims ||
               H5Sget_simple_extent_dims(sp, dims, NULL) < 0 || dims[0] != d0 ||
               (ds->dims == 2 && dims[1] != d1) ||
               (H5Tget_class(ft) != H5T_FLOAT && H5Tget_class(ft) != H5T_INTEGER)) {
        H5Eclear2(H5E_DEFAULT);
        snprintf(err, errlen, "corrupted: /cells/%s/%s does not have the shape of its row", cell,
                 ds->name);
    } else if (rd_size_plausible(d, ft, d0 * (d1 ? d1 : 1), ds->name, err, errlen) != 0) {
        /* err says why */
    } else if ((buf = calloc((size_t)d0 * (size_t)(d1 ? d1 : 1) + 1, sizeof(double))) == NULL) {
        snprintf(err, errlen, "out of memory reading /cells/%s/%s", cell, ds->name);
    } else if (H5Dread(d, cp_h5_native(ds->kind), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        rd_h5_fail(err, errlen, "cannot read /cells/%s/%s", cell, ds->name);
        free(buf);
        buf = NULL;
    }
    cp_h5_release(ft);
    cp_h5_release(sp);
    cp_h5_release(d);
    return buf;
}

static int near(double a, double b)
{
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= CP_REPORT_STATS_RTOL * scale + 1e-12;
}

/*
 * From samples [iterations x ranks] (row i holds every rank's time of
 * iteration i): the per-iteration maxima into c->iter_max, checked against
 * the per-rank means the file holds.  -1 when they disagree.
 */
static int iteration_maxima(const double *samples, hsize_t iters, hsize_t n, cp_report_cell_t *c)
{
    for (hsize_t i = 0; i < iters; i++) {
        double m = 0;
        for (hsize_t q = 0; q < n; q++) {
            double v = samples[i * n + q];
            if (!isfinite(v) || v < 0) {
                return -1;
            }
            m = q == 0 || v > m ? v : m;
        }
        c->iter_max[i] = m;
    }
    for (hsize_t q = 0; q < n && iters > 0; q++) {
        double s = 0;
        for (hsize_t i = 0; i < iters; i++) {
            s += samples[i * n + q];
        }
        if (!near(s / (double)iters, c->rank_mean[q])) {
            return -1;
        }
    }
    return 0;
}

/* Each rank's best and typical iteration, for `stragglers`. */
static int rank_order_stats(const double *samples, hsize_t iters, hsize_t n, cp_report_cell_t *c)
{
    c->rank_min = calloc((size_t)n + 1, sizeof(double));
    c->rank_median = calloc((size_t)n + 1, sizeof(double));
    double *col = malloc(sizeof(double) * ((size_t)iters + 1));
    if (c->rank_min == NULL || c->rank_median == NULL || col == NULL) {
        free(col);
        return -1;
    }
    for (hsize_t q = 0; q < n && iters > 0; q++) {
        for (hsize_t i = 0; i < iters; i++) {
            col[i] = samples[i * n + q];
        }
        c->rank_median[q] = cp_report_median(col, (size_t)iters);
        c->rank_min[q] = col[0]; /* sorted by the median */
    }
    free(col);
    return 0;
}

/* The row's statistics must be those of the raw samples. */
static int check_row_stats(const collprof_result_row_t *r, const cp_report_cell_t *c,
                           const char *name, char *err, size_t errlen)
{
    size_t iters = (size_t)r->iterations;
    double *sorted = malloc(sizeof(double) * (iters + 1));
    if (sorted == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(sorted, c->iter_max, sizeof(double) * iters);
    cp_stats_t st;
    cp_stats_compute(sorted, (int)iters, &st);
    free(sorted);
    if (!near(st.mean, r->time_mean_us) || !near(st.min, r->time_min_us) ||
        !near(st.p50, r->time_p50_us) || !near(st.p95, r->time_p95_us) ||
        !near(st.p99, r->time_p99_us) || !near(st.max, r->time_max_us)) {
        snprintf(err, errlen,
                 "corrupted: the statistics of cell %d in /results do not match "
                 "/cells/%s/samples_us",
                 r->cell, name);
        return -1;
    }
    return 0;
}

/* send_bytes and recv_bytes, when the cell has them (alltoallv, allgatherv). */
static int load_bytes(hid_t grp, const char *name, hsize_t n, cp_report_cell_t *c, char *err,
                      size_t errlen)
{
    const char *send = cp_h5_cell_datasets[CP_H5_CELL_SEND_BYTES].name;
    const char *recv = cp_h5_cell_datasets[CP_H5_CELL_RECV_BYTES].name;
    htri_t has_send = H5Lexists(grp, send, H5P_DEFAULT);
    htri_t has_recv = H5Lexists(grp, recv, H5P_DEFAULT);
    if (has_send < 0 || has_recv < 0) {
        rd_h5_fail(err, errlen, "cannot read /cells/%s", name);
        return -1;
    }
    if (has_send == 0 || has_recv == 0) {
        return 0;
    }
    c->send_bytes = read_array(grp, name, CP_H5_CELL_SEND_BYTES, n, 0, err, errlen);
    c->recv_bytes = read_array(grp, name, CP_H5_CELL_RECV_BYTES, n, 0, err, errlen);
    if (c->send_bytes == NULL || c->recv_bytes == NULL) {
        return -1;
    }
    /* every byte sent is received: a cheap check of both arrays */
    uint64_t sent = 0, received = 0;
    for (hsize_t q = 0; q < n; q++) {
        sent += c->send_bytes[q];
        received += c->recv_bytes[q];
    }
    if (sent != received) {
        snprintf(err, errlen, "corrupted: /cells/%s: bytes sent and received disagree", name);
        return -1;
    }
    return 0;
}

/* The repeats' figures (median of their p50s, interval, modes) must be those of their
 * p50s, and each p50 that of its repeat's slice of the samples. */
static int check_repeat_figures(const collprof_result_row_t *r, const cp_report_cell_t *c,
                                const char *name, char *err, size_t errlen)
{
    int n = r->repeats;
    double *v = malloc(sizeof(double) * ((size_t)r->iterations + 1));
    if (v == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int bad = 0;
    uint64_t at = 0;
    for (int k = 0; k < n && !bad; k++) {
        uint64_t len = c->rep_iters[k];
        bad = len == 0 || at + len > (uint64_t)r->iterations;
        if (!bad) {
            memcpy(v, c->iter_max + at, sizeof(double) * len);
            cp_stats_t st;
            cp_stats_compute(v, (int)len, &st);
            bad = !near(st.p50, c->rep_p50[k]);
            at += len;
        }
    }
    bad = bad || at != (uint64_t)r->iterations;
    cp_median_ci_t ci;
    cp_modes_t m;
    int bimodal = 0;
    if (!bad) {
        memcpy(v, c->rep_p50, sizeof(double) * (size_t)n);
        cp_stats_median(v, (size_t)n);
        cp_stats_median_ci(v, n, &ci);
        bimodal = cp_stats_bimodal(v, n, &m);
        bad = !near(ci.median, r->rep_p50_us) || !near(ci.lo, r->ci_lo_us) ||
              !near(ci.hi, r->ci_hi_us) || !near(ci.coverage, r->ci_level) ||
              bimodal != r->bimodal || !near(m.lo, r->mode_lo_us) || !near(m.hi, r->mode_hi_us);
    }
    free(v);
    if (bad) {
        snprintf(err, errlen,
                 "corrupted: the repeats of cell %d in /results do not match /cells/%s", r->cell,
                 name);
        return -1;
    }
    return 0;
}

/* repeat_p50_us and repeat_iterations of a cell with repeats (schema 1.4). */
static int load_repeats(hid_t grp, const char *name, const collprof_result_row_t *r,
                        cp_report_cell_t *c, char *err, size_t errlen)
{
    if (r->repeats < 2) {
        return 0;
    }
    c->rep_p50 = read_array(grp, name, CP_H5_CELL_REP_P50, (hsize_t)r->repeats, 0, err, errlen);
    c->rep_iters = c->rep_p50 ? read_array(grp, name, CP_H5_CELL_REP_ITERS, (hsize_t)r->repeats, 0,
                                           err, errlen)
                              : NULL;
    if (c->rep_p50 == NULL || c->rep_iters == NULL) {
        return -1;
    }
    return cp_report_measured(r) ? check_repeat_figures(r, c, name, err, errlen) : 0;
}

/*
 * Check a cell's raw data against its row and keep what the subcommands
 * need: the per-iteration maxima and the per-rank means (and bytes).
 */
static int load_cell(hid_t grp, const char *name, const collprof_result_row_t *r, int nranks,
                     cp_report_cell_t *c, char *err, size_t errlen)
{
    hsize_t iters = (hsize_t)r->iterations, n = (hsize_t)nranks;
    double *samples = read_array(grp, name, CP_H5_CELL_SAMPLES, iters, n, err, errlen);
    if (samples == NULL) {
        return -1;
    }
    c->rank_mean = read_array(grp, name, CP_H5_CELL_RANK_MEAN, n, 0, err, errlen);
    c->iter_max = calloc((size_t)(iters ? iters : 1), sizeof(double));
    int rc = -1;
    if (c->rank_mean == NULL) {
        /* err says why */
    } else if (c->iter_max == NULL) {
        snprintf(err, errlen, "out of memory");
    } else if (iteration_maxima(samples, iters, n, c) != 0) {
        snprintf(err, errlen, "corrupted: /cells/%s: samples_us and rank_mean_us disagree", name);
    } else if (rank_order_stats(samples, iters, n, c) != 0) {
        snprintf(err, errlen, "out of memory");
    } else {
        rc = 0;
    }
    free(samples);
    if (rc == 0 && cp_report_measured(r)) {
        rc = check_row_stats(r, c, name, err, errlen);
    }
    if (rc == 0) {
        rc = load_repeats(grp, name, r, c, err, errlen);
    }
    return rc == 0 ? load_bytes(grp, name, n, c, err, errlen) : -1;
}

/* /cells/<name>/provenance when the cell has it: one row per rank, in rank order. */
static int load_provenance(hid_t grp, const char *name, int nranks, cp_report_cell_t *c, char *err,
                           size_t errlen)
{
    void *recs = NULL;
    size_t n = 0;
    if (rd_read_table(grp, &cp_h5_table_provenance, 1, NULL, NULL, &recs, &n, err, errlen) != 0) {
        return -1;
    }
    c->prov = recs;
    for (size_t q = 0; c->prov != NULL && q < n; q++) {
        if (c->prov[q].rank != (int32_t)q) {
            n = 0; /* reported below */
        }
    }
    if (c->prov != NULL && n != (size_t)nranks) {
        snprintf(err, errlen, "corrupted: /cells/%s/%s is not one row per rank", name,
                 cp_h5_table_provenance.name);
        return -1;
    }
    return 0;
}

/* /cells/<name> when it exists: absent groups are fine (cells that never ran, or the last
 * cell of a killed run) */
static int read_cell(hid_t cells, const collprof_result_row_t *r, int nranks, cp_report_cell_t *c,
                     char *err, size_t errlen)
{
    char name[32];
    cp_h5_cell_name(r->cell, name, sizeof(name));
    htri_t ex = H5Lexists(cells, name, H5P_DEFAULT);
    if (ex <= 0) {
        if (ex < 0) {
            rd_h5_fail(err, errlen, "cannot look up /cells/%s", name);
        }
        return ex < 0 ? -1 : 0;
    }
    hid_t g = H5Gopen2(cells, name, H5P_DEFAULT);
    if (g < 0) {
        rd_h5_fail(err, errlen, "cannot open /cells/%s", name);
        return -1;
    }
    int rc = load_cell(g, name, r, nranks, c, err, errlen);
    if (rc == 0) {
        rc = load_provenance(g, name, nranks, c, err, errlen);
    }
    cp_h5_release(g);
    return rc;
}

int rd_read_cells(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    f->cells = calloc(f->nrows ? f->nrows : 1, sizeof(*f->cells));
    if (f->cells == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    htri_t ex = H5Lexists(file, COLLPROF_CELLS_GROUP, H5P_DEFAULT);
    if (ex <= 0) {
        if (ex < 0) {
            rd_h5_fail(err, errlen, "cannot look up /cells");
        }
        return ex < 0 ? -1 : 0; /* no raw data at all: rows only */
    }
    hid_t cells = H5Gopen2(file, COLLPROF_CELLS_GROUP, H5P_DEFAULT);
    if (cells < 0) {
        rd_h5_fail(err, errlen, "cannot open /cells");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < f->nrows && rc == 0; i++) {
        rc = read_cell(cells, &f->rows[i], f->nranks, &f->cells[i], err, errlen);
    }
    cp_h5_release(cells);
    return rc;
}
