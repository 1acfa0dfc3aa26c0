#include "config.h"

#include "base/fault.h"

#include "base/log.h"
#include "base/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The argument text after "kind" when COLLPROF_FAULT is kind or kind:..., else NULL. */
static const char *fault_args(const char *kind)
{
    const char *f = getenv("COLLPROF_FAULT");
    size_t kl = strlen(kind);
    if (f == NULL || strncmp(f, kind, kl) != 0 || (f[kl] != '\0' && f[kl] != ':')) {
        return NULL;
    }
    return f[kl] == ':' ? f + kl + 1 : f + kl; /* "" that ends f: a[-1] is in it */
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

int cp_fault_wrong_iter(int rank)
{
    const char *a = fault_args("wrongiter");
    if (a == NULL || *a == '\0') {
        return 0;
    }
    const char *colon = strchr(a, ':'); /* ITER[:RANK] */
    int iter = atoi(a);
    return iter > 0 && (colon != NULL ? atoi(colon + 1) : 0) == rank ? iter : 0;
}

int cp_fault_exit(int rank)
{
    return fault_rank_is("exit", rank);
}

int cp_fault_nopair(int rank)
{
    return fault_rank_is("nopair", rank);
}

long cp_fault_slowcopy_us(void)
{
    const char *a = fault_args("slowcopy");
    if (a == NULL) {
        return 0;
    }
    long us = *a != '\0' ? atol(a) : 200000;
    return us > 0 ? us : 0;
}

int cp_fault_rogue(int rank)
{
    const char *a = fault_args("rogue");
    return a != NULL && (*a != '\0' ? atoi(a) : 1) == rank;
}

long cp_fault_pair_late_ms(int rank)
{
    const char *a = fault_args("pairlate");
    if (a == NULL) {
        return 0;
    }
    const char *colon = strchr(a, ':');
    if (*a != '\0' && strncmp(a, "all", 3) != 0 && atoi(a) != rank) {
        return 0;
    }
    return colon != NULL ? atol(colon + 1) : 1000;
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

long cp_fault_slowcoll_us(int rank)
{
    const char *a = fault_args("slowcoll");
    if (a == NULL || atoi(a) != rank) {
        return 0;
    }
    const char *colon = strchr(a, ':');
    long us = colon != NULL ? atol(colon + 1) : 2000;
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

/* kind[:RANK[:CELL]] names rank in cell (RANK and CELL default to 0) */
static int fault_rank_cell(const char *kind, int rank, int cell)
{
    const char *a = fault_args(kind);
    if (a == NULL) {
        return 0;
    }
    const char *colon = strchr(a, ':');
    return atoi(a) == rank && (colon != NULL ? atoi(colon + 1) : 0) == cell;
}

int cp_fault_hang(int rank, int cell)
{
    return fault_rank_cell("hang", rank, cell);
}

int cp_fault_nomem(int rank, int cell)
{
    return fault_rank_cell("nomem", rank, cell);
}

int cp_fault_idlestop(int rank, int round, int member)
{
    const char *a = fault_args("idlestop");
    if (a == NULL || *a == '\0' || atoi(a) != rank) {
        return 0;
    }
    const char *c1 = strchr(a, ':'), *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
    return round >= (c1 != NULL ? atoi(c1 + 1) : 2) && member == (c2 != NULL ? atoi(c2 + 1) : 0);
}

void cp_fault_stop_now(int rank, int round)
{
    cp_log(CP_LOG_WARN, "COLLPROF_FAULT: rank %d stops (SIGSTOP) before screen round %d", rank,
           round);
    raise(SIGSTOP);
}

void cp_fault_spin(long us)
{
    double until = cp_now_us() + (double)us;
    while (cp_now_us() < until) {
    }
}

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

void cp_fault_spin_cpu(long us)
{
    double until = thread_cpu_us() + (double)us;
    while (thread_cpu_us() < until) {
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

/* Skip a decimal number at *p (1 to 9 digits): 0, or -1 when there is none. */
static int skip_number(const char **p)
{
    size_t n = strspn(*p, "0123456789");
    if (n == 0 || n > 9) {
        return -1;
    }
    *p += n;
    return 0;
}

/* ":NUMBER" at *p when present: 0, or -1 when the colon has no number. */
static int skip_opt_number(const char **p)
{
    if (**p != ':') {
        return 0;
    }
    (*p)++;
    return skip_number(p);
}

/* Does the text after "kind:" (a, never NULL) follow kind's grammar (fault.h)? */
static int fault_args_ok(const char *kind, const char *a)
{
    if (strcmp(kind, "gloosteal") == 0) { /* the Gloo plugin's own: no arguments */
        return a[-1] != ':' && *a == '\0';
    }
    if (a[-1] != ':') { /* the kind alone */
        return strcmp(kind, "slowrep") != 0 && strcmp(kind, "wrongiter") != 0 &&
               strcmp(kind, "idlestop") != 0;
    }
    if (strcmp(kind, "slowrep") == 0) {
        do {
            if (skip_number(&a) != 0) {
                return 0; /* empty, or a comma with no number after it */
            }
        } while (*a == ',' && *++a != '\0');
        if (a[-1] == ',') {
            return 0;
        }
    } else if ((strcmp(kind, "slow") == 0 || strcmp(kind, "pairlate") == 0) &&
               strncmp(a, "all", 3) == 0) {
        a += 3;
    } else if (skip_number(&a) != 0) {
        return 0;
    }
    int two = strcmp(kind, "wrong") != 0 && strcmp(kind, "exit") != 0 &&
              strcmp(kind, "rogue") != 0 && strcmp(kind, "nopair") != 0 &&
              strcmp(kind, "slowcopy") != 0;
    if (two && skip_opt_number(&a) != 0) {
        return 0;
    }
    if (strcmp(kind, "idlestop") == 0 && skip_opt_number(&a) != 0) { /* :MEMBER */
        return 0;
    }
    return *a == '\0';
}

int cp_fault_check(char *err, size_t len)
{
    static const char *kinds[] = {"wrong",    "exit",     "slowrep",   "slowcoll", "slow",
                                  "hang",     "nomem",    "rogue",     "idlestop", "nopair",
                                  "slowcopy", "pairlate", "gloosteal", NULL};
    const char *f = getenv("COLLPROF_FAULT");
    if (f == NULL || *f == '\0') {
        return 0; /* set but empty: as unset (a wrapper's "export COLLPROF_FAULT=") */
    }
    const char *wi = fault_args("wrongiter"); /* no other kind's prefix: "wrong" needs ':' */
    if (wi != NULL && fault_args_ok("wrongiter", wi)) {
        return 0;
    }
    for (int i = 0; kinds[i] != NULL; i++) {
        const char *a = fault_args(kinds[i]);
        if (a != NULL) {
            if (fault_args_ok(kinds[i], a)) {
                return 0;
            }
            break;
        }
    }
    snprintf(err, len,
             "COLLPROF_FAULT='%.40s%s' is not a fault: expected wrong[:RANK], "
             "wrongiter:ITER[:RANK], exit[:RANK], "
             "slow[:RANK|all[:USEC]], slowcoll[:RANK[:USEC]], hang[:RANK[:CELL]], "
             "nomem[:RANK[:CELL]], "
             "slowrep:LIST[:USEC], rogue[:RANK], idlestop:RANK[:ROUND[:MEMBER]], nopair[:RANK], "
             "slowcopy[:USEC], pairlate[:RANK|all[:MSEC]] or gloosteal (tests only; unset it "
             "for a real run)",
             f, strlen(f) > 40 ? "..." : "");
    return -1;
}

int cp_fault_test_staged(void)
{
    return getenv("COLLPROF_TEST_STAGED") != NULL;
}
