#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/* No data: nothing to fill or check. */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    (void)x, (void)sendbuf, (void)recvbuf;
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    (void)x, (void)recvbuf;
    return 0;
}

const cp_coll_t cp_coll_barrier = {.op = COLLPROF_OP_BARRIER, .fill = fill, .check = check};
