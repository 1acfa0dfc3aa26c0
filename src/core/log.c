#include "config.h"

#include "core/log.h"

#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static int log_rank = -1;
static int log_nranks = 0;
static char log_host[64] = "";
static int log_verbosity = 0;

void cp_log_setup(int rank, int nranks, const char *hostname, int verbosity)
{
    log_rank = rank;
    log_nranks = nranks;
    log_verbosity = verbosity;
    if (hostname != NULL) {
        snprintf(log_host, sizeof(log_host), "%s", hostname);
    }
}

int cp_log_verbosity(void)
{
    return log_verbosity;
}

void cp_vlog(int level, const char *prefix, const char *fmt, va_list ap)
{
    /* INFO needs --verbose, DEBUG needs -vv; errors and warnings always print. */
    if (level >= CP_LOG_INFO && level - 1 > log_verbosity) {
        return;
    }
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    const char *tag = level == CP_LOG_ERROR ? "error: " : level == CP_LOG_WARN ? "warning: " : "";
    if (log_verbosity > 0 || level >= CP_LOG_INFO) {
        struct timeval tv;
        struct tm tm;
        char ts[40];
        gettimeofday(&tv, NULL);
        gmtime_r(&tv.tv_sec, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
        fprintf(stderr, "[%s.%03ldZ r%d/%d %s] %s%s%s\n", ts, (long)(tv.tv_usec / 1000), log_rank,
                log_nranks, log_host, prefix ? prefix : "", tag, msg);
    } else if (log_rank >= 0 && log_nranks > 1) {
        fprintf(stderr, "collprof[%d]: %s%s%s\n", log_rank, prefix ? prefix : "", tag, msg);
    } else {
        fprintf(stderr, "collprof: %s%s%s\n", prefix ? prefix : "", tag, msg);
    }
    fflush(stderr);
}

void cp_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cp_vlog(level, NULL, fmt, ap);
    va_end(ap);
}

void cp_error_once(const char *fmt, ...)
{
    if (log_rank > 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "collprof: error: %s\n", msg);
    fflush(stderr);
}
