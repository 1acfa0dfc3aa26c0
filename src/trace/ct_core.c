/*
 * collprof-trace's state (ct.h): the handle maps, the communicators resolved
 * to MPI_COMM_WORLD ranks, the element types, and ct_put, the per-call path:
 * one lock where the program runs MPI_THREAD_MULTIPLE, one map look-up (the
 * last communicator is remembered), one 80-byte copy into the buffer.
 */
#include "config.h"

#include "trace/ct.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void ct_lock(void)
{
    if (ct.mt) {
        pthread_mutex_lock(&mu);
    }
}

void ct_unlock(void)
{
    if (ct.mt) {
        pthread_mutex_unlock(&mu);
    }
}

/* ---- maps: a handle's bytes as the key, linear probing, deletion by backward shift ---- */

#define KEY(h) key_of(&(h), sizeof(h))

static uint64_t key_of(const void *h, size_t n)
{
    uint64_t k = 0;
    memcpy(&k, h, n < sizeof(k) ? n : sizeof(k));
    return k;
}

static size_t slot_of(const ct_map_t *m, uint64_t k)
{
    k ^= k >> 31;
    k *= UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(k >> 17) & (m->cap - 1);
}

static int64_t *map_get(ct_map_t *m, uint64_t k)
{
    if (m->cap == 0 || k == 0) {
        return NULL;
    }
    for (size_t i = slot_of(m, k);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == k) {
            return m->vals[i];
        }
        if (m->keys[i] == 0) {
            return NULL;
        }
    }
}

static int map_put(ct_map_t *m, uint64_t k, int64_t a, int64_t b, int64_t c, int multi);

static int map_grow(ct_map_t *m)
{
    ct_map_t old = *m;
    size_t cap = old.cap ? old.cap * 2 : 256;
    m->keys = calloc(cap, sizeof(*m->keys));
    m->vals = malloc(cap * sizeof(*m->vals));
    if (m->keys == NULL || m->vals == NULL) {
        free(m->keys);
        free(m->vals);
        *m = old;
        return -1;
    }
    m->cap = cap;
    m->n = 0;
    for (size_t i = 0; i < old.cap; i++) {
        if (old.keys[i] != 0) {
            map_put(m, old.keys[i], old.vals[i][0], old.vals[i][1], old.vals[i][2], 1);
        }
    }
    free(old.keys);
    free(old.vals);
    return 0;
}

/* k's values (replaced; multi: k added again, found after the entries of k before it) */
static int map_put(ct_map_t *m, uint64_t k, int64_t a, int64_t b, int64_t c, int multi)
{
    if (k == 0) {
        return 0;
    }
    if (2 * (m->n + 1) > m->cap && map_grow(m) != 0) {
        return -1;
    }
    size_t i = slot_of(m, k);
    while (m->keys[i] != 0 && (multi || m->keys[i] != k)) {
        i = (i + 1) & (m->cap - 1);
    }
    m->n += m->keys[i] == 0;
    m->keys[i] = k;
    m->vals[i][0] = a;
    m->vals[i][1] = b;
    m->vals[i][2] = c;
    return 0;
}

static void map_del(ct_map_t *m, uint64_t k)
{
    int64_t *v = map_get(m, k);
    if (v == NULL) {
        return;
    }
    size_t i = (size_t)((int64_t(*)[3])v - m->vals), mask = m->cap - 1;
    for (size_t j = (i + 1) & mask; m->keys[j] != 0; j = (j + 1) & mask) {
        size_t home = slot_of(m, m->keys[j]);
        /* j's key may move to i when its home is not in (i, j] */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->keys[i] = m->keys[j];
            memcpy(m->vals[i], m->vals[j], sizeof(m->vals[i]));
            i = j;
        }
    }
    m->keys[i] = 0;
    m->n--;
}

/* ---- communicators ---------------------------------------------------------------------- */

static void give_up(const char *why)
{
    fprintf(stderr, "collprof-trace: rank %d: %s: recording stops\n", ct.rank, why);
    ct.on = 0;
}

