#!/bin/sh
# collprof-report import: the fixtures of tests/data/import (nccl-tests JSON v3
# and text tables, OSU 7.x text with and without -f and -z, written from the
# documented formats) become collprof result files marked as imported, which
# summary, export, plot and best read; and the goal of issue 30: an nccl-tests
# JSON and an OSU output of the same op and sizes compare against a real
# collprof run with compare and best, with no conversion by hand.  The hostile
# versions are rows of tests/data/badinput.tsv.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
[ -x "$REPORT" ] || skip_all "collprof-report was not built (it needs HDF5)"
D=$COLLPROF_SRCDIR/tests/data/import
cd "$WORK" || exit 1

rc=0
"$REPORT" import --help >"$WORK/h" 2>&1 || rc=$?
[ "$rc" -eq 0 ] && grep -q '^Usage: collprof-report import' "$WORK/h" &&
    "$REPORT" --help | grep -q '^  import '
ok $? "import --help, and the command in collprof-report --help (exit $rc)"

# every fixture imports, and every command reads the result
for f in nccl-allreduce.json nccl-allreduce.txt nccl-allreduce-perf-iter.txt osu-allreduce.txt \
    osu-allreduce-f.txt osu-allreduce-z.txt osu-allreduce-fz.txt; do
    out=$WORK/$(echo "$f" | tr . -).h5
    # shellcheck disable=SC2046 # OSU does not say how many ranks ran
    "$REPORT" import $(case $f in osu*) echo --ranks 2 ;; esac) "$D/$f" -o "$out" >"$WORK/imp.out" 2>&1
    ok $? "import $f"
    bad=
    for c in summary "export --csv" "export --json" best; do
        # shellcheck disable=SC2086 # the command's words
        "$REPORT" $c "$out" >"$WORK/c.out" 2>"$WORK/c.err" || bad="$bad $c"
        [ -s "$WORK/c.err" ] && bad="$bad $c(stderr)"
    done
    "$REPORT" plot "$out" --out "$WORK/p.html" >/dev/null 2>&1 || bad="$bad plot"
    rm -f "$WORK/p.html"
    [ -z "$bad" ]
    ok $? "summary, export, best and plot read the import of $f${bad:+ (failed:$bad)}"
done

# what the file says: marked as imported, the source's figures in their columns
"$REPORT" summary "$WORK/nccl-allreduce-txt.h5" >"$WORK/s.txt"
grep -q '^imported:   from nccl-tests 2.19.6 (nccl-tests-text, nccl-allreduce.txt)' "$WORK/s.txt"
ok $? "summary says the file was imported, from which tool, version and file"
grep -q 'world:      2 ranks on 1 node: gpu-a01' "$WORK/s.txt"
ok $? "the ranks and hosts of nccl-tests' device lines"
"$REPORT" export --csv "$WORK/nccl-allreduce-json.h5" >"$WORK/n.csv"
[ "$(grep -c ',allreduce,float32,sum,' "$WORK/n.csv")" -eq 6 ]
ok $? "JSON: three sizes, out-of-place and in-place: six allreduce float32 cells"
"$REPORT" export --json "$WORK/osu-allreduce-fz-txt.h5" >"$WORK/o.json"
grep -q '"time_p99_us": *27.41' "$WORK/o.json" && grep -q '"time_min_us": *20.11' "$WORK/o.json" &&
    grep -q '"iterations": *1000' "$WORK/o.json"
ok $? "OSU -f -z: Min, Iterations and P99 in their columns"
"$REPORT" export --json "$WORK/nccl-allreduce-perf-iter-txt.h5" >"$WORK/i.json"
grep -q '"time_max_us": *25.1' "$WORK/i.json" && grep -q '"check": *"none"' "$WORK/i.json"
ok $? "nccl-tests -I: i_max in time_max_us; #wrong N/A: check none"

