dnl NCCL backend: needs the CUDA runtime (headers + -lcudart; no driver at
dnl build time, and never -lcuda) and NCCL (nccl.h + -lnccl).  Their headers
dnl come in with -isystem: nccl.h is not -Wstrict-prototypes clean.
dnl   --with-cuda[=DIR]  default: /usr/local/cuda (CP_CUDA_RUNTIME, config/cp_cuda.m4)
dnl   --with-nccl[=DIR]  default: the CUDA directory, then the default paths
dnl Detects the optional entry points of the linked NCCL (ncclAlltoAll,
dnl ncclGather, ncclScatter, ncclCommRegister, ncclGroupSimulateEnd, ncclMemAlloc,
dnl ncclCommSplit) and
dnl defines HAVE_<NAME> for them.  Builds the plugin only when both are found;
dnl a hard error only when --with-cuda or --with-nccl was given explicitly.
AC_DEFUN([CP_NCCL_CONFIGURE], [
  CP_WITH_DEP([cuda], [CUDA runtime for the NCCL backend])
  CP_WITH_DEP([nccl], [NCCL backend (CUDA device buffers)])
  NCCL_CPPFLAGS= NCCL_LIBS=
  cp_cuda_happy=no
  AS_IF([test "x$cp_with_cuda" != xno && test "x$cp_with_nccl" != xno], [
    CP_CUDA_RUNTIME([$cp_with_cuda], [NCCL backend])
    cp_cuda_happy=$cp_cuda_rt_ok
    NCCL_CPPFLAGS=$CP_CUDA_RT_CPPFLAGS
    NCCL_LIBS=$CP_CUDA_RT_LDFLAGS
    AS_CASE([$cp_with_nccl],
      [guess|yes], [],
      [NCCL_CPPFLAGS="-isystem $cp_with_nccl/include $NCCL_CPPFLAGS"
       for cp_d in "$cp_with_nccl/lib64" "$cp_with_nccl/lib"; do
         AS_IF([test -d "$cp_d"], [NCCL_LIBS="-L$cp_d -Wl,-rpath,$cp_d $NCCL_LIBS"; break])
       done])
    CPPFLAGS="$CPPFLAGS $NCCL_CPPFLAGS"
    LIBS="$NCCL_LIBS -lcudart $LIBS"
    AS_IF([test "x$cp_cuda_happy" != xyes],
          [CP_DEP_FAIL([cuda], [no usable CUDA runtime (cuda_runtime.h and -lcudart) was found])
           CP_DEP_FAIL([nccl], [the CUDA runtime it needs (cuda_runtime.h and -lcudart) was not found (--with-cuda=DIR)])],
          [
      LIBS="-lnccl $LIBS"
      dnl an explicit --with-nccl=DIR must hold NCCL itself, not find another one
      AS_CASE([$cp_with_nccl], [guess|yes], [cp_nccl_dir_ok=yes],
        [AS_IF([test -f "$cp_with_nccl/include/nccl.h"], [cp_nccl_dir_ok=yes], [cp_nccl_dir_ok=no])])
      AS_IF([test "x$cp_nccl_dir_ok" = xyes], [AC_CHECK_HEADER([nccl.h], [
        AC_MSG_CHECKING([whether NCCL programs link (-lnccl)])
        AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]],
                         [[int v = 0; ncclConfig_t c = NCCL_CONFIG_INITIALIZER; (void)c;
                           return (int)ncclGetVersion(&v);]])],
          [AC_MSG_RESULT([yes]); cp_nccl_happy=yes],
          [AC_MSG_RESULT([no])])])])
      AS_IF([test "x$cp_nccl_happy" != xyes],
            [CP_DEP_FAIL([nccl], [no usable NCCL >= 2.14 (include/nccl.h with ncclConfig_t and -lnccl) was found])])
      AS_IF([test "x$cp_nccl_happy" = xyes], [
        AC_CHECK_FUNCS([ncclAlltoAll ncclGather ncclScatter ncclCommRegister ncclGroupSimulateEnd ncclMemAlloc ncclCommSplit])
        AC_CHECK_HEADER([nvtx3/nvToolsExt.h], [], [
          cp_nccl_happy=no
          CP_DEP_FAIL([nccl], [the CUDA toolkit has no NVTX3 headers (nvtx3/nvToolsExt.h)])])
        NCCL_LIBS="$NCCL_LIBS -lnccl -lcudart -ldl"])
    ])
  ], [
    AS_IF([test "x$cp_with_nccl" = xno], [cp_nccl_note=" (--without-nccl)"],
          [cp_nccl_note=" (--without-cuda)"])
  ])
  AC_SUBST([NCCL_CPPFLAGS])
  AC_SUBST([NCCL_LIBS])
])
