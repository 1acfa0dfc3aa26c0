/*
 * Measurement policies (collprof --sync, --alloc, --rotate-buffers): how
 * an iteration is synchronised and timed, how host buffers are allocated,
 * and how consecutive operations move through a larger allocation so that
 * they do not find the previous operation's data in the caches.  Pure
 * helpers: the runner (runner/runner_buf.c) applies them and every cell records
 * what it actually used (/results sync, batch, rotate, allocation).
 */
#ifndef COLLPROF_CORE_POLICY_H
#define COLLPROF_CORE_POLICY_H

#include <stddef.h>

/** --sync: what happens between timed samples. */
typedef enum cp_sync {
    CP_SYNC_BARRIER = 0, /**< a barrier (not timed) before each operation: the default */
    CP_SYNC_NONE,        /**< operations back to back, each timed on its own */
    CP_SYNC_BATCH        /**< a barrier, then N operations timed together, / N */
} cp_sync_t;

/** Operations per sample of --sync batch when N is not given (nccl-tests' -n default). */
#define CP_BATCH_DEFAULT 20
/** Most operations per batch, and most --rotate-buffers slots. */
#define CP_BATCH_MAX  100000
#define CP_ROTATE_MAX 1024

/** --alloc: who allocates host buffers, and how. */
typedef enum cp_alloc {
    CP_ALLOC_MALLOC = 0, /**< the backend's own mem_alloc (posix_memalign in mpi, gloo, self) */
    CP_ALLOC_MMAP,       /**< anonymous private mmap, by the core */
    CP_ALLOC_HUGEPAGES   /**< MAP_HUGETLB, else mmap + madvise(MADV_HUGEPAGE), by the core */
} cp_alloc_t;

/**
 * --check: which results a cell verifies exactly.  The warm-up is never checked.
 *   last        one extra run after the timed loop, on fresh inputs (outside the
 *               timed loop; the timed iterations' own outputs are not looked at)
 *   every       every timed iteration's output, each on fresh inputs written before
 *               its barrier (the fill and the check are outside the timed interval)
 *   sample:K    timed iterations K, 2K, 3K, ... and the last one, the same way
 *   none        nothing (-c 0)
 */
typedef enum cp_check {
    CP_CHECK_NONE = 0,
    CP_CHECK_LAST,
    CP_CHECK_EVERY,
    CP_CHECK_SAMPLE
} cp_check_t;

/** The default --check and its K (see docs/metrics.md for the figures behind it). */
#define CP_CHECK_DEFAULT   CP_CHECK_LAST
#define CP_CHECK_DEFAULT_K 0
/** Largest K of sample:K. */
#define CP_CHECK_K_MAX 1000000

/**
 * Parse a --check value: last, every, sample:K (1 <= K <= CP_CHECK_K_MAX; sample:1
 * is every), 1 (the default) or 0 (none).  0 with *mode and *k (K, else 0) set, or
 * -1 with a one-line reason.
 */
int cp_check_parse(const char *arg, cp_check_t *mode, int *k, char *why, size_t len);
/** "last", "every", "sample:K" or "none", into buf. */
const char *cp_check_name(cp_check_t mode, int k, char *buf, size_t len);
/** The policy applied: none when !check (-c 0), last where mode is unset (none) but check is. */
cp_check_t cp_check_applied(int check, cp_check_t mode);
/** Is timed iteration i (0 .. iters - 1) checked under mode, k? */
int cp_check_iteration(cp_check_t mode, int k, int i, int iters);
/** Is replay i (0 .. iters - 1) of collprof --replay filled and checked under mode, k?  As
 *  cp_check_iteration, and last: the last replay itself (a replay has no extra run). */
int cp_check_replay(cp_check_t mode, int k, int i, int iters);

/** "barrier", "none" or "batch". */
const char *cp_sync_name(cp_sync_t s);
/** "malloc", "mmap" or "hugepages". */
const char *cp_alloc_name(cp_alloc_t a);

/**
 * Parse a --sync value: barrier, none, batch or batch:N (1 <= N <=
 * CP_BATCH_MAX).  0 with *sync and *batch (1 unless batch) set, or -1 with
 * a one-line reason.
 */
int cp_sync_parse(const char *arg, cp_sync_t *sync, int *batch, char *why, size_t len);
/** Parse an --alloc value; 0, or -1 with a one-line reason. */
int cp_alloc_parse(const char *arg, cp_alloc_t *alloc, char *why, size_t len);

/**
 * The run's policy in words, for the file's `timing` attribute and the
 * summary, e.g. "barrier before each operation; per-iteration max over
 * ranks; host buffers: malloc; rotation: 1 slot".
 */
void cp_policy_describe(cp_sync_t sync, int batch, cp_alloc_t alloc, int rotate, char *buf,
                        size_t len);

/** One operation's time from a batch of ops operations timed from t0 to t1 (us). */
double cp_batch_per_op(double t0_us, double t1_us, int ops);

/**
 * Rotation: a buffer of bytes repeated in slots slots, each at a multiple
 * of the returned stride: bytes rounded up to a whole page (4096), plus
 * one page, so that slot k + 1 never shares a page, nor a cache line,
 * with slot k, and every slot keeps the base's alignment.  bytes when
 * slots <= 1.
 */
size_t cp_rotate_stride(size_t bytes, int slots);
/** The slot operation op (0, 1, ... counting warm-up, timed and batched ones) uses. */
int cp_rotate_slot(long op, int slots);

/**
 * Host memory from the core (alloc is mmap or hugepages): *ptr and *maplen
 * (what cp_policy_free needs) set on success, and used says what was
 * really done, e.g. "mmap MAP_HUGETLB, 2048 KiB pages" or "mmap +
 * madvise(MADV_HUGEPAGE), no MAP_HUGETLB pages".  *fellback is set to 1
 * when hugepages could not get explicit huge pages.  0, or -1 (out of
 * memory, errno kept).
 */
int cp_policy_alloc(cp_alloc_t alloc, size_t bytes, void **ptr, size_t *maplen, char *used,
                    size_t ulen, int *fellback);
void cp_policy_free(void *ptr, size_t maplen);

#endif /* COLLPROF_CORE_POLICY_H */