/* c's members as MPI_COMM_WORLD ranks, into a new ct.comms entry: its index, or -1 */
static int32_t comm_add(MPI_Comm c, const char *from)
{
    MPI_Group g;
    int n = 0;
    if (PMPI_Comm_group(c, &g) != MPI_SUCCESS) {
        return -1;
    }
    PMPI_Group_size(g, &n);
    int *ranks = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    int *members = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (ct.ncomms == ct.ccap) {
        size_t cap = ct.ccap ? 2 * ct.ccap : 64;
        ct_comm_t *cs = realloc(ct.comms, cap * sizeof(*cs));
        ct.comms = cs != NULL ? cs : ct.comms;
        ct.ccap = cs != NULL ? cap : ct.ccap;
    }
    if (ranks == NULL || members == NULL || ct.ncomms == ct.ccap) {
        free(ranks);
        free(members);
        PMPI_Group_free(&g);
        give_up("out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        ranks[i] = i;
    }
    PMPI_Group_translate_ranks(g, n, ranks, ct.world_group, members);
    PMPI_Group_free(&g);
    free(ranks);
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a over the size and the members */
    for (int i = -1; i < n; i++) {
        uint32_t v = (uint32_t)(i < 0 ? n : members[i]);
        for (int b = 0; b < 4; b++) {
            h = (h ^ ((v >> (8 * b)) & 0xffu)) * UINT64_C(0x100000001b3);
        }
    }
    int k = 0; /* communicators of the same members this rank made before: every member agrees */
    for (size_t i = 0; i < ct.ncomms; i++) {
        const ct_comm_t *o = &ct.comms[i];
        k += o->hash == h && o->size == n &&
             memcmp(o->members, members, (size_t)n * sizeof(int)) == 0;
    }
    int32_t idx = (int32_t)ct.ncomms++;
    ct.comms[idx] = (ct_comm_t){c, n, 0, k, members, h, from};
    if (map_put(&ct.comm_of, KEY(c), idx, 0, 0, 0) != 0) {
        give_up("out of memory");
        return -1;
    }
    ct.last_comm_key = KEY(c);
    ct.last_comm = idx;
    return idx;
}

int32_t ct_comm_index(MPI_Comm c, const char *from)
{
    uint64_t k = KEY(c);
    if (k == ct.last_comm_key && ct.last_comm >= 0) {
        return ct.last_comm;
    }
    int64_t *v = map_get(&ct.comm_of, k);
    if (v == NULL) {
        return comm_add(c, from);
    }
    ct.last_comm_key = k;
    ct.last_comm = (int32_t)v[0];
    return ct.last_comm;
}

void ct_comm_made(MPI_Comm c, const char *from)
{
    if (!ct.on || c == MPI_COMM_NULL) {
        return;
    }
    ct_lock();
    if (ct.on) {
        int64_t *v = map_get(&ct.comm_of, KEY(c));
        if (v != NULL) { /* a handle we missed the end of */
            ct.comms[v[0]].h = MPI_COMM_NULL;
            map_del(&ct.comm_of, KEY(c));
        }
        ct.last_comm = -1;
        comm_add(c, from);
    }
    ct_unlock();
}

void ct_comm_forget(MPI_Comm c)
{
    if (!ct.on) {
        return;
    }
    ct_lock();
    int64_t *v = map_get(&ct.comm_of, KEY(c));
    if (v != NULL) {
        ct.comms[v[0]].h = MPI_COMM_NULL;
        map_del(&ct.comm_of, KEY(c));
    }
    ct.last_comm = -1;
    ct_unlock();
}

/* ---- element types --------------------------------------------------------------------- */

static const uint32_t type_sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
static struct {
    MPI_Datatype h;
    uint8_t t;
} types[32];
static int ntypes;
static MPI_Datatype last_type;
static uint8_t last_t = CT_DT_NONE;
static uint32_t last_size;

void ct_types_init(void)
{
    const struct {
        MPI_Datatype h;
        int t;
    } map[] = {
        {MPI_CHAR, 0},
        {MPI_SIGNED_CHAR, 0},
        {MPI_INT8_T, 0},
        {MPI_BYTE, 1},
        {MPI_UNSIGNED_CHAR, 1},
        {MPI_UINT8_T, 1},
        {MPI_INT, 2},
        {MPI_INT32_T, 2},
        {MPI_UNSIGNED, 3},
        {MPI_UINT32_T, 3},
        {MPI_LONG_LONG, 4},
        {MPI_INT64_T, 4},
        {MPI_UNSIGNED_LONG_LONG, 5},
        {MPI_UINT64_T, 5},
        {MPI_FLOAT, 8},
        {MPI_DOUBLE, 9},
        {MPI_LONG, sizeof(long) == 8 ? 4 : 2},
        {MPI_UNSIGNED_LONG, sizeof(long) == 8 ? 5 : 3},
    };
    ntypes = 0;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        types[ntypes].h = map[i].h;
        types[ntypes++].t = (uint8_t)map[i].t;
    }
    last_type = MPI_DATATYPE_NULL;
}

static void type_of(ct_rec_t *r, MPI_Datatype dt)
{
    if (dt == MPI_DATATYPE_NULL) {
        return;
    }
    if (dt != last_type) {
        last_t = CT_DT_NONE;
        for (int i = 0; i < ntypes; i++) {
            if (types[i].h == dt) {
                last_t = types[i].t;
                break;
            }
        }
        int size = 0;
        if (last_t != CT_DT_NONE) {
            last_size = type_sizes[last_t];
        } else if (PMPI_Type_size(dt, &size) == MPI_SUCCESS && size > 0) {
            last_size = (uint32_t)size;
        } else {
            last_size = 0;
        }
        last_type = dt;
    }
    r->dtype = last_t;
    r->esize = last_size;
}

/* ---- the per-call path ------------------------------------------------------------------ */

