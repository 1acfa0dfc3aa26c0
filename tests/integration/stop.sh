#!/bin/sh
# A rank that really stops (SIGSTOP: a stuck driver, a debugger, a swapped-out
# process) is named within --timeout + 5 s, whichever rank it is: rank 0
# (which writes the results), a middle rank, the last one; 2 and 4 ranks;
# under --np and mpirun (srun: slurm.sh, on its cluster).  About 45 s.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_mpirun
COLLPROF_REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}

for np_rank in "2 0" "4 0" "4 2" "4 3"; do
    # shellcheck disable=SC2086 # two words: ranks and the rank to stop
    set -- $np_rank
    stop_rank_case "--np $1" "$2" "$COLLPROF_BIN" --np "$1"
done
STOP_ROW=maybe
stop_rank_case "mpirun -np 3" 0 "$CP_MPIRUN" --allow-run-as-root --oversubscribe \
    --bind-to none -np 3 -x COLLPROF_PLUGIN_PATH -x COLLPROF_FAULT "$COLLPROF_BIN"
done_testing
