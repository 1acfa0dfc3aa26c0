/*
 * Element types and the data patterns that make every result exact.
 *
 * Every value collprof puts in a buffer is a small non-negative integer
 * below the type's exact limit (int8: 127, float16: 2048, bfloat16: 256,
 * float32: 2^24 ...), and reductions are planned so that the result stays
 * below that limit too.  So a correct result is bit-for-bit predictable
 * in every type and a check can count wrong elements with ==, never a
 * tolerance.  Buffers are poisoned with 0xFF bytes before a check run:
 * -1 for signed integers, the maximum (never produced) for unsigned ones,
 * NaN for floats.
 */
#ifndef COLLPROF_CORE_DATA_H
#define COLLPROF_CORE_DATA_H

#include <collprof/plugin.h>
#include <stddef.h>
#include <stdint.h>

/* Names, sizes and exact limits of the types: <collprof/vocab.h>. */

/** Lookup by name or alias ("float", "half", "bf16"...), any case; -1 when unknown. */
int cp_dtype_from_name(const char *name);
/** -1 when unknown. */
int cp_redop_from_name(const char *name);

/** Store / load a small integer value at element i. */
void cp_data_set(collprof_dtype_t t, void *buf, size_t i, int64_t v);
/** Load element i; returns 0 and *v when it is an exact integer, -1 otherwise (NaN, fraction). */
int cp_data_get(collprof_dtype_t t, const void *buf, size_t i, int64_t *v);

/** Input of rank r at element i for data-movement ops (distinct per source). */
int64_t cp_data_value(collprof_dtype_t t, int r, uint64_t i);

/** Contribution of rank r at element i to a reduction over n ranks. */
int64_t cp_data_contrib(collprof_dtype_t t, collprof_redop_t op, int n, int r, uint64_t i);

/** Expected result of the reduction over all n ranks at element i: O(1) in n. */
int64_t cp_data_reduced(collprof_dtype_t t, collprof_redop_t op, int n, uint64_t i);

/*
 * The expected results of one reduction, periodic in the element index:
 * element i holds v[i % period] (a period of at most 101 for every type,
 * reduction and n), so a check costs O(count) whatever the ranks.
 */
#define CP_REDUCED_MAX_PERIOD 128
typedef struct cp_reduced {
    unsigned period;
    int64_t v[CP_REDUCED_MAX_PERIOD];
} cp_reduced_t;

/** Fill tab for the reduction op over n ranks in type t; -1 when n < 1. */
int cp_data_reduced_init(cp_reduced_t *tab, collprof_dtype_t t, collprof_redop_t op, int n);

#endif /* COLLPROF_CORE_DATA_H */
