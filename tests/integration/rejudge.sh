#!/bin/sh
# Recorded runs judged again against a baseline, on the sample files of tests/data (no run, no
# cluster: the figures are fixed, so are the verdicts):
#  - collprof-report screen FILE --baseline: the 4-node gloo screen of collprof-1.7.h5 (n3
#    throttled) against a baseline of its own healthy pairs says what the run said (n3 slow,
#    nothing else), in every format, and says it was judged again; against a baseline twice
#    as fast (written with h5py) every node is slow; --threshold 0.01 clears n3.
#  - collprof-report links FILE --baseline: the 4-node gloo+ofi link sweep of
#    collprof-1.3-links.h5 (n3 throttled) against a baseline of its healthy pairs: n3 the one
#    slow node of each backend, its pairs starred; against one twice as fast, all four.
#  - a baseline without the file's backend or sizes: a one-line error, exit 2.
#  - collprof-report links on the screen's file: its header says it is a screen and how many
#    pairs it measured; with --baseline a one-line error naming `screen --baseline`, exit 2.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/report_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
have_h5py=no
[ -n "$PY" ] && "$PY" -c 'import h5py, numpy' 2>/dev/null && have_h5py=yes

SCREEN=$COLLPROF_SRCDIR/tests/data/collprof-1.7.h5
SWEEP=$COLLPROF_SRCDIR/tests/data/collprof-1.3-links.h5

rep screen --help
[ "$rrc" -eq 0 ] && grep -q -- '--baseline BASE.h5' "$WORK/rout" && grep -q -- '--apply ' "$WORK/rout"
check "screen --help: --baseline and --apply"
rep links --help
[ "$rrc" -eq 0 ] && grep -q -- '--baseline BASE.h5' "$WORK/rout"
check "links --help: --baseline"

# ---- the screen -------------------------------------------------------------------------
rep baseline "$SCREEN" -o "$WORK/own.h5"
[ "$rrc" -eq 0 ] && [ -s "$WORK/own.h5" ]
check "baseline of the screen's healthy pairs (n3's left out)"

rep screen "$SCREEN" --baseline "$WORK/own.h5"
[ "$rrc" -eq 1 ] && grep -q "^# re-judged against the baseline $WORK/own.h5 (gloo: .* GB/s at 262144 B, MAD .*; .* us at 8 B, MAD .*), slow below 0.80x: not the run's own verdict" "$WORK/rout" &&
    grep -q '^== screen: gloo, 4 rounds (seed 7), reference the baseline: ' "$WORK/rout" &&
    grep -q '^slow  *n3: .*confirm 0\.0[0-9]x with n4 (slow)$' "$WORK/rout" &&
    [ "$(grep -c '^slow ' "$WORK/rout")" -eq 1 ] &&
    grep -q '^nodes: 3 healthy, 1 slow, 0 unreachable' "$WORK/rout" &&
    grep -q '^exclude: n3$' "$WORK/rout"
check "screen --baseline (its own healthy pairs): says so, n3 slow and confirmed, alone, exit 1 ($rrc)"

rep screen "$SCREEN" --baseline "$WORK/own.h5" --format slurm
[ "$rrc" -eq 1 ] && [ "$(cat "$WORK/rout")" = n3 ] &&
    grep -q '^collprof-report: screen: re-judged against the baseline ' "$WORK/rerr"
check "screen --baseline --format slurm: n3 alone on stdout, the baseline named on stderr"

rep screen "$SCREEN" --baseline "$WORK/own.h5" --format drain
[ "$rrc" -eq 1 ] && [ "$(wc -l <"$WORK/rout")" -eq 2 ] && grep -q '^# re-judged against ' "$WORK/rout" &&
    grep -q '^scontrol update nodename=n3 state=drain reason="collprof: screen: slow, 0\.0[0-9]x of the baseline with 3 of 3 partners, confirmed with n4"$' "$WORK/rout"
check "screen --baseline --format drain: a comment, then n3's line 'of the baseline'"

