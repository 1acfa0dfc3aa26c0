#!/bin/sh
# The Python loader and example in contrib/python/ on a real run: the loader
# reads the file, with and without pandas; its columns are those of
# include/collprof/schema.h; its raw samples agree with the row statistics;
# plot_busbw.py prints its table and plots (or says why it cannot). collprof_h5 is now a
# module on top of the collprof package (tests/integration/python_pkg.sh tests the package).
# A missing Python or h5py skips here and fails under CI (COLLPROF_CI or CI set).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
PY=/usr/bin/python3
CONTRIB="$COLLPROF_SRCDIR/contrib/python"
export PYTHONDONTWRITEBYTECODE=1
[ -x "$PY" ] || need_tool "$PY not found"
"$PY" -c 'import h5py, numpy' 2>/dev/null || need_tool "h5py or numpy missing for $PY (python3-h5py)"
[ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ] || skip_all "the MPI backend was not built"

d="$WORK/run"
mkdir -p "$d"
cp_run --np 3 --ops allreduce,alltoall,alltoallv,barrier --counts 4K,64K -n 5 -w 1 \
    --variants default,ring --imbalance uniform,moe:1:3 --output-dir "$d"
h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
s=$(summary_of "$d")
[ "$rc" -eq 0 ] && [ -z "$h5" ] && [ -n "$s" ] && skip_all "collprof was built without HDF5"
[ "$rc" -eq 0 ] && [ -n "$h5" ] && [ -n "$s" ]
ok $? "a small run writes a summary and an .h5 file (exit $rc)"
# every cell, whatever its status: "cells: 15 ok, 0 wrong, 0 error, ..."
cells=$(awk '/^cells:/ { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) n += $i
                         print n; exit }' "$s")

# prints "ok|what" or "fail|what|why" per check; argv: pandas|nopandas H5 SCHEMA_H CELLS
cat >"$WORK/check.py" <<'P'
import os, re, sys

mode, path, header, cells = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if mode == "nopandas":
    sys.modules["pandas"] = None  # import pandas now fails
sys.path.insert(0, os.environ["CONTRIB"])
import numpy as np
import h5py
import collprof_h5 as c


def check(what, cond, why=""):
    print("ok|%s" % what if cond else "fail|%s|%s" % (what, why))


run = c.load(path)
t = run.results
tag = "pandas" if c.HAVE_PANDAS else "numpy"
check("%s: loader reads the file, status complete" % tag,
      run.attrs["schema"] == "collprof-results" and run.attrs["status"] == "complete",
      run.attrs)
if mode == "nopandas":
    check("numpy: tables are structured arrays with str columns",
          isinstance(t, np.ndarray) and t.dtype["op"].kind == "U"
          and isinstance(run.ranks["hostname"][0], str), t.dtype)
results = re.search(r"^#define COLLPROF_RESULT_COLUMNS.*?\n\n", open(header).read(), re.M | re.S)
names = re.findall(r"^\s*X\((\w+),", results.group(0) if results else "", re.M)
cols = list(t.dtype.names if isinstance(t, np.ndarray) else t.columns)
check("%s: columns are those of schema.h" % tag, names and cols == names,
      "%s != %s" % (cols, names))
check("%s: %d rows, one per cell of the summary" % (tag, cells),
      len(t) == cells, len(t))
rows = c.records(t)
world = run.attrs["world_size"]
bad_stat, bad_mean, bad_traffic, measured = [], [], [], 0
for r in rows:
    if r["status"] not in ("ok", "wrong"):
        continue
    measured += 1
    s = run.samples(r["cell"])
    if s.shape != (r["iterations"], world):
        bad_stat.append((r["cell"], s.shape))
    m = run.per_iteration_max(r)
    if abs(m.mean() - r["time_mean_us"]) > 1e-6 * r["time_mean_us"]:
        bad_stat.append((r["cell"], m.mean(), r["time_mean_us"]))
    if not np.allclose(run.rank_means(r), s.mean(axis=0), rtol=1e-9, atol=0):
        bad_mean.append(r["cell"])
    tr = run.traffic(r)
    if r["op"] == "alltoallv":
        if (tr is None or tr[0].shape != (world,) or tr[1].shape != (world,)
                or tr[0].sum() != tr[1].sum() or tr[0].sum() == 0):
            bad_traffic.append(r["cell"])
    elif tr is not None:
        bad_traffic.append(r["cell"])
