/*
 * What screen_drain.c (the drain and resume of collprof-report screen) shares with the two
 * files below it: drain_state.c, the state file of failing verdicts, drains and the circuit
 * breaker; drain_slurm.c, scontrol found by absolute path and run without a shell, its node
 * and partition records read, and Slurm host lists.  screen_drain > drain_state, drain_slurm.
 */
#ifndef COLLPROF_REPORT_CMD_DRAIN_H
#define COLLPROF_REPORT_CMD_DRAIN_H

#include <stddef.h>

/* ---- drain_slurm.c ----------------------------------------------------------------------- */

/** A node as `scontrol show node -o` says it: its name, drained (DRAIN in its state) or
 *  otherwise offline (DOWN, FAIL), and its reason (printable, "" when none). */
typedef struct cp_drain_node {
    char name[64];
    int drained;
    int offline;
    char reason[256];
} cp_drain_node_t;

/** 1 when reason is collprof's own (starts with "collprof:"). */
int cp_drain_ours(const char *reason);

/**
 * scontrol's absolute path into exe: given (--scontrol: absolute, an executable regular
 * file), else the first in $PATH's absolute elements (empty and relative ones skipped).
 * 0, or the exit status 2 after a one-line error that says why and that what (e.g. "nothing
 * drained") follows.
 */
int cp_drain_find_scontrol(const char *given, const char *what, char *exe, size_t len);

/**
 * Run exe with argv (argv[0] its name) without a shell, standard output and error into
 * *out (malloc'd, NUL-terminated; NULL when not wanted); its first line, printable, into
 * msg.  Its exit status, or -1 when it could not be run (why in msg).
 */
int cp_drain_exec(const char *exe, char *const argv[], char **out, char *msg, size_t len);

/** How a command failed, for an error line: msg (rc -1), or "exit RC: msg". */
void cp_drain_how(int rc, const char *msg, char *buf, size_t len);

/**
 * Every node of `exe show node -o` into *nodes (*n; malloc'd).  0, or the exit status 2
 * after a one-line error (scontrol failed, or its output is not node records).
 */
int cp_drain_read_nodes(const char *exe, cp_drain_node_t **nodes, size_t *n);

/** The node named name in nodes[0..n), or NULL. */
const cp_drain_node_t *cp_drain_find_node(const cp_drain_node_t *nodes, size_t n, const char *name);

/**
 * The nodes of partition part (`exe show partition -o PART`: TotalNodes) into *size.
 * 0, or the exit status 2 after a one-line error.
 */
int cp_drain_partition_size(const char *exe, const char *part, int *size);

/**
 * 1 when name is in Slurm's host list ("n[1-4,7],gpu[01-08],login"), 0 when not, -1 when
 * the list is not one this reads (nested or several brackets in one name, a bad range).
 */
int cp_drain_hostlist_has(const char *list, const char *name);

/* ---- drain_state.c ----------------------------------------------------------------------- */

/** A node's failing verdicts in a row: how many, the last one's time, screen and file. */
typedef struct cp_drain_fail {
    char node[64];
    int count;
    long long time;
    char screen[128]; /**< the screen's identity (cp_drain_screen_id) */
    char file[256];   /**< its file, as printable text */
} cp_drain_fail_t;

/** A drain collprof ran: node, time, partition ("-": none known). */
typedef struct cp_drain_done {
    char node[64];
    long long time;
    char part[64];
} cp_drain_done_t;

/** The state file (--state): the failing verdicts, the drains, the circuit breaker. */
typedef struct cp_drain_state {
    cp_drain_fail_t *fails;
    size_t nfails;
    cp_drain_done_t *done;
    size_t ndone;
    long long tripped; /**< when the breaker tripped; 0: not tripped */
    char trip_why[256];
} cp_drain_state_t;

/**
 * Read the state file path into s (empty when the file does not exist).  0, or the exit
 * status 2 after a one-line error: not a regular file (a link, a FIFO), not owned by this
 * user or root, writable by others, too large, or not a collprof drain state.
 */
int cp_drain_state_load(const char *path, cp_drain_state_t *s);

/**
 * Write s to path atomically (a temporary file beside it, then renamed over it), mode 0600.
 * 0, or the exit status 2 after a one-line error (the old file then untouched).
 */
int cp_drain_state_save(const char *path, const cp_drain_state_t *s);

/** Lock path's FILE.lock (flock, waiting up to 60 s): its descriptor, to close when done;
 *  -1 after a one-line error. */
int cp_drain_state_lock(const char *path);

void cp_drain_state_free(cp_drain_state_t *s);

/** The failing verdicts of node, or NULL. */
cp_drain_fail_t *cp_drain_state_fail(cp_drain_state_t *s, const char *node);

/** Record one failing verdict of node, in screen (file): its count after it (the same
 *  screen again counts once).  -1 when out of memory. */
int cp_drain_state_failed(cp_drain_state_t *s, const char *node, const char *screen,
                          const char *file, long long now);

/** Forget node's failing verdicts (found healthy, or resumed). */
void cp_drain_state_forget(cp_drain_state_t *s, const char *node);

/** Record a drain; 0, or -1 when out of memory. */
int cp_drain_state_drained(cp_drain_state_t *s, const char *node, const char *part, long long now);

/** Forget the last drain recorded of node (one that scontrol then refused). */
void cp_drain_state_undrain(cp_drain_state_t *s, const char *node);

/** Forget the drains recorded before time before. */
void cp_drain_state_prune(cp_drain_state_t *s, long long before);

/** Drains of part recorded since now - window. */
int cp_drain_state_recent(const cp_drain_state_t *s, const char *part, long long now,
                          long long window);

#endif /* COLLPROF_REPORT_CMD_DRAIN_H */
