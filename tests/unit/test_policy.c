/* Measurement policies: --sync, --alloc and --check values, batch division, buffer rotation, the
 * core's allocations. */
#include "config.h"

#include "runner/policy.h"
#include "tap.h"

#include <stdint.h>
#include <string.h>

static void test_sync_parse(void)
{
    cp_sync_t s = CP_SYNC_NONE;
    int b = 0;
    char why[256] = "";
    ok(cp_sync_parse("barrier", &s, &b, why, sizeof(why)) == 0 && s == CP_SYNC_BARRIER && b == 1,
       "barrier: one operation per sample");
    ok(cp_sync_parse("none", &s, &b, why, sizeof(why)) == 0 && s == CP_SYNC_NONE && b == 1,
       "none: one operation per sample");
    ok(cp_sync_parse("batch", &s, &b, why, sizeof(why)) == 0 && s == CP_SYNC_BATCH &&
           b == CP_BATCH_DEFAULT,
       "batch: %d operations per sample", CP_BATCH_DEFAULT);
    ok(cp_sync_parse("batch:7", &s, &b, why, sizeof(why)) == 0 && s == CP_SYNC_BATCH && b == 7,
       "batch:7: 7 operations per sample");
    const char *bad[] = {"batch:0",      "batch:",  "batch:x", "batch:3x",
                         "batch:100001", "Barrier", "",        "batch:-2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        s = CP_SYNC_NONE;
        b = 99;
        ok(cp_sync_parse(bad[i], &s, &b, why, sizeof(why)) != 0 && strstr(why, "--sync") &&
               strchr(why, '\n') == NULL && s == CP_SYNC_NONE && b == 99,
           "'%s' refused in one line, outputs untouched (%s)", bad[i], why);
    }
}

static void test_alloc_parse(void)
{
    cp_alloc_t a = CP_ALLOC_MALLOC;
    char why[256] = "";
    ok(cp_alloc_parse("mmap", &a, why, sizeof(why)) == 0 && a == CP_ALLOC_MMAP, "mmap");
    ok(cp_alloc_parse("hugepages", &a, why, sizeof(why)) == 0 && a == CP_ALLOC_HUGEPAGES,
       "hugepages");
    ok(cp_alloc_parse("malloc", &a, why, sizeof(why)) == 0 && a == CP_ALLOC_MALLOC, "malloc");
    ok(cp_alloc_parse("huge", &a, why, sizeof(why)) != 0 && strstr(why, "--alloc: 'huge'"),
       "an unknown allocator is refused (%s)", why);
}

static void test_batch(void)
{
    ok(cp_batch_per_op(100.0, 180.0, 1) == 80.0, "a batch of 1: its time");
    ok(cp_batch_per_op(100.0, 180.0, 4) == 20.0, "a batch of 4 over 80 us: 20 us each");
    ok(cp_batch_per_op(0.0, 1000.0, 20) == 50.0, "nccl-tests' -n 20: the batch time / 20");
    ok(cp_batch_per_op(5.0, 9.0, 0) == 0.0, "no operation: 0, not a division by zero");
}

/* Slots never overlap, keep the base's page alignment and leave a page between them. */
static void test_rotation_layout(void)
{
    const size_t sizes[] = {1, 64, 4095, 4096, 4097, 1 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t b = sizes[i], st = cp_rotate_stride(b, 4);
        ok(st >= b + 4096 && st % 4096 == 0,
           "%zu bytes in 4 slots: stride %zu, page aligned, a page or more between slots", b, st);
    }
    ok(cp_rotate_stride(12345, 1) == 12345 && cp_rotate_stride(12345, 0) == 12345,
       "no rotation: the buffer's own size");
}

static void test_rotation_order(void)
{
    int seen[5] = {0}, prev = -1, adjacent_same = 0;
    for (long op = 0; op < 25; op++) {
        int k = cp_rotate_slot(op, 5);
        if (k >= 0 && k < 5) {
            seen[k]++;
        }
        adjacent_same += k == prev;
        prev = k;
    }
    ok(seen[0] == 5 && seen[1] == 5 && seen[2] == 5 && seen[3] == 5 && seen[4] == 5,
       "25 operations over 5 slots: each slot 5 times");
    ok(adjacent_same == 0, "no two consecutive operations on the same slot");
    ok(cp_rotate_slot(0, 1) == 0 && cp_rotate_slot(17, 1) == 0 && cp_rotate_slot(-1, 3) == 0,
       "one slot (or before any operation): slot 0");
    /* the check verifies the last timed operation's slot: warm-up 5 + 20 timed, batch 4 */
    long last = 5 + 20 * 4 - 1;
    ok(cp_rotate_slot(last, 3) == 84 % 3, "the last of 85 operations over 3 slots is slot %d",
       (int)(84 % 3));
}

static void test_alloc(void)
{
    void *p = NULL;
    size_t len = 0;
    char used[64] = "";
    int fb = -1;
    int rc = cp_policy_alloc(CP_ALLOC_MMAP, 10000, &p, &len, used, sizeof(used), &fb);
    ok(rc == 0 && p != NULL && len >= 10000 && fb == 0 && !strncmp(used, "mmap anonymous", 14),
       "mmap: %zu bytes mapped (%s)", len, used);
    if (p != NULL) {
        memset(p, 0x5a, 10000);
        ok(((unsigned char *)p)[9999] == 0x5a && (uintptr_t)p % 4096 == 0,
           "the mapping is writable and page aligned");
        cp_policy_free(p, len);
    }
    p = NULL;
    used[0] = '\0';
    rc = cp_policy_alloc(CP_ALLOC_HUGEPAGES, 3 << 20, &p, &len, used, sizeof(used), &fb);
    ok(rc == 0 && p != NULL && len >= (3u << 20) && used[0] != '\0' &&
           (fb ? strstr(used, "no MAP_HUGETLB") || strstr(used, "no huge pages")
               : strstr(used, "MAP_HUGETLB") != NULL),
       "hugepages: %zu bytes, says what it got (%s%s)", len, used,
       fb ? "; explicit huge pages fell back" : "");
    if (p != NULL) {
        memset(p, 1, 3 << 20);
        cp_policy_free(p, len);
    }
}