if [ -n "$PY" ]; then
    rep screen "$SCREEN" --baseline "$WORK/own.h5" --format json
    "$PY" - "$WORK/rout" "$WORK/own.h5" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["screens"][0]
assert d["status"] == 1 and d["baseline"] == sys.argv[2], d
assert s["reference"]["source"] == "baseline" and s["rejudged"]["baseline"] == sys.argv[2], s
assert s["rejudged"]["bw_bytes"] == 262144 and s["rejudged"]["lat_bytes"] == 8, s
assert s["rejudged"]["bw_gbs"] == s["reference"]["bw_gbs"] > 0, s
assert [n["host"] for n in s["nodes"] if n["verdict"] == "slow"] == ["n3"], s
EOF
    check "screen --baseline --format json: rejudged (the baseline, its sizes), n3 slow"
fi

rep screen "$SCREEN" --baseline "$WORK/own.h5" --threshold 0.01
[ "$rrc" -eq 0 ] && grep -q 'slow below 0.01x' "$WORK/rout" &&
    grep -q '^nodes: 4 healthy, 0 slow' "$WORK/rout"
check "screen --baseline --threshold 0.01: n3 (0.02-0.03x) is not below it, healthy, exit 0 ($rrc)"

rep screen "$SCREEN" --baseline "$WORK/own.h5" --backend ofi
one_error 'has no screen of backend ofi'
check "screen --baseline --backend ofi: no such screen, exit 2"

# ---- links on a screen: its pairs are a sample, said so; no sweep judgement against a baseline
rep links "$SCREEN" --baseline "$WORK/own.h5"
one_error "links --baseline: .*collprof-1.7.h5 is a screen .*: judge it with collprof-report screen .*collprof-1.7.h5 --baseline $WORK/own.h5"
check "links --baseline on a screen: one line naming the screen command, exit 2"
rep links "$SCREEN"
[ "$rrc" -eq 1 ] && grep -q '^# screen in .*: 4 nodes, 6 of their 6 pairs measured (a sample, - where not);.* collprof-report screen ' "$WORK/rout" &&
    ! grep -q 'link sweep' "$WORK/rout"
check "links on a screen: says it is a screen and how many pairs it measured, points to screen"

# ---- the link sweep ---------------------------------------------------------------------
rep links "$SWEEP" --baseline "$WORK/own.h5"
one_error "links: --baseline $WORK/own.h5 does not fit .*: the baseline has no figures of ofi at 8 and 262144 bytes"
check "links --baseline of gloo alone, for a sweep of gloo and ofi: one-line error, exit 2"

if [ "$have_h5py" = no ]; then
    echo "ok $((tap_n += 1)) # SKIP python3 with h5py and numpy is not installed"
    done_testing
fi

# baselines written from the figures: --scale F (bandwidth x F, latency / F), --mad M, and
# the medians of the pairs of FILE without node 2 (n3) with --from FILE
mkbase() { # IN OUT [--scale F] [--mad M] [--from FILE] [--bytes B]
    "$PY" - "$@" <<'EOF'
import argparse, shutil, h5py, numpy as np
p = argparse.ArgumentParser()
p.add_argument("inp"); p.add_argument("out")
p.add_argument("--scale", type=float, default=1.0); p.add_argument("--mad", type=float)
p.add_argument("--from", dest="src"); p.add_argument("--bytes", type=int)
a = p.parse_args()
shutil.copy(a.inp, a.out)
with h5py.File(a.out, "r+") as f:
    rows = f["baseline"][:]
    if a.src:
        links = h5py.File(a.src, "r")["links"][:]
    for r in rows:
        bw = r["kind"] == b"bandwidth"
        if a.src:
            m = [(l["bytes"] / l["time_p50_us"] * 1e-3 if bw else l["time_p50_us"])
                 for l in links if l["backend"] == r["backend"] and l["kind"] == r["kind"]
                 and 2 not in (l["node_a"], l["node_b"])]
            lg = np.log(m)
            r["median"] = float(np.exp(np.median(lg)))
            r["mad_log"] = float(np.median(np.abs(lg - np.median(lg))))
        r["median"] = r["median"] * a.scale if bw else r["median"] / a.scale
        if a.mad is not None:
            r["mad_log"] = a.mad
        if a.bytes and bw:
            r["bytes"] = a.bytes
    f["baseline"][...] = rows
EOF
}

