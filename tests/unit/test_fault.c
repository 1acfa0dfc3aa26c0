/* Fault injection's grammar and the screen's "idlestop" (src/base/fault.c), and the two
 * bounds of the screen that must not drift apart (src/base/timeouts.h): a group's member 0
 * accepts at least as long as rank 0 waits for its channel. */
#include "config.h"

#include "base/fault.h"
#include "base/timeouts.h"
#include "tap.h"

#include <stdlib.h>
#include <time.h>

static int check(const char *f)
{
    char err[512];
    setenv("COLLPROF_FAULT", f, 1);
    return cp_fault_check(err, sizeof(err));
}

int main(void)
{
    ok(check("idlestop:3") == 0 && check("idlestop:3:4") == 0 && check("idlestop:3:4:1") == 0,
       "idlestop:RANK[:ROUND[:MEMBER]] accepted");
    ok(check("idlestop") != 0 && check("idlestop:") != 0 && check("idlestop:x") != 0 &&
           check("idlestop:1:2:3:4") != 0 && check("idlestop:1:") != 0 &&
           check("idlestop:1:2:") != 0,
       "idlestop without a rank, with a bad number or a fourth field: refused");

    setenv("COLLPROF_FAULT", "idlestop:3", 1); /* ROUND defaults to 2, MEMBER to 0 */
    ok(!cp_fault_idlestop(3, 1, 0) && cp_fault_idlestop(3, 2, 0) && cp_fault_idlestop(3, 5, 0),
       "idlestop:3: rank 3 from round 2 on");
    ok(!cp_fault_idlestop(3, 2, 1), "idlestop:3: as member 0 only");
    ok(!cp_fault_idlestop(2, 2, 0) && !cp_fault_idlestop(0, 2, 0), "idlestop:3: no other rank");
    setenv("COLLPROF_FAULT", "idlestop:1:4", 1);
    ok(!cp_fault_idlestop(1, 3, 0) && cp_fault_idlestop(1, 4, 0), "idlestop:1:4: from round 4");
    setenv("COLLPROF_FAULT", "idlestop:7:2:1", 1);
    ok(cp_fault_idlestop(7, 2, 1) && !cp_fault_idlestop(7, 2, 0), "idlestop:7:2:1: as member 1");
    setenv("COLLPROF_FAULT", "slow:1", 1);
    ok(!cp_fault_idlestop(1, 4, 0), "another fault: no idlestop");
    unsetenv("COLLPROF_FAULT");
    ok(!cp_fault_idlestop(1, 4, 0), "unset: no idlestop");

    int fine = 1;
    for (double d = 0.5; d <= 600; d *= 2) {
        double pair = cp_tmo_screen_pair(d);
        fine &= cp_tmo_screen_accept(pair) >= cp_tmo_screen_silent(pair) &&
                cp_tmo_screen_silent(pair) > pair;
    }
    double def = cp_tmo_screen_pair(-1);
    ok(fine && cp_tmo_screen_accept(def) >= 40.0,
       "member 0 accepts at least rank 0's silence limit, which is past the pair deadline "
       "(%.0f s by default)",
       cp_tmo_screen_accept(def));
    /* slowcopy's spin is in the clock its check times by, thread CPU time: all 50 ms of it
     * counted however little of the wall clock the scheduler gives this thread */
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    cp_fault_spin_cpu(50000);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    double cpu = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    ok(cpu >= 0.050, "a CPU-time spin of 50 ms: %.3f s of this thread's CPU time", cpu);
    return tap_done();
}
