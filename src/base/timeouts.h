/*
 * Every timeout of collprof, with the reason for its value.  Header only: it
 * depends on nothing and anything may include it.
 *
 * The order that matters: the watchdog must fire before anything else gives
 * up, because it alone names the ranks that did not arrive.  So a library's
 * own timeout is the watchdog's plus a margin, the bounded PMIx waits of the
 * group collectives are longer than the watchdog's default timeouts, and the
 * watchdog's own waits (collecting records, closing the outputs) are short
 * enough that a hung run ends within --timeout + 5 s.
 *
 * Seconds throughout (_S), as doubles unless an integer is needed.
 */
#ifndef COLLPROF_CORE_TIMEOUTS_H
#define COLLPROF_CORE_TIMEOUTS_H

/* ---- a cell ------------------------------------------------------------
 *
 * The watchdog's timeout inside a cell is cp_cell_timeout (src/runner/runner.c):
 * --timeout when given, else CP_TMO_CELL_BASE_S + 1 s per CP_TMO_CELL_BYTES_PER_S
 * of the cell's largest buffer (twice that when more than one rank exchanges
 * it), so that the largest sizes on a slow transport are not taken for
 * hangs; the set-up of a --rotate-buffers N cell (N sets of buffers to
 * allocate and fill) gets N times that.  The runner keeps the value while
 * the cell runs (cp_current_timeout).
 */
#define CP_TMO_CELL_BASE_S      60.0
#define CP_TMO_CELL_BYTES_PER_S 10e6

/* ---- a backend's own timeout ("timeout" option, src/run/host.c) ---------
 *
 * A plugin that asks for the "timeout" key and was not given one gets the
 * watchdog's (the cell's, else --timeout, at least 1 s) plus this margin:
 * the watchdog must fire first, as it names the ranks that did not arrive;
 * a library that gave up at the same moment would send its ranks on to the
 * next step and the watchdog would see the hang there, a timeout later.
 */
#define CP_TMO_LIBRARY_MARGIN_S 5

/* ---- the screen's pair tests (src/screen/run/screen_run.c) ---------------------
 *
 * With a backend whose groups start on their own (COLLPROF_BACKEND_LOCAL_GROUPS) each pair
 * runs on a context of its own and the order reverses: the library's "timeout" is the pair deadline
 * (--timeout, else CP_TMO_SCREEN_PAIR_S) so that a rank whose partner stopped gets its
 * operation back and reports; the rank's watchdog waits CP_TMO_SCREEN_WD_MARGIN_S longer,
 * as the last resort.  Rank 0 calls a node unreachable when it heard nothing from it for the
 * pair deadline plus CP_TMO_SCREEN_SILENT_S while it had a pair to run: a rank that waits
 * for its stopped partner is silent for up to the deadline, then reports.  A rank in a pair
 * test sends rank 0 a sign of life at most every CP_TMO_SCREEN_BEAT_S; rank 0 sends the
 * ranks waiting for their next pairing one as often.  --timeout 0 (none) keeps the rounds as
 * cells of the whole job.
 */
#define CP_TMO_SCREEN_PAIR_S      30.0
#define CP_TMO_SCREEN_WD_MARGIN_S 15.0
#define CP_TMO_SCREEN_SILENT_S    10.0
#define CP_TMO_SCREEN_BEAT_S      1.0

/** The screen's pair deadline for --timeout timeout_s (< 0: not given; 0: none, 0 here). */
static inline double cp_tmo_screen_pair(double timeout_s)
{
    return timeout_s < 0 ? CP_TMO_SCREEN_PAIR_S : timeout_s;
}

/* Rank 0's silence limit and member 0's accept come from one constant, so that they cannot
 * drift apart: rank 0 gives up on a silent member 0 of a group (and sends its other members
 * a GO with no partner) after cp_tmo_screen_silent; a member 0 that did publish its channel
 * accepts its members for as long (cp_tmo_screen_accept), so that no member that rank 0 still
 * sends to a group finds its listener closed.  Rank 0 sends each group's GO as soon as that
 * group's member 0 published, so a member 0 that stops costs its own group alone. */
/** Rank 0's silence limit for a node with something to do, for pair deadline deadline_s. */
static inline double cp_tmo_screen_silent(double deadline_s)
{
    return deadline_s + CP_TMO_SCREEN_SILENT_S;
}
/** How long a group's member 0 accepts its members: at least rank 0's silence limit.  It is
 *  silent meanwhile, so rank 0 counts its silence from where a pair deadline's accept would
 *  have ended (its limit: the accept plus CP_TMO_SCREEN_SILENT_S), and its own watchdog,
 *  last fed as the plan came, waits the deadline plus CP_TMO_SCREEN_WD_MARGIN_S: longer. */
static inline double cp_tmo_screen_accept(double deadline_s)
{
    return cp_tmo_screen_silent(deadline_s);
}
_Static_assert((long)CP_TMO_SCREEN_SILENT_S < (long)CP_TMO_SCREEN_WD_MARGIN_S, /* (long): clang */
               "a member 0's accept (the deadline + CP_TMO_SCREEN_SILENT_S) must end before its "
               "watchdog fires (the deadline + CP_TMO_SCREEN_WD_MARGIN_S)");

/* ---- outside cells (start-up, finish; src/run/rank.c) --------------------
 *
 * Boot, plan and backend initialisation, and closing the backends, take
 * longer than a cell's control work (PMIx, the libraries' own start-up), so
 * the watchdog is generous there: CP_TMO_OUTER_DEFAULT_S without --timeout,
 * never less than CP_TMO_OUTER_MIN_S with it, and no limit with
 * --timeout 0.
 */
