/*
 * The ThreadSanitizer stage's planted race (contrib/tsan.sh runs it and
 * fails unless TSan reports it).
 *
 * A callback of ours runs on a thread that libpmix created (the embedded
 * server's progress thread, as src/launch/launch_server.c's callbacks do)
 * and writes a global that the main thread then reads with nothing that
 * orders the two: the relaxed flag only says that the callback ran.  TSan
 * must report the race with planted_cb on top of one stack and main on top
 * of the other.  A suppression that matched any frame of a stack
 * (race:libpmix.so) would hide it, as libpmix's frames are below
 * planted_cb; race_top: lines must not.
 *
 * Exit status: 66 under TSan (halt_on_error=1:exitcode=66) when the race is
 * reported; 0 when it is not (no TSan, or a suppression hid it); 1 when the
 * callback did not run on a thread of the library.
 */
#include "config.h"

#include <pmix.h>
#include <pmix_server.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int planted;            /* the raced global */
static atomic_int ran;         /* relaxed: the callback ran; orders nothing */
static atomic_ulong cb_thread; /* pthread_self() of the callback */

static void planted_cb(pmix_status_t status, void *cbdata)
{
    (void)cbdata;
    atomic_store_explicit(&cb_thread, (unsigned long)pthread_self(), memory_order_relaxed);
    planted = status == PMIX_SUCCESS ? 1 : 2; /* the planted write */
    atomic_store_explicit(&ran, 1, memory_order_relaxed);
}

static int server_init(const char *dir)
{
    static pmix_server_module_t module; /* no callbacks of the module */
    pmix_info_t info[3];
    bool no = false;
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, dir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, dir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
    pmix_status_t rc = PMIx_server_init(&module, info, 3);
    for (int i = 0; i < 3; i++) {
        PMIX_INFO_DESTRUCT(&info[i]);
    }
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tsan_planted: PMIx_server_init: %s\n", PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

/* Wait for the callback, at most 10 s, without synchronising with it. */
static int wait_ran(void)
{
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 10000; i++) {
        if (atomic_load_explicit(&ran, memory_order_relaxed)) {
            return 0;
        }
        nanosleep(&ms, NULL);
    }
    return -1;
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/cp-tsan-planted-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("tsan_planted: mkdtemp");
        return 1;
    }
    int ret = 1;
    if (server_init(dir) != 0) {
        goto out;
    }
    /* the server registers the namespace on its progress thread and calls planted_cb there */
    pmix_nspace_t nspace;
    PMIX_LOAD_NSPACE(nspace, "cp-tsan-planted");
    pmix_status_t rc = PMIx_server_register_nspace(nspace, 1, NULL, 0, planted_cb, NULL);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "tsan_planted: PMIx_server_register_nspace: %s (no callback)\n",
                PMIx_Error_string(rc));
    } else if (wait_ran() != 0) {
        fprintf(stderr, "tsan_planted: the callback did not run within 10 s\n");
    } else if (atomic_load_explicit(&cb_thread, memory_order_relaxed) ==
               (unsigned long)pthread_self()) {
        fprintf(stderr, "tsan_planted: the callback ran on the main thread\n");
    } else {
        int v = planted; /* the planted read */
        printf("tsan_planted: the callback ran on a thread of libpmix and wrote %d: "
               "not reported\n",
               v);
        ret = 0;
    }
    PMIx_server_finalize();
out:
    rmdir(dir);
    return ret;
}
