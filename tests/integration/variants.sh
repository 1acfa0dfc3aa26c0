#!/bin/sh
# Selecting a variant really changes the algorithm Open MPI runs: Open MPI's
# own monitoring component counts the messages rank 0 sends to each peer,
# and each forced allreduce algorithm has its own traffic pattern on 4 ranks.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_mpirun
ompi_info 2>/dev/null | grep -q "MCA pml: monitoring" || skip_all "Open MPI has no monitoring component"

# messages rank 0 sent to peers 1, 2, 3 for 10 allreduces of 4K floats under variant $1
traffic() {
    d="$WORK/$1"
    mkdir -p "$d"
    OMPI_MCA_pml_monitoring_enable=1 OMPI_MCA_pml_monitoring_enable_output=3 \
        OMPI_MCA_pml_monitoring_filename="$d/prof" \
        cp_run --np 4 --backends mpi --ops allreduce --variants "$1" --counts 4K -n 10 -w 0 -c 0 \
        --sync none --output-dir "$d"
    [ "$rc" -eq 0 ] || echo "# collprof failed ($rc): $(cat "$WORK/err")" >&2
    awk -F'\t' '$1 == "E" && $2 == 0 { split($5, a, " "); n[$3] = a[1] }
                END { print n[1] + 0, n[2] + 0, n[3] + 0 }' "$d/prof.0.prof" 2>/dev/null
}

lin=$(traffic basic_linear)
ring=$(traffic ring)
rd=$(traffic recursive_doubling)
echo "# rank 0 -> ranks 1 2 3: basic_linear [$lin] ring [$ring] recursive_doubling [$rd]"
set -- $lin
[ "${3:-0}" -ge 10 ]
ok $? "basic_linear: rank 0 talks to rank 3 in every call ($lin)"
set -- $ring
[ "${3:-1}" -eq 0 ] && [ "${1:-0}" -ge 60 ]
ok $? "ring: rank 0 sends only around the ring, 2(n-1) messages per call ($ring)"
set -- $rd
[ "${3:-1}" -eq 0 ] && [ "${1:-0}" -ge 10 ] && [ "${2:-0}" -ge 10 ]
ok $? "recursive_doubling: rank 0 exchanges with ranks 1 and 2 only ($rd)"
[ "$lin" != "$ring" ] && [ "$ring" != "$rd" ] && [ "$lin" != "$rd" ]
ok $? "the three variants produce three different traffic patterns"
done_testing
