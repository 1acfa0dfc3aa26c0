/*
 * The exit statuses of collprof.  A run the watchdog stops exits with
 * CP_EXIT_TIMEOUT (124, wd/watchdog.h), one stopped by signal N with
 * 128 + N.
 */
#ifndef COLLPROF_RUN_EXIT_H
#define COLLPROF_RUN_EXIT_H

enum {
    CP_EXIT_OK = 0,     /**< every cell ran and was right */
    CP_EXIT_FAILED = 1, /**< a wrong or failed cell, no backend, an output not written */
    CP_EXIT_USAGE = 2   /**< bad input, found before any backend communicates */
};

#endif /* COLLPROF_RUN_EXIT_H */
