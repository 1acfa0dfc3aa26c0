#include "config.h"

/*
 * What the Gloo plugin's other files call at the bottom (gloo_internal.h): the plugin's own
 * error buffer and set_error().
 */

#include <cstdarg>

#include <collprof/plugin_util.h>

#include "gloo_internal.h"

namespace cpgloo
{

char g_err[kErrLen]; /* last_error(NULL) */

COLLPROF_DEFINE_SET_ERROR(set_error, GlCtx, err, g_err);

} // namespace cpgloo
