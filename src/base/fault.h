/*
 * Fault injection for tests, in one place: COLLPROF_FAULT (collprof(1),
 * ENVIRONMENT) names one fault for the whole run.
 *   wrong[:RANK]            corrupt one result element of each checked output (the
 *                           check run of --check last, each checked iteration else;
 *                           --replay: one element of each send RANK replays, and of
 *                           its input of the ops with per-rank counts, where filled)
 *   wrongiter:ITER[:RANK]   corrupt one element of RANK's output of timed iteration ITER
 *                           (1 = the first; every cell): --check every and sample:K
 *                           with ITER a multiple of K see it, --check last does not;
 *                           --replay: each op's output of replay ITER, where checked
 *   exit[:RANK]             die in the middle of the first cell's timed loop
 *   slow[:RANK|all[:USEC]]  add USEC (default 2000) to each timed operation
 *   hang[:RANK[:CELL]]      stop for good in the middle of cell CELL (default 0)
 *   nomem[:RANK[:CELL]]     find no memory for cell CELL's results (default 0), as
 *                           when the allocation fails
 *   slowcoll[:RANK[:USEC]]  add USEC (default 2000) to each timed operation of RANK in
 *                           collective cells, not in the pair exchanges of --link-sweep and
 *                           --screen: a node fine in pairs, slow in collectives (the screen's
 *                           validation allreduce sees it)
 *   slowrep:LIST[:USEC]     add USEC (default 2000) to each timed operation of every
 *                           rank in the repeats (--repeats) LIST names, e.g. 0,2
 *                           (counted from 0): a cell with two modes, for tests
 *   slowcopy[:USEC]         add USEC (default 200000) of CPU time to each timed host
 *                           memcpy of --healthcheck's copy check (which times by CPU
 *                           time): a node with slow memory, seen as such at any load
 *   rogue[:RANK]            before RANK (default 1) joins the control tree, it opens
 *                           two connections to its parent that do not prove the run's
 *                           secret: one silent, one with a wrong proof for RANK's slot
 *   idlestop:RANK[:ROUND[:MEMBER]]  RANK's node leader in --screen (not rank 0) stops itself
 *                           (SIGSTOP) as it gets the plan of the first pair round at or after
 *                           ROUND (from 1, as the console counts them; default 2) in which it is
 *                           member MEMBER (0, the default: the one that publishes the channel;
 *                           1: the one that joins it) of its pair, before it reads anything
 *                           else: a node stopped while idle, right before its next pair
 *   nopair[:RANK]           RANK, a node leader of --screen, closes each pair's (and
 *                           validation group's) channel as soon as it formed: its pairs
 *                           cannot be set up (the node is untested, its partners re-paired)
 *   pairlate[:RANK|all[:MSEC]]  RANK (all: every rank; the default), as a member other
 *                           than 0 of a screen pair's or group's channel, waits MSEC
 *                           (default 1000) before it dials member 0: a window in which
 *                           others reach member 0's listener first (tests/integration/
 *                           foreign.sh)
 *   gloosteal               the Gloo plugin (plugins/gloo/gloo_mesh.cc): on the first try of
 *                           each full mesh, every rank connects a silent socket of its own to
 *                           the first of its pairs that listens, before the peer does (a
 *                           connection from outside the run at Gloo's listener): the mesh is
 *                           tried again
 * RANK defaults to 0 (slow: every rank; rogue: 1; pairlate: every rank).  COLLPROF_TEST_STAGED=1
 * fills and checks host memory through host copies, as device memory is.
 */
#ifndef COLLPROF_CORE_FAULT_H
#define COLLPROF_CORE_FAULT_H

#include <stddef.h>

/** Does "wrong" apply to rank? */
int cp_fault_wrong(int rank);
/** The timed iteration (from 1) of rank that "wrongiter" names, 0 for none (read once per
 * cell, not in its loop: getenv walks the environment). */
int cp_fault_wrong_iter(int rank);
/** Does "exit" apply to rank? */
int cp_fault_exit(int rank);
/** Does "nopair" apply to rank? */
int cp_fault_nopair(int rank);
/** Does "rogue" apply to rank? */
int cp_fault_rogue(int rank);
/** Milliseconds "pairlate" makes rank wait before it dials its pair's member 0 (0: none). */
long cp_fault_pair_late_ms(int rank);
/** Microseconds "slow" adds to each timed operation of rank (0: none). */
long cp_fault_slow_us(int rank);
/** Microseconds "slowcoll" adds to each timed collective (not pair) operation of rank. */
long cp_fault_slowcoll_us(int rank);
/** Microseconds "slowcopy" adds to each timed memcpy of --healthcheck (0: none). */
long cp_fault_slowcopy_us(void);
/** Microseconds "slowrep" adds to each timed operation of repeat (0: none). */
long cp_fault_slow_repeat_us(int repeat);
/** Does "hang" apply to rank in cell? */
int cp_fault_hang(int rank, int cell);
/** Does "nomem" apply to rank in cell? */
int cp_fault_nomem(int rank, int cell);
/** Does "idlestop" stop rank as member member of its pair in the screen's round (from 1)? */
int cp_fault_idlestop(int rank, int round, int member);
/** Stop this process now (SIGSTOP to itself), as the "idlestop" fault does. */
void cp_fault_stop_now(int rank, int round);
/** Busy-wait us microseconds (sleeping overshoots by milliseconds here). */
void cp_fault_spin(long us);
/** Busy-wait until this thread has had us microseconds of CPU time: the delay a check that
 * times by CPU time (--healthcheck's copy) sees in full however busy the node is, where a
 * wall-clock spin preempted by other processes shows it only a fraction of us. */
void cp_fault_spin_cpu(long us);
/** Stop this process's progress for good (the "exit" and "hang" faults). */
void cp_fault_exit_now(int rank) __attribute__((noreturn));
void cp_fault_hang_now(int rank) __attribute__((noreturn));
/** Is COLLPROF_FAULT unset or one of the faults above?  -1 with err otherwise. */
int cp_fault_check(char *err, size_t len);
/** COLLPROF_TEST_STAGED: stage host memory through host copies. */
int cp_fault_test_staged(void);

#endif /* COLLPROF_CORE_FAULT_H */
