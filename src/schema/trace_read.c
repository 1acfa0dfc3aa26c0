#include "config.h"

#include "schema/trace_read.h"

#include "schema/h5schema.h"

#include <collprof/vocab.h>

#include <errno.h>
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The largest rank a trace may name (a bound well above any job's, so that 1 + a rank and the
 * per-rank tables sized by it stay sane). */
#define TRACE_RANK_MAX ((1 << 24) - 1)
/* The most elements an op or a split may count (2^50: times any element's size, and summed
 * over a group's splits, a byte count far from overflowing 64 bits). */
#define TRACE_COUNT_MAX (1ull << 50)

/* Table tab of f whole into *out (*n rows; none: NULL, 0).  0, or -1. */
static int read_table(hid_t f, const cp_h5_table_t *tab, void **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    hid_t d = H5Lexists(f, tab->name, H5P_DEFAULT) > 0 ? H5Dopen2(f, tab->name, H5P_DEFAULT) : -1;
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[1] = {0};
    int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
             H5Sget_simple_extent_dims(sp, dims, NULL) == 1;
    hid_t t = ok && dims[0] > 0 ? cp_h5_row_type(tab) : -1;
    void *rows = ok && dims[0] > 0 ? calloc((size_t)dims[0], tab->recsize) : NULL;
    if (ok && dims[0] > 0) {
        ok = rows != NULL && t >= 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0;
    }
    cp_h5_release(t);
    cp_h5_release(sp);
    cp_h5_release(d);
    if (!ok) {
        free(rows);
        return -1;
    }
    for (size_t i = 0; i < (size_t)dims[0]; i++) {
        cp_h5_sanitize_row(tab, (char *)rows + i * tab->recsize);
    }
    *out = rows;
    *n = (size_t)dims[0];
    return 0;
}

/* No group lists a rank twice (t->nranks known).  0, or -1 and why. */
static int check_twice(const cp_trace_t *t, char *err, size_t errlen)
{
    unsigned char *seen = calloc((size_t)t->nranks + 1, 1);
    if (seen == NULL) {
        snprintf(err, errlen, "out of memory (%d ranks)", t->nranks);
        return -1;
    }
    int rc = 0;
    for (size_t g = 0; rc == 0 && g < t->ngroups; g++) {
        if (t->groups[g].size <= 0) {
            continue;
        }
        const collprof_trace_member_row_t *m = &t->members[t->groups[g].member_off];
        for (int i = 0; i < t->groups[g].size; i++) {
            rc = rc == 0 && seen[m[i].rank] ? -1 : rc;
            if (rc != 0 && err[0] == '\0') {
                snprintf(err, errlen, "/trace_groups row %zu: rank %d is a member twice", g,
                         m[i].rank);
            }
            seen[m[i].rank] = 1;
        }
        for (int i = 0; i < t->groups[g].size; i++) {
            seen[m[i].rank] = 0;
        }
    }
    free(seen);
    return rc;
}

/* The groups and members hold together; nranks from the members.  0, or -1 and why. */
static int check_groups(cp_trace_t *t, char *err, size_t errlen)
{
    int top = -1;
    for (size_t g = 0; g < t->ngroups; g++) {
        const collprof_trace_group_row_t *r = &t->groups[g];
        if (r->group != (int)g || r->size < 0 || r->member_off < 0 ||
            (size_t)r->member_off + (size_t)r->size > t->nmembers) {
            snprintf(err, errlen, "/trace_groups row %zu: bad group, size or member_off", g);
            return -1;
        }
    }
    for (size_t m = 0; m < t->nmembers; m++) {
        top = t->members[m].rank > top ? t->members[m].rank : top;
        if (t->members[m].rank < 0 || t->members[m].rank > TRACE_RANK_MAX) {
            snprintf(err, errlen, "/trace_members row %zu: rank %d is not 0 to %d", m,
                     t->members[m].rank, TRACE_RANK_MAX);
            return -1;
        }
    }
    t->nranks = top + 1;
    return check_twice(t, err, errlen);
}

/* Op row i refers to a rank, group and splits there are, an operation collprof knows, counts
 * in range (nranks grown to its rank).  0, or -1 and why. */
