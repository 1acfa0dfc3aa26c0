#!/bin/sh
# A rank that really stops (SIGSTOP: a stuck driver, a debugger, a swapped-out
# process) is named within --timeout + 5 s, whichever rank it is: rank 0
# (which writes the results: its first deputy, rank 1, reports once), a middle
# rank, the last one; rank 0 and its first deputy together (deputy 2, rank 2,
# reports once); 2 and 4 ranks; under --np and mpirun (srun: slurm.sh, on its
# cluster).  About 55 s.  Then rank 0 resumed (SIGCONT) once the other ranks gave up on
# it, before the launcher ends the job: it records the timeout and closes its files as
# incomplete; and the whole job suspended past --timeout and resumed together (Slurm's
# suspend): no timeout, the run completes.  About 15 s more.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_mpirun
COLLPROF_REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}

for np_rank in "2 0" "4 0" "4 2" "4 3" "4 0 1"; do
    # ranks, then the ranks to stop
    stop_rank_case "--np ${np_rank%% *}" "${np_rank#* }" "$COLLPROF_BIN" --np "${np_rank%% *}"
done
STOP_ROW=maybe
stop_rank_case "mpirun -np 3" 0 "$CP_MPIRUN" --allow-run-as-root --oversubscribe \
    --bind-to none -np 3 -x COLLPROF_PLUGIN_PATH -x COLLPROF_FAULT "$COLLPROF_BIN"

# resume_case WHAT NP RANKS: NP ranks on six mpi cells (--timeout $STOP_TMO); once the first
# cell is written, SIGSTOP the processes of RANKS; with RANKS "0", SIGCONT rank 0 once another
# rank logs that it gave up on it (its watchdog found no progress), before any deputy ends the
# job; else (every rank) SIGCONT them all after --timeout + 2 s.  Sets rc, d, err.
resume_case() {
    local what=$1 np=$2 r=$3 p q victim t0 i
    d=$(mktemp -d "$WORK/resume.XXXXXX")
    err=$d/err
    COLLPROF_FAULT=slow:all:1000 timeout -k 5 150 "$COLLPROF_BIN" --np "$np" --backends mpi \
        --variants default --ops allreduce --counts 1K,2K,4K,8K,16K,32K -n 300 -w 2 \
        --timeout "$STOP_TMO" --output-dir "$d" </dev/null >"$d/out" 2>"$err" &
    pid=$!
    for _ in $(seq 1200); do
        [ "$(grep -c 'ms | AlgBW' "$(summary_of "$d")" 2>/dev/null)" -ge 1 ] 2>/dev/null && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    victim=
    for q in $r; do
        for p in $(pgrep -f -- "--output-dir $d"); do
            tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "PMIX_RANK=$q" &&
                victim="$victim $p"
        done
    done
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # one pid a word
    [ -n "$victim" ] && kill -STOP $victim
    if [ "$r" = 0 ]; then
        # rank 1, 2 or 3 logs its stall, then waits 2 s for rank 0's record before it acts
        i=0
        until grep -q '^collprof\[[1-9][0-9]*\]: error: watchdog: no progress for .*reporting to rank 0' "$err" ||
            [ "$i" -ge 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        sleep 0.3
    else
        sleep $((STOP_TMO + 2))
    fi
    # shellcheck disable=SC2086
    [ -n "$victim" ] && kill -CONT $victim
    echo "# $what: resumed $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s after the stop (--timeout $STOP_TMO)"
    rc=0
    wait $pid || rc=$?
    [ -n "$victim" ]
    ok $? "$what: the ranks to stop were found"
}
# the summary's and the HDF5 file's status and cells: ok cells, timeout rows
resume_files() {
    s=$(summary_of "$d")
    "$COLLPROF_REPORT" export --csv "${s%.txt}.h5" >"$d/csv" 2>&1
    "$COLLPROF_REPORT" summary "${s%.txt}.h5" >"$d/rsum" 2>&1
    nok=$(grep -c ',ok,' "$d/csv")
    ntmo=$(grep -c ',timeout,' "$d/csv")
    ntxt=$(grep -c 'ms | AlgBW' "$s" 2>/dev/null)
}

resume_case "--np 4, rank 0 resumed after the others gave up" 4 0
resume_files
[ "$rc" -eq 124 ]
ok $? "rank 0 resumed after the others gave up: exit 124 (got $rc)"
[ "$(grep -c '^collprof: error: timeout: cell' "$err")" -eq 1 ] &&
    ! grep -q 'out-of-band exchange failed' "$err" "$s"
r=$?
ok $r "rank 0 resumed after the others gave up: one report, no cell run without its peers"
[ "$r" -eq 0 ] || sed 's/^/# /' "$err" | head -n 30
[ "$ntmo" -eq 1 ] && [ "$nok" -ge 1 ] && [ "$ntxt" -eq "$nok" ] && [ "$((nok + ntmo))" -le 6 ] &&
    grep -q '^timeouts: *1$' "$s" && grep -q '^result: *INCOMPLETE: an operation timed out' "$s" &&
    grep -q 'status: *incomplete' "$d/rsum"
r=$?
ok $r "rank 0 resumed after the others gave up: both files keep the $nok completed cells, one timeout row, incomplete"
[ "$r" -eq 0 ] || { grep -e '^result' -e '^timeouts' "$s"; grep status "$d/rsum"; } | sed 's/^/# /'
sleep 0.5
! pgrep -f -- "--output-dir $d" >/dev/null
ok $? "rank 0 resumed after the others gave up: no process left"

resume_case "--np 3, every rank suspended and resumed" 3 "0 1 2"
resume_files
[ "$rc" -eq 0 ] && ! grep -q -e 'error: timeout' -e 'error: watchdog' "$err"
r=$?
ok $r "every rank suspended past --timeout and resumed: exit 0, no timeout (got $rc)"
[ "$r" -eq 0 ] || sed 's/^/# /' "$err" | head -n 30
[ "$nok" -eq 6 ] && [ "$ntxt" -eq 6 ] && grep -q "^result: *PASSED" "$s" &&
    grep -q 'status: *complete' "$d/rsum"
ok $? "every rank suspended and resumed: both files hold the 6 cells, status complete ($nok, $ntxt)"
done_testing
