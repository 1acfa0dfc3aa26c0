#include "config.h"

#include "core/fault.h"

#include "core/log.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The argument text after "kind" when COLLPROF_FAULT is kind or kind:..., else NULL. */
static const char *fault_args(const char *kind)
{
    const char *f = getenv("COLLPROF_FAULT");
    size_t kl = strlen(kind);
    if (f == NULL || strncmp(f, kind, kl) != 0 || (f[kl] != '\0' && f[kl] != ':')) {
        return NULL;
    }
    return f[kl] == ':' ? f + kl + 1 : "";
}

static int fault_rank_is(const char *kind, int rank)
{
    const char *a = fault_args(kind);
    return a != NULL && atoi(a) == rank;
}

int cp_fault_wrong(int rank)
{
    return fault_rank_is("wrong", rank);
}

int cp_fault_exit(int rank)
{
    return fault_rank_is("exit", rank);
}

long cp_fault_slow_us(int rank)
{
    const char *a = fault_args("slow");
    if (a == NULL) {
        return 0;
    }
    long us = 2000;
    if (*a != '\0') {
        const char *colon = strchr(a, ':');
        if (strncmp(a, "all", 3) != 0 && atoi(a) != rank) {
            return 0;
        }
        if (colon != NULL) {
            us = atol(colon + 1);
        }
    }
    return us > 0 ? us : 0;
}

long cp_fault_slow_repeat_us(int repeat)
{
    const char *a = fault_args("slowrep");
    if (a == NULL || *a == '\0') {
        return 0;
    }
    /* LIST[:USEC]: repeat indices separated by commas */
    const char *colon = strchr(a, ':');
    long us = colon != NULL ? atol(colon + 1) : 2000;
    for (const char *p = a; p != NULL && (colon == NULL || p < colon);
         p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (atoi(p) == repeat) {
            return us > 0 ? us : 0;
        }
    }
    return 0;
}

int cp_fault_hang(int rank, int cell)
{
    const char *a = fault_args("hang");
    if (a == NULL) {
        return 0;
    }
    const char *colon = strchr(a, ':');
    return atoi(a) == rank && (colon != NULL ? atoi(colon + 1) : 0) == cell;
}

void cp_fault_spin(long us)
{
    double until = cp_now_us() + (double)us;
    while (cp_now_us() < until) {
    }
}

void cp_fault_exit_now(int rank)
{
    cp_log(CP_LOG_WARN, "COLLPROF_FAULT: rank %d exits now", rank);
    _exit(3);
}

void cp_fault_hang_now(int rank)
{
    cp_log(CP_LOG_WARN, "COLLPROF_FAULT: rank %d hangs now", rank);
    for (;;) {
        sleep(1000);
    }
}

int cp_fault_test_staged(void)
{
    return getenv("COLLPROF_TEST_STAGED") != NULL;
}
