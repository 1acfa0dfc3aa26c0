/* Test plugin: a shared object named like a plugin that exports no backend. */
#include "config.h"

int collprof_nosym_placeholder(void);
int collprof_nosym_placeholder(void)
{
    return 0;
}
