#include "config.h"

/*
 * A pair's outcome (screen.h, cp_screen_outcome_t): the one mapping between the /links rows'
 * status and the outcome the runtime, the simulator and the attribution use, and its words.
 */

#include "screen/screen.h"

#include <string.h>

int cp_screen_outcome_of(const char *status)
{
    return !strcmp(status, "ok")            ? CP_SCREEN_MEASURED
           : !strcmp(status, "wrong")       ? CP_SCREEN_WRONG
           : !strcmp(status, "timeout")     ? CP_SCREEN_TIMEOUT
           : !strcmp(status, "unreachable") ? CP_SCREEN_PARTNER_GONE
                                            : CP_SCREEN_NOSETUP;
}

const char *cp_screen_outcome_status(int outcome)
{
    static const char *const st[] = {"ok", "wrong", "timeout", "nosetup", "unreachable"};
    return outcome >= 0 && outcome < (int)(sizeof(st) / sizeof(st[0])) ? st[outcome] : "?";
}

const char *cp_screen_outcome_words(int outcome)
{
    static const char *const words[] = {"measured", "wrong data", "timeout", "not set up",
                                        "unreachable"};
    return outcome >= 0 && outcome < (int)(sizeof(words) / sizeof(words[0])) ? words[outcome] : "?";
}

int cp_screen_outcome_judged(int outcome)
{
    return outcome == CP_SCREEN_MEASURED || outcome == CP_SCREEN_WRONG;
}
