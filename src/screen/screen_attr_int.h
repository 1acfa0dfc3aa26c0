/*
 * The attribution's pieces that the verdict (screen_verdict.c) shares with it
 * (screen_attr.c): internal to src/screen, each described where it is defined.
 * File order: screen_attr.c, then screen_verdict.c.
 */
#ifndef COLLPROF_SCREEN_ATTR_INT_H
#define COLLPROF_SCREEN_ATTR_INT_H

#include "screen/screen.h"

/* cp_attr_marks' bits */
#define MARK_GOOD   1
#define MARK_PROVEN 2

int cp_attr_other(const cp_screen_pair_t *p, int node);
int cp_attr_early(const cp_screen_pair_t *p);
int cp_attr_judged(const cp_screen_pair_t *p);
void cp_attr_node_counts(const cp_screen_t *s, int node, int *meas, int *slow);
void cp_attr_all_counts(const cp_screen_t *s, int *meas, int *slow);
unsigned char *cp_attr_marks(const cp_screen_t *s, int cleared);
const cp_screen_pair_t *cp_attr_confirm_pair(const cp_screen_t *s, int a, int b);
int cp_attr_confirmed(const cp_screen_t *s, int node, int peer);
int cp_attr_is_link(const cp_screen_t *s, int a, int b);

#endif /* COLLPROF_SCREEN_ATTR_INT_H */