static int check_op(cp_trace_t *t, const collprof_trace_op_row_t *o, size_t i, char *err,
                    size_t errlen)
{
    if (o->rank < 0 || o->rank > TRACE_RANK_MAX) {
        snprintf(err, errlen, "/trace_ops row %zu: rank %d is not 0 to %d", i, o->rank,
                 TRACE_RANK_MAX);
        return -1;
    }
    if (o->seq < 0) {
        snprintf(err, errlen, "/trace_ops row %zu: seq %lld is negative", i, (long long)o->seq);
        return -1;
    }
    if (o->group < 0 || (size_t)o->group >= t->ngroups ||
        (o->nsplit > 0 &&
         (o->split_off < 0 || (size_t)o->split_off + 2 * (size_t)o->nsplit > t->nsplits))) {
        snprintf(err, errlen, "/trace_ops row %zu: bad rank, group or splits", i);
        return -1;
    }
    int known = collprof_op_from_name(o->op) >= 0 || !strcmp(o->op, "send") ||
                !strcmp(o->op, "recv") || !strcmp(o->op, "wait");
    if (!known) {
        snprintf(err, errlen, "/trace_ops row %zu: operation '%.16s' is not one collprof knows", i,
                 o->op);
        return -1;
    }
    if (o->in_count > TRACE_COUNT_MAX || o->out_count > TRACE_COUNT_MAX) {
        snprintf(err, errlen, "/trace_ops row %zu: in_count or out_count over 2^50", i);
        return -1;
    }
    for (int32_t k = 0; k < 2 * o->nsplit; k++) {
        if (t->splits[o->split_off + k].count > TRACE_COUNT_MAX) {
            snprintf(err, errlen, "/trace_ops row %zu: a split over 2^50 elements", i);
            return -1;
        }
    }
    t->nranks = o->rank + 1 > t->nranks ? o->rank + 1 : t->nranks;
    return 0;
}