#define CP_TMO_OUTER_DEFAULT_S 300.0
#define CP_TMO_OUTER_MIN_S     60.0

/** The watchdog's timeout outside cells for --timeout timeout_s (< 0: not given). */
static inline double cp_tmo_outer(double timeout_s)
{
    return timeout_s < 0                    ? CP_TMO_OUTER_DEFAULT_S
           : timeout_s == 0                 ? 0.0
           : timeout_s < CP_TMO_OUTER_MIN_S ? CP_TMO_OUTER_MIN_S
                                            : timeout_s;
}

/* ---- group collectives over PMIx keys (src/chan/oob_pmix.c) -------------
 *
 * A member's bounded wait for another member's key.  Longer than the
 * watchdog's default timeouts (a cell's without --timeout, CP_TMO_OUTER_*),
 * so that the watchdog ends a run that hangs before this wait gives up.
 */
#define CP_TMO_GROUP_WAIT_S 300.0

/* ---- the TCP tree's set-up (src/chan/tcp_tree.c) ------------------------
 *
 * A leader waits CP_TMO_TREE_LEADER_WAIT_S for its node's members; rank 0
 * waits longer for the leaders (CP_TMO_TREE_ROOT_WAIT_S), as each of them
 * first waits for its own; every rank waits for rank 0's verdict longer
 * than both together (CP_TMO_TREE_VERDICT_S), so that the verdict, not a
 * member's impatience, decides whether the tree is used and every rank
 * chooses the same channel.  A connection that does not prove the run's
 * secret and introduce itself within CP_TREE_HELLO_RTTS round trips of its
 * accept (as the TCP handshake measured them), at least
 * CP_TMO_TREE_HELLO_MIN_S and at most CP_TMO_TREE_HELLO_S, is dropped: the
 * accepting rank handles every pending connection at once, and a full
 * table evicts the oldest (tcp_tree_int.h), so the deadline only bounds how
 * long one that is not ours (or stalled) holds a slot and a descriptor,
 * never the others' wait; a real member answers the challenge within a
 * round trip, and the floor is for a member on a busy node that is
 * scheduled late.  A member whose connection was closed before its proof
 * dials again (tcp_hello.c).  Dialling the parent gives up after
 * CP_TMO_TREE_CONNECT_S; the dialler waits for the parent's challenge and
 * proof as long as for the verdict (the parent may still be accepting its
 * own node's members).  A leader below another leader opens its side link
 * to rank 0 first (staggered, its connects retried: tcp_side.c), giving up
 * (side messages then off) after CP_TMO_TREE_SIDE_S, well within rank 0's
 * wait, so that it still joins the tree in time.
 */
#define CP_TMO_TREE_LEADER_WAIT_S 30.0
#define CP_TMO_TREE_ROOT_WAIT_S   60.0
#define CP_TMO_TREE_VERDICT_S     120.0
#define CP_TMO_TREE_CONNECT_S     30.0
#define CP_TMO_TREE_HELLO_S       5.0
#define CP_TMO_TREE_HELLO_MIN_S   1.0
#define CP_TREE_HELLO_RTTS        16.0
#define CP_TMO_TREE_SIDE_S        15.0

/* ---- the watchdog (src/wd/watchdog.c) --------------------------------- */

/* How often the thread looks at the beat (and waits for a signal), in ns. */
#define CP_TMO_WD_TICK_NS 200000000L
/* Longest rank 0 waits for the records of the other stalled ranks: they
 * stall on the same missing peer and report within a tick or two of each
 * other; a stopped rank, or one on a node cut off, never does, and the run
 * must end within --timeout + 5 s all the same. */
#define CP_TMO_WD_COLLECT_MAX_S 2.0
/* How long the other ranks wait for rank 0 to close the outputs. */
#define CP_TMO_WD_CLOSE_WAIT_S 20.0
/* After a signal, how long the other ranks give rank 0 to close. */
#define CP_TMO_WD_SIGNAL_WAIT_S 2.0
/* A stall found this much later than its timeout: the process itself was
 * stopped (the watchdog looks every tick). */
#define CP_TMO_WD_FROZEN_S 1.5
/* Longest one round of the watchdog's fetches waits for the answers. */
#define CP_TMO_WD_FETCH_WAIT_S 0.5
/* How long a deputy waits for the records of the deputies before it (rank 0 first) before
 * it takes them for silent and reports in their place: as long as rank 0 collects. */
#define CP_TMO_WD_DEPUTY_WAIT_S CP_TMO_WD_COLLECT_MAX_S
/* How long an acting deputy collects the records it lacks: one round.  The others stalled
 * when it did and posted theirs during its CP_TMO_WD_DEPUTY_WAIT_S (as long as rank 0 gives
 * them), so that a run whose rank 0 (and deputy 1) is stopped still ends within --timeout + 5 s. */
#define CP_TMO_WD_DEPUTY_COLLECT_S CP_TMO_WD_FETCH_WAIT_S
/* A rank resumed after a stop past its timeout asks the deputies this long whether they gave up
 * on it (their watchdogs fire within a tick or two of its limit; under Slurm's suspend none
 * does, and the rank waits this long once, its outputs held). */
#define CP_TMO_WD_RESUME_ASK_S 1.0

#endif /* COLLPROF_CORE_TIMEOUTS_H */
