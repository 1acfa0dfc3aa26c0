dnl CP_CUDA_RUNTIME(DIR, FOR-WHAT)
dnl   The one check for the CUDA runtime, shared by the plugins that use it
dnl   (nccl: --with-cuda; ofi device memory: --with-ofi-cuda).  DIR is the
dnl   CUDA prefix, or guess/yes/check for /usr/local/cuda.  Links a program
dnl   that calls cudaGetDeviceCount against cuda_runtime_api.h and -lcudart
dnl   (never -lcuda: the driver may be absent at build time).  Not cached, so
dnl   each caller may look in its own DIR.  Sets:
dnl     cp_cuda_rt_ok        yes or no
dnl     cp_cuda_rt_dir       the prefix looked in
dnl     CP_CUDA_RT_CPPFLAGS  -isystem DIR/include (CUDA's headers are not -Wall clean)
dnl     CP_CUDA_RT_LDFLAGS   -L and -rpath for DIR/lib64, else DIR/lib (add -lcudart)
dnl   CPPFLAGS and LIBS are left as they were.
AC_DEFUN([CP_CUDA_RUNTIME], [
  AS_CASE([$1], [guess|yes|check|""], [cp_cuda_rt_dir=/usr/local/cuda], [cp_cuda_rt_dir=$1])
  CP_CUDA_RT_CPPFLAGS= CP_CUDA_RT_LDFLAGS=
  AS_IF([test -d "$cp_cuda_rt_dir/include"],
        [CP_CUDA_RT_CPPFLAGS="-isystem $cp_cuda_rt_dir/include"])
  cp_cuda_rt_libdir=
  for cp_d in "$cp_cuda_rt_dir/lib64" "$cp_cuda_rt_dir/lib"; do
    AS_IF([test -z "$cp_cuda_rt_libdir" && test -d "$cp_d"], [cp_cuda_rt_libdir=$cp_d])
  done
  AS_IF([test -n "$cp_cuda_rt_libdir"],
        [CP_CUDA_RT_LDFLAGS="-L$cp_cuda_rt_libdir -Wl,-rpath,$cp_cuda_rt_libdir"])
  cp_cuda_rt_save_CPPFLAGS=$CPPFLAGS cp_cuda_rt_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $CP_CUDA_RT_CPPFLAGS"
  LIBS="$CP_CUDA_RT_LDFLAGS -lcudart $LIBS"
  AC_MSG_CHECKING([for the CUDA runtime in $cp_cuda_rt_dir ($2)])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]],
                   [[int n = 0; return (int)cudaGetDeviceCount(&n) + n;]])],
    [cp_cuda_rt_ok=yes], [cp_cuda_rt_ok=no])
  AC_MSG_RESULT([$cp_cuda_rt_ok])
  CPPFLAGS=$cp_cuda_rt_save_CPPFLAGS LIBS=$cp_cuda_rt_save_LIBS
])
