#!/bin/sh
# The pairs' path check (which NIC carried each pair's bytes: docs/screen.md) as collprof-report
# prints it from a file, on the samples of tests/data (no run, no cluster: fixed verdicts):
#  - screen --format json of collprof-1.12-nic.h5 (a 4-node gloo screen, n1-n2 steered to a veth
#    pair of their own): "nic_paths" with the counts of the text's "nic paths:" line (6 checked,
#    1 flagged), every checked pair with its hosts, round, verdict, the message, the ratio, the
#    NIC bytes per operation (ratio x message), the carriers and the expected interface; the
#    one flagged pair n1-n2 other-nic via cps-n2,cps-n1 (expected cpnet0), the same pair as the
#    text's one "nic path:" line; the 5 others ok via cpnet0;
#  - the same document judged again (--baseline, a baseline of the file's own pairs) keeps
#    the path check: it is the file's, not the verdict's;
#  - a file without the columns (collprof-1.10.h5, schema 1.10): no "nic_paths";
#  - links of the same file: under its bandwidth matrix the screen's "nic path:" and "nic paths:"
#    lines, word for word; a link sweep before 1.12 (collprof-1.3-links.h5): none.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/report_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || skip_all "python3 not found (the JSON is read with it)"

NIC=$COLLPROF_SRCDIR/tests/data/collprof-1.12-nic.h5
OLD=$COLLPROF_SRCDIR/tests/data/collprof-1.10.h5
SWEEP=$COLLPROF_SRCDIR/tests/data/collprof-1.3-links.h5

# the document on stdin: its path check, checked; the flagged pairs as the text's lines
json_check() {
    "$PY" -c '
import json, sys
doc = json.load(sys.stdin)
(s,) = doc["screens"]
p = s["nic_paths"]
bad = []
pairs = p["pairs"]
if (p["checked"], p["flagged"], len(pairs)) != (6, 1, 6):
    bad.append("counts %d %d %d" % (p["checked"], p["flagged"], len(pairs)))
if sum(q["flagged"] for q in pairs) != p["flagged"]:
    bad.append("flagged pairs do not add up")
for q in pairs:
    n12 = {q["host"], q["peer"]} == {"n1", "n2"}
    if q["bytes"] != 1048576 or q["round"] < 0 or {q["node"], q["peer_node"]} == {q["node"]}:
        bad.append("pair %s" % q)
    if abs(q["nic_bytes_per_op"] - q["ratio"] * q["bytes"]) > 1 or not 0.99 < q["ratio"] < 1.1:
        bad.append("bytes %s" % q)
    if q["expected"] != ["cpnet0"]:
        bad.append("expected %s" % q)
    if n12 and (q["verdict"] != "other-nic" or not q["flagged"] or
                sorted(q["via"]) != ["cps-n1", "cps-n2"]):
        bad.append("n1-n2 %s" % q)
    if not n12 and (q["verdict"] != "ok" or q["flagged"] or q["via"] != ["cpnet0"]):
        bad.append("other %s" % q)
    if q["flagged"]:
        print("nic path: %s-%s (round %d): %s: %.2fx the message per operation, via %s (expected %s)"
              % (q["host"], q["peer"], q["round"] + 1, q["verdict"], q["ratio"], ",".join(q["via"]),
                 ",".join(q["expected"])))
for b in bad:
    print("# wrong:", b)
sys.exit(1 if bad else 0)'
}

rep screen "$NIC" --format json
cp "$WORK/rout" "$WORK/nic.json"
[ "$rrc" -eq 0 ] && json_check <"$WORK/nic.json" >"$WORK/json_lines"
r=$?
sed 's/^/# /' "$WORK/json_lines"
ok $r "screen --format json: nic_paths, 6 checked, 1 flagged: n1-n2 other-nic via cps-n1/cps-n2, the others ok via cpnet0"
[ $r -eq 0 ] || diag 1

rep screen "$NIC"
grep '^nic path: ' "$WORK/rout" >"$WORK/text_lines"
[ "$rrc" -eq 0 ] && [ -s "$WORK/text_lines" ] && cmp -s "$WORK/text_lines" "$WORK/json_lines" &&
    grep -q '^nic paths: 1 of 6 checked pairs' "$WORK/rout"
check "screen --format json: the flagged pairs are the text's 'nic path:' lines, its counts the text's"
grep '^nic paths\{0,1\}: ' "$WORK/rout" >"$WORK/screen_nic_lines"

rep baseline "$NIC" -o "$WORK/own.h5"
[ "$rrc" -eq 0 ] && rep screen "$NIC" --baseline "$WORK/own.h5" --format json &&
    [ "$rrc" -le 1 ] && grep -q '"rejudged"' "$WORK/rout" && json_check <"$WORK/rout" >/dev/null
check "screen --baseline --format json (a baseline of its own pairs): judged again, the same path check"

rep screen "$OLD" --format json
[ "$rrc" -le 1 ] && grep -q '"screens"' "$WORK/rout" && ! grep -q '"nic_paths"' "$WORK/rout"
check "screen --format json of a 1.10 file (no path check): no nic_paths"

rep links "$NIC"
sed -n '/ bandwidth, /,/^$/p' "$WORK/rout" | grep '^nic paths\{0,1\}: ' >"$WORK/links_lines"
[ "$rrc" -le 1 ] && [ -s "$WORK/links_lines" ] && cmp -s "$WORK/links_lines" "$WORK/screen_nic_lines"
check "links: under the bandwidth matrix, the screen's nic path lines word for word"

rep links "$SWEEP"
[ "$rrc" -le 1 ] && grep -q ' bandwidth, ' "$WORK/rout" && ! grep -q '^nic paths\{0,1\}: ' "$WORK/rout"
check "links of a link sweep before 1.12: no nic path line"

done_testing
