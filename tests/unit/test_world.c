/* The "where ranks ran" line (src/format/world.c): ranges, cyclic lists, caps. */
#include "config.h"

#include "format/world.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* A placement: node of each rank, hosts named n1, n2, ... */
typedef struct placement {
    int per;    /* ranks per node */
    int cyclic; /* rank r on node r % nnodes, else r / per */
    int nnodes;
} placement_t;

static int node_of(const void *arg, int rank, const char **host)
{
    static char names[1024][16];
    const placement_t *p = arg;
    int node = p->cyclic ? rank % p->nnodes : rank / p->per;
    snprintf(names[node], sizeof(names[node]), "n%d", node + 1);
    *host = names[node];
    return node;
}

static char *render(int nranks, int nnodes, int per, int cyclic)
{
    placement_t p = {.per = per, .cyclic = cyclic, .nnodes = nnodes};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cp_world_print(f, "world:      ", nranks, nnodes, node_of, &p);
    fclose(f);
    return buf;
}

static void check(int nranks, int nnodes, int per, int cyclic, const char *want)
{
    char *got = render(nranks, nnodes, per, cyclic);
    if (!ok(!strcmp(got, want), "%d ranks on %d nodes%s", nranks, nnodes,
            cyclic ? ", cyclic" : "")) {
        printf("# got:\n%s", got);
    }
    free(got);
}

/* longest line and number of lines of the text */
static size_t widest(const char *s, int *lines)
{
    size_t w = 0;
    *lines = 0;
    for (const char *nl; *s; s = nl + 1) {
        nl = strchr(s, '\n');
        w = (size_t)(nl - s) > w ? (size_t)(nl - s) : w;
        ++*lines;
    }
    return w;
}

int main(void)
{
    check(1, 1, 1, 0, "world:      1 rank on 1 node: n1 rank 0\n");
    check(4, 2, 2, 0, "world:      4 ranks on 2 nodes: n1 ranks 0-1, n2 ranks 2-3\n");
    check(4, 2, 2, 1, "world:      4 ranks on 2 nodes: n1 ranks 0,2, n2 ranks 1,3\n");
    check(4, 4, 1, 0,
          "world:      4 ranks on 4 nodes: n1 rank 0, n2 rank 1, n3 rank 2, n4 rank 3\n");
    check(1000, 2, 500, 1,
          "world:      1000 ranks on 2 nodes: n1 ranks 0,2,4,6,...,998 (500 ranks),\n"
          "            n2 ranks 1,3,5,7,...,999 (500 ranks)\n");
    check(1000, 250, 4, 0,
          "world:      1000 ranks on 250 nodes (4 per node): n1 ranks 0-3, n2 ranks 4-7,"
          " n3 ranks 8-11,\n"
          "            n4 ranks 12-15, n5 ranks 16-19, n6 ranks 20-23, ... 243 more nodes ...,\n"
          "            n250 ranks 996-999\n");
    int lines;
    char *big = render(1000, 250, 4, 1);
    size_t w = widest(big, &lines);
    ok(w < 100 && lines <= 4, "1000 ranks on 250 nodes, cyclic: %d lines, at most %zu columns",
       lines, w);
    free(big);
    return tap_done();
}
