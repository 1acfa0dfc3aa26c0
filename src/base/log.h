/*
 * Logging.  Errors always print ("collprof: error: ..." on stderr, from
 * rank 0 only unless CP_LOG_ALL_RANKS); --verbose adds timestamped
 * per-rank lines: "[2026-11-22T00:15:30.123Z r0/4 host] message".
 */
#ifndef COLLPROF_CORE_LOG_H
#define COLLPROF_CORE_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum { CP_LOG_ERROR = 0, CP_LOG_WARN = 1, CP_LOG_INFO = 2, CP_LOG_DEBUG = 3 };

/** Set once after bootstrap; before that, rank is -1 and every message prints. */
void cp_log_setup(int rank, int nranks, const char *hostname, int verbosity);

/** Message printed by every rank that calls it (errors, per-rank facts). */
void cp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cp_vlog(int level, const char *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/** An error that every rank reaches identically: printed once, by rank 0. */
void cp_error_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** The same for what is not an error, and needs no --verbose to be seen: "collprof: note: ..."
 *  (a backend with nothing to run on here: no GPU, no GPU driver). */
void cp_note_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * Copy in to out (NUL-terminated, truncated to outlen) so that it prints as
 * one harmless line: control characters, DEL, bytes that are not UTF-8 and the
 * bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069) become
 * \xNN or \uNNNN.  For names and messages that come from users, files and
 * libraries (HDF5, libfabric, MPI).  Returns out.
 */
char *cp_escape(const char *in, char *out, size_t outlen);

/** "PROG: error: MSG" on stderr, MSG escaped (cp_escape): one line whatever MSG holds. */
void cp_error_line(const char *prog, const char *msg);

/**
 * Hold warnings (1) until the input is known good, then print them (0); an
 * error in between drops them (cp_log_hold_drop), so that a refused input
 * gives its error line alone.
 */
void cp_log_hold(int on);
void cp_log_hold_drop(void);

/** Current verbosity (0 quiet, 1 --verbose, 2 -vv). */
int cp_log_verbosity(void);

/**
 * --log-dir: this rank also writes every message, whatever the verbosity,
 * with an ISO-8601 timestamp, to DIR/collprof_<run>_r<rank>.log (created
 * exclusively, links not followed).  run names the run, the same on every
 * rank.  Returns 0, or -1 with a one-line reason in err.
 */
int cp_log_file_open(const char *dir, const char *run, int rank, char *err, size_t errlen);
/** The log path of rank (also another rank's); 0, or -1 when there are no per-rank logs. */
int cp_log_path(int rank, char *buf, size_t len);
void cp_log_file_close(void);

#endif /* COLLPROF_CORE_LOG_H */
