#!/bin/sh
# The screen across the whole space (issue 38 item 6): collprof-report simulate screen --grid,
# every N from 2 to 64, then 128, 1,024 and 4,096, the grid of docs/screen.md, and the goals
# read from its document by contrib/screen_grid_table.py --goals --check:
#  - one node at 0.7x or slower at +-5-10 % found exactly in 99 % at every N from 4 (no known
#    shortfall any longer: 4 nodes met it once the screen ran the circle twice);
#  - N = 3 with a baseline 95 %; up to N/2 nodes at 0.5x with no healthy node named 95 %;
#  - healthy clusters at +-20 % flagged in at most 1 % at every N from 3;
#  - a node whose pairs cannot be set up never slow; the rounds at 1,024 and 4,096 nodes;
#  - and the tables print from the document.
# The simulator is deterministic for its seeds: this cannot fail by chance, only by a change
# of the method.  About 100 s of CPU; not under the sanitizers (2-3x that), where
# test_screen.c and simulate.sh run the same engine on fewer cases.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
[ -x "$REPORT" ] || skip_all "collprof-report was not built (it needs HDF5)"
[ "${CP_TIMING_UNRELIABLE:-0}" != 1 ] || skip_all "the grid's CPU under the sanitizers"
command -v python3 >/dev/null 2>&1 || need_tool "python3"
TABLE="$COLLPROF_SRCDIR/contrib/screen_grid_table.py"

t=$(date +%s)
rc=0
timeout -k 5 900 "$REPORT" simulate screen --grid --format json </dev/null \
    >"$WORK/grid.json" 2>"$WORK/grid.err" || rc=$?
[ "$rc" -eq 0 ] && [ ! -s "$WORK/grid.err" ]
ok $? "simulate screen --grid: exit 0, nothing on stderr, in $(($(date +%s) - t)) s ($rc)"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/grid.err" | head -n 20

python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
c = d['cases']
n = sorted(set(x['nodes'] for x in c))
want = list(range(2, 65)) + [128, 1024, 4096]
assert n == want, n
assert all(x['runs'] > 0 and x['exact'] <= x['runs'] for x in c)
print('#', len(c), 'cases,', sum(x['runs'] for x in c), 'screens')" "$WORK/grid.json" >"$WORK/n" 2>&1
ok $? "the grid: every N from 2 to 64, 128, 1,024 and 4,096, each case run"
sed 's/^/# /' "$WORK/n" | head -n 5

python3 "$TABLE" --goals --check "$WORK/grid.json" >"$WORK/goals" 2>&1
ok $? "issue 38's goals hold (the known shortfalls at their floors)"
sed 's/^/# /' "$WORK/goals"

python3 "$TABLE" "$WORK/grid.json" >"$WORK/tables" 2>&1 &&
    grep -q '^| one node at 0.7x, ±10 % |' "$WORK/tables" &&
    grep -q '^| 3 | one node at 0.7x |' "$WORK/tables"
ok $? "the tables of docs/screen.md print from the document"
done_testing
