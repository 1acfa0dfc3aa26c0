/*
 * collprof-trace's state and its file format (ct.h): the buffer written out
 * as JSON lines (the communicators not yet written, then the records), the
 * element types' names.  The lowest of the recorder's files: it calls none of
 * the others.
 */
#include "config.h"

#include "trace/ct.h"

#include <stdio.h>

ct_state_t ct;

static const char *const type_names[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                         "uint64", "float16", "bfloat16", "float32", "float64"};
const char *ct_type_name(int dtype)
{
    return dtype >= 0 && dtype < (int)(sizeof(type_names) / sizeof(type_names[0]))
               ? type_names[dtype]
               : NULL;
}

#define CT_FN_NAME(ID, NAME, OP) NAME,
#define CT_FN_OP(ID, NAME, OP)   OP,
static const char *const fn_names[] = {CT_FUNCS(CT_FN_NAME)};
static const char *const fn_ops[] = {CT_FUNCS(CT_FN_OP)};

static void put_comm(FILE *f, ct_comm_t *c, size_t i)
{
    fprintf(f, "{\"comm\": %zu, \"key\": \"%016llx-%d\", \"size\": %d, \"members\": [", i,
            (unsigned long long)c->hash, c->k, c->size);
    for (int m = 0; m < c->size; m++) {
        fprintf(f, m ? ", %d" : "%d", c->members[m]);
    }
    fprintf(f, "], \"from\": \"%s\"}\n", c->from);
    c->written = 1;
}

static void put_splits(FILE *f, const char *key, const int64_t *s, int n)
{
    fprintf(f, ", \"%s\": [", key);
    for (int i = 0; i < n; i++) {
        fprintf(f, i ? ", %lld" : "%lld", (long long)s[i]);
    }
    fputc(']', f);
}

static void put_op(FILE *f, const ct_rec_t *r)
{
    uint64_t big = r->in > r->out ? r->in : r->out;
    fprintf(f, "{\"op\": \"%s\", \"mpi\": \"%s\", \"comm\": %d", fn_ops[r->fn], fn_names[r->fn],
            r->comm);
    if (r->fn < CT_WAIT && r->fn != CT_BARRIER && r->fn != CT_IBARRIER) {
        const char *dt = ct_type_name(r->dtype);
        if (dt != NULL) {
            fprintf(f, ", \"dtype\": \"%s\"", dt);
        }
        fprintf(f, ", \"in\": %llu, \"out\": %llu, \"bytes\": %llu, \"esize\": %u",
                (unsigned long long)r->in, (unsigned long long)r->out,
                (unsigned long long)(big * r->esize), r->esize);
    }
    fprintf(f, ", \"t\": %lld, \"dur\": %lld", (long long)r->t, (long long)r->dur);
    if (r->root >= 0) {
        fprintf(f, ", \"root\": %d", r->root);
    }
    if (r->peer >= 0) {
        fprintf(f, ", \"peer\": %d", r->peer);
    }
    if (r->req >= 0) {
        fprintf(f, ", \"req\": %lld", (long long)r->req);
    }
    if (r->co >= 0) {
        fprintf(f, ", \"co\": %lld", (long long)r->co);
    }
    if (r->split >= 0) {
        int n = ct.comms[r->comm].size;
        put_splits(f, "in_split", ct.splits + r->split, n);
        put_splits(f, "out_split", ct.splits + r->split + n, n);
    }
    fputs("}\n", f);
}

int ct_flush(void)
{
    FILE *f = ct.out;
    for (size_t i = 0; i < ct.ncomms; i++) {
        if (!ct.comms[i].written) {
            put_comm(f, &ct.comms[i], i);
        }
    }
    for (size_t i = 0; i < ct.nring; i++) {
        put_op(f, &ct.ring[i]);
    }
    ct.flushed += ct.nring;
    ct.nring = 0;
    ct.nsplits = 0;
    if (ferror(f)) {
        fprintf(stderr, "collprof-trace: rank %d: %s: cannot write: recording stops\n", ct.rank,
                ct.path);
        ct.on = 0;
        return -1;
    }
    return 0;
}
