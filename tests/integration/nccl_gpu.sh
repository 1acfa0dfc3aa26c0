#!/bin/sh
# make check-gpu: the NCCL backend on the GPUs of this machine, one rank per
# GPU (up to 8): every operation and dtype, in and out of place, then every
# variant; every result exact (#wrong 0), no failed cell.  Cells NCCL cannot
# run here (NVLS without NVSwitch, CollNet without a plugin, PAT with several
# GPUs per node...) are reported "unsupported" and allowed.  Exits 77 (skip)
# when the plugin was not built or no GPU is usable.
: "${COLLPROF_BIN:?run through make check-gpu}"
# every variant on every op takes a while: longer than lib.sh's default bound
CP_TIMEOUT=${CP_TIMEOUT:-1800}
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_gpus
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
echo "# $np rank(s), one GPU each"
# how long each part took (the GPU machine is lent for minutes)
T0=$(date +%s)
part_done() {
    echo "# $1: $(($(date +%s) - T0)) s"
    T0=$(date +%s)
}

# 1. every op and dtype with the library's own algorithm, in and out of place
d="$WORK/ops"
mkdir -p "$d"
cp_run --np "$np" --backends nccl --variants default --ops all --dtype all --counts 4K,1M \
    --inplace both -n 5 -w 2 --output-dir "$d"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 20
check_clean_run "$d" "nccl --np $np: every op and dtype, in and out of place"
# the device copy limit beside busBW: every measured line has it, no line a memcpy one
s=$(summary_of "$d")
# (a barrier moves no bytes: no bandwidth, no limit)
n=$(grep -c -E '#wrong: [0-9]+ .* \| (Bus|Alg)BW [0-9.]+% of device copy [0-9]+\.[0-9]+ GB/s' "$s")
m=$(grep -E '^  [A-Za-z]* \(.*device.*\): .*#wrong: ' "$s" | grep -c -v '^  Barrier ')
[ "$n" -gt 0 ] && ! grep -q -E '#wrong: .* of memcpy' "$s" && [ "$n" -eq "$m" ]
ok $? "nccl --np $np: every measured line but a barrier's ends with busBW (one rank: algBW) as % of device copy ($n of $m lines)"
grep -o 'of device copy [0-9.]* GB/s' "$s" | sort -u | sed 's/^/# 4K and 1M: /'
part_done "every op and dtype"

# 1a. --counters (default auto): the real NVML, loaded at run time, read around every cell:
# each cell has gpu0's SM clock and power, and the energy counter rose over the 1M allreduce
report="$(dirname "$COLLPROF_BIN")/collprof-report"
h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
if [ -x "$report" ] && [ -n "$h5" ] && "$report" counters "$h5" --source gpu >"$WORK/gpu_counters" 2>&1; then
    cells=$(awk '$5 == "gpu0/sm_clock" && $8 > 0 { print $1 }' "$WORK/gpu_counters" | sort -u | wc -l)
    rows=$(grep -c '^ *[0-9]' "$WORK/gpu_counters")
    [ "$cells" -gt 0 ] && awk '$5 == "gpu0/power" && $8 > 0' "$WORK/gpu_counters" | grep -q .
    ok $? "--counters: gpu0's SM clock in $cells cells, its power read through NVML ($rows gpu rows)"
    awk 'NR > 1 && $1 ~ /^[0-9]+$/ { seen[$5]++ } END { for (n in seen) print n }' "$WORK/gpu_counters" |
        sort | head -n 40 | tr '\n' ' ' | sed 's/^/# gpu counters read: /; s/$/\n/'
    grep '^flagged:' "$WORK/gpu_counters" | sed 's/^/# /'
else
    echo "# no collprof-report beside $COLLPROF_BIN: --counters not checked"
fi

# 1b. the non-blocking ops: the call on the stream while the host computes (overlap expected)
d="$WORK/nonblocking"
mkdir -p "$d"
cp_run --np "$np" --backends nccl --ops nonblocking --dtype float32,bfloat16 --counts 4K,16M \
    --inplace both -n 5 -w 2 --output-dir "$d"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 20
check_clean_run "$d" "nccl --np $np: iallreduce, iallgather, ialltoall, ibroadcast"
sed -n '/^== non-blocking operations/,/^== fastest/p' "$(summary_of "$d")" | sed 's/^/# /'
part_done "non-blocking"

# 1c. non-blocking communicators (-B nccl-blocking=0): polled, never slept on; a forced
# algorithm's refusal (or, on one rank, its not applying) must leave the communicator usable
d="$WORK/nbcomm"
mkdir -p "$d"
cp_run --np "$np" --backends nccl -B nccl-blocking=0 --variants default,graph,reg,ring-simple \
    --ops allreduce,allgather,broadcast,sendrecv --dtype float32 --counts 4K,1M -n 3 -w 1 \
    --output-dir "$d"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 20
check_clean_run "$d" "nccl --np $np, non-blocking communicators"
grep -q 'nccl-blocking=0' "$(summary_of "$d")"
ok $? "nccl --np $np, non-blocking communicators: the summary records nccl-blocking=0"
part_done "non-blocking communicators"

