/* Small helpers: size parsing, lists, number formatting, clocks. */
#ifndef COLLPROF_CORE_UTIL_H
#define COLLPROF_CORE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Largest count or byte size collprof accepts (1 Ti elements / bytes). */
#define CP_MAX_SIZE (UINT64_C(1) << 40)

/**
 * Parse a positive size: decimal digits with an optional K, M, G or T
 * suffix (binary: 1K = 1024), case-insensitive, optional trailing "B"
 * after a suffix ("4MB").  Rejects 0, signs, garbage and values above
 * CP_MAX_SIZE.  On failure writes a reason into err and returns -1.
 */
int cp_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);

/** Parse a non-negative int (no suffix) in [lo, hi]; -1 on failure. */
int cp_parse_int(const char *s, long lo, long hi, long *out);

/** Read one line of a text file into line, counting *lineno, with any '#'
 * comment cut off.  Returns 1, 0 at the end (or on a read error: check
 * ferror), or -1 when the line does not fit. */
int cp_read_line(FILE *f, char *line, size_t size, int *lineno);

/**
 * Split a comma-separated list in place into at most max tokens (empty
 * tokens are rejected); returns the number of tokens or -1.
 */
int cp_split_list(char *s, char **tok, int max);

/** "1,048,576" */
const char *cp_fmt_thousands(uint64_t v, char *buf, size_t len);

/** "4.00 MB" (binary multiples, two decimals, as profilers print tensors) */
const char *cp_fmt_bytes(uint64_t v, char *buf, size_t len);

/** The ascending integers v[0..n) as ranges, "0-3,8,10-11", into buf (cut at len); buf. The
 *  one formatter of rank and CPU lists. */
const char *cp_fmt_ranges(const int *v, int n, char *buf, size_t len);

/** a * b and a + b, UINT64_MAX where they would overflow (memory arithmetic). */
static inline uint64_t cp_mul_sat(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
static inline uint64_t cp_add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/** Monotonic clock in microseconds. */
double cp_now_us(void);
/** The same clock in seconds: every deadline and budget of the screen reads it. */
double cp_now_s(void);

/** Wait at most max_s for what this process wrote to fd to be read on: where fd is a pipe (its
 * unread bytes, FIONREAD) or a socket (its unsent or unread bytes, SIOCOUTQ), as a launcher's
 * step daemon holds a task's stdout and stderr.  0 when nothing is left, 1 when bytes were
 * still unread at max_s, -1 when fd is neither (a file, a terminal: nothing to wait for). */
int cp_fd_drain(int fd, double max_s);

/** Page-aligned host memory (NULL when out of memory); cp_free_pages frees it. */
void *cp_alloc_pages(size_t bytes);
void cp_free_pages(void *p, size_t bytes);

/** UTC time as "20261122T001530Z" (compact) or ISO "2026-11-22T00:15:30Z". */
void cp_utc_compact(char *buf, size_t len);
void cp_utc_iso(char *buf, size_t len);

/**
 * Environment capture for result files: for "NAME=value" whose name has a
 * prefix that shapes communication (NCCL_, FI_, OMPI_, UCX_, GLOO_,
 * PMIX_MCA_, SLURM_, CUDA_, COLLPROF_, GLIBC_TUNABLES; not the launcher's
 * other PMIX_ variables), copy the name into name[] and return the value
 * as printable text (cp_text_sanitize), valid until the next call on this
 * thread.  Secrets are "<redacted>": the whole value when the name contains
 * TOKEN, KEY, SECRET, PASS, PWD, CRED, AUTH, JWT, COOKIE or PRIVATE in any
 * case, or the value is a JSON web token or a well-known service token;
 * only the secret part for a password in a URL (scheme://user:PASSWORD@)
 * and for password=, passwd=, pwd=, token=, secret= inside the value.
 * NULL for every other variable.
 */
const char *cp_env_captured(const char *kv, char *name, size_t len);

/**
 * value as cp_env_captured() would record it, for text that a writer may
 * not have redacted (a command line word, an older file's variable): into
 * out[len], "<redacted>" when name (NULL: none) or the value says it is a
 * secret, else with the secret parts inside it replaced.  Returns out.
 */
char *cp_redact(const char *name, const char *value, char *out, size_t len);

/**
 * Open path for reading when it is a regular file (a FIFO or device is
 * refused without blocking); NULL with "cannot read WHAT 'PATH': why".
 */
FILE *cp_fopen_regular(const char *path, const char *what, char *err, size_t errlen);

/**
 * Copy in to out[len] as one line of valid UTF-8: control characters become
 * \n, \t or \xNN, and so do the bytes of invalid UTF-8; bidirectional overrides
 * and isolates (U+202A..U+202E, U+2066..U+2069) become \uNNNN; a cut at the end
 * of out never splits a character or an escape.  Returns the length.
 */
size_t cp_text_sanitize(const char *in, char *out, size_t len);

/** Before any thread starts: COLLPROF_ENV_SLOTS spare entries at the end of the environment
 *  (<collprof/plugin.h>), in a copy of environ that is never freed. */
void cp_env_reserve(void);

/**
 * The length (1-4) of the UTF-8 sequence at p (n bytes readable), its code
 * point in *cp; 0 when it is not valid UTF-8 (truncated, overlong, a
 * surrogate, past U+10FFFF).
 */
int cp_utf8_seq(const unsigned char *p, size_t n, unsigned *cp);

/** 1 for the bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069). */
int cp_bidi_control(unsigned cp);

/** Open files a process needs beside its per-rank ones (libraries, logs, results). */
#define CP_NOFILE_SPARE 32

/**
 * Room for need open files: the soft RLIMIT_NOFILE raised to need (at most to the hard
 * limit) when it is below; 0 when it now allows need, -1 when the hard limit does not.
 * *soft and *hard (either may be NULL): the limits after it (-1: unlimited).
 */
int cp_nofile_fit(long need, long *soft, long *hard);

/**
 * The temporary file a program is writing before it renames it to its own name (one at a
 * time; NULL: none), so that a signal or a crash does not leave it behind: cp_tmp_unlink
 * (async-signal-safe) removes it, and the handlers of cp_tmp_signals (SIGINT, SIGTERM,
 * SIGHUP) do that and then die of the signal as before.
 */
void cp_tmp_set(const char *path);
void cp_tmp_unlink(void);
void cp_tmp_signals(void);

#endif /* COLLPROF_CORE_UTIL_H */
