/*
 * The check before the replay's hash table of two-word keys (replay_check_int.h): open
 * addressing, never shrinks; used by replay_check.c, replay_check_var.c and replay_fly.c.
 */
#include "config.h"

#include "runner/replay_check_int.h"

#include <stdlib.h>

int cp_ckht_init(htab_t *h, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 16) {
        cap <<= 1;
    }
    h->e = malloc(cap * sizeof(hent_t));
    h->mask = cap - 1;
    for (size_t i = 0; h->e != NULL && i < cap; i++) {
        h->e[i].v = -1;
    }
    return h->e != NULL ? 0 : -1;
}

hent_t *cp_ckht_at(const htab_t *h, uint64_t a, uint64_t b)
{
    uint64_t x = (a * 0x9E3779B97F4A7C15ull) ^ (b + 0x632BE59BD9B4E019ull + (a << 6));
    x ^= x >> 29;
    for (size_t i = (size_t)x & h->mask;; i = (i + 1) & h->mask) {
        if (h->e[i].v < 0 || (h->e[i].a == a && h->e[i].b == b)) {
            h->e[i].a = a;
            h->e[i].b = b;
            return &h->e[i];
        }
    }
}
