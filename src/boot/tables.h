/* The per-rank tables of cp_boot_t (tables.c).  Internal to src/boot. */
#ifndef COLLPROF_BOOT_TABLES_H
#define COLLPROF_BOOT_TABLES_H

#include "boot/boot.h"
#include "chan/chan.h" /* peer_info_t */

/* The per-rank tables for n ranks, zeroed (node_names NULL); -1 (logged) out of memory. */
int cp_tables_alloc(cp_boot_t *b, int n);
/* node_names for nnodes nodes, zeroed; -1 (logged) out of memory. */
int cp_tables_names(cp_boot_t *b, int nnodes);
void cp_tables_free(cp_boot_t *b);
/* Rank 0: the tables from every rank's record; -1 out of memory. */
int cp_tables_fill(cp_boot_t *b, const peer_info_t *all);
/* Collective: rank 0's tables to every rank over the control channel (rank 0 sets
 * b->nnodes = 0 to make every rank fail). */
int cp_tables_share(cp_boot_t *b);
/* Launchers that do not publish the local rank or size: derived from the node ids. */
void cp_tables_derive_local(cp_boot_t *b);

#endif /* COLLPROF_BOOT_TABLES_H */
