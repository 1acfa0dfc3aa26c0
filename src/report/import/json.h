/*
 * A small strict JSON reader (RFC 8259) for `collprof-report import`: the
 * whole document in memory as a tree, every value with the line it starts
 * on.  Strict: one value, no trailing commas or comments, strings of valid
 * UTF-8 without NUL, numbers finite as doubles, objects without duplicate
 * keys, nesting at most CP_JSON_MAX_DEPTH deep.
 */
#ifndef COLLPROF_REPORT_JSON_H
#define COLLPROF_REPORT_JSON_H

#include <stddef.h>

#define CP_JSON_MAX_DEPTH 64

typedef enum cp_json_type {
    CP_JSON_NULL,
    CP_JSON_BOOL,
    CP_JSON_NUM,
    CP_JSON_STR,
    CP_JSON_ARR,
    CP_JSON_OBJ
} cp_json_type_t;

typedef struct cp_json {
    cp_json_type_t type;
    int line;              /**< 1-based line of the value's first character */
    int boolean;           /**< CP_JSON_BOOL */
    double num;            /**< CP_JSON_NUM */
    char *str;             /**< CP_JSON_STR: NUL-terminated UTF-8 */
    size_t n;              /**< members or elements */
    struct cp_json **kids; /**< [n] the elements, or the members' values */
    char **keys;           /**< [n] CP_JSON_OBJ: the members' names */
} cp_json_t;

/**
 * Parse text[0..len): the tree, or NULL with *line (where it went wrong) and
 * a reason in err.
 */
cp_json_t *cp_json_parse(const char *text, size_t len, int *line, char *err, size_t errlen);
void cp_json_free(cp_json_t *v);

/** Member key of object obj, or NULL (also when obj is not an object). */
const cp_json_t *cp_json_get(const cp_json_t *obj, const char *key);

#endif /* COLLPROF_REPORT_JSON_H */
