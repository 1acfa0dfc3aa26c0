#include "config.h"

#include "screen/path.h"

#include <string.h>

static const char *const names[CP_PATH_NCLASSES] = {"any", "same-node", "same-switch",
                                                    "cross-switch"};

const char *cp_path_name(int cls)
{
    return cls >= 0 && cls < CP_PATH_NCLASSES ? names[cls] : names[CP_PATH_ANY];
}

int cp_path_parse(const char *name)
{
    if (name == NULL || name[0] == '\0') {
        return CP_PATH_ANY;
    }
    for (int c = 0; c < CP_PATH_NCLASSES; c++) {
        if (!strcmp(name, names[c])) {
            return c;
        }
    }
    return -1;
}

int cp_path_of(const int *leaf, int a, int b)
{
    if (a == b) {
        return CP_PATH_SAME_NODE;
    }
    if (leaf == NULL || a < 0 || b < 0 || leaf[a] < 0 || leaf[b] < 0) {
        return CP_PATH_ANY;
    }
    return leaf[a] == leaf[b] ? CP_PATH_SAME_SWITCH : CP_PATH_CROSS_SWITCH;
}
