/*
 * collprof-trace's state and its file format (ct.h): the buffer written out
 * as JSON lines (the communicators not yet written, then the records), the
 * element types' names.  The lowest of the recorder's files: it calls none of
 * the others.
 */
#include "config.h"

#include "trace/ct.h"

#include <stdio.h>
#include <string.h>

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

/* The lines are built in a buffer of our own and written with fwrite: printf's conversions
 * took about 0.8 us a record at MPI_Finalize, this a fifth of it.  Every field is under
 * ROOM bytes; the buffer is written out when less than that is left. */
#define ROOM 128
static char ob[1 << 16];
static size_t on;

static void room(FILE *f)
{
    if (on > sizeof(ob) - ROOM) {
        fwrite(ob, 1, on, f);
        on = 0;
    }
}

/* n bytes of s (n < ROOM - 24) */
static inline void put(FILE *f, const char *s, size_t n)
{
    room(f);
    memcpy(ob + on, s, n);
    on += n;
}

/* a string literal (its length known here), or a name */
#define LIT(f, s) put(f, s, sizeof(s) - 1)
static void str(FILE *f, const char *s)
{
    size_t n = strlen(s);
    put(f, s, n < ROOM - 24 ? n : ROOM - 24);
}

/* v in decimal */
static void num(FILE *f, int64_t v)
{
    char d[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    room(f);
    if (v < 0) {
        ob[on++] = '-';
    }
    do {
        d[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    while (n > 0) {
        ob[on++] = d[--n];
    }
}

/* , "key": v */
#define FIELD(f, key, v) (LIT(f, key), num(f, (int64_t)(v)))

static void put_comm(FILE *f, ct_comm_t *c, size_t i)
{
    char key[64];
    snprintf(key, sizeof(key), "%016llx-%d", (unsigned long long)c->hash, c->k);
    FIELD(f, "{\"comm\": ", (int64_t)i);
    LIT(f, ", \"key\": \"");
    str(f, key);
    FIELD(f, "\", \"size\": ", c->size);
    LIT(f, ", \"members\": [");
    for (int m = 0; m < c->size; m++) {
        if (m > 0) {
            LIT(f, ", ");
        }
        num(f, c->members[m]);
    }
    LIT(f, "], \"from\": \"");
    str(f, c->from);
    LIT(f, "\"}\n");
    c->written = 1;
}

static void put_splits(FILE *f, const char *key, const int64_t *s, int n)
{
    str(f, key);
    for (int i = 0; i < n; i++) {
        if (i > 0) {
            LIT(f, ", ");
        }
        num(f, s[i]);
    }
    LIT(f, "]");
}

static void put_op(FILE *f, const ct_rec_t *r)
{
    uint64_t big = r->in > r->out ? r->in : r->out;
    LIT(f, "{\"op\": \"");
    str(f, fn_ops[r->fn]);
    LIT(f, "\", \"mpi\": \"");
    str(f, fn_names[r->fn]);
    FIELD(f, "\", \"comm\": ", r->comm);
    if (r->fn < CT_WAIT && r->fn != CT_BARRIER && r->fn != CT_IBARRIER) {
        const char *dt = ct_type_name(r->dtype);
        if (dt != NULL) {
            LIT(f, ", \"dtype\": \"");
            str(f, dt);
            LIT(f, "\"");
        }
        FIELD(f, ", \"in\": ", (int64_t)r->in);
        FIELD(f, ", \"out\": ", (int64_t)r->out);
        FIELD(f, ", \"bytes\": ", (int64_t)(big * r->esize));
        FIELD(f, ", \"esize\": ", r->esize);
    }
    FIELD(f, ", \"t\": ", r->t);
    FIELD(f, ", \"dur\": ", r->dur);
    const char *keys[] = {", \"root\": ", ", \"peer\": ", ", \"req\": ", ", \"co\": "};
    int64_t vals[] = {r->root, r->peer, r->req, r->co};
    for (int i = 0; i < 4; i++) {
        if (vals[i] >= 0) {
            str(f, keys[i]);
            num(f, vals[i]);
        }
    }
    if (r->split >= 0) {
        int n = ct.comms[r->comm].size;
        put_splits(f, ", \"in_split\": [", ct.splits + r->split, n);
        put_splits(f, ", \"out_split\": [", ct.splits + r->split + n, n);
    }
    LIT(f, "}\n");
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
    fwrite(ob, 1, on, f);
    on = 0;
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
