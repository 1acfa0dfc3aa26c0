#!/bin/sh
# Under Open MPI's mpirun (its own PMIx server): 2 and 4 ranks, every
# operation and variants, exact results.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_mpirun

for np in 2 4; do
    d="$WORK/mpirun$np"
    mkdir -p "$d"
    cp_mpirun "$np" --backends mpi --ops all --counts 4K,96K --inplace both -n 5 -w 1 --variants default \
        --output-dir "$d"
    check_clean_run "$d" "mpirun -np $np, every op, in and out of place"
    s=$(summary_of "$d")
    grep -q '^launcher: *mpirun' "$s"
    ok $? "mpirun -np $np: launcher recorded"
done

d="$WORK/all_variants"
mkdir -p "$d"
cp_mpirun 2 --backends mpi --ops all --counts 32K -n 2 -w 1 --output-dir "$d"
check_clean_run "$d" "mpirun -np 2, every op and every variant"
s=$(summary_of "$d")
nv=$(grep -c '^== mpi / ' "$s")
[ "$nv" -ge 20 ]
ok $? "every variant has a section ($nv)"

# the watchdog under mpirun's PMIx server: rank 1 hangs in cell 1
d="$WORK/hang"
mkdir -p "$d"
COLLPROF_FAULT=hang:1:1 cp_mpirun 3 --backends mpi --ops allreduce --counts 1K,2K -n 10 -w 2 \
    --variants default --timeout 3 --output-dir "$d"
s=$(summary_of "$d")
[ "$rc" -ne 0 ] && grep -q 'Did not arrive: rank 1 (.*) last seen in the barrier before iteration 6' \
    "$WORK/err" && grep -q '^timeouts: *1$' "$s" && grep -q 'AllReduce: .*#wrong: 0' "$s"
ok $? "mpirun: the watchdog names the hung rank and keeps the completed cell (exit $rc)"
done_testing
