/* The helpers the readers share (the bottom of src/counters: counters.c > counters_sys.c,
 * counters_nvml.c > this file). */
#include "config.h"

#include "counters/counters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cp_counters_root(void)
{
    const char *r = getenv("COLLPROF_SYSFS_ROOT");
    return r != NULL ? r : "";
}

int cp_counters_add(cp_cnt_snap_t *s, const char *source, const char *name, const char *unit,
                    int kind, int bits, double scale, uint64_t raw)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        cp_cnt_t *v = realloc(s->v, (size_t)cap * sizeof(*v));
        if (v == NULL) {
            return -1;
        }
        s->v = v;
        s->cap = cap;
    }
    cp_cnt_t *c = &s->v[s->n++];
    memset(c, 0, sizeof(*c));
    snprintf(c->source, sizeof(c->source), "%s", source);
    snprintf(c->name, sizeof(c->name), "%s", name);
    snprintf(c->unit, sizeof(c->unit), "%s", unit);
    c->kind = kind;
    c->bits = bits;
    c->scale = scale;
    c->raw = raw;
    return 0;
}
