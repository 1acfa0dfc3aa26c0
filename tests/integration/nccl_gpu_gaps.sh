#!/bin/sh
# collprof --replay --gaps compute on the device (the GPU kit's `gaps` step, contrib/gpu/run.sh,
# and make check-gpu; docs/replay.md "Gaps", docs/nccl.md): the gaps filled by the nccl
# plugin's busy PTX kernel on a stream beside the collectives', one rank per GPU (up to 8).  A
# PARAM trace for the run's ranks: 5 rounds 30 ms apart of an async allreduce of 16 MiB, its
# wait 10 ms later (the kernel runs over those 10 ms while the allreduce is in flight), and a
# blocking allreduce of 16 MiB 2 ms after the wait.  Every op ok; the summary says the gaps
# ran on the device as a busy kernel; the kernel's 1000 us took 900-1500 us between CUDA
# events; the exposed communication and the per-rank gap table are there.  Then the same
# under CUDA_DISABLE_PTX_JIT=1: the kernel or, where the driver then refuses the PTX, the
# device-to-device copies with their warning (printed, either accepted).  Exits 77 (skip)
# without the NCCL backend, collprof-report or a GPU.  CP_GAPS_ELEMS: the allreduces' floats
# (4194304; the CUDA/NCCL stand-in takes at most 262144).
: "${COLLPROF_BIN:?set COLLPROF_BIN (contrib/gpu/run.sh and make check-gpu do)}"
CP_TIMEOUT=${CP_TIMEOUT:-120}
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_gpus
need_report
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
echo "# $np rank(s), one GPU each"


d="$WORK/c"
mkdir -p "$d"
members=$(seq -s ', ' 0 $((np - 1)))
for r in $(seq 0 $((np - 1))); do
    awk -v G='"pg_id": 0, "global_ranks": ['"$members"']' -v sz="${CP_GAPS_ELEMS:-4194304}" 'BEGIN {
        printf "["
        for (k = 0; k < 5; k++) {
            t = 5000000000 + k * 30000000
            printf "%s{\"comms\": \"all_reduce\", \"seqnum\": %d, \"req\": %d, %s, \"in_msg_size\": %d, \"out_msg_size\": %d, \"dtype\": \"Float\", \"startTime_ns\": %.0f},\n", k ? " " : "", 2 * k, k + 1, G, sz, sz, t
            printf " {\"comms\": \"wait\", \"req\": %d, %s, \"startTime_ns\": %.0f},\n", k + 1, G, t + 10000000
            printf " {\"comms\": \"all_reduce\", \"seqnum\": %d, %s, \"in_msg_size\": %d, \"out_msg_size\": %d, \"dtype\": \"Float\", \"startTime_ns\": %.0f}%s\n", 2 * k + 1, G, sz, sz, t + 12000000, k < 4 ? "," : ""
        }
        printf "]\n" }' >"$d/c-rank$r.json"
done
"$REPORT" import --trace param "$d"/c-rank*.json -o "$d/c.h5" >"$WORK/out" 2>&1
ok $? "replay --gaps compute: the trace of $np rank(s) imports"
cp_run --np "$np" --backends nccl --replay "$d/c.h5" --replay-iters 3 --gaps compute \
    --timeout 120 -v --output-dir "$d"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 20
replay_ok "--np $np --gaps compute (a busy kernel in each gap)" "$d" $((15 * np))
s=$(summary_of "$d")
grep -h 'busy kernel on device' "$WORK/err" | sed 's/^.*nccl: /# /'
cal=$(sed -n 's/.*1000 us of it took \([0-9.]*\) us on the device.*/\1/p' "$WORK/err" | head -n 1)
[ -n "$s" ] && grep -q "^== replay on nccl (p50 over 3 replays, gaps compute on the device (busy kernel)) ==" "$s" &&
    awk -v c="${cal:-0}" 'BEGIN { exit (c >= 900 && c <= 1500) ? 0 : 1 }'
ok $? "nccl --gaps compute: the gaps ran as a busy kernel on the device, its 1000 us took ${cal:-?} us"
[ -n "$s" ] && grep -q '^exposed communication: [0-9.]* us' "$s" &&
    grep -q '^gaps compute on the device (busy kernel): each rank' "$s" &&
    [ "$(sed -n '/^gaps compute on the device/,/^$/p' "$s" | grep -c '^ *[0-9]')" -eq "$np" ]
ok $? "nccl --gaps compute: the exposed communication and each rank's gap table are there"
[ -n "$s" ] && sed -n '/^whole trace:/,/^$/p' "$s" | sed 's/^/# /'
mkdir -p "$d/nojit"
CUDA_DISABLE_PTX_JIT=1 cp_run --np "$np" --backends nccl --replay "$d/c.h5" --replay-iters 1 \
    --gaps compute --timeout 120 --output-dir "$d/nojit"
s=$(summary_of "$d/nojit")
grep -h 'gaps compute' "$WORK/err" | sed 's/^/# CUDA_DISABLE_PTX_JIT=1: /'
[ "$rc" -eq 0 ] && [ -n "$s" ] && grep -q -E '^== replay on nccl .*gaps compute on the device \((busy kernel|device copies)\)\) ==$' "$s"
ok $? "nccl --gaps compute under CUDA_DISABLE_PTX_JIT=1: $(grep -o 'on the device ([a-z ]*)' "$s" | head -n 1) (exit $rc)"

done_testing
