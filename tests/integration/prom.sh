#!/bin/bash
# collprof-report export --prom, --openmetrics and --jsonl, checked with the
# real tools: promtool check metrics, a prometheus-node-exporter on loopback
# serving the textfile directory (fetched with curl), promtool tsdb
# create-blocks-from openmetrics importing a history, promtool test rules on
# the shipped alert rules, and Python's json module on every JSON line.
# Inputs: a short self-launched run (2 ranks, backend self), the committed
# samples (collprof-1.10.h5 has a screen and a link sweep under Slurm), and
# copies of the run with hostile strings (h5py).
# Without the tools the test skips, or fails under CI (need_tool, lib.sh).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
[ -x "$REPORT" ] || skip_all "collprof-report was not built (it needs HDF5)"
DATA=$COLLPROF_SRCDIR/tests/data
RULES=$COLLPROF_SRCDIR/share/collprof/prometheus
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)

missing=
for t in promtool prometheus-node-exporter curl; do
    command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
done
{ [ -n "$PY" ] && "$PY" -c 'import h5py, numpy' 2>/dev/null; } || missing="$missing python3-h5py"
if [ -n "$missing" ]; then
    need_tool "not installed:$missing (apt-get install prometheus prometheus-node-exporter curl python3-h5py)"
fi

# collprof-report with a timeout; output in $WORK/rout, $WORK/rerr, status in $rrc
rep() {
    rrc=0
    timeout -k 5 60 "$REPORT" "$@" </dev/null >"$WORK/rout" 2>"$WORK/rerr" || rrc=$?
}

# ---- inputs: a short run, and hostile copies of it --------------------------------------
mkdir "$WORK/run"
cp_run --np 2 --backends self --ops allreduce,alltoall,barrier --counts 1K,4K -n 4 -w 1 \
    --tag 'token=s3cr3t' --output-dir "$WORK/run"