# 1d. collprof --replay on nccl (docs/replay.md): every op's buffers on the device, filled and
# checked through host copies.  A PARAM trace written here for the run's ranks: a blocking
# allreduce, an async allreduce and allgather waited in the opposite order (posted: on the
# stream with an event each), a coalesced pair of allreduces, broadcast, reducescatter,
# alltoall, an async reduce, a barrier; every op row ok, no wrong element.  With two GPUs or
# more, also the p2p fixture on 2 ranks (a blocking send/recv pair both ranks record send
# first, an isend/irecv past an allreduce, a coalesced send/recv pair: the sends and recvs
# held and launched as one NCCL group), and groups of one rank split from the job's
# communicator.  One GPU runs one rank: no point-to-point, no split there.
report="$(dirname "$COLLPROF_BIN")/collprof-report"
if [ -x "$report" ]; then
    d="$WORK/replay"
    mkdir -p "$d"
    members=$(seq -s ', ' 0 $((np - 1)))
    G='"pg_id": 0, "global_ranks": ['"$members"']'
    for r in $(seq 0 $((np - 1))); do
        cat >"$d/g-rank$r.json" <<EOF
[{"comms": "all_reduce", "seqnum": 1, $G, "in_msg_size": 262144, "out_msg_size": 262144, "dtype": "Float"},
 {"comms": "all_reduce", "seqnum": 2, "req": 1, $G, "in_msg_size": 65536, "out_msg_size": 65536, "dtype": "Float"},
 {"comms": "all_gather", "seqnum": 3, "req": 2, $G, "in_msg_size": 1024, "out_msg_size": $((1024 * np)), "dtype": "BFloat16"},
 {"comms": "wait", "req": 2, $G}, {"comms": "wait", "req": 1, $G},
 {"comms": "all_reduce", "seqnum": 4, "use_batch": true, $G, "in_msg_size": 4096, "out_msg_size": 4096, "dtype": "Float"},
 {"comms": "all_reduce", "seqnum": 5, "use_batch": true, $G, "in_msg_size": 1000, "out_msg_size": 1000, "dtype": "Int"},
 {"comms": "broadcast", "seqnum": 6, $G, "root": $((np - 1)), "in_msg_size": 4096, "out_msg_size": 4096, "dtype": "Double"},
 {"comms": "reduce_scatter", "seqnum": 7, $G, "in_msg_size": $((1024 * np)), "out_msg_size": 1024, "dtype": "Float"},
 {"comms": "all_to_all", "seqnum": 8, $G, "in_msg_size": $((1024 * np)), "out_msg_size": $((1024 * np)), "dtype": "Int"},
 {"comms": "reduce", "seqnum": 9, "req": 3, $G, "root": 0, "in_msg_size": 256, "out_msg_size": 256, "dtype": "Double"},
 {"comms": "wait", "req": 3, $G},
 {"comms": "barrier", "seqnum": 10, $G}]
