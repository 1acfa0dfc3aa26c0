#include "config.h"

#include "runner/overlap.h"

#include "base/util.h"

#include <math.h>

/* the calibration's loops never exceed this (about an hour at 1 ns a loop) */
#define MAX_LOOPS (UINT64_C(1) << 42)
/* a calibration run lasts at least this long, so the clock's grain does not matter */
#define CAL_MIN_US 1000.0
#define CAL_MAX_US 10000.0

static volatile double sink;

double cp_overlap_pct(double overall_us, double compute_us, double comm_us)
{
    if (!(comm_us > 0)) {
        return 0;
    }
    double pct = 100.0 * (1.0 - (overall_us - compute_us) / comm_us);
    return pct < 0 ? 0 : pct > 100 ? 100 : pct;
}

uint64_t cp_overlap_loops(double target_us, uint64_t loops_done, double took_us, uint64_t max_loops)
{
    if (!(target_us > 0) || loops_done == 0 || max_loops == 0) {
        return 1;
    }
    if (!(took_us > 0)) {
        return max_loops;
    }
    double l = round(target_us / took_us * (double)loops_done);
    if (l < 1) {
        return 1;
    }
    return l >= (double)max_loops ? max_loops : (uint64_t)l;
}

double cp_overlap_spin(uint64_t loops)
{
    /* a dependent chain the compiler cannot fold: each step needs the one before */
    double x = sink + 1.0;
    for (uint64_t i = 0; i < loops; i++) {
        x = x * 0.999999 + 1e-6;
    }
    sink = x;
    return x;
}

/* The fastest of three timed runs of loops, us. */
static double time_spin(uint64_t loops)
{
    double best = 0;
    for (int k = 0; k < 3; k++) {
        double t0 = cp_now_us();
        cp_overlap_spin(loops);
        double t = cp_now_us() - t0;
        best = k == 0 || t < best ? t : best;
    }
    return best;
}

uint64_t cp_overlap_calibrate(double target_us)
{
    if (target_us > CP_OVERLAP_MAX_US) {
        target_us = CP_OVERLAP_MAX_US;
    }
    if (!(target_us > 0)) {
        return 1;
    }
    double want = target_us < CAL_MIN_US   ? CAL_MIN_US
                  : target_us > CAL_MAX_US ? CAL_MAX_US
                                           : target_us;
    /* grow the run until it lasts about want (x8 while too short to extrapolate), then
     * scale it to the target */
    uint64_t loops = 1024;
    double took = time_spin(loops);
    for (int k = 0; k < 32 && took < want * 0.5 && loops < MAX_LOOPS; k++) {
        loops = took > want / 64        ? cp_overlap_loops(want, loops, took, MAX_LOOPS)
                : loops > MAX_LOOPS / 8 ? MAX_LOOPS
                                        : loops * 8;
        took = time_spin(loops);
    }
    return cp_overlap_loops(target_us, loops, took, MAX_LOOPS);
}
