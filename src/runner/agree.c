#include "config.h"

#include "runner/agree.h"

#include "boot/boot.h"
#include "base/log.h"

#include <collprof/status.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cp_oob_t cp_oob_world = {.allgather = cp_oob_allgather,
                               .gather = cp_oob_gather,
                               .bcast = cp_oob_bcast,
                               .barrier = cp_oob_barrier};

static int alone_copy(const void *in, void *out, size_t len)
{
    if (len > 0 && out == NULL) { /* this rank is rank 0 */
        return COLLPROF_ERR_INVALID;
    }
    if (len > 0 && in != out) {
        memmove(out, in, len);
    }
    return COLLPROF_OK;
}
static int alone_bcast(void *buf, size_t len, int root)
{
    (void)buf, (void)len, (void)root;
    return COLLPROF_OK;
}
static int alone_barrier(void)
{
    return COLLPROF_OK;
}
const cp_oob_t cp_oob_alone = {
    .allgather = alone_copy, .gather = alone_copy, .bcast = alone_bcast, .barrier = alone_barrier};

cp_agree_result_t cp_agree(int n, int status, const char *why, cp_agreement_t *out)
{
    return cp_agree_over(&cp_oob_world, n, status, why, out);
}

/* Ranks up to which an agreement's room for the statuses is static (64 KiB). */
#define AGREE_STATIC_RANKS 16384

/* Rank 0's room for n statuses (the gather's out, untouched on the other ranks, which do not
 * know they are not rank 0), kept for the process: up to AGREE_STATIC_RANKS ranks static, above
 * grown once.  So an agreement allocates nothing that a rank short of memory could lack and
 * every rank makes the same calls: a rank that left the gather would keep rank 0 waiting in it
 * (a hang, not an agreed failure).  NULL only above AGREE_STATIC_RANKS when the first
 * allocation fails (the gather is joined all the same).  Not thread-safe, as the channel is
 * not. */
static int *agree_room(int n)
{
    static int fixed[AGREE_STATIC_RANKS];
    static int *grown;
    static int grown_n;
    if (n <= AGREE_STATIC_RANKS) {
        return fixed;
    }
    if (n > grown_n) {
        int *p = realloc(grown, (size_t)n * sizeof(int));
        if (p == NULL) {
            cp_log(CP_LOG_ERROR, "out of memory for an agreement of %d ranks", n);
            return NULL;
        }
        memset(p, 0, (size_t)n * sizeof(int)); /* read, never written, on the other ranks */
        grown = p;
        grown_n = n;
    }
    return grown;
}

/* Every rank's status to rank 0 (an int each), rank 0's finding to every rank (the first
 * failing rank and its status), then, only when some rank failed, that rank's reason from it
 * to every rank.  Not an allgather of the statuses: through the TCP tree rank 0 would send
 * ranks^2 ints per agreement (4096 ranks: 64 MiB), here 2 ints per rank. */
cp_agree_result_t cp_agree_over(const cp_oob_t *oob, int n, int status, const char *why,
                                cp_agreement_t *out)
{
    int *all = agree_room(n > 0 ? n : 1); /* filled on rank 0 */
    int first[2] = {-1, COLLPROF_OK};     /* rank, status */
    memset(out, 0, sizeof(*out));
    out->rank = -1;
    /* every rank joins the gather even without room (NULL only above AGREE_STATIC_RANKS when
     * the allocation failed): elsewhere than on rank 0 the out is not needed, and rank 0's
     * gather then fails, so its verdict below says broken instead of leaving rank 0 waiting */
    int oob_rc = oob->gather(&status, all, sizeof(int));
    for (int r = 0; oob_rc == 0 && all != NULL && r < n && first[0] < 0; r++) {
        if (all[r] != COLLPROF_OK) {
            first[0] = r;
            first[1] = all[r];
        }
    }
    /* the verdict goes out whatever the gather did here (rank 0: -2 when its part failed), so
     * that every rank makes the same calls */
    first[0] = oob_rc != 0 ? -2 : first[0];
    int sent = oob->bcast(first, sizeof(first), 0);
    oob_rc = oob_rc != 0 || sent != 0 || first[0] == -2 ? -1 : 0;
    if (oob_rc == 0 && first[0] >= 0 && first[0] < n) {
        out->rank = first[0];
        out->status = first[1];
    }
    if (oob_rc == 0 && out->rank >= 0) {
        snprintf(out->msg, sizeof(out->msg), "%s", why ? why : "");
        oob_rc = oob->bcast(out->msg, sizeof(out->msg), out->rank);
        out->msg[sizeof(out->msg) - 1] = '\0';
        out->result = CP_AGREE_FAILED;
    }
    if (oob_rc != 0) {
        memset(out, 0, sizeof(*out));
        out->rank = -1;
        out->result = CP_AGREE_OOB_BROKEN;
        out->status = COLLPROF_ERR_BOOTSTRAP;
        snprintf(out->msg, sizeof(out->msg), "out-of-band exchange failed");
    }
    return out->result;
}
