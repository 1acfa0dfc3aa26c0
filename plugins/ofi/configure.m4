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
  AS_IF([test "x$cp_ofi_happy" = xyes], [CP_OFI_CUDA_CONFIGURE])
])

dnl Device memory (FI_HMEM) for the ofi backend through the CUDA runtime.
dnl Its own option and variables (--with-ofi-cuda, CP_OFI_CUDA_*); the check
dnl itself is the one the nccl plugin uses too (CP_CUDA_RUNTIME).  Default: use
dnl /usr/local/cuda when cuda_runtime_api.h and -lcudart are there.  Only the
dnl runtime API is linked (never -lcuda: the driver may be absent; the
dnl plugin dlopens libcuda.so.1 for the dma-buf export at run time).
AC_DEFUN([CP_OFI_CUDA_CONFIGURE], [
  AC_ARG_WITH([ofi-cuda],
    [AS_HELP_STRING([--with-ofi-cuda@<:@=DIR@:>@],
      [device memory (FI_HMEM) for the ofi backend via the CUDA runtime (default: use
       /usr/local/cuda when found; DIR = CUDA prefix)])],
    [cp_ofi_cuda=$withval], [cp_ofi_cuda=check])
  CP_OFI_CUDA_CPPFLAGS= CP_OFI_CUDA_LIBS=
  AS_IF([test "x$cp_ofi_cuda" != xno], [
    CP_CUDA_RUNTIME([$cp_ofi_cuda], [ofi device memory])
    AS_IF([test "x$cp_cuda_rt_ok" = xyes], [
      CP_OFI_CUDA_CPPFLAGS="-DCP_OFI_HAVE_CUDA=1 $CP_CUDA_RT_CPPFLAGS"
      CP_OFI_CUDA_LIBS="$CP_CUDA_RT_LDFLAGS -lcudart -ldl"
      cp_ofi_note=" (device memory through CUDA in $cp_cuda_rt_dir)"
    ], [test "x$cp_ofi_cuda" != xcheck], [
      AC_MSG_ERROR([--with-ofi-cuda was given but no CUDA runtime (cuda_runtime_api.h, -lcudart) was found in $cp_cuda_rt_dir])
    ])
  ])
  AC_SUBST([CP_OFI_CUDA_CPPFLAGS])
  AC_SUBST([CP_OFI_CUDA_LIBS])
])
