/*
 * Non-blocking operations (iallreduce, iallgather, ialltoall, ibroadcast):
 * the arithmetic of OSU's overlap figure and the calibrated host
 * computation that runs while the operation progresses (docs/metrics.md).
 */
#ifndef COLLPROF_CORE_OVERLAP_H
#define COLLPROF_CORE_OVERLAP_H

#include <stdint.h>

/** Longest computation the calibration aims at, us (longer targets are cut to it). */
#define CP_OVERLAP_MAX_US 60e6

/**
 * OSU's overlap in percent: 100 * (1 - (overall - compute) / comm), the
 * share of the pure communication time comm_us that the computation hid.
 * Clamped to [0, 100]; 0 when comm_us is not positive.
 */
double cp_overlap_pct(double overall_us, double compute_us, double comm_us);

/**
 * Loops of the computation that take about target_us, from a calibration
 * run of loops_done loops that took took_us: target_us / took_us *
 * loops_done, rounded, within [1, max_loops].  1 for a target or a
 * calibration that is not positive; max_loops when took_us is 0 (a
 * clock too coarse to see the run: the caller calibrates longer).
 */
uint64_t cp_overlap_loops(double target_us, uint64_t loops_done, double took_us,
                          uint64_t max_loops);

/** The computation: loops dependent multiply-adds on the host.  Returns a value to keep. */
double cp_overlap_spin(uint64_t loops);

/**
 * Calibrate on this core: the loops of cp_overlap_spin that take about
 * target_us (at most CP_OVERLAP_MAX_US).  It runs for a few times
 * min(target_us, 10 ms) and takes the fastest of three measurements.
 */
uint64_t cp_overlap_calibrate(double target_us);

#endif /* COLLPROF_CORE_OVERLAP_H */