mkbase "$WORK/own.h5" "$WORK/fast.h5" --scale 2 --mad 0.05
rep screen "$SCREEN" --baseline "$WORK/fast.h5"
[ "$rrc" -eq 1 ] && grep -q '^nodes: 0 healthy, 4 slow' "$WORK/rout" &&
    grep -q '^exclude: n\[1-4\]$' "$WORK/rout"
check "screen against a baseline twice as fast: every node slow, exclude n[1-4] ($rrc)"

mkbase "$WORK/own.h5" "$WORK/big.h5" --bytes 4194304
rep screen "$SCREEN" --baseline "$WORK/big.h5"
one_error 'does not fit .*: the baseline has no bandwidth figures of gloo at 8 and 262144 bytes'
check "screen against a baseline of 4 MiB messages: one-line error, exit 2"

rep baseline "$SWEEP" -o "$WORK/sweep-all.h5"
mkbase "$WORK/sweep-all.h5" "$WORK/sweep.h5" --from "$SWEEP"
rep links "$SWEEP" --baseline "$WORK/sweep.h5"
for b in gloo ofi; do
    grep -q "^$b: judged against the baseline $WORK/sweep.h5 ($b: " "$WORK/rout" &&
        grep -q "^$b: node n3: slow with 3 of 3 partners, median 0\.[0-9]*x the baseline: slow node n3$" "$WORK/rout" &&
        [ "$(grep -c "^$b: node " "$WORK/rout")" -eq 1 ] && ! grep -q "^$b: link " "$WORK/rout" &&
        grep -q "^$b: nodes: 3 healthy, 1 slow, .*; links: 0 slow; exclude: n3$" "$WORK/rout"
    r=$?
    [ $r -eq 0 ] && [ "$rrc" -eq 1 ]
    check "links --baseline (the healthy pairs): $b: n3 the one slow node, no slow link, exit 1 ($rrc)"
done
# n3's row of the gloo bandwidth matrix: its three pairs starred, no other row has a star
awk '/^gloo bandwidth/ { m = 1; next } m && /^n[1-4] / { print } m && /^$/ { exit }' \
    "$WORK/rout" >"$WORK/matrix"
[ "$(grep -c '\*' "$WORK/matrix")" -eq 4 ] && [ "$(grep '^n3 ' "$WORK/matrix" | tr -cd '*' | wc -c)" -eq 3 ]
check "links --baseline: the gloo bandwidth matrix stars n3's three pairs (and their mirror)"

mkbase "$WORK/sweep.h5" "$WORK/sweep-fast.h5" --scale 2 --mad 0.05
rep links "$SWEEP" --baseline "$WORK/sweep-fast.h5"
[ "$rrc" -eq 1 ] && [ "$(grep -c '^[a-z]*: nodes: 0 healthy, 4 slow, .*; exclude: n\[1-4\]$' "$WORK/rout")" -eq 2 ]
check "links against a baseline twice as fast: all four nodes slow on both backends ($rrc)"

rep links "$SWEEP" --baseline "$WORK/sweep.h5" --threshold 0.001
[ "$rrc" -eq 0 ] && [ "$(grep -c '^[a-z]*: nodes: 4 healthy, 0 slow, .*; links: 0 slow; exclude: (none)$' "$WORK/rout")" -eq 2 ]
check "links --baseline --threshold 0.001: nothing below it, exit 0 ($rrc)"

rep links "$SWEEP"
[ "$rrc" -eq 1 ] && ! grep -q 'judged against\|the baseline' "$WORK/rout" && grep -q 'suspect node n3' "$WORK/rout"
check "links without --baseline: as before (n3 suspect against the sweep's own median)"

done_testing
