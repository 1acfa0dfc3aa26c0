#!/bin/sh
# The code's one-way flow (docs/architecture.md, "Layers"): contrib/layers.py finds no circle
# of files and no call from a lower layer to a higher one in this build's objects; and it
# finds both, and says so, in a tree planted with them.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
command -v python3 >/dev/null 2>&1 || need_tool "python3"
command -v nm >/dev/null 2>&1 || need_tool "nm (binutils)"
layers="$COLLPROF_SRCDIR/contrib/layers.py"
build=$(dirname "$COLLPROF_BIN")

rc=0
python3 "$layers" "$build" "$COLLPROF_SRCDIR" >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 0 ] && grep -q '^[0-9]* files, [0-9]* calls between files, 0 faults$' "$WORK/out" &&
    [ ! -s "$WORK/err" ]
ok $? "src/ and plugins/: no circle, no call from a lower layer to a higher one"
sed 's/^/# /' "$WORK/out" "$WORK/err" | head -n 40

# planted: src/base/a.c calls src/colls/b.c (a layer up) and b.c calls a.c (a circle)
mkdir -p "$WORK/t/src/base" "$WORK/t/src/colls"
printf 'int cp_b(void);\nint cp_a(void) { return cp_b(); }\n' >"$WORK/t/src/base/a.c"
printf 'int cp_a(void);\nint cp_b(void) { return cp_a() + 1; }\n' >"$WORK/t/src/colls/b.c"
cc -c "$WORK/t/src/base/a.c" -o "$WORK/t/src/base/a.o" &&
    cc -c "$WORK/t/src/colls/b.c" -o "$WORK/t/src/colls/b.o"
ok $? "the planted tree compiles"
rc=0
python3 "$layers" "$WORK/t" "$WORK/t" >"$WORK/out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] &&
    grep -qx 'circle: src/base/a -> src/colls/b, src/colls/b -> src/base/a' "$WORK/out" &&
    grep -qx 'layers: src/base/a -> src/colls/b (src/base may not call src/colls)' "$WORK/out" &&
    ! grep -q 'src/colls/b -> src/base/a (' "$WORK/out"
ok $? "a planted circle and upward call: both named, exit 1"
sed 's/^/# /' "$WORK/out"

# a build tree with no objects: a one-line error, exit 2
mkdir -p "$WORK/empty"
rc=0
python3 "$layers" "$WORK/empty" "$COLLPROF_SRCDIR" >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q 'error: no object file' "$WORK/err"
ok $? "no objects: one line, exit 2"

done_testing
