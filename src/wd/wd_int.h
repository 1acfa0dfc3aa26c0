/*
 * What the watchdog's files share (watchdog.h): watchdog.c (the thread, beats, signals and
 * reports), wd_explain.c (where each rank is, in words: pure) and wd_elect.c (the exchange of
 * the ranks' records and who reports).  Internal to src/wd.
 */
#ifndef COLLPROF_CORE_WD_INT_H
#define COLLPROF_CORE_WD_INT_H

#include "base/util.h"
#include "wd/watchdog.h"

#include <stddef.h>

#define KEY_REC   "cp.wd.rec"
#define KEY_DONE  "cp.wd.done"
#define KEY_FILES "cp.wd.files"
/* 1: this deputy acts for a silent rank 0 (0: it found itself cut off and withdrew). */
#define KEY_LEAD "cp.wd.lead"

static inline double cp_wd_now_s(void)
{
    return cp_now_us() * 1e-6;
}

/* wd_explain.c */
/** Where a rank is, in words; with_cell adds its cell. */
void cp_wd_where(const cp_wd_rec_t *r, int with_cell, char *buf, size_t len);
/** printf onto the end of msg (len bytes in all), cut at its end. */
void cp_wd_append(char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* wd_elect.c */
/** The exchange in use (cp_wd_set_io). */
const cp_wd_io_t *cp_wd_io(void);
/** rank's value of key, asked once a round until it comes or timeout_s passes (0: once); 0
 *  when it came. */
int cp_wd_fetch_one(int rank, const char *key, void *dst, size_t len, double timeout_s);
/** rank's place among the deputies dep[0..ndep) (-1: none). */
int cp_wd_dep_index(int rank, const int *dep, int ndep);
/** The first deputy after rank 0 that says it acts (-1: none), one request to each. */
int cp_wd_deputy_acting(const int *dep, int ndep);

#endif
