#!/bin/sh
# Non-blocking operations (iallreduce, iallgather, ialltoall, ibroadcast) as
# OSU's osu_i* benchmarks measure them: on 2 ranks, on every backend that
# offers them here (self, mpi, the nccl plugin on the CUDA/NCCL stand-in,
# and ofi on shm (3 ranks) and tcp;ofi_rxm), every op and size exact, PASSED, the overlap table in the
# summary and the overall/comm/compute/overlap columns in /results with
# the overlap within [0, 100].  --ops all leaves them out; gloo does not
# offer them (its collectives are synchronous calls).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT="$(dirname "$COLLPROF_BIN")/collprof-report"
plugins=${COLLPROF_PLUGIN_PATH%%:*}

# check_nb DIR WHAT CELLS: a clean run whose CELLS rows are i-ops with sane overlap figures
check_nb() {
    local d=$1 what=$2 want=$3 s n
    check_clean_run "$d" "$what"
    s=$(summary_of "$d")
    n=$(sed -n '/^== non-blocking operations/,/^== fastest/p' "$s" |
        grep -c -E '^  i(allreduce|allgather|alltoall|broadcast) ')
    [ "$n" -eq "$want" ]
    ok $? "$what: the summary's overlap table has $want rows (got $n)"
    "$REPORT" export --csv "$d" >"$WORK/csv" 2>"$WORK/csverr"
    # the nb columns counted from the end of a row (an earlier quoted field may hold a comma)
    awk -F, -v want="$want" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i
                  eo = NF - col["overall_us"]; ec = NF - col["comm_us"]
                  ep = NF - col["compute_us"]; el = NF - col["overlap_pct"]; next }
        { n++
          if ($col["op"] !~ /^i(allreduce|allgather|alltoall|broadcast)$/) bad++
          if ($col["status"] != "ok" || $col["wrong"] != 0) bad++
          o = $(NF - eo); c = $(NF - ec); p = $(NF - ep); l = $(NF - el)
          if (!(o > 0 && c > 0 && p > 0 && l >= 0 && l <= 100)) { bad++; print "# bad: " $0 } }
        END { exit (n == want && !bad) ? 0 : 1 }' "$WORK/csv"
    ok $? "$what: /results has $want ok i-op rows with overall, comm, compute > 0, overlap in [0,100]"
    sed -n '/^== non-blocking operations/,/^== fastest/p' "$s" >"$WORK/nb_run"
    "$REPORT" summary "$d" 2>/dev/null | sed -n '/^== non-blocking operations/,/^== fastest/p' \
        >"$WORK/nb_report"
    [ -s "$WORK/nb_run" ] && cmp -s "$WORK/nb_run" "$WORK/nb_report"
    ok $? "$what: collprof-report summary prints the same overlap table from the file"
}

# --ops all is the blocking ops only; --ops nonblocking the four i-ops
d="$WORK/self"
mkdir -p "$d"
cp_run --np 2 --backends self --ops all --counts 1K -n 1 -w 0 --output-dir "$d"
s=$(summary_of "$d")
[ "$rc" -eq 0 ] && ! grep -q -E '^  i(allreduce|allgather|alltoall|broadcast) ' "$WORK/out" &&
    grep -q '^  self .* allreduce ' "$WORK/out"
