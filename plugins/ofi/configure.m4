dnl libfabric (OFI) backend: needs libfabric >= 1.10 headers and library.
dnl Found through --with-ofi=DIR or pkg-config libfabric.
AC_DEFUN([CP_OFI_CONFIGURE], [
  CP_WITH_DEP([ofi], [libfabric (OFI) backend])
  OFI_CPPFLAGS= OFI_LIBS=
  AS_IF([test "x$cp_with_ofi" != xno], [
    AS_CASE([$cp_with_ofi],
      [guess|yes], [
        PKG_CHECK_MODULES([LIBFABRIC], [libfabric >= 1.10],
          [OFI_CPPFLAGS=$LIBFABRIC_CFLAGS OFI_LIBS=$LIBFABRIC_LIBS],
          [OFI_LIBS=-lfabric])],
      [OFI_CPPFLAGS="-I$cp_with_ofi/include"
       OFI_LIBS="-L$cp_with_ofi/lib -Wl,-rpath,$cp_with_ofi/lib -lfabric"])
    CPPFLAGS="$CPPFLAGS $OFI_CPPFLAGS"
    LIBS="$OFI_LIBS $LIBS"
    AC_CHECK_HEADER([rdma/fi_rma.h], [
      AC_MSG_CHECKING([whether libfabric programs link])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <rdma/fabric.h>
#include <rdma/fi_rma.h>]],
                       [[return (int)fi_version() + (int)sizeof(struct fi_cq_data_entry);]])],
        [AC_MSG_RESULT([yes]); cp_ofi_happy=yes],
        [AC_MSG_RESULT([no])])])
    AS_IF([test "x$cp_ofi_happy" != xyes],
          [CP_DEP_FAIL([ofi], [no usable libfabric (rdma/fi_rma.h and -lfabric) was found])])
  ])
  AC_SUBST([OFI_CPPFLAGS])
  AC_SUBST([OFI_LIBS])
])