static void test_describe(void)
{
    char d[256];
    cp_policy_describe(CP_SYNC_BATCH, 8, CP_ALLOC_MMAP, 4, d, sizeof(d));
    ok(strstr(d, "batch of 8") && strstr(d, "/ 8") && strstr(d, "host buffers: mmap") &&
           strstr(d, "rotation: 4 slots"),
       "batch:8, mmap, 4 slots described (%s)", d);
    cp_policy_describe(CP_SYNC_BARRIER, 1, CP_ALLOC_MALLOC, 1, d, sizeof(d));
    ok(!strncmp(d, "barrier before each iteration; per-iteration max over ranks", 59) &&
           strstr(d, "rotation: 1 slot") && !strstr(d, "slots"),
       "the default described as before, then the buffers (%s)", d);
}

static void test_check_parse(void)
{
    cp_check_t m = CP_CHECK_NONE;
    int k = -1;
    char why[256] = "", name[32];
    ok(cp_check_parse("last", &m, &k, why, sizeof(why)) == 0 && m == CP_CHECK_LAST && k == 0,
       "last");
    ok(cp_check_parse("every", &m, &k, why, sizeof(why)) == 0 && m == CP_CHECK_EVERY && k == 0,
       "every");
    ok(cp_check_parse("sample:10", &m, &k, why, sizeof(why)) == 0 && m == CP_CHECK_SAMPLE &&
           k == 10 && !strcmp(cp_check_name(m, k, name, sizeof(name)), "sample:10"),
       "sample:10, named back (%s)", name);
    ok(cp_check_parse("sample:1", &m, &k, why, sizeof(why)) == 0 && m == CP_CHECK_EVERY,
       "sample:1 is every");
    ok(cp_check_parse("0", &m, &k, why, sizeof(why)) == 0 && m == CP_CHECK_NONE &&
           !strcmp(cp_check_name(m, k, name, sizeof(name)), "none"),
       "0: none");
    ok(cp_check_parse("1", &m, &k, why, sizeof(why)) == 0 && m == CP_CHECK_DEFAULT &&
           k == CP_CHECK_DEFAULT_K,
       "1: the default");
    const char *bad[] = {"sample:0",  "sample:x", "foo", "sample:", "sample:-3",
                         "sample:2x", "2",        "",    "Every",   "sample:1000001"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        m = CP_CHECK_EVERY;
        k = 99;
        ok(cp_check_parse(bad[i], &m, &k, why, sizeof(why)) != 0 && strstr(why, "--check") &&
               strchr(why, '\n') == NULL && m == CP_CHECK_EVERY && k == 99,
           "'%s' refused in one line, outputs untouched (%s)", bad[i], why);
    }
    ok(cp_check_applied(0, CP_CHECK_EVERY) == CP_CHECK_NONE &&
           cp_check_applied(1, CP_CHECK_NONE) == CP_CHECK_LAST &&
           cp_check_applied(1, CP_CHECK_SAMPLE) == CP_CHECK_SAMPLE,
       "applied: -c 0 is none, an unset mode with the check on is last");
    int got[20], n = 0;
    for (int i = 0; i < 20; i++) {
        if (cp_check_iteration(CP_CHECK_SAMPLE, 7, i, 20)) {
            got[n++] = i + 1;
        }
    }
    ok(n == 3 && got[0] == 7 && got[1] == 14 && got[2] == 20,
       "sample:7 of 20 iterations: 7, 14 and the last, 20 (%d of them)", n);
    n = 0;
    for (int i = 0; i < 20; i++) {
        n += cp_check_iteration(CP_CHECK_EVERY, 0, i, 20) * 1 +
             cp_check_iteration(CP_CHECK_LAST, 0, i, 20) * 100;
    }
    ok(n == 20, "every: each of 20 iterations; last: none of them in the loop");
    ok(cp_check_iteration(CP_CHECK_SAMPLE, 50, 2, 3) &&
           !cp_check_iteration(CP_CHECK_SAMPLE, 50, 1, 3),
       "sample:50 of 3 iterations: the last one");
    /* a replay (collprof --replay): last is the last replay itself; none, none of them */
    int last = 0, none = 0, every = 0, sample = 0;
    for (int i = 0; i < 5; i++) {
        last += cp_check_replay(CP_CHECK_LAST, 0, i, 5) << i;
        none += cp_check_replay(CP_CHECK_NONE, 0, i, 5);
        every += cp_check_replay(CP_CHECK_EVERY, 0, i, 5);
        sample += cp_check_replay(CP_CHECK_SAMPLE, 2, i, 5) << i;
    }
    ok(last == 16 && none == 0 && every == 5 && sample == (2 | 8 | 16),
       "replays of 5: last the 5th alone, none none, every all, sample:2 the 2nd, 4th, 5th");
}

int main(void)
{
    test_check_parse();
    test_sync_parse();
    test_alloc_parse();
    test_batch();
    test_rotation_layout();
    test_rotation_order();
    test_alloc();
    test_describe();
    return tap_done();
}
