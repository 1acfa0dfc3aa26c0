dnl MPI backend: needs an MPI C library (Open MPI tested).  Found through
dnl --with-mpi=DIR, pkg-config ompi-c, or mpicc --showme.
AC_DEFUN([CP_MPI_CONFIGURE], [
  CP_WITH_DEP([mpi], [MPI backend (Open MPI)])
  MPI_CPPFLAGS= MPI_LIBS=
  AS_IF([test "x$cp_with_mpi" != xno], [
    AS_CASE([$cp_with_mpi],
      [guess|yes], [
        PKG_CHECK_MODULES([OMPI], [ompi-c], [MPI_CPPFLAGS=$OMPI_CFLAGS MPI_LIBS=$OMPI_LIBS], [
          AC_PATH_PROG([CP_MPICC], [mpicc])
          AS_IF([test -n "$CP_MPICC"], [
            MPI_CPPFLAGS=`$CP_MPICC --showme:compile 2>/dev/null`
            MPI_LIBS=`$CP_MPICC --showme:link 2>/dev/null`])])],
      [MPI_CPPFLAGS="-I$cp_with_mpi/include" MPI_LIBS="-L$cp_with_mpi/lib -Wl,-rpath,$cp_with_mpi/lib -lmpi"])
    CPPFLAGS="$CPPFLAGS $MPI_CPPFLAGS"
    LIBS="$MPI_LIBS $LIBS"
    AC_CHECK_HEADER([mpi.h], [
      AC_MSG_CHECKING([whether MPI programs link])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
                       [[int v, s; MPI_Get_version(&v, &s); return MPI_Init(0, 0);]])],
        [AC_MSG_RESULT([yes]); cp_mpi_happy=yes],
        [AC_MSG_RESULT([no])])])
    AS_IF([test "x$cp_mpi_happy" != xyes], [CP_DEP_FAIL([mpi], [no usable MPI (mpi.h and -lmpi) was found])])
  ])
  AC_SUBST([MPI_CPPFLAGS])
  AC_SUBST([MPI_LIBS])
])