static int by_int(const void *a, const void *b)
{
    const int32_t *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

/* Each group's members sorted, at its member_off (for member_of); NULL when out of memory. */
static int32_t *sorted_members(const cp_trace_t *t)
{
    int32_t *s = malloc((t->nmembers + 1) * sizeof(*s));
    for (size_t m = 0; s != NULL && m < t->nmembers; m++) {
        s[m] = t->members[m].rank;
    }
    for (size_t g = 0; s != NULL && g < t->ngroups; g++) {
        if (t->groups[g].size > 1) {
            qsort(s + t->groups[g].member_off, (size_t)t->groups[g].size, sizeof(*s), by_int);
        }
    }
    return s;
}

static int member_of(const cp_trace_t *t, const int32_t *sorted, int g, int32_t rank)
{
    const collprof_trace_group_row_t *r = &t->groups[g];
    return r->size > 0 &&
           bsearch(&rank, sorted + r->member_off, (size_t)r->size, sizeof(*sorted), by_int);
}

/* A rooted op's root a member of its group, a send's or recv's peer another member: a row
 * that names another would be skipped by its rank alone, its group's other members waiting on
 * it for ever.  0, or -1 and why. */
static int check_peers(const cp_trace_t *t, const int32_t *sorted, const collprof_trace_op_row_t *o,
                       size_t i, char *err, size_t errlen)
{
    int p2p = !strcmp(o->op, "send") || !strcmp(o->op, "recv");
    if (o->root >= 0 && !member_of(t, sorted, o->group, o->root)) {
        snprintf(err, errlen, "/trace_ops row %zu: root %d is not a member of group %d", i, o->root,
                 o->group);
        return -1;
    }
    if (p2p && (o->peer == o->rank || !member_of(t, sorted, o->group, o->peer))) {
        snprintf(err, errlen, "/trace_ops row %zu: peer %d is not another member of group %d", i,
                 o->peer, o->group);
        return -1;
    }
    return 0;
}

static int by_rank_seq(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* No rank's kept ops have one seq twice, and those of rank whole (every rank's: -2; none: -1),
 * all its ops in a range, have consecutive seqs (its order, from 0: a seq twice or a gap would
 * leave its groups' members issuing their ops in different orders).  0, or -1 and why. */
static int check_seqs(const cp_trace_t *t, int whole, char *err, size_t errlen)
{
    int64_t *k = t->nops > 0 ? malloc(t->nops * 2 * sizeof(*k)) : NULL;
    if (t->nops > 0 && k == NULL) {
        snprintf(err, errlen, "out of memory (%zu ops kept)", t->nops);
        return -1;
    }
    for (size_t i = 0; i < t->nops; i++) {
        k[2 * i] = t->ops[i].rank;
        k[2 * i + 1] = t->ops[i].seq;
    }
    if (t->nops > 1) {
        qsort(k, t->nops, 2 * sizeof(*k), by_rank_seq);
    }
    int rc = 0;
    for (size_t i = 1; rc == 0 && i < t->nops; i++) {
        int all = whole == -2 || k[2 * i] == whole;
        if (k[2 * i] == k[2 * i - 2] &&
            (k[2 * i + 1] == k[2 * i - 1] || (all && k[2 * i + 1] != k[2 * i - 1] + 1))) {
            snprintf(err, errlen, "/trace_ops: rank %lld's seqs go from %lld to %lld, not %lld",
                     (long long)k[2 * i], (long long)k[2 * i - 1], (long long)k[2 * i + 1],
                     (long long)k[2 * i - 1] + 1);
            rc = -1;
        }
    }
    free(k);
    return rc;
}

/* Append row r to t->ops (*cap rows allocated).  0, or -1 when out of memory. */
static int keep_op(cp_trace_t *t, size_t *cap, const collprof_trace_op_row_t *r)
{
    if (t->nops == *cap) {
        size_t c = *cap > 0 ? 2 * *cap : 1024;
        collprof_trace_op_row_t *o = realloc(t->ops, c * sizeof(*o));
        if (o == NULL) {
            return -1;
        }
        t->ops = o;
        *cap = c;
    }
    t->ops[t->nops++] = *r;
    return 0;
}

/* Rows [at, at + n) of dataset d (rows of type ty, dataspace sp) into buf.  0, or -1. */
static int read_block(hid_t d, hid_t ty, hid_t sp, hsize_t at, hsize_t n, void *buf)
{
    hsize_t start[1] = {at}, count[1] = {n};
    hid_t mem = H5Screate_simple(1, count, NULL);
    int ok = mem >= 0 && H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
             H5Dread(d, ty, mem, sp, H5P_DEFAULT, buf) >= 0;
    cp_h5_release(mem);
    return ok ? 0 : -1;
}

/* /trace_ops in blocks: each row checked, shown to sel->see, kept where sel->keep says.  0,
 * or -1 and why. */
static int scan_ops(hid_t f, cp_trace_t *t, const cp_trace_sel_t *sel, char *err, size_t errlen)
{
    const cp_h5_table_t *tab = &cp_h5_table_trace_ops;
    hid_t d = H5Dopen2(f, tab->name, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[1] = {0};
    int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
             H5Sget_simple_extent_dims(sp, dims, NULL) == 1;
    size_t block = sel->block > 0 ? sel->block : 16384, cap = 0;
    hid_t ty = ok ? cp_h5_row_type(tab) : -1;
    collprof_trace_op_row_t *buf = ok ? calloc(block, sizeof(*buf)) : NULL;
    int32_t *sorted = ok ? sorted_members(t) : NULL;
    int rc = ok && ty >= 0 && buf != NULL && sorted != NULL ? 0 : -1;
    if (rc != 0) {
        snprintf(err, errlen, ok && ty >= 0 ? "out of memory" : "corrupted trace tables");
    }
    t->nrows = (size_t)dims[0];
    for (size_t at = 0; rc == 0 && at < t->nrows; at += block) {
        size_t n = t->nrows - at < block ? t->nrows - at : block;
        if (read_block(d, ty, sp, at, n, buf) != 0) {
            snprintf(err, errlen, "corrupted trace tables");
            rc = -1;
        }
        for (size_t i = 0; rc == 0 && i < n; i++) {
            cp_h5_sanitize_row(tab, &buf[i]);
            rc = check_op(t, &buf[i], at + i, err, errlen);
            rc = rc == 0 ? check_peers(t, sorted, &buf[i], at + i, err, errlen) : rc;
            if (rc == 0 && sel->see != NULL) {
                sel->see(sel->arg, t, &buf[i]);
            }
            if (rc == 0 && (sel->keep == NULL || sel->keep(sel->arg, &buf[i])) &&
                keep_op(t, &cap, &buf[i]) != 0) {
                snprintf(err, errlen, "out of memory (%zu ops kept)", t->nops);
                rc = -1;
            }
        }
    }
    free(sorted);
    free(buf);
    cp_h5_release(ty);
    cp_h5_release(sp);
    cp_h5_release(d);
    return rc;
}

/* The root's imported_format (a string of either kind) into t->format; "" without one. */
static void read_format(hid_t f, cp_trace_t *t)
{
    hid_t a = H5Aexists(f, "imported_format") > 0 ? H5Aopen(f, "imported_format", H5P_DEFAULT) : -1;
    hid_t ft = a >= 0 ? H5Aget_type(a) : -1;
    t->format[0] = '\0';
    if (ft >= 0 && H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) > 0) {
        hid_t mt = cp_h5_str_type(H5T_VARIABLE, H5T_CSET_UTF8);
        char *v = NULL;
        if (H5Aread(a, mt, &v) >= 0 && v != NULL) {
            snprintf(t->format, sizeof(t->format), "%s", v);
        }
        H5free_memory(v);
        cp_h5_release(mt);
    } else if (ft >= 0 && H5Tget_class(ft) == H5T_STRING && H5Tget_size(ft) < sizeof(t->format)) {
        hid_t mt = cp_h5_str_type(H5Tget_size(ft), H5T_CSET_UTF8);
        t->format[H5Aread(a, mt, t->format) < 0 ? 0 : sizeof(t->format) - 1] = '\0';
        cp_h5_release(mt);
    }
    cp_h5_release(ft);
    cp_h5_release(a);
}

/* The four tables of an open file: the ops those sel selects. */
static int read_all(hid_t f, cp_trace_t *t, const cp_trace_sel_t *sel, char *err, size_t errlen)
{
    if (H5Lexists(f, "trace_ops", H5P_DEFAULT) <= 0 ||
        H5Lexists(f, "trace_groups", H5P_DEFAULT) <= 0) {
        snprintf(err, errlen,
                 "not a trace file (make one with collprof-report import --trace FORMAT "
                 "FILES -o T.h5)");
        return -1;
    }
    if (read_table(f, &cp_h5_table_trace_groups, (void **)&t->groups, &t->ngroups) != 0 ||
        read_table(f, &cp_h5_table_trace_members, (void **)&t->members, &t->nmembers) != 0 ||
        (H5Lexists(f, "trace_splits", H5P_DEFAULT) > 0 &&
         read_table(f, &cp_h5_table_trace_splits, (void **)&t->splits, &t->nsplits) != 0)) {
        snprintf(err, errlen, "corrupted trace tables");
        return -1;
    }
    t->partial = sel->keep != NULL;
    read_format(f, t);
    if (check_groups(t, err, errlen) != 0 || scan_ops(f, t, sel, err, errlen) != 0) {
        return -1;
    }
    return check_seqs(t, sel->keep == NULL ? -2 : sel->whole - 1, err, errlen);
}

int cp_trace_read(const char *path, cp_trace_t *t, char *err, size_t errlen)
{
    cp_trace_sel_t all = {0};
    return cp_trace_read_sel(path, t, &all, err, errlen);
}

int cp_trace_read_sel(const char *path, cp_trace_t *t, const cp_trace_sel_t *sel, char *err,
                      size_t errlen)
{
    memset(t, 0, sizeof(*t));
    struct stat st;
    errno = 0;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "--replay %s: %s", path,
                 errno != 0 ? strerror(errno) : "not a regular file");
        return -1;
    }
    int rc = -1;
    char why[256] = "";
    H5E_BEGIN_TRY
    {
        hid_t f = H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
        if (f < 0) {
            snprintf(why, sizeof(why), "not a readable HDF5 file");
        } else {
            rc = read_all(f, t, sel, why, sizeof(why));
        }
        cp_h5_release(f);
    }
    H5E_END_TRY
    if (rc != 0) {
        snprintf(err, errlen, "--replay %s: %s", path, why);
        cp_trace_free(t);
    }
    return rc;
}

void cp_trace_free(cp_trace_t *t)
{
    free(t->ops);
    free(t->groups);
    free(t->members);
    free(t->splits);
    memset(t, 0, sizeof(*t));
}
