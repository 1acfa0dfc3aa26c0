#!/bin/sh
# A rank that really stops (SIGSTOP: a stuck driver, a debugger, a swapped-out
# process) is named within --timeout + 5 s, whichever rank it is: rank 0
# (which writes the results: its first deputy, rank 1, reports once), a middle
# rank, the last one; rank 0 and its first deputy together (deputy 2, rank 2,
# reports once); 2 and 4 ranks; under --np and mpirun (srun: slurm.sh, on its
# cluster).  About 55 s.
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
done_testing
