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
done_testing