# OSU without --ranks: no busBW, no ranks, and the readers take that
"$REPORT" import "$D/osu-allreduce.txt" -o "$WORK/osu-noranks.h5" >/dev/null &&
    "$REPORT" summary "$WORK/osu-noranks.h5" >"$WORK/s.txt" &&
    grep -q '^world:      not recorded by osu' "$WORK/s.txt" &&
    "$REPORT" export --csv "$WORK/osu-noranks.h5" >/dev/null
ok $? "OSU without --ranks: summary and export read a file without ranks or iterations"

rc=0
"$REPORT" best "$WORK/osu-noranks.h5" "$WORK/nccl-allreduce-json.h5" >/dev/null 2>"$WORK/e" || rc=$?
[ "$rc" -eq 2 ] && grep -q 'import it with --ranks N' "$WORK/e"
ok $? "best: an OSU import without --ranks is told to have them (exit $rc)"

# Windows line ends (a log copied through a Windows share)
sed 's/$/\r/' "$D/osu-allreduce-fz.txt" >"$WORK/crlf.txt"
"$REPORT" import --ranks 2 "$WORK/crlf.txt" -o "$WORK/crlf.h5" >/dev/null &&
    "$REPORT" export --json "$WORK/crlf.h5" | grep -q '"time_p99_us": *27.41'
ok $? "OSU with CRLF line ends reads as with LF"

# an import never replaces a file
"$REPORT" import "$D/osu-allreduce.txt" -o "$WORK/osu-allreduce-txt.h5" >/dev/null 2>"$WORK/e"
[ $? -eq 2 ] && grep -q 'exists' "$WORK/e"
ok $? "import refuses an output that exists"

# ---- the goal: nccl-tests and OSU against a real collprof run ----------------------------
rc=0
mkdir -p "$WORK/run"
(cd "$WORK/run" && timeout -k 5 60 "$COLLPROF_BIN" --np 2 --backends self --ops allreduce \
    --counts 1K,4K -n 20 -w 2 </dev/null >"$WORK/run.out" 2>&1) || rc=$?
# shellcheck disable=SC2012 # our own file names
run=$(ls "$WORK"/run/collprof_*.h5 2>/dev/null | head -n 1)
[ -n "$run" ]
ok $? "a collprof run of allreduce at 1K and 4K floats (exit $rc)"
# the same backend name, so that compare matches the cells
"$REPORT" import --backend self "$D/nccl-allreduce.json" -o "$WORK/nccl-self.h5" >/dev/null &&
    "$REPORT" import --backend self --ranks 2 "$D/osu-allreduce-fz.txt" -o "$WORK/osu-self.h5" >/dev/null
ok $? "nccl-tests JSON and OSU -f -z imported as backend self"
for src in nccl osu; do
    rc=0
    "$REPORT" compare "$WORK/$src-self.h5" "$run" >"$WORK/cmp.out" 2>"$WORK/cmp.err" || rc=$?
    [ "$rc" -le 1 ] && [ ! -s "$WORK/cmp.err" ] &&
        grep -q '^# 2 cells compared: .* (2 by the threshold alone: no raw samples)' "$WORK/cmp.out"
    ok $? "compare $src (imported) against the run: both sizes compared (exit $rc)"
done
# best: OSU's method (a barrier between iterations, host buffers) is the run's, so the OSU
# cells (backend mpi) meet the run's; nccl-tests' (device buffers, one batch of -n operations)
# stand alone, as a collprof run with other buffers or --sync would
rc=0
"$REPORT" best "$WORK/nccl-allreduce-json.h5" "$WORK/osu-allreduce-fz-txt.h5" "$run" \
    >"$WORK/best.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^  AllReduce  float32 .* mpi vs self ' "$WORK/best.out")" -eq 2 ] &&
    grep -q '^  AllReduce (device) .* nccl/default .* only candidate' "$WORK/best.out"
ok $? "best: backend vs backend of OSU (mpi) and the run (self) at both sizes (exit $rc)"
done_testing
