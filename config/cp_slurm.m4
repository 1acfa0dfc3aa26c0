dnl CP_SLURM_CONFIGURE: optional libslurm for the Slurm job facts in result files
dnl (src/slurm/slurm_meta.c).  --with-slurm[=DIR|yes|no]; default: use it when
dnl <slurm/slurm.h> and -lslurm (no .pc file) are found.  Defines HAVE_LIBSLURM,
dnl substitutes SLURM_CFLAGS and SLURM_LIBS, sets cp_slurm_happy=yes|no.
dnl Does not touch LIBS: only libcpboot links -lslurm.
AC_DEFUN([CP_SLURM_CONFIGURE], [
  CP_WITH_DEP([slurm], [libslurm for Slurm job facts in result files])
  cp_slurm_happy=no
  SLURM_CFLAGS= SLURM_LIBS=
  AS_IF([test "x$cp_with_slurm" != xno], [
    AS_CASE([$cp_with_slurm],
      [guess|yes], [SLURM_LIBS=-lslurm],
      [SLURM_CFLAGS="-I$cp_with_slurm/include"
       SLURM_LIBS="-L$cp_with_slurm/lib -Wl,-rpath,$cp_with_slurm/lib -lslurm"])
    cp_save_CPPFLAGS=$CPPFLAGS cp_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $SLURM_CFLAGS" LIBS="$SLURM_LIBS $LIBS"
    AC_CHECK_HEADER([slurm/slurm.h],
      [AC_MSG_CHECKING([for slurm_load_job in -lslurm])
       AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <slurm/slurm.h>]],
                        [[job_info_msg_t *m = 0; slurm_init(0);
                          return slurm_load_job(&m, 1, SHOW_DETAIL);]])],
         [cp_slurm_happy=yes], [])
       AC_MSG_RESULT([$cp_slurm_happy])
       dnl the tree topology's records as Slurm 22.05 gives them (src/slurm/slurm_topo.c);
       dnl later Slurms changed slurm_load_topo: without it every pair's path class is "any"
       AC_MSG_CHECKING([for slurm_load_topo with topo_info_t records])
       AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <slurm/slurm.h>]],
                        [[topo_info_response_msg_t *m = 0;
                          int rc = slurm_load_topo(&m);
                          return rc + (m ? (int)m->topo_array[0].level : 0);]])],
         [AC_DEFINE([HAVE_SLURM_LOAD_TOPO], [1],
                    [libslurm gives the tree topology's switches (slurm_load_topo, topo_info_t)])
          AC_MSG_RESULT([yes])],
         [AC_MSG_RESULT([no])])])
    CPPFLAGS=$cp_save_CPPFLAGS LIBS=$cp_save_LIBS
    AS_IF([test "x$cp_slurm_happy" != xyes],
          [CP_DEP_FAIL([slurm], [no usable libslurm (slurm/slurm.h and -lslurm) was found: install libslurm-dev])])
  ])
  AS_IF([test "x$cp_slurm_happy" = xyes],
        [AC_DEFINE([HAVE_LIBSLURM], [1], [libslurm for Slurm job facts (slurm_load_job)])],
        [SLURM_CFLAGS= SLURM_LIBS=])
  AC_SUBST([SLURM_CFLAGS])
  AC_SUBST([SLURM_LIBS])
])
