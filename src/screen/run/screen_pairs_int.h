/*
 * Inside the screen's pairs (screen_pairs.c: rank 0's side, the rounds and their rows;
 * screen_leader.c: a pair's own context, its tests, and the node leaders' side): the side
 * messages, what one screen of pairs holds, and what rank 0 and the leaders share.
 */
#ifndef COLLPROF_CORE_SCREEN_PAIRS_INT_H
#define COLLPROF_CORE_SCREEN_PAIRS_INT_H

#include "runner/runner.h"
#include "boot/boot.h"
#include "screen/screen.h"
#include "screen/run/screen_valid.h"

#include <stdint.h>

/* LAT: a leader's latency test of a round of pairs is done, it waits for BULK, rank 0's word
 * that every pair of the round is past its latency test (cp_pairs_run_t.bulk_go). */
enum {
    MSG_PLAN = 1,
    MSG_PUB = 2,
    MSG_GO = 3,
    MSG_ALIVE = 4,
    MSG_RESULT = 5,
    MSG_END = 6,
    MSG_LAT = 7,
    MSG_BULK = 8
};

/* What a group of a plan runs: a pair's latency and bandwidth sendrecv cells, or a
 * validation level's allreduce (src/screen/run/screen_valid.h). */
enum { RUN_PAIR = 0, RUN_VALID = 1 };

/* One end's figures of one size: its own samples. */
typedef struct end_rec {
    int32_t status; /* collprof_cell_status_t; 0 (pending): no result */
    int32_t iters;
    uint64_t wrong;
    double p50, mean, min; /* us */
    char reason[112];
    /* the bandwidth test's path check at this end (--counters net or ib, screen_path.c) */
    int32_t path; /* cp_path_verdict_t + 1; 0: not checked */
    int32_t pad;
    double path_ratio;      /* NIC bytes per operation over the message size */
    char path_via[48];      /* the interfaces that carried them, comma-separated */
    char path_expected[48]; /* the ones the backend was meant to use; "": not known */
} end_rec_t;

/* Every side message of the screen (one length, cp_oob_side_*). */
typedef struct screen_msg {
    int32_t type;
    int32_t round;   /* counted over the screen */
    int32_t partner; /* PLAN, GO: the partner's rank, -1: none; RESULT: -1 when it ran nothing */
    int32_t broken;  /* END: a node was unreachable: no collective of the job follows */
    int32_t run;     /* PLAN: RUN_PAIR or RUN_VALID */
    int32_t gsize;   /* PLAN: the members of its group (0: sits out) */
    int32_t gidx;    /* PLAN: its index there (by ascending rank; 0 opens the channel) */
    int32_t pad;
    char what[48];    /* PLAN: "round 2/3 (random)", for the log */
    char addr[80];    /* PUB: the lower rank's pair channel ("": none); GO: where to join */
    end_rec_t rec[2]; /* RESULT: latency, bandwidth (a validation: its allreduce, rec[0]) */
} screen_msg_t;

/* What one screen of pairs holds. */
typedef struct cp_pairs_run {
    cp_runner_t *r;
    const cp_cell_t *cell[2]; /* latency, bandwidth */
    const int *lead;          /* [nnodes] each node's leader */
    double deadline;          /* the pair deadline */
    double last_alive;        /* when this rank last sent a sign of life */
    /* rank 0 */
    cp_screen_t *s;
    unsigned char *gone; /* [nnodes] 1 unreachable; 2 its connection failed, not yet marked */
    int *partner;        /* [nnodes] this round's partner node, -1: none */
    int *group;          /* [nnodes] this run's group of each node, -1: none */
    int *gsize, *gidx;   /* [nnodes] the group's size (by group), the node's index in it */
    int *m0;             /* [nnodes] each group's member 0 (its lowest rank's node) */
    int *gnext;          /* [nnodes] the next node of the node's group (-1: the last) */
    int *order;          /* [nnodes] the nodes by ascending leader rank */
    screen_msg_t *got;   /* [nnodes] this round's messages: PUB, then RESULT */
    double *heard;       /* [nranks] when rank 0 last heard from the rank */
    unsigned char *wait; /* [nranks] rank 0 waits for a message from it */
    int nunreach;
    int lost_idle; /* a member 0 lost before it published (this run), -1 */
    int round;     /* this run's round (its messages') */
    int lat_phase; /* 1: a round of pairs whose bandwidth tests wait for BULK */
    /* rank 0: every pair of the round past its latency test (its LAT, or its RESULT when it
     * ran nothing; rank 0's own done), then every one that sent LAT told to go on (BULK), so
     * that no latency probe of a round shares a path with another pair's bandwidth test; once
     * a round (lat_phase), nothing for a validation level.  Called by rank 0's own pair after
     * its latency test (screen_leader.c), else after rank 0's part (screen_pairs.c). */
    void (*bulk_go)(struct cp_pairs_run *pr);
    cp_screen_valid_t *val; /* the validation's outcome (NULL: none) */
} cp_pairs_run_t;

/* Both sizes failed before they ran (status, why). */
void cp_pairs_failed_ends(end_rec_t rec[2], int status, const char *why);
/* The sign of life of a rank at work: to rank 0, or from rank 0 to every leader it reaches
 * (force: now, else at most every CP_TMO_SCREEN_BEAT_S); alive() its hook for the runner. */
void cp_pairs_alive_now(cp_pairs_run_t *pr, int force);
void cp_pairs_alive(void *arg);
/* Join the group channel pp (at addr on the members but 0, NULL on member 0) and run what
 * (RUN_PAIR, RUN_VALID) on a backend context of the group; this end's figures into rec. */
void cp_pairs_join_and_test(cp_pairs_run_t *pr, cp_oob_pair_t *pp, const char *addr, int what,
                            end_rec_t rec[2]);
/* screen_path.c: the path check of this end's bandwidth test c from its counter rows (res,
 * cp_runner_t.read_counters) into e; rank 0: the pair's from its two ends into row (its
 * bandwidth row: the graver verdict, the larger ratio, both ends' carriers). */
void cp_pairs_path_end(const cp_pairs_run_t *pr, const cp_cell_t *c, const cp_result_t *res,
                       end_rec_t *e);
void cp_pairs_path_row(const end_rec_t *ea, const end_rec_t *eb, collprof_link_row_t *row);

/* A leader other than rank 0: follow rank 0's plans until it says the screen ended: 1 when
 * the job is no longer whole, 0 when it is, -1 when rank 0 went away. */
int cp_pairs_leader_loop(cp_pairs_run_t *pr);

#endif /* COLLPROF_CORE_SCREEN_PAIRS_INT_H */
