#!/bin/sh
# --counters (issue 41): a --np 2 run writes /counters rows for every cell, the host's at
# least; --counters none writes none; a list keeps to its sources; COLLPROF_SYSFS_ROOT
# redirects the readers to a fake tree (an InfiniBand port there, nothing of the real /sys).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_report
[ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_self.so" ] || skip_all "the self backend was not built"

# distinct cells among the rows of `collprof-report counters` output $1 with source $2
cells_with() {
    awk -v s="$2" 'NR > 1 && $4 == s { print $1 }' "$1" | sort -u | wc -l
}

d="$WORK/auto"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce,alltoall -b 1K -e 4K -n 5 -w 1 --output-dir "$d"
h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
[ "$rc" -eq 0 ] && [ -n "$h5" ]
ok $? "--np 2 with the default --counters auto runs"
"$REPORT" counters "$h5" >"$WORK/auto.txt" 2>&1
rrc=$?
n=$(cells_with "$WORK/auto.txt" host)
[ "$rrc" -eq 0 ] && [ "$n" -eq 6 ]
ok $? "every one of the 6 cells has the host's counters ($n)"
awk 'NR > 1 && $4 == "host" && $5 == "context_switches" && $7 == "counter" && $2 == 0' \
    "$WORK/auto.txt" | grep -q .
ok $? "context switches of node 0, a counter"
grep -q '^flagged: ' "$WORK/auto.txt"
ok $? "the report ends with what it flags"

d="$WORK/none"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce -b 1K -e 4K -n 5 -w 1 --counters none --output-dir "$d"
h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
[ "$rc" -eq 0 ] && "$REPORT" counters "$h5" 2>&1 | grep -q 'no counters'
ok $? "--counters none: no /counters rows"
if [ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ]; then
    ! "$CP_H5DUMP" -H "$h5" | grep -q 'DATASET "counters"'
    ok $? "--counters none: no /counters dataset at all"
fi

# a fake tree: one InfiniBand port, a /proc/stat; no network interface
fake="$WORK/fake"
mkdir -p "$fake/sys/class/infiniband/mlx5_7/ports/1/counters" "$fake/proc"
echo 123 >"$fake/sys/class/infiniband/mlx5_7/ports/1/counters/port_xmit_data"
echo 0 >"$fake/sys/class/infiniband/mlx5_7/ports/1/counters/symbol_error"
printf 'cpu  1 2 3 4 5 6 7 8 0 0\nctxt 9\n' >"$fake/proc/stat"
d="$WORK/fake-run"
mkdir -p "$d"
COLLPROF_SYSFS_ROOT="$fake" cp_run --np 2 --backends self --ops allreduce -b 1K -e 2K -n 3 -w 0 \
    --counters ib,net,host --output-dir "$d"
h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
"$REPORT" counters "$h5" >"$WORK/fake.txt" 2>&1
[ "$rc" -eq 0 ] && [ "$(cells_with "$WORK/fake.txt" ib)" -eq 2 ] &&
    grep -q 'mlx5_7/1/port_xmit_data' "$WORK/fake.txt" && grep -q 'mlx5_7/1/symbol_error' "$WORK/fake.txt"
ok $? "COLLPROF_SYSFS_ROOT: the fake InfiniBand port's counters in each cell"
[ "$(cells_with "$WORK/fake.txt" net)" -eq 0 ] && ! grep -q ' gpu ' "$WORK/fake.txt"
ok $? "no interface in the fake tree: no net rows; gpu not asked: no gpu rows"

d="$WORK/list"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce -b 1K -e 1K -n 3 -w 0 --counters host --output-dir "$d"
h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
"$REPORT" counters "$h5" >"$WORK/list.txt" 2>&1
[ "$rc" -eq 0 ] && [ "$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $4 != "host"' "$WORK/list.txt" | wc -l)" -eq 0 ] &&
    [ "$(cells_with "$WORK/list.txt" host)" -eq 1 ]
ok $? "--counters host: the host's rows alone"

# NVML through the tests' stub library (tests/stubs/nvml_stub.c: 2 GPUs, gpu1 held at its
# software power cap): gpu rows in each cell, the summary's note, the report's and the
# Prometheus export's flag
stub="$(dirname "$COLLPROF_BIN")/tests/stubs/libnvidia-ml.so.1"
if [ -f "$stub" ]; then
    d="$WORK/gpu"
    mkdir -p "$d"
    COLLPROF_NVML_LIB="$stub" cp_run --np 2 --backends self --ops allreduce -b 1K -e 2K -n 3 -w 0 \
        --counters gpu,host --output-dir "$d"
    h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
    "$REPORT" counters "$h5" >"$WORK/gpu.txt" 2>&1
    [ "$rc" -eq 0 ] && [ "$(cells_with "$WORK/gpu.txt" gpu)" -eq 2 ] &&
        awk '$4 == "gpu" && $5 == "gpu0/energy" && $8 == 5' "$WORK/gpu.txt" | grep -q . &&
        awk '$4 == "gpu" && $5 == "gpu0/sm_clock" && $8 == 1410' "$WORK/gpu.txt" | grep -q .
    ok $? "NVML stub: gpu rows in both cells (energy +5 J, SM clock 1410 MHz)"
    [ "$(grep -c 'counters: node 0 (.*): gpu1/throttle_reasons 4 mask (GPU throttled)' "$(summary_of "$d")")" -eq 2 ]
    ok $? "the summary notes the throttled GPU under each of the 2 cells"
    grep '^counters: ' "$(summary_of "$d")" | sed 's/^/# /'
    grep -q '^counters:   GPU throttled in 2 cells; GPU Xid errors in 1 cell flagged$' "$(summary_of "$d")"
    ok $? "the summary's totals: GPU throttled in 2 cells, the stub's two Xid events in 1"
    "$REPORT" summary "$h5" 2>/dev/null | sed -n '/^== .* \/ .* ==$/,/^#wrong:/p' >"$WORK/gpu_rep"
    sed -n '/^== .* \/ .* ==$/,/^#wrong:/p' "$(summary_of "$d")" >"$WORK/gpu_txt"
    grep -q 'GPU throttled' "$WORK/gpu_rep" && cmp -s "$WORK/gpu_rep" "$WORK/gpu_txt"
    ok $? "collprof-report summary prints the counters' notes and totals as the run did"
    grep '^flagged: ' "$WORK/gpu.txt" | sed 's/^/# /'
    grep -q '^flagged: GPU throttled in 2 cells; GPU Xid errors in 1 cell$' "$WORK/gpu.txt"
    ok $? "collprof-report counters: GPU throttled in 2 cells, Xid errors in 1"
    "$REPORT" export --prom "$h5" -o "$WORK/prom.txt" >/dev/null 2>&1 &&
        [ "$(grep -c '^collprof_cell_counter_flagged{.*counter="gpu1/throttle_reasons".*why="GPU throttled"} 4$' "$WORK/prom.txt")" -eq 2 ]
    ok $? "export --prom: the flagged rows as collprof_cell_counter_flagged"
fi

# --repeats: each repeat reads its own pair, the rows add up (2 repeats x (1 warm-up + 3 timed))
d="$WORK/repeats"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce -b 1K -e 1K -n 3 -w 1 --repeats 2 --counters host \
    --output-dir "$d"
"$REPORT" counters "$(ls "$d"/collprof_*.h5 | head -n 1)" >"$WORK/rep.txt" 2>&1
[ "$rc" -eq 0 ] && awk '$5 == "context_switches" && $10 == 8' "$WORK/rep.txt" | grep -q . &&
    [ "$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $7 == "counter" && $10 != 8' "$WORK/rep.txt" | wc -l)" -eq 0 ]
ok $? "--repeats 2: every counter row spans both repeats' 8 operations"

cp_run --np 2 --backends self --counters host,disk
[ "$rc" -eq 2 ] && grep -q "'disk'" "$WORK/err"
ok $? "--counters with an unknown source: exit 2, named"

done_testing
