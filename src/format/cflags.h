/*
 * What the text summary and collprof-report flag among a cell's counters (/counters,
 * docs/metrics.md "What is flagged"): link errors and retransmissions on InfiniBand/EFA,
 * interface errors and drops, CPU steal above CP_CFLAG_STEAL_PCT, a GPU held below its clocks
 * (throttle reasons other than idle and application clocks, time power or thermal capped),
 * uncorrected ECC errors, Xid errors and PCIe replays; and the path check's verdicts other-nic and excess
 * (src/counters/path_check.h).
 */
#ifndef COLLPROF_FORMAT_CFLAGS_H
#define COLLPROF_FORMAT_CFLAGS_H

#include <collprof/schema.h>
#include <stddef.h>
#include <stdio.h>

/* CPU steal above this share of the node's CPU time over the cell is flagged, percent */
#define CP_CFLAG_STEAL_PCT 3.0

/* NVML's throttle (clocks event) reasons that mean a slowed GPU: software power cap (0x4),
 * hardware slowdown (0x8), software and hardware thermal slowdown (0x20, 0x40), power brake
 * (0x80); not idle (0x1), application clock setting (0x2) nor sync boost (0x10). */
#define CP_CFLAG_THROTTLE_MASK 0xecull

/** The kind of trouble row r shows (e.g. "link errors", "retransmissions", "CPU steal",
 *  "GPU throttled"), or NULL when none. */
const char *cp_cflag(const collprof_counter_row_t *r);

/** Under a cell's summary line: one line per flagged row of rows[0..n), "    counters: node
 *  N (HOST): NAME +DELTA UNIT (kind)"; nothing when none is flagged.  The lines printed. */
int cp_cflag_notes(const collprof_counter_row_t *rows, size_t n, FILE *f);

/** The path check's line for the verdict row rows[k] (source path), from the path rows of
 *  its cell and node among rows[0..n): "    path: node N (HOST): VERDICT: R x the bound
 *  (NIC B/op, bound B/op), via IFACE[, IFACE] (expected IFACE)". */
void cp_cflag_path_note(const collprof_counter_row_t *rows, size_t n, size_t k, FILE *f);

/* The kinds cp_cflag() names, in the order the tallies print them. */
#define CP_CFLAG_KINDS 10

/** Per kind of trouble, the cells it touched (a cell counted once per kind). */
typedef struct cp_cflag_tally {
    int cells[CP_CFLAG_KINDS];
    int last[CP_CFLAG_KINDS]; /**< the cell counted last, +1 (0: none yet) */
} cp_cflag_tally_t;

/** Count rows[0..n), cell's rows, into t. */
void cp_cflag_tally_add(cp_cflag_tally_t *t, int cell, const collprof_counter_row_t *rows,
                        size_t n);
/** "GPU throttled in 3 cells; CPU steal in 1 cell" (the kinds seen, in the order above), or
 *  "nothing"; into buf. */
const char *cp_cflag_tally_text(const cp_cflag_tally_t *t, char *buf, size_t len);

#endif /* COLLPROF_FORMAT_CFLAGS_H */
