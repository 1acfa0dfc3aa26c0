/*
 * The handles NCCL holds (groups, ops, kernel channels): numbers, never
 * reused, each mapped to its object while the object lives.  An event that
 * names a handle whose object is gone (NCCL sent more kernel channels than it
 * announced, stopped an event twice, passed a parent already stopped) or that
 * was never ours is found out here and ignored; no pointer NCCL gives back is
 * followed.  An open-addressing table keyed by the number; the caller holds
 * ncclprof_rec.c's mutex.
 */
#include "ncclprof.h"

#include <stdint.h>
#include <stdlib.h>

#define NP_TOMB UINTPTR_MAX /* a deleted slot's key; 0: an empty slot's */

typedef struct {
    uintptr_t key;
    void *obj;
} np_slot_t;

static np_slot_t *tab;
static size_t cap, live, dead;
static uintptr_t next_key = 1;

static size_t find(uintptr_t k)
{
    size_t i = k & (cap - 1); /* (the keys are consecutive: they spread by themselves) */
    while (tab[i].key != 0 && tab[i].key != k) {
        i = (i + 1) & (cap - 1);
    }
    return i;
}

/* Room for one more: the table rebuilt (tombstones dropped; twice the size when half full of
 * live ones).  0, or -1 out of memory. */
static int room(void)
{
    if (cap != 0 && (live + dead + 1) * 2 <= cap) {
        return 0;
    }
    size_t ncap = cap == 0 ? 256 : (live + 1) * 4 > cap ? cap * 2 : cap;
    np_slot_t *old = tab, *nt = calloc(ncap, sizeof(*nt));
    size_t ocap = cap;
    if (nt == NULL) {
        return -1;
    }
    tab = nt;
    cap = ncap;
    dead = 0;
    for (size_t i = 0; i < ocap; i++) {
        if (old[i].key != 0 && old[i].key != NP_TOMB) {
            tab[find(old[i].key)] = old[i];
        }
    }
    free(old);
    return 0;
}

void *np_reg_add(void *obj)
{
    if (room() != 0) {
        return NULL;
    }
    uintptr_t k;
    do { /* (a key still live after a wrap is skipped) */
        k = next_key++;
    } while (k == 0 || k == NP_TOMB || tab[find(k)].key == k);
    size_t i = k & (cap - 1);
    while (tab[i].key != 0 && tab[i].key != NP_TOMB) {
        i = (i + 1) & (cap - 1);
    }
    dead -= tab[i].key == NP_TOMB;
    tab[i].key = k;
    tab[i].obj = obj;
    live++;
    return (void *)k;
}

void *np_reg_get(const void *h, int kind)
{
    uintptr_t k = (uintptr_t)h;
    if (k == 0 || k == NP_TOMB || cap == 0) {
        return NULL;
    }
    size_t i = find(k);
    return tab[i].key == k && (kind == 0 || *(const int *)tab[i].obj == kind) ? tab[i].obj : NULL;
}

void np_reg_del(const void *h)
{
    uintptr_t k = (uintptr_t)h;
    if (k == 0 || k == NP_TOMB || cap == 0) {
        return;
    }
    size_t i = find(k);
    if (tab[i].key == k) {
        tab[i].key = NP_TOMB;
        tab[i].obj = NULL;
        live--;
        dead++;
    }
}

void np_reg_each(void (*fn)(void *obj, void *arg), void *arg)
{
    for (size_t i = 0; i < cap; i++) {
        if (tab[i].key != 0 && tab[i].key != NP_TOMB) {
            fn(tab[i].obj, arg); /* (fn may delete it: that leaves a tombstone, no move) */
        }
    }
}
