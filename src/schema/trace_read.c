#include "config.h"

#include "schema/trace_read.h"

#include "schema/h5schema.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* The references between the tables hold; nranks set.  0, or -1 and why. */
static int check_trace(cp_trace_t *t, char *err, size_t errlen)
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
        if (t->members[m].rank < 0) {
            snprintf(err, errlen, "/trace_members row %zu: negative rank", m);
            return -1;
        }
    }
    for (size_t i = 0; i < t->nops; i++) {
        const collprof_trace_op_row_t *o = &t->ops[i];
        top = o->rank > top ? o->rank : top;
        if (o->rank < 0 || o->group < 0 || (size_t)o->group >= t->ngroups ||
            (o->nsplit > 0 &&
             (o->split_off < 0 || (size_t)o->split_off + 2 * (size_t)o->nsplit > t->nsplits))) {
            snprintf(err, errlen, "/trace_ops row %zu: bad rank, group or splits", i);
            return -1;
        }
    }
    t->nranks = top + 1;
    return 0;
}

/* The four tables of an open file. */
static int read_all(hid_t f, cp_trace_t *t, char *err, size_t errlen)
{
    if (H5Lexists(f, "trace_ops", H5P_DEFAULT) <= 0 ||
        H5Lexists(f, "trace_groups", H5P_DEFAULT) <= 0) {
        snprintf(err, errlen,
                 "not a trace file (make one with collprof-report import --trace FORMAT "
                 "FILES -o T.h5)");
        return -1;
    }
    if (read_table(f, &cp_h5_table_trace_ops, (void **)&t->ops, &t->nops) != 0 ||
        read_table(f, &cp_h5_table_trace_groups, (void **)&t->groups, &t->ngroups) != 0 ||
        read_table(f, &cp_h5_table_trace_members, (void **)&t->members, &t->nmembers) != 0 ||
        (H5Lexists(f, "trace_splits", H5P_DEFAULT) > 0 &&
         read_table(f, &cp_h5_table_trace_splits, (void **)&t->splits, &t->nsplits) != 0)) {
        snprintf(err, errlen, "corrupted trace tables");
        return -1;
    }
    return check_trace(t, err, errlen);
}

int cp_trace_read(const char *path, cp_trace_t *t, char *err, size_t errlen)
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
            rc = read_all(f, t, why, sizeof(why));
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