/* r into the buffer (locked, ct.on): the fields made global */
static uint64_t put_locked(ct_rec_t *r, int64_t end, MPI_Comm comm, MPI_Datatype dt)
{
    r->dur = end - r->t;
    r->t -= ct.t0;
    int32_t ci = r->fn >= CT_WAIT ? r->comm : ct_comm_index(comm, "(first use)");
    if (ci < 0) {
        return UINT64_MAX;
    }
    const ct_comm_t *c = &ct.comms[ci];
    r->comm = ci;
    r->root = r->root >= 0 && r->root < c->size ? c->members[r->root] : -1;
    r->peer = r->peer >= 0 && r->peer < c->size ? c->members[r->peer] : -1;
    r->in *= (r->flags & CT_IN_PER_RANK) ? (uint64_t)c->size : 1;
    r->out *= (r->flags & CT_OUT_PER_RANK) ? (uint64_t)c->size : 1;
    type_of(r, dt);
    if (ct.nring == ct.cap && ct_flush() != 0) {
        return UINT64_MAX;
    }
    ct.ring[ct.nring] = *r;
    return ct.flushed + ct.nring++;
}

static void track(ct_rec_t *r, uint64_t no, const MPI_Request *req, int anysrc)
{
    /* a handle several live requests share (Open MPI returns one already-complete request for
     * every send it finished at once): each kept, the oldest completed first */
    if (no != UINT64_MAX && map_put(&ct.req_of, KEY(*req), r->req, (int64_t)no,
                                    (int64_t)r->comm | ((int64_t)anysrc << 32), 1) != 0) {
        give_up("out of memory");
    }
}

void ct_put(ct_rec_t *r, MPI_Comm comm, MPI_Datatype dt, const MPI_Request *req, int anysrc)
{
    int64_t end = ct_now();
    ct_lock();
    if (ct.on) {
        r->req = req != NULL ? ct.next_req++ : r->req;
        uint64_t no = put_locked(r, end, comm, dt);
        if (req != NULL) {
            track(r, no, req, anysrc);
        }
    }
    ct_unlock();
}

void ct_put_v(ct_rec_t *r, MPI_Comm comm, MPI_Datatype dt, const int *in, const int *out,
              const MPI_Request *req)
{
    int64_t end = ct_now();
    ct_lock();
    int32_t ci = ct.on ? ct_comm_index(comm, "(first use)") : -1;
    size_t n = ci >= 0 ? (size_t)ct.comms[ci].size : 0;
    if (ci >= 0 && (ct.nring == ct.cap || ct.nsplits + 2 * n > ct.scap) && ct_flush() != 0) {
        ci = -1;
    }
    if (ci >= 0 && 2 * n > ct.scap) {
        int64_t *s = realloc(ct.splits, 2 * n * sizeof(*s));
        ct.splits = s != NULL ? s : ct.splits;
        ct.scap = s != NULL ? 2 * n : ct.scap;
        ci = s != NULL ? ci : -1;
    }
    if (ci >= 0) {
        r->split = (int64_t)ct.nsplits;
        for (size_t i = 0; i < n; i++) {
            r->in += (uint64_t)in[i];
            r->out += (uint64_t)out[i];
            ct.splits[ct.nsplits + i] = in[i];
            ct.splits[ct.nsplits + n + i] = out[i];
        }
        ct.nsplits += 2 * n;
        r->req = req != NULL ? ct.next_req++ : r->req;
        uint64_t no = put_locked(r, end, comm, dt);
        if (req != NULL) {
            track(r, no, req, 0);
        }
    }
    ct_unlock();
}

/* ---- requests --------------------------------------------------------------------------- */

void ct_req_done(MPI_Request h, int fn, int64_t t, const MPI_Status *st)
{
    int64_t end = ct_now();
    ct_lock();
    int64_t *v = ct.on ? map_get(&ct.req_of, KEY(h)) : NULL;
    if (v != NULL) {
        int64_t id = v[0], no = v[1], comm = v[2] & 0xffffffff, anysrc = v[2] >> 32;
        map_del(&ct.req_of, KEY(h));
        const ct_comm_t *c = &ct.comms[comm];
        if (anysrc && st != NULL && st->MPI_SOURCE >= 0 && st->MPI_SOURCE < c->size &&
            (uint64_t)no >= ct.flushed) { /* the receive's peer, still in the buffer */
            ct.ring[(uint64_t)no - ct.flushed].peer = c->members[st->MPI_SOURCE];
        }
        ct_rec_t r = ct_rec(fn, t);
        r.comm = (int32_t)comm;
        r.req = id;
        put_locked(&r, end, MPI_COMM_NULL, MPI_DATATYPE_NULL);
    }
    ct_unlock();
}

int ct_req_known(MPI_Request h)
{
    if (!ct.on) {
        return 0;
    }
    ct_lock();
    int64_t *v = map_get(&ct.req_of, KEY(h));
    int k = v == NULL ? 0 : (v[2] >> 32) ? 2 : 1;
    ct_unlock();
    return k;
}

void ct_req_forget(MPI_Request h)
{
    if (!ct.on) {
        return;
    }
    ct_lock();
    map_del(&ct.req_of, KEY(h));
    ct_unlock();
}
