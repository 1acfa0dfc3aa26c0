/*
 * collprof result schema, version 1: the one list of columns that the HDF5
 * writer, the text summary and collprof-report all use.  docs/hdf5-schema.md
 * describes the file around it.
 *
 * Each X(name, kind, size, unit, doc) row is one column of /results.
 * kind is one of STR (fixed-size string of `size` bytes, NUL padded),
 * I32, U64 or F64.  Adding a column appends a row and bumps
 * COLLPROF_SCHEMA_VERSION_MINOR; renaming or removing one bumps MAJOR.
 */
#ifndef COLLPROF_SCHEMA_H
#define COLLPROF_SCHEMA_H

#define COLLPROF_SCHEMA_NAME          "collprof-results"
#define COLLPROF_SCHEMA_VERSION_MAJOR 1
#define COLLPROF_SCHEMA_VERSION_MINOR 1

/* clang-format off */
#define COLLPROF_RESULT_COLUMNS(X)                                                                   \
    X(cell,         I32, 0,   "",      "index of the cell in the run, names /cells/<cell>")        \
    X(backend,      STR, 32,  "",      "backend plugin name")                                      \
    X(variant,      STR, 64,  "",      "variant (algorithm choice); default = library's own")      \
    X(op,           STR, 16,  "",      "operation")                                                \
    X(dtype,        STR, 16,  "",      "element type")                                             \
    X(redop,        STR, 8,   "",      "reduction operator, or none")                              \
    X(root,         I32, 0,   "",      "root rank of rooted operations, else 0")                   \
    X(in_place,     I32, 0,   "",      "1 when the operation ran in place")                        \
    X(imbalance,    STR, 96,  "",      "alltoallv traffic pattern, else empty")                    \
    X(count,        U64, 0,   "elements", "element count of the largest buffer")                   \
    X(bytes,        U64, 0,   "B",     "S of algBW = S / time")                                    \
    X(iterations,   I32, 0,   "",      "timed iterations")                                         \
    X(warmup,       I32, 0,   "",      "warm-up iterations")                                       \
    X(time_mean_us, F64, 0,   "us",    "mean over iterations of the max over ranks")               \
    X(time_min_us,  F64, 0,   "us",    "minimum of the per-iteration maxima")                      \
    X(time_p50_us,  F64, 0,   "us",    "median (nearest rank) of the per-iteration maxima")        \
    X(time_p95_us,  F64, 0,   "us",    "95th percentile (nearest rank)")                           \
    X(time_p99_us,  F64, 0,   "us",    "99th percentile (nearest rank)")                           \
    X(time_max_us,  F64, 0,   "us",    "maximum of the per-iteration maxima")                      \
    X(algbw_gbs,    F64, 0,   "GB/s",  "bytes / mean time, 1e9 B/s")                               \
    X(busbw_gbs,    F64, 0,   "GB/s",  "algBW x the operation's bus factor")                       \
    X(wrong,        U64, 0,   "",      "elements that differ from the exact result, all ranks")    \
    X(status,       STR, 16,  "",      "ok, wrong, error, unsupported, skipped, timeout")          \
    X(error,        STR, 256, "",      "why a cell did not give a result, else empty")             \
    X(start_time,   F64, 0,   "s",     "cell start, seconds since 1970-01-01 UTC")                 \
    X(memory,       STR, 8,   "",      "buffer memory: host, pinned or device (added in 1.1)")
/* clang-format on */

#include <stdint.h>

/* One /results row in memory; the HDF5 compound type has the same fields. */
#define COLLPROF_ROW_FIELD_STR(name, size)              char name[size];
#define COLLPROF_ROW_FIELD_I32(name, size)              int32_t name;
#define COLLPROF_ROW_FIELD_U64(name, size)              uint64_t name;
#define COLLPROF_ROW_FIELD_F64(name, size)              double name;
#define COLLPROF_ROW_FIELD(name, kind, size, unit, doc) COLLPROF_ROW_FIELD_##kind(name, size)

typedef struct collprof_result_row {
    COLLPROF_RESULT_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_result_row_t;

#endif /* COLLPROF_SCHEMA_H */