EOF
    done
    "$report" import --trace param "$d"/g-rank*.json -o "$d/g.h5" >"$WORK/out" 2>&1
    ok $? "replay: the trace of $np rank(s) imports"
    mkdir -p "$d/g"
    cp_run --np "$np" --backends nccl --replay "$d/g.h5" --replay-iters 3 --timeout 120 \
        --output-dir "$d/g"
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 20
    replay_ok "--np $np, collectives (async, coalesced)" "$d/g" $((13 * np))
    n=$(grep -c -E '^(allreduce|allgather|reduce) .*async: posted, completed at its wait' \
        "$(summary_of "$d/g")")
    [ "$n" -eq 3 ]
    ok $? "nccl --replay: the async allreduce, allgather and reduce posted, completed at their waits ($n rows)"
    n=$(grep -c -E '^allreduce .*coalesced [0-9]+: posted as one group call' "$(summary_of "$d/g")")
    [ "$n" -eq 2 ]
    ok $? "nccl --replay: the coalesced allreduces posted as one group call ($n rows)"
    # the variants that change how an op is issued: +graph (a run captured, a post not), +reg
    # (ncclMemAlloc'd buffers, registered), p2p (alltoall as grouped sends and recvs)
    mkdir -p "$d/v"
    cp_run --np "$np" --backends nccl --replay "$d/g.h5" --replay-iters 2 --timeout 120 \
        --variants default,graph,reg+graph,p2p --output-dir "$d/v"
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 20
    n=$(grep -c "^whole trace: $((13 * np)) ops, .* 0 wrong elements: ok" "$(summary_of "$d/v")")
    [ "$rc" -eq 0 ] && [ "$n" -eq 4 ]
    ok $? "nccl --replay --variants default,graph,reg+graph,p2p: one replay each, all exact ($n, exit $rc)"
    if [ "$np" -ge 2 ]; then
        T=$COLLPROF_SRCDIR/tests/data/trace
        "$report" import --trace param "$T/p2p-rank0.json" "$T/p2p-rank1.json" -o "$d/p.h5" \
            >"$WORK/out" 2>&1
        mkdir -p "$d/p"
        cp_run --np 2 --backends nccl --replay "$d/p.h5" --replay-iters 3 --timeout 120 \
            --output-dir "$d/p"
        [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 20
        replay_ok "--np 2, the p2p fixture" "$d/p" 28
        n=$(sed -n '/^== replay on nccl/,/^whole trace:/p' "$(summary_of "$d/p")" |
            awk '($1 == "send" || $1 == "recv") && $12 == "ok"' | wc -l)
        [ "$n" -eq 6 ]
        ok $? "nccl --replay: the send and recv rows (blocking, async, coalesced) ok ($n of 6)"
        # groups smaller than the job: each rank's own group of one, split from the job's
        # communicator (ncclCommSplit where NCCL has it), beside the job's
        W='"pg_id": 0, "global_ranks": [0, 1]'
        for r in 0 1; do
            cat >"$d/s-rank$r.json" <<EOF
[{"comms": "all_reduce", "seqnum": 1, $W, "in_msg_size": 4096, "out_msg_size": 4096, "dtype": "Float"},
 {"comms": "all_reduce", "seqnum": 2, "pg_id": $((r + 1)), "global_ranks": [$r], "in_msg_size": 1024, "out_msg_size": 1024, "dtype": "Float"},
 {"comms": "all_gather", "seqnum": 3, $W, "in_msg_size": 256, "out_msg_size": 512, "dtype": "Float"}]
EOF
        done
        "$report" import --trace param "$d/s-rank0.json" "$d/s-rank1.json" -o "$d/s.h5" \
            >"$WORK/out" 2>&1
        mkdir -p "$d/s"
        cp_run --np 2 --backends nccl --replay "$d/s.h5" --replay-iters 3 --timeout 120 -v \
            --output-dir "$d/s"
        [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 20
        grep -h 'its communicator split' "$WORK/err" | sed 's/^/# /'
        replay_ok "--np 2, groups of one rank beside the job's" "$d/s" 6
    else
        echo "# one GPU: no point-to-point replay (NCCL takes one rank per GPU)"
    fi
else
    echo "# no collprof-report beside $COLLPROF_BIN: --replay not checked"
fi
part_done "replay"

# 2. every reduction on the reducing ops
d="$WORK/redops"
mkdir -p "$d"
cp_run --np "$np" --backends nccl --variants default --ops allreduce,reduce,reducescatter \
    --dtype int32,float16,bfloat16,float32,float64 --redop all --counts 64K -n 3 -w 1 \
    --output-dir "$d"
check_clean_run "$d" "nccl --np $np: every reduction"
part_done "every reduction"

# 3. every variant (algorithm x protocol, +reg, +graph, p2p), two dtypes
d="$WORK/variants"
mkdir -p "$d"
cp_run --np "$np" --backends nccl --variants all --ops all --dtype float32,bfloat16 \
    --counts 4K,1M --inplace both -n 3 -w 1 --output-dir "$d"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 20
check_clean_run "$d" "nccl --np $np: every variant"
part_done "every variant"
s=$(summary_of "$d")
measured="reg graph reg+graph p2p p2p+graph"
forced="ring-simple ring-ll ring-ll128 tree-simple"
# one rank: NCCL selects no algorithm (a device copy), so a forced one is not applicable
[ "$np" -gt 1 ] && measured="$forced $measured" forced=
for v in $measured; do
    awk -v v="$v" '$0 == "== nccl / " v " ==" { m = 1; next } /^== / { m = 0 }
        m && /#wrong: 0 / { n++ } END { exit n > 0 ? 0 : 1 }' "$s"
    ok $? "nccl --np $np: variant $v measured with exact results"
done
for v in $forced; do
    awk -v v="$v" '$0 == "== nccl / " v " ==" { m = 1; next } /^== / { m = 0 }
        m && /#wrong: / { bad++ } m && /not applicable on a single rank/ { n++ }
        END { exit n > 0 && bad == 0 ? 0 : 1 }' "$s"
    ok $? "nccl --np $np: variant $v not applicable on one rank, nothing measured under its name"
done
n=$(grep -c 'unsupported' "$s" 2>/dev/null)
echo "# $n cell(s) unsupported on this machine:"
grep 'unsupported' "$s" 2>/dev/null | sed 's/^/#   /' | sort | uniq -c | head -n 20

# 4. a graph replay and registered buffers under nsys, when it is installed
if command -v nsys >/dev/null 2>&1; then
    d="$WORK/nsys"
    mkdir -p "$d"
    rc=0
    timeout -k 10 "$CP_TIMEOUT" "$COLLPROF_SRCDIR/contrib/profile/collprof-nsys.sh" \
        --output-dir "$d" -- --np "$np" --backends nccl --variants reg+graph \
        --ops allreduce --counts 1M -n 5 -w 1 >"$WORK/out" 2>"$WORK/err" || rc=$?
    ok $rc "collprof-nsys.sh: profiled run"
    ls "$d"/*.nsys-rep >/dev/null 2>&1
    ok $? "collprof-nsys.sh: report written next to the results"
fi
done_testing
