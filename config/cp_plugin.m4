dnl CP_WITH_DEP(name, help-name)
dnl   Declares --with-<name>[=DIR|yes|no]; sets cp_with_<name> to
dnl   "guess" (default), "yes", "no" or a directory.
AC_DEFUN([CP_WITH_DEP], [
  AC_ARG_WITH([$1],
    [AS_HELP_STRING([--with-$1@<:@=DIR@:>@], [$2 (default: auto-detect; DIR = install prefix)])],
    [cp_with_$1=$withval], [cp_with_$1=guess])
])

dnl CP_DEP_FAIL(name, message): hard error if the dependency was requested, else note it.
AC_DEFUN([CP_DEP_FAIL], [
  AS_IF([test "x$cp_with_$1" != xguess && test "x$cp_with_$1" != xno],
        [AC_MSG_ERROR([--with-$1 was given but $2])],
        [AC_MSG_NOTICE([$1: $2; not building it])])
])

dnl CP_PLUGIN_SETUP(name, configure-macro): run the macro (from plugins/<name>/configure.m4,
dnl m4_include'd by configure.ac), which must set cp_<name>_happy=yes|no and
dnl AC_SUBST its own flags.  Defines AM_CONDITIONAL CP_BUILD_<NAME>.
AC_DEFUN([CP_PLUGIN_SETUP], [
  cp_$1_happy=no
  cp_save_CPPFLAGS=$CPPFLAGS cp_save_LDFLAGS=$LDFLAGS cp_save_LIBS=$LIBS
  $2
  CPPFLAGS=$cp_save_CPPFLAGS LDFLAGS=$cp_save_LDFLAGS LIBS=$cp_save_LIBS
  AM_CONDITIONAL([CP_BUILD_]m4_toupper($1), [test "x$cp_$1_happy" = xyes])
  cp_plugin_summary="$cp_plugin_summary
    $1: $cp_$1_happy$cp_$1_note"
])
