#!/bin/sh
# collprof-report simulate screen: the screen's real judgement on a model cluster
# (src/screen/sim.h), no processes and no file:
#  - --help names the options; a bad option or value is one error line, exit 2;
#  - JSON is one document that parses, each case with its parameters and counts, the same
#    twice for the same seeds; the counts add up (exact and a miss or a false positive never
#    in one run, the exit statuses sum to the runs, inconclusive is exit 2);
#  - a healthy 16-node cluster at ±5 % noise: nothing named in any of 100 screens; one node
#    at 0.3x among 8 at ±5 %: found alone in at least 95 of 100.
# The rates of the whole space are docs/screen.md's (--grid), not asserted here.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
[ -x "$REPORT" ] || skip_all "collprof-report was not built (it needs HDF5)"
command -v python3 >/dev/null 2>&1 || need_tool "python3"

rep() {
    rrc=0
    timeout -k 5 120 "$REPORT" simulate "$@" </dev/null >"$WORK/rout" 2>"$WORK/rerr" || rrc=$?
}
check() { # DESCRIPTION: the last command's status; after a failure what the report printed
    r=$?
    ok $r "$1"
    [ "$r" -eq 0 ] || sed 's/^/# /' "$WORK/rout" "$WORK/rerr" | head -n 40
}
one_error() { # REGEXP: exit 2 and one error line matching it, nothing on standard output
    [ "$rrc" -eq 2 ] && [ "$(wc -l <"$WORK/rerr")" -eq 1 ] && [ ! -s "$WORK/rout" ] &&
        grep -q "^collprof-report: error: simulate: .*$1" "$WORK/rerr"
}
# JSON: python3 reads the document on standard input and runs its code on d (the cases in c)
json() {
    python3 -c "import json, sys
d = json.load(sys.stdin)
c = d['cases']
$1" <"$WORK/rout"
}

rep screen --help
[ "$rrc" -eq 0 ] && grep -q -- '--slow-count K' "$WORK/rout" && grep -q -- '--grid' "$WORK/rout" &&
    grep -q -- '--setup-fail' "$WORK/rout"
check "simulate screen --help: the options"

# ---- bad usage -------------------------------------------------------------------------
rep screen --nodes 1
one_error "--nodes '1' is not a number from 2 to 65536"
check "--nodes 1: one line, exit 2 ($rrc)"
rep screen --nodes 8 --slow 3
one_error "--slow '3' is not I:F"
check "--slow 3 (no factor): one line, exit 2 ($rrc)"
rep screen --nodes 8 --slow 9:0.5
one_error "node 9 is not one of the 8 nodes"
check "--slow 9:0.5 on 8 nodes: one line, exit 2 ($rrc)"
rep screen --nodes 8 --noise 95%
one_error "--noise '95' is not a number from 0 to 90"
check "--noise 95%: one line, exit 2 ($rrc)"
rep screen --nodes 8 --bogus
one_error "unknown option '--bogus'"
check "an unknown option: one line, exit 2 ($rrc)"
rep --nodes 8
one_error "what to simulate: screen"
check "nothing to simulate named: one line, exit 2 ($rrc)"
rep screen --grid --nodes 8
one_error "--grid runs its own cases"
check "--grid with --nodes: one line, exit 2 ($rrc)"
rep screen --nodes 8 --seeds 5-2
one_error "--seeds '5-2' is not A-B"
check "--seeds 5-2: one line, exit 2 ($rrc)"

