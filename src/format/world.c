#include "config.h"

#include "format/world.h"

#include "base/util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
    WORLD_WIDTH = 100, /* wrap before this column */
    WORLD_NODES = 8,   /* more nodes than this: the first WORLD_HEAD and the last */
    WORLD_HEAD = 6,
    WORLD_RUNS = 6, /* more ranges on a node than this: the first RUNS_HEAD and the last */
    RUNS_HEAD = 4,
};

/* One output line being filled with ", "-separated items. */
typedef struct world_line {
    FILE *f;
    size_t col;
    size_t indent;
    int items;
} world_line_t;

static void put_item(world_line_t *l, const char *s)
{
    size_t n = strlen(s);
    if (l->items > 0) {
        fputc(',', l->f);
        l->col++;
        if (l->col + 1 + n >= WORLD_WIDTH) {
            fprintf(l->f, "\n%*s", (int)l->indent, "");
            l->col = l->indent;
        } else {
            fputc(' ', l->f);
            l->col++;
        }
    } else {
        fputc(' ', l->f);
        l->col++;
    }
    fputs(s, l->f);
    l->col += n;
    l->items++;
}

__attribute__((format(printf, 3, 4))) static void append(char *buf, size_t len, const char *fmt,
                                                         ...)
{
    size_t used = strlen(buf);
    if (used < len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf + used, len - used, fmt, ap);
        va_end(ap);
    }
}

/* "n1 ranks 0-1,4" for the n ranks rk[] of host: ranges of consecutive
 * ranks; past WORLD_RUNS ranges the first RUNS_HEAD, "..." and the last,
 * then the count. */
static void node_item(char *buf, size_t len, const char *host, const int *rk, int n)
{
    int runs = 0, head = n, last = 0; /* head: where run RUNS_HEAD starts; last: the last run */
    for (int i = 0; i < n; i++) {
        if (i == 0 || rk[i] != rk[i - 1] + 1) {
            head = runs == RUNS_HEAD ? i : head;
            last = i;
            runs++;
        }
    }
    char a[512], z[64];
    if (runs <= WORLD_RUNS) {
        snprintf(buf, len, "%s rank%s %s", host, n == 1 ? "" : "s",
                 cp_fmt_ranges(rk, n, a, sizeof(a)));
    } else {
        snprintf(buf, len, "%s ranks %s,...,%s (%d ranks)", host,
                 cp_fmt_ranges(rk, head, a, sizeof(a)),
                 cp_fmt_ranges(rk + last, n - last, z, sizeof(z)), n);
    }
}

/* The ranks of node into rk (room for nranks); returns how many, and the
 * host of the first in *host. */
static int node_ranks(int node, int nranks, cp_world_node_fn node_of, const void *arg, int *rk,
                      const char **host)
{
    int n = 0;
    *host = "?";
    for (int r = 0; r < nranks; r++) {
        const char *h = "?";
        if (node_of(arg, r, &h) == node) {
            *host = n == 0 ? h : *host;
            rk[n++] = r;
        }
    }
    return n;
}

/* " (4 per node)" or " (1 to 5 per node)" after the header, when nodes are left out. */
static void per_node(char *buf, size_t len, int nranks, int nnodes, cp_world_node_fn node_of,
                     const void *arg)
{
    int *cnt = calloc((size_t)nnodes, sizeof(*cnt));
    if (cnt == NULL) {
        return;
    }
    for (int r = 0; r < nranks; r++) {
        const char *h;
        int node = node_of(arg, r, &h);
        if (node >= 0 && node < nnodes) {
            cnt[node]++;
        }
    }
    int lo = cnt[0], hi = cnt[0];
    for (int i = 1; i < nnodes; i++) {
        lo = cnt[i] < lo ? cnt[i] : lo;
        hi = cnt[i] > hi ? cnt[i] : hi;
    }
    free(cnt);
    if (lo == hi) {
        append(buf, len, " (%d per node)", lo);
    } else {
        append(buf, len, " (%d to %d per node)", lo, hi);
    }
}

void cp_world_print(FILE *f, const char *label, int nranks, int nnodes, cp_world_node_fn node_of,
                    const void *arg)
{
    char head[128];
    snprintf(head, sizeof(head), "%s%d rank%s on %d node%s", label, nranks, nranks == 1 ? "" : "s",
             nnodes, nnodes == 1 ? "" : "s");
    int capped = nnodes > WORLD_NODES;
    if (capped) {
        per_node(head, sizeof(head), nranks, nnodes, node_of, arg);
    }
    fprintf(f, "%s:", head);
    world_line_t l = {.f = f, .col = strlen(head) + 1, .indent = strlen(label)};
    int *rk = nranks > 0 ? malloc((size_t)nranks * sizeof(*rk)) : NULL;
    for (int node = 0; rk != NULL && node < nnodes; node++) {
        char item[160];
        if (capped && node >= WORLD_HEAD && node < nnodes - 1) {
            if (node == WORLD_HEAD) {
                snprintf(item, sizeof(item), "... %d more nodes ...", nnodes - WORLD_HEAD - 1);
                put_item(&l, item);
            }
            continue;
        }
        const char *host;
        int n = node_ranks(node, nranks, node_of, arg, rk, &host);
        node_item(item, sizeof(item), host, rk, n);
        put_item(&l, item);
    }
    free(rk);
    fputc('\n', f);
}
