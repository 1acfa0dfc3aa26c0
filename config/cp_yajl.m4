dnl CP_YAJL_CONFIGURE: yajl (libyajl-dev), the JSON parser of collprof-report
dnl import (src/report/import/json.c).  Required wherever collprof-report is
dnl built (HDF5 found): configure stops with what to install.  --with-yajl=DIR
dnl for an install elsewhere.  Substitutes YAJL_CFLAGS and YAJL_LIBS (only
dnl collprof-report and the import fuzzer link it); does not touch LIBS.
AC_DEFUN([CP_YAJL_CONFIGURE], [
  CP_WITH_DEP([yajl], [yajl, the JSON parser of collprof-report import (required with HDF5)])
  YAJL_CFLAGS= YAJL_LIBS=
  AS_IF([test "x$cp_hdf5_happy" = xyes], [
    AS_IF([test "x$cp_with_yajl" = xno],
          [AC_MSG_ERROR([collprof-report needs yajl (its import reads JSON with it); --without-yajl is only possible with --without-hdf5])])
    AS_CASE([$cp_with_yajl],
      [guess|yes], [PKG_CHECK_MODULES([YAJL], [yajl >= 2], [], [YAJL_CFLAGS= YAJL_LIBS=-lyajl])],
      [YAJL_CFLAGS="-I$cp_with_yajl/include"
       YAJL_LIBS="-L$cp_with_yajl/lib -Wl,-rpath,$cp_with_yajl/lib -lyajl"])
    cp_save_CPPFLAGS=$CPPFLAGS cp_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $YAJL_CFLAGS" LIBS="$YAJL_LIBS $LIBS"
    cp_yajl_happy=no
    AC_CHECK_HEADER([yajl/yajl_parse.h], [AC_CHECK_FUNC([yajl_complete_parse], [cp_yajl_happy=yes])])
    CPPFLAGS=$cp_save_CPPFLAGS LIBS=$cp_save_LIBS
    AS_IF([test "x$cp_yajl_happy" != xyes],
          [AC_MSG_ERROR([collprof-report import reads JSON with yajl 2, not found (yajl/yajl_parse.h and -lyajl): install libyajl-dev, pass --with-yajl=DIR, or build without collprof-report (--without-hdf5)])])
  ])
  AC_SUBST([YAJL_CFLAGS])
  AC_SUBST([YAJL_LIBS])
])
