dnl Gloo backend: needs Gloo's C++ headers and -lgloo -lpthread (Debian 12:
dnl libgloo-dev, GLOO_VERSION 0.5.0, no pkg-config file).  Found in the
dnl default paths or under --with-gloo=DIR.  Needs a C++ compiler
dnl (AC_PROG_CXX before LT_INIT in configure.ac).
AC_DEFUN([CP_GLOO_CONFIGURE], [
  CP_WITH_DEP([gloo], [Gloo backend (C++)])
  GLOO_CPPFLAGS= GLOO_LIBS=
  AS_IF([test "x$cp_with_gloo" != xno], [
    AS_CASE([$cp_with_gloo],
      [guess|yes], [GLOO_LIBS="-lgloo -lpthread"],
      dnl -isystem: Gloo's headers are not -Wall -Wextra clean
      [GLOO_CPPFLAGS="-isystem $cp_with_gloo/include"
       GLOO_LIBS="-L$cp_with_gloo/lib -Wl,-rpath,$cp_with_gloo/lib -lgloo -lpthread"])
    AC_LANG_PUSH([C++])
    CPPFLAGS="$CPPFLAGS $GLOO_CPPFLAGS"
    LIBS="$GLOO_LIBS $LIBS"
    AC_CHECK_HEADER([gloo/context.h], [
      AC_MSG_CHECKING([whether Gloo programs link])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <gloo/context.h>
#include <gloo/transport/tcp/device.h>]],
                       [[gloo::transport::tcp::attr a("127.0.0.1");
                         auto dev = gloo::transport::tcp::CreateDevice(a);
                         gloo::Context c(0, 1);
                         return c.size - 1 + (dev ? 0 : 1);]])],
        [AC_MSG_RESULT([yes]); cp_gloo_happy=yes],
        [AC_MSG_RESULT([no])])])
    AC_LANG_POP([C++])
    AS_IF([test "x$cp_gloo_happy" != xyes],
          [CP_DEP_FAIL([gloo], [no usable Gloo (gloo/context.h and -lgloo, with a C++ compiler) was found])])
  ])
  AS_IF([test "x$cp_gloo_happy" = xyes], [
    dnl Gloo has no run-time version: record the package that provided it, if any.
    cp_gloo_pkgver=
    AS_CASE([$cp_with_gloo], [guess|yes], [
      cp_gloo_pkgver=`dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null`])
    AC_DEFINE_UNQUOTED([CP_GLOO_PKG_VERSION], ["$cp_gloo_pkgver"],
                       [Debian package version of the Gloo the plugin was built with])
  ])
  AC_SUBST([GLOO_CPPFLAGS])
  AC_SUBST([GLOO_LIBS])
])