RUN=$(ls "$WORK"/run/*.h5 2>/dev/null | head -n 1)
[ "$rc" -eq 0 ] && [ -n "$RUN" ]
ok $? "a short run to export (exit $rc)"
[ -n "$RUN" ] || done_testing

# hostile.h5: what a label and a JSON string must escape; notime.h5: no time of the run
"$PY" - "$RUN" "$WORK" <<'EOF' 2>"$WORK/py.err"
import shutil, sys
import h5py, numpy as np
run, work = sys.argv[1], sys.argv[2]
shutil.copyfile(run, work + "/hostile.h5")
with h5py.File(work + "/hostile.h5", "r+") as f:
    for table, col, value in (("results", "variant", b'a"b\\c},x="y'),
                              ("ranks", "hostname", b'h\\"1')):
        rows = f[table][()]
        for r in rows:
            r[col] = value
        f[table][...] = rows
    f.attrs["slurm_partition"] = np.bytes_(b'p"\\q\nr')
shutil.copyfile(run, work + "/notime.h5")
with h5py.File(work + "/notime.h5", "r+") as f:
    del f.attrs["created"]
    rows = f["results"][()]
    rows["start_time"] = 0
    f["results"][...] = rows
EOF
ok $? "h5py made the hostile copies"

# ---- --prom: promtool, values, escaping ---------------------------------------------------
mkdir "$WORK/tf"
rep export --prom "$RUN" "$DATA/collprof-1.10.h5" -o "$WORK/tf"
PROM=$WORK/tf/collprof.prom
[ "$rrc" -eq 0 ] && [ -s "$PROM" ] && [ "$(ls -A "$WORK/tf")" = collprof.prom ] &&
    [ "$(stat -c %a "$PROM")" = "$(printf '%o' $((0666 & ~$(umask))))" ]
ok $? "export --prom -o DIR: DIR/collprof.prom alone, mode as the umask gives (exit $rrc)"
promtool check metrics <"$PROM" >"$WORK/lint" 2>&1
ok $? "promtool check metrics accepts it, no lint: $(head -c 200 "$WORK/lint")"
fams="last_run_timestamp_seconds cell_busbw_bytes_per_second cell_algbw_bytes_per_second
cell_time_seconds cell_failed node_time_ratio node_link_bandwidth_bytes_per_second
node_link_latency_seconds node_screen_verdict node_screen_score_ratio"
absent=
for m in $fams; do
    grep -q "^# TYPE collprof_$m gauge\$" "$PROM" && grep -q "^collprof_$m{" "$PROM" ||
        absent="$absent $m"
done
[ -z "$absent" ] && ! grep -q '^[a-z].* [0-9.e+-]* [0-9]' "$PROM"
ok $? "every family is there, samples without timestamps (absent:${absent:- none})"
grep -q '^collprof_node_screen_verdict{partition="debug",backend="gloo",host="n3",verdict="slow"} 1$' \
    "$PROM" &&
    grep -q '^collprof_node_screen_verdict{partition="debug",backend="gloo",host="n1",verdict="healthy"} 1$' \
        "$PROM"
ok $? "the sample's screen: n3 slow, n1 healthy"
# busBW and p99 as the CSV export has them, in base units
rep export --csv "$RUN"
"$PY" - "$WORK/rout" "$PROM" <<'EOF'
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
prom = {}
for line in open(sys.argv[2]):
    m = re.match(r'(\w+)\{(.*)\} (\S+)$', line)
    if m:
        prom[(m.group(1), m.group(2))] = float(m.group(3))
n = 0
for r in rows:
    lab = ('partition="",nodes="1",ranks="2",backend="%s",variant="%s",op="%s",dtype="%s",'
           'redop="%s",memory="%s",bytes="%s",root="%s",in_place="%s"' %
           (r["backend"], r["variant"], r["op"], r["dtype"], r["redop"], r["memory"], r["bytes"],
            r["root"], r["in_place"]))
    for k, name in (("imbalance", "imbalance"), ("split", "split"), ("sync", "sync"),
                    ("allocation", "alloc")):
        if r[k]:
            lab += ',%s="%s"' % (name, r[k])
    lab += ',batch="%s",rotate="%s"' % (r["batch"], r["rotate"])
    if prom[("collprof_cell_failed", lab)] != (r["status"] != "ok"):
        sys.exit("failed: %s" % lab)
    t = prom[("collprof_cell_time_seconds", lab + ',stat="p99"')]
    if abs(t - float(r["time_p99_us"]) * 1e-6) > 1e-12:
        sys.exit("p99: %s" % lab)
    if int(r["bytes"]):
        b = prom[("collprof_cell_busbw_bytes_per_second", lab)]
        if abs(b - float(r["busbw_gbs"]) * 1e9) > 1e-3 * b:
            sys.exit("busbw: %s" % lab)
    n += 1
if n != 5:
    sys.exit("%d cells" % n)
EOF
ok $? "each cell's failed flag, p99 (s) and busBW (B/s) equal the CSV export's"

# cells that differ only in their root or in place: one series each (a series is one cell)
mkdir "$WORK/cells"
cp_run --np 2 --backends self --ops allreduce,broadcast --counts 1K --inplace both -r 1 -n 2 \
    -w 0 --output-dir "$WORK/cells"
CELLS=$(ls "$WORK"/cells/*.h5 2>/dev/null | head -n 1)
rep export --prom "${CELLS:-none}"
series=$(grep -c '^collprof_cell_busbw_bytes_per_second{' "$WORK/rout")
rep export --csv "${CELLS:-none}"
cells=$(($(wc -l <"$WORK/rout") - 1))
[ "$rc" -eq 0 ] && [ "$cells" -eq 4 ] && [ "$series" -eq "$cells" ]
ok $? "cells apart only by root or in place: a series each ($series series, $cells cells)"

rep export --prom "$WORK/hostile.h5"
cp "$WORK/rout" "$WORK/hostile.prom"
promtool check metrics <"$WORK/hostile.prom" >"$WORK/lint" 2>&1 &&
    grep -q 'variant="a\\"b\\\\c},x=\\"y"' "$WORK/hostile.prom" &&
    grep -q 'partition="p\\"\\\\q\\\\nr"' "$WORK/hostile.prom" &&
    grep -q 'host="h\\\\\\"1"' "$WORK/hostile.prom"
ok $? "quotes, backslashes and a line feed in labels come out escaped (exit $rrc) $(head -c 200 "$WORK/lint")"

# ---- the node exporter serves the directory; a new export replaces the file ------------------
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cp "$WORK/hostile.prom" "$WORK/tf/hostile.prom"
prometheus-node-exporter --collector.disable-defaults --collector.textfile \
    --collector.textfile.directory="$WORK/tf" --web.listen-address="127.0.0.1:$PORT" \
    --web.disable-exporter-metrics >"$WORK/ne.log" 2>&1 &
NE=$!
trap 'kill $NE 2>/dev/null; rm -rf "$WORK"' EXIT
scrape() {
    for _ in $(seq 100); do
        curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$WORK/scrape" && return 0
        sleep 0.1
    done
    return 1
}
scrape
src=$(grep -c '^collprof_' "$PROM" "$WORK/hostile.prom" | awk -F: '{n += $2} END {print n}')
got=$(grep -c '^collprof_' "$WORK/scrape")
[ "$got" -gt 0 ] && [ "$got" -eq "$src" ] && grep -q '^node_textfile_scrape_error 0$' "$WORK/scrape" &&
    grep -q 'variant="a\\"b\\\\c},x=\\"y"' "$WORK/scrape"
ok $? "the node exporter on 127.0.0.1:$PORT serves all $src samples, the hostile labels intact ($got)"
rm "$WORK/tf/hostile.prom"
rep export --prom "$DATA/collprof-1.8.h5" -o "$WORK/tf/"
scrape
[ "$rrc" -eq 0 ] && ! grep -q 'collprof_node_screen_verdict' "$WORK/scrape" &&
    grep -q '^collprof_cell_failed{' "$WORK/scrape" && [ "$(ls -A "$WORK/tf")" = collprof.prom ]
ok $? "a second export replaced the file: the next scrape has the new figures only"
kill $NE
wait $NE 2>/dev/null

# ---- --openmetrics: a history that promtool imports ------------------------------------------
rep export --openmetrics "$DATA"/collprof-1.*.h5 "$RUN" -o "$WORK/hist.om"
samples=$(grep -vc '^#' "$WORK/hist.om")
[ "$rrc" -eq 0 ] && [ "$(tail -n 1 "$WORK/hist.om")" = "# EOF" ] &&
    grep -q '^# UNIT collprof_cell_busbw_bytes_per_second bytes_per_second$' "$WORK/hist.om"
ok $? "export --openmetrics: $samples samples, UNIT lines, '# EOF' last (exit $rrc)"
timeout -k 5 60 promtool tsdb create-blocks-from openmetrics "$WORK/hist.om" "$WORK/tsdb" \
    >"$WORK/bf" 2>&1
bfrc=$?
imported=$(promtool tsdb list "$WORK/tsdb" 2>/dev/null | awk 'NR > 1 {n += $5} END {print n + 0}')
[ "$bfrc" -eq 0 ] && [ "$imported" -eq "$samples" ]
ok $? "promtool tsdb create-blocks-from openmetrics imports every sample ($imported of $samples, exit $bfrc)"
rep export --openmetrics "$WORK/notime.h5"
[ "$rrc" -eq 2 ] && [ "$(wc -l <"$WORK/rerr")" -eq 1 ] && grep -q 'no time of the run' "$WORK/rerr" &&
    [ ! -s "$WORK/rout" ]
ok $? "a file without a time cannot go into a history: one line, exit 2 ($rrc)"

# ---- the shipped alert rules ------------------------------------------------------------
mkdir "$WORK/rules"
cp "$RULES/collprof-alerts.yml" "$RULES/collprof-alerts.test.yml" "$WORK/rules/"
(cd "$WORK/rules" && promtool check rules collprof-alerts.yml &&
    promtool test rules collprof-alerts.test.yml) >"$WORK/rt" 2>&1
ok $? "promtool check rules and test rules pass on the shipped rules"
sed -i 's/< 0\.8 \*/< 0.4 */' "$WORK/rules/collprof-alerts.yml"
! (cd "$WORK/rules" && promtool test rules collprof-alerts.test.yml) >"$WORK/rt" 2>&1
ok $? "the rules test fails when the busBW rule's threshold is changed"

# ---- --jsonl ----------------------------------------------------------------------------
rep export --jsonl "$RUN" "$DATA/collprof-1.8.h5" "$WORK/hostile.h5" -o "$WORK/cells.jsonl"
jrc=$rrc
rep export --json "$RUN" "$DATA/collprof-1.8.h5" "$WORK/hostile.h5"
"$PY" - "$WORK/cells.jsonl" "$WORK/rout" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
cells = json.load(open(sys.argv[2]))
if len(lines) != len(cells):
    sys.exit("%d lines, %d cells" % (len(lines), len(cells)))
for line, cell in zip(lines, cells):
    r = json.loads(line)
    if r["format"] != "collprof-jsonl" or r["format_version"] != 1:
        sys.exit("format")
    for k, v in cell.items():
        if r[k] != v:
            sys.exit("%s: %r != %r" % (k, r[k], v))
    if not all(isinstance(r[k], t) for k, t in (("run_argv", list), ("env", dict),
                                              ("rank_hosts", list), ("rank_devices", list))):
        sys.exit("types")
    if len(r["rank_hosts"]) != r["run_world_size"] or r["schema_version"] < "1.":
        sys.exit("ranks")
    if r["run_command_line"].split(" ") != r["run_argv"]:
        sys.exit("argv")
    if "s3cr3t" in line:
        sys.exit("a secret in the output")
hostile = [json.loads(l) for l in lines if json.loads(l)["file"].endswith("hostile.h5")]
if not hostile or hostile[0]["variant"] != 'a"b\\c},x="y' or \
        hostile[0]["slurm_partition"] != 'p"\\q\\nr' or hostile[0]["rank_hosts"][0] != 'h\\"1':
    sys.exit("hostile strings")
run = json.loads(lines[0])
if "COLLPROF_PLUGIN_PATH" not in run["env"] or run["run_tag"] != "token=<redacted>":
    sys.exit("env or tag")
EOF
pyrc=$?
[ "$jrc" -eq 0 ] && [ "$pyrc" -eq 0 ]
ok $? "export --jsonl: one object per cell with the JSON export's columns, run_*, argv, env, ranks; secrets redacted; hostile strings round trip (exit $jrc)"
done_testing
