#!/bin/sh
# The module files: `make install prefix=DIR` into a temporary prefix, then each file loaded by
# the real tool in a clean environment - the Lua one by Lmod, the Tcl one by Environment Modules
# (and by Lmod, which reads Tcl too) - and `collprof --version`, `man -w collprof` and
# `python3 -c 'import collprof'` run from what it set; then unloaded.
# Debian's lmod and environment-modules conflict, so one of them can be a copy unpacked with
# `dpkg-deb -x` (contrib/quickstart.sh test puts environment-modules in /opt/environment-modules;
# COLLPROF_ENVMODULES_ROOT names another). A missing one skips here and fails under CI.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
PY=/usr/bin/python3
BUILD=$(dirname "$COLLPROF_BIN")

LMOD=/usr/share/lmod/lmod/libexec/lmod
[ -x "$LMOD" ] || need_tool "Lmod not found at $LMOD (lmod)"
MODULECMD=
for root in "${COLLPROF_ENVMODULES_ROOT:-}" "" /opt/environment-modules; do
    for f in "$root/usr/lib/x86_64-linux-gnu/modulecmd.tcl" "$root/usr/lib/modulecmd.tcl"; do
        [ -f "$f" ] && MODULECMD=$f && break 2
    done
done
[ -n "$MODULECMD" ] || need_tool "Environment Modules' modulecmd.tcl not found (environment-modules)"
command -v tclsh >/dev/null 2>&1 || need_tool "tclsh not found (tcl)"
command -v man >/dev/null 2>&1 || need_tool "man not found (man-db)"
[ -x "$PY" ] || need_tool "$PY not found"

# ---- install into a prefix of our own --------------------------------------
prefix="$WORK/prefix"
# a make of its own, not a part of make check's (no jobserver, no -k or -j of the caller)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u DESTDIR make -C "$BUILD" install prefix="$prefix" \
    >"$WORK/install.out" 2>&1
irc=$?
[ "$irc" -eq 0 ] || tail -n 15 "$WORK/install.out" | sed 's/^/# /'
ver=$("$COLLPROF_BIN" --version 2>/dev/null | sed -n "s/^collprof \([^ ]*\).*/\1/p")
lua="$prefix/share/lmod/modulefiles/collprof/$ver.lua"
tcl="$prefix/share/modules/modulefiles/collprof/$ver"
[ "$irc" -eq 0 ] && [ -x "$prefix/bin/collprof" ] && [ -f "$lua" ] && [ -f "$tcl" ] &&
    [ -f "$prefix/share/collprof/python/collprof/__init__.py" ]
ok $? "make install prefix=DIR installs the program, the Python package and both module files"
grep -q "setenv(\"COLLPROF_ROOT\", \"$prefix\")" "$lua" 2>/dev/null &&
    grep -q "prepend_path(\"PYTHONPATH\", \"$prefix/share/collprof/python\")" "$lua" &&
    grep -q "^setenv COLLPROF_ROOT {$prefix}\$" "$tcl" 2>/dev/null &&
    grep -q "^prepend-path MANPATH {$prefix/share/man}\$" "$tcl" && ! grep -q '@[A-Z]*@' "$lua" "$tcl"
ok $? "the module files name the prefix they were installed with"

# in a clean environment: load with the tool, run the three commands, unload
# try MODULEPATH COMMAND...   (COMMAND prints shell code for "sh load|unload collprof")
try() {
    mpath=$1
    shift
    env -i HOME="$WORK" PATH=/usr/bin:/bin LANG=C.UTF-8 MODULEPATH="$mpath" \
        PYTHONDONTWRITEBYTECODE=1 sh -s -- "$@" >"$WORK/try.out" 2>"$WORK/try.err" <<'S'
set -e
eval "$("$@" sh load collprof)"
echo "root=$COLLPROF_ROOT"
echo "bin=$(command -v collprof)"
collprof --version | sed 's/^/version=/'
echo "man=$(man -w collprof)"
python3 -c 'import collprof; print("python=" + collprof.__file__)'
eval "$("$@" sh unload collprof)"
echo "after=${COLLPROF_ROOT:-unset} $PATH"
S
}
check() { # NAME: what `try` printed
    sed 's/^/# /' "$WORK/try.err" | tail -n 5
    grep -qx "root=$prefix" "$WORK/try.out" && grep -qx "bin=$prefix/bin/collprof" "$WORK/try.out"
    ok $? "$1: COLLPROF_ROOT and PATH"
    grep -q "^version=.*$ver" "$WORK/try.out"
    ok $? "$1: collprof --version runs ($ver)"
    grep -qx "man=$prefix/share/man/man1/collprof.1" "$WORK/try.out"
    ok $? "$1: man -w collprof finds the installed page"
    grep -qx "python=$prefix/share/collprof/python/collprof/__init__.py" "$WORK/try.out"
    ok $? "$1: python3 -c 'import collprof' imports the installed package"
    grep -qx "after=unset /usr/bin:/bin" "$WORK/try.out"
    ok $? "$1: unload restores the environment"
}
try "$prefix/share/lmod/modulefiles" "$LMOD"
check "Lmod, the Lua module file"
try "$prefix/share/modules/modulefiles" tclsh "$MODULECMD"
check "Environment Modules, the Tcl module file"
try "$prefix/share/modules/modulefiles" "$LMOD"
check "Lmod, the Tcl module file"

# uninstall leaves no file behind (Python's byte code included)
env -u PYTHONDONTWRITEBYTECODE PYTHONPATH="$prefix/share/collprof/python" "$PY" -c 'import collprof.cli' \
    2>/dev/null
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u DESTDIR make -C "$BUILD" uninstall prefix="$prefix" \
    >"$WORK/uninstall.out" 2>&1
urc=$?
left=$(find "$prefix" -type f 2>/dev/null | sed "s|^$prefix/||" | head -n 5 | tr '\n' ' ')
[ "$urc" -eq 0 ] && [ -z "$left" ]
ok $? "make uninstall prefix=DIR removes every file (exit $urc; left: ${left:-none})"
done_testing