# ---- JSON, and the counts adding up ------------------------------------------------------
keys="'label nodes slow slow_count factor links paired_links hung setup_fail noise baseline seeds runs exact missed false_positive inconclusive untested setup_slow rounds_mean rounds_max exit_status'"
rep screen --nodes 8 --slow 2:0.3,5:0.5 --link 1-6:0.2 --hung 7 --noise 0.1 --seeds 1-20 --format json
[ "$rrc" -eq 0 ] && json "
assert d['format'] == 'collprof-simulate' and len(c) == 1
k = c[0]
assert all(x in k for x in $keys.split()), sorted(k)
assert k['nodes'] == 8 and k['runs'] == 20 and k['seeds'] == [1, 20] and k['hung'] == [7]
assert k['slow'] == [{'node': 2, 'factor': 0.3}, {'node': 5, 'factor': 0.5}], k['slow']
assert k['links'] == [{'a': 1, 'b': 6, 'factor': 0.2}] and k['noise'] == 0.1"
check "JSON: one document, the case's parameters and every count"
cp "$WORK/rout" "$WORK/first.json"
rep screen --nodes 8 --slow 2:0.3,5:0.5 --link 1-6:0.2 --hung 7 --noise 10% --seeds 1-20 --format json
cmp -s "$WORK/rout" "$WORK/first.json"
check "JSON: the same seeds give the same document (and 10% is 0.1)"

for args in "--nodes 2 --slow 1:0.1" "--nodes 5 --slow-count 1 --factor 0.5" \
    "--nodes 16 --slow-count 6 --factor 0.5 --noise 20%" "--nodes 9 --setup-fail 4" \
    "--nodes 12 --link 3-*:0.3 --baseline" "--nodes 6 --hung 0,1 --noise 30%"; do
    # shellcheck disable=SC2086
    rep screen $args --seeds 1-50 --format json
    [ "$rrc" -eq 0 ] && json "
for k in c:
    r = k['runs']
    assert r == 50 and sum(k['exit_status'].values()) == r, k
    assert k['exact'] + max(k['missed'], k['false_positive']) <= r, k
    assert k['inconclusive'] == k['exit_status']['2'], k
    assert 0 <= k['untested'] <= r * k['nodes'] and k['setup_slow'] <= k['false_positive'], k
    assert 1 <= k['rounds_mean'] <= k['rounds_max'], k"
    check "the counts add up: $args"
done

# ---- what the screen finds ---------------------------------------------------------------
rep screen --nodes 16 --noise 5% --seeds 1-100 --format json
[ "$rrc" -eq 0 ] && json "
k = c[0]
assert k['exact'] == 100 and k['false_positive'] == 0 and k['exit_status']['0'] == 100, k"
check "16 healthy nodes at ±5 %: nothing named in 100 of 100"
rep screen --nodes 8 --slow-count 1 --factor 0.3 --noise 5% --seeds 1-100 --format json
[ "$rrc" -eq 0 ] && json "
k = c[0]
assert k['exact'] >= 95, k"
check "8 nodes, one at 0.3x, ±5 %: found alone in at least 95 of 100"
# a node whose pairs cannot be set up is untested, never slow; its partners, re-paired, healthy
rep screen --nodes 16 --setup-fail 3 --slow 7:0.3 --seeds 1-100 --format json
[ "$rrc" -eq 0 ] && json "
k = c[0]
assert k['setup_slow'] == 0 and k['exact'] == 100 and k['untested'] == 100, k
assert k['exit_status']['1'] == 100, k"
check "16 nodes, node 3 not set up, node 7 at 0.3x: 3 untested, 7 slow alone, in 100 of 100"

# ---- text ------------------------------------------------------------------------------------
rep screen --nodes 4 --slow 1:0.5 --seeds 1-10
[ "$rrc" -eq 0 ] && [ "$(wc -l <"$WORK/rout")" -eq 3 ] &&
    head -n 1 "$WORK/rout" | grep -q '^nodes  case .* exact missed  *fp incon untested' &&
    sed -n 2p "$WORK/rout" | grep -q '^    4  node 1 at 0.5x  *10%  *no  *1-10  *10 ' &&
    grep -q '^# 1 case, 10 screens simulated in ' "$WORK/rout"
check "text: a header, one line per case, a last comment line"

done_testing
