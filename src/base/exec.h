/*
 * Running a system program safely (collprof's health check, collprof-report's drains): found
 * by an absolute path only (PATH's absolute elements; an empty or relative one, the current
 * directory, is never searched), run without a shell, its output read back.
 */
#ifndef COLLPROF_BASE_EXEC_H
#define COLLPROF_BASE_EXEC_H

#include <stddef.h>

/** Is path a regular file this process may execute? */
int cp_exec_runnable(const char *path);

/**
 * The first PATH/name of PATH's absolute elements that is runnable, into exe (len bytes):
 * 0, or -1 when there is none.
 */
int cp_exec_find(const char *name, char *exe, size_t len);

/**
 * Run exe with argv (no shell), stdout and stderr together read back: into *out (malloc'd,
 * at most 64 MiB; NULL out: dropped), the first line sanitised into msg.  Returns the exit
 * status (128 + N for signal N), or -1 with msg when it could not be started.
 */
int cp_exec_capture(const char *exe, char *const argv[], char **out, char *msg, size_t len);

#endif /* COLLPROF_BASE_EXEC_H */
