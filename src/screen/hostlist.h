/*
 * Slurm's compressed host lists ("n[3,17-18],gpu7"), as sbatch --exclude and scontrol take
 * them: written by the screen's verdict (collprof --screen, collprof-report screen).
 */
#ifndef COLLPROF_CORE_HOSTLIST_H
#define COLLPROF_CORE_HOSTLIST_H

#include <stddef.h>

/**
 * The host list of names[i] where pick[i] is set, sorted, each name once: names of equal
 * prefix and a numeric suffix merge into one bracket ("n[3,17-18]"), zero-padded suffixes
 * only with those of their width ("n[003,117]"), other names as they are.  Returns the
 * length written (as snprintf: truncated when >= len).
 */
int cp_hostlist(const char *const *names, const unsigned char *pick, int n, char *buf, size_t len);

#endif /* COLLPROF_CORE_HOSTLIST_H */