check("%s: samples are [iterations x ranks]; per_iteration_max mean == time_mean_us"
      % tag, measured > 0 and not bad_stat, bad_stat)
check("%s: rank_means == samples.mean(axis=0)" % tag, not bad_mean, bad_mean)
check("%s: alltoallv cells (only) have send_bytes/recv_bytes" % tag,
      not bad_traffic and any(r["op"] == "alltoallv" for r in rows), bad_traffic)
both = c.load_dir(os.path.dirname(path))
files = set(both["file"])
check("%s: load_dir adds a file column" % tag,
      len(both) == cells and files == {path}, files)

# files the loader must refuse
work = os.path.dirname(os.path.dirname(path))
for name, schema, major in (("other", "something-else", 1), ("newer", "collprof-results", 2)):
    bad = os.path.join(work, "%s-%s.h5" % (name, mode))
    with h5py.File(bad, "w") as f:
        f.attrs["schema"] = schema
        f.attrs["schema_version"] = "%d.0" % major
        f.attrs["schema_version_major"] = major
    try:
        c.load(bad)
        check("%s: refuses a file of schema %s %d" % (tag, schema, major), False, "loaded")
    except c.SchemaError as e:
        check("%s: refuses a file of schema %s %d" % (tag, schema, major),
              schema in str(e), e)
P

for mode in pandas nopandas; do
    CONTRIB="$CONTRIB" "$PY" "$WORK/check.py" "$mode" "$h5" \
        "$COLLPROF_SRCDIR/include/collprof/schema.h" "${cells:-0}" >"$WORK/check.out" 2>&1
    prc=$?
    while IFS='|' read -r res what why; do
        case $res in
        ok) ok 0 "$what" ;;
        fail) ok 1 "$what (got: $why)" ;;
        *) echo "# $res${what:+|$what}${why:+|$why}" ;;
        esac
    done <"$WORK/check.out"
    ok $prc "loader checks ($mode) ran to the end"
done

# the example: a table of every measured cell, then the plot or a message
measured=$(grep -c ' ms | AlgBW' "$s")
"$PY" "$CONTRIB/plot_busbw.py" "$d" --out "$WORK/busbw.png" >"$WORK/plot.out" 2>"$WORK/plot.err"
prc=$?
lines=$(grep -c -v -E '^(op |plot: )' "$WORK/plot.out")
[ "$prc" -eq 0 ] &&
    head -n 1 "$WORK/plot.out" | grep -q '^op  *backend  *variant  *bytes  *busBW' &&
    [ "$lines" -eq "$measured" ]
ok $? "plot_busbw.py prints a table of the $measured measured cells (exit $prc, $lines rows)"
# runs a script as if matplotlib were not installed
block_mpl='import sys, runpy; sys.modules["matplotlib"] = None; sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")'
png="$WORK/busbw.png"
if "$PY" -c 'import matplotlib' 2>/dev/null; then
    magic=$(head -c 8 "$png" 2>/dev/null | od -An -tx1 | tr -d ' \n')
    [ "$magic" = 89504e470d0a1a0a ] &&
        [ "$(wc -c <"$png")" -gt 10000 ]
    ok $? "with matplotlib: it writes a PNG"
    png="$WORK/none.png"
    "$PY" -c "$block_mpl" "$CONTRIB/plot_busbw.py" "$d" --out "$png" \
        >"$WORK/plot.out" 2>"$WORK/plot.err"
    prc=$?
else
    echo "# matplotlib missing for $PY: checking the message only"
fi
[ "$prc" -eq 0 ] && grep -q 'matplotlib not found: skipping the plot' "$WORK/plot.err" &&
    [ ! -e "$png" ] && grep -q '^op ' "$WORK/plot.out"
ok $? "without matplotlib: the table, and a message instead of the plot"
done_testing