ok $? "--ops all: the blocking ops, no non-blocking one"
rm -f "$d"/*
cp_run --np 2 --backends self --ops nonblocking --counts 1K,4097 -d int32,float32 --inplace both \
    -n 3 -w 1 --output-dir "$d"
check_nb "$d" "self" 32
cp_run --np 2 --backends self --ops nonblock --counts 1K --output-dir "$d"
[ "$rc" -eq 2 ] && grep -q "unknown operation 'nonblock'.*nonblocking" "$WORK/err"
ok $? "--ops nonblock: usage error naming the choices (exit $rc)"

# mpi: MPI_Iallreduce, MPI_Iallgather, MPI_Ialltoall, MPI_Ibcast
if [ -e "$plugins/collprof_mpi.so" ]; then
    d="$WORK/mpi"
    mkdir -p "$d"
    cp_run --np 2 --backends mpi --ops nonblocking --counts 1K,64K -d int32,float32 \
        --inplace both -n 3 -w 1 --output-dir "$d"
    check_nb "$d" "mpi" 32
    mkdir -p "$d/wrong"
    COLLPROF_FAULT=wrong:1 cp_run --np 2 --backends mpi --ops iallgather --counts 1K -n 2 -w 1 \
        --output-dir "$d/wrong"
    [ "$rc" -eq 1 ] && grep -q '^result: *FAILED' "$(summary_of "$d/wrong")"
    ok $? "mpi: a corrupted element of an iallgather result is caught (exit $rc)"
fi

# ofi: the blocking twin's RMA writes posted, the computation, the rest in the wait; the default
# (roundrobin) and direct variants, shm on 3 ranks with an uneven count and root 1, tcp;ofi_rxm
# (under the sanitizers, whose instrumented polling is slow, one size each)
if [ -e "$plugins/collprof_ofi.so" ]; then
    shm_counts=999,64K tcp_counts=4K,64K per=2
    if [ "${CP_TIMING_UNRELIABLE:-0}" = 1 ]; then
        shm_counts=999 tcp_counts=4K per=1
    fi
    d="$WORK/ofi_shm"
    mkdir -p "$d"
    cp_run --np 3 --backends ofi --ofi-provider shm --ops nonblocking --counts "$shm_counts" \
        -d int32,float64 --root 1 --inplace both --variants default,direct -n 2 -w 1 \
        --output-dir "$d"
    check_nb "$d" "ofi shm --np 3" $((32 * per))
    d="$WORK/ofi_tcp"
    mkdir -p "$d"
    cp_run --np 2 --backends ofi --ofi-provider 'tcp;ofi_rxm' --ops nonblocking \
        --counts "$tcp_counts" --inplace both --variants default,direct -n 2 -w 1 --output-dir "$d"
    check_nb "$d" "ofi tcp;ofi_rxm --np 2" $((16 * per))
    mkdir -p "$d/wrong"
    COLLPROF_FAULT=wrong:1 cp_run --np 2 --backends ofi --ofi-provider shm --ops iallreduce \
        --counts 1K -n 2 -w 1 --variants direct --output-dir "$d/wrong"
    [ "$rc" -eq 1 ] && grep -q '^result: *FAILED' "$(summary_of "$d/wrong")"
    ok $? "ofi: a corrupted element of an iallreduce result is caught (exit $rc)"
fi

# gloo: unsupported, with the reason that it does not offer them
if [ -e "$plugins/collprof_gloo.so" ]; then
    d="$WORK/gloo"
    mkdir -p "$d"
    cp_run --np 2 --backends gloo,self --ops iallreduce,ibroadcast --counts 1K -n 1 -w 0 \
        --output-dir "$d"
    [ "$rc" -eq 0 ] && [ "$(grep -c 'unsupported: gloo does not offer i' "$WORK/out")" -eq 2 ]
    ok $? "gloo: the i-ops unsupported (gloo does not offer them), self's measured"
fi

# nccl on the CUDA/NCCL stand-in: the op enqueued on the stream, the host computes, then the wait
mock="$(dirname "$COLLPROF_BIN")/tests/nccl_mock/.libs"
if [ -e "$mock/collprof_nccl.so" ]; then
    d="$WORK/nccl"
    mkdir -p "$d"
    COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH" cp_run --np 2 --backends nccl \
        --ops nonblocking --counts 1K,3001 -d int32,float32 --inplace both -n 3 -w 1 \
        --output-dir "$d"
    check_nb "$d" "nccl stand-in" 32
    grep -q '^  iallreduce .* device ' "$(summary_of "$d")"
    ok $? "nccl stand-in: the i-ops ran on device memory"
fi
done_testing
