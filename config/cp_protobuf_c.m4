dnl CP_PROTOBUF_C_CONFIGURE: protobuf-c (libprotobuf-c-dev and protobuf-c-compiler), the
dnl decoder of Chakra's .et traces (collprof-report import --trace chakra-et,
dnl src/report/import/trace_chakra.c).  Optional: without it that format is refused
dnl with what to install, and the build goes on.  Needs both the library and protoc-c
dnl (the decoder is generated from src/report/import/chakra_et.proto).  Substitutes
dnl PROTOBUF_C_CFLAGS, PROTOBUF_C_LIBS and PROTOC_C; defines HAVE_PROTOBUF_C; the
dnl conditional CP_HAVE_PROTOBUF_C.
AC_DEFUN([CP_PROTOBUF_C_CONFIGURE], [
  AC_ARG_WITH([protobuf-c],
    [AS_HELP_STRING([--with-protobuf-c@<:@=DIR@:>@], [protobuf-c, the decoder of Chakra .et traces (import --trace chakra-et; default: auto-detect; DIR = install prefix)])],
    [cp_with_protobuf_c=$withval], [cp_with_protobuf_c=guess])
  cp_protobuf_c_happy=no
  PROTOBUF_C_CFLAGS= PROTOBUF_C_LIBS=
  AS_IF([test "x$cp_hdf5_happy" = xyes && test "x$cp_with_protobuf_c" != xno], [
    AS_CASE([$cp_with_protobuf_c],
      [guess|yes], [PKG_CHECK_MODULES([PROTOBUF_C], [libprotobuf-c >= 1.0], [],
                                      [PROTOBUF_C_CFLAGS= PROTOBUF_C_LIBS=-lprotobuf-c])],
      [PROTOBUF_C_CFLAGS="-I$cp_with_protobuf_c/include"
       PROTOBUF_C_LIBS="-L$cp_with_protobuf_c/lib -Wl,-rpath,$cp_with_protobuf_c/lib -lprotobuf-c"])
    AC_PATH_PROG([PROTOC_C], [protoc-c], [], [$PATH:$cp_with_protobuf_c/bin])
    cp_save_CPPFLAGS=$CPPFLAGS cp_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $PROTOBUF_C_CFLAGS" LIBS="$PROTOBUF_C_LIBS $LIBS"
    AC_CHECK_HEADER([protobuf-c/protobuf-c.h],
                    [AC_CHECK_FUNC([protobuf_c_message_unpack], [cp_protobuf_c_happy=yes])])
    CPPFLAGS=$cp_save_CPPFLAGS LIBS=$cp_save_LIBS
    AS_IF([test "x$cp_protobuf_c_happy" = xyes && test -z "$PROTOC_C"], [cp_protobuf_c_happy=no])
    AS_IF([test "x$cp_protobuf_c_happy" != xyes],
          [AS_IF([test "x$cp_with_protobuf_c" != xguess],
                 [AC_MSG_ERROR([--with-protobuf-c was given but protobuf-c (protobuf-c/protobuf-c.h, -lprotobuf-c and protoc-c) was not found])],
                 [AC_MSG_NOTICE([protobuf-c (libprotobuf-c-dev and protobuf-c-compiler) not found: import --trace chakra-et will be refused])])
           PROTOBUF_C_CFLAGS= PROTOBUF_C_LIBS=])
  ])
  AS_IF([test "x$cp_protobuf_c_happy" = xyes],
        [AC_DEFINE([HAVE_PROTOBUF_C], [1], [protobuf-c found: import reads Chakra .et traces])])
  AM_CONDITIONAL([CP_HAVE_PROTOBUF_C], [test "x$cp_protobuf_c_happy" = xyes])
  AC_SUBST([PROTOBUF_C_CFLAGS])
  AC_SUBST([PROTOBUF_C_LIBS])
])
