#!/bin/sh
# Gloo backend: every op and every variant on 2 and 4 self-launched ranks
# (in and out of place, exact results; gatherv and scatterv, which Gloo lacks,
# unsupported), odd-rank and dtype refusals reported as unsupported cells,
# one run under mpirun, Gloo next to MPI, and how the pairs' addresses go round
# (COLLPROF_GLOO_ADDR).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
[ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_gloo.so" ] || skip_all "the Gloo backend was not built"

VARIANTS=default,ring,ring_chunked,halving_doubling,bcube,opt_bcube,one_to_all,all_to_all,all_to_one

for np in 2 4; do
    d="$WORK/np$np"
    mkdir -p "$d"
    cp_run --np "$np" --backends gloo --ops all --counts 4K,64K --inplace both -n 3 -w 1 \
        --variants "$VARIANTS" --output-dir "$d"
    [ "$rc" -eq 0 ] || echo "# collprof failed ($rc): $(tail -n 5 "$WORK/err")" >&2
    check_clean_run "$d" "gloo --np $np, every op and variant, in and out of place"
    s=$(summary_of "$d")
    for v in ring ring_chunked halving_doubling bcube opt_bcube one_to_all all_to_all all_to_one; do
        grep -q "^== gloo / $v ==" "$s"
        ok $? "gloo --np $np: variant $v ran and is recorded"
    done
    # Gloo 0.5 has no gatherv, and its scatter wants equal blocks: --ops all includes both
    ! grep 'unsupported:' "$s" |
        grep -v -q -E '^  (Gatherv|Scatterv)( \(.*\))?: +unsupported: gloo does not offer (gatherv|scatterv)$'
    ok $? "gloo --np $np: no cell reported unsupported but gatherv and scatterv"
    grep -q '^  Gatherv.*: *unsupported: gloo does not offer gatherv' "$s" &&
        grep -q '^  Scatterv.*: *unsupported: gloo does not offer scatterv' "$s"
    ok $? "gloo --np $np: gatherv and scatterv unsupported, saying gloo does not offer them"
done

check_allgatherv_specs 3 "gloo --np 3" --backends gloo --variants default

# every dtype Gloo has and every reduction, on an odd world (3 ranks)
d="$WORK/dtypes"
mkdir -p "$d"
# every dtype; under sanitizers (2-3x slower) a representative subset
dtypes=int8,uint8,int32,uint32,int64,uint64,float16,float32,float64
variants=default,ring,ring_chunked,halving_doubling
if [ "${CP_TIMING_UNRELIABLE:-0}" = 1 ]; then
    dtypes=int8,uint64,float16,float64
    variants=default,halving_doubling
fi
# one run per dtype (1440 cells in one run took 150 s while the per-cell exchanges went
# through PMIx, whose key store grows with each; bench/oob_cells.sh measures that run)
for dt in $(echo "$dtypes" | tr ',' ' '); do
    mkdir -p "$d/$dt"
    cp_run --np 3 --backends gloo --ops allreduce,reducescatter,reduce,allgather,broadcast \
        --counts 3K -d "$dt" -o sum,prod,min,max --inplace both -n 2 -w 1 \
        --variants "$variants" --output-dir "$d/$dt"
    check_clean_run "$d/$dt" "gloo --np 3, $dt, every reduction"
done

# refusals: bfloat16 (Gloo has no such type) and bcube on an odd world
d="$WORK/unsup"
mkdir -p "$d"
cp_run --np 3 --backends gloo --ops allreduce --counts 3K -d float32,bfloat16 -n 2 -w 1 \
    --variants default,bcube,opt_bcube --output-dir "$d"
s=$(summary_of "$d")
[ "$rc" -eq 0 ] && [ -n "$s" ]
ok $? "unsupported combinations: exit status 0 (got $rc)"
[ "$(grep -c 'unsupported: .*bcube needs a number of ranks divisible' "$s")" -eq 2 ]
ok $? "bcube and opt_bcube on 3 ranks are unsupported cells with a reason"
[ "$(grep -c 'unsupported: .*bfloat16' "$s")" -eq 3 ]
ok $? "bfloat16 is an unsupported cell for every variant"
grep -q '^result: *PASSED' "$s"
ok $? "unsupported combinations: summary still PASSED"

# under mpirun (PMIx from Open MPI's launcher)
if [ -n "${CP_MPIRUN:-}" ] && [ -x "$CP_MPIRUN" ]; then
    d="$WORK/mpirun"
    mkdir -p "$d"
    cp_mpirun 4 --backends gloo --ops all --counts 4K,64K -n 3 -w 1 --variants "$VARIANTS" \
        --output-dir "$d"
    check_clean_run "$d" "gloo under mpirun -np 4"
else
    echo "# mpirun not found: mpirun run skipped"
fi

# Gloo next to MPI in one run
if [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ] && [ -n "${CP_MPIRUN:-}" ]; then
    d="$WORK/both"
    mkdir -p "$d"
    cp_run --np 2 --backends mpi,gloo --ops allreduce,allgather --counts 64K -n 3 -w 1 \
        --variants default --output-dir "$d"
    check_clean_run "$d" "mpi and gloo side by side"
    s=$(summary_of "$d")
    grep -q '^== mpi / default ==' "$s" && grep -q '^== gloo / default ==' "$s"
    ok $? "both backends are in one summary"
fi

# the interface: GLOO_SOCKET_IFNAME is honoured (a missing one is named), -B iface= wins over it
# (-w 8 -n 1: more warm-up than timed iterations, which once overflowed the samples; issue 14 B3)
cp_run --np 2 --backends gloo --ops allreduce --counts 1K -n 1 -w 8 -v --output-dir "$WORK" \
    -B iface=lo
grep -q 'gloo: full mesh of 2 ranks on .*iface=lo.*addr=\[127.0.0.1\] (interface of -B iface=' \
    "$WORK/err"
ok $? "gloo -B iface=lo: the device is on lo, chosen by the option (-v says so)"
GLOO_SOCKET_IFNAME=cpnone0 cp_run --np 2 --backends gloo --ops allreduce --counts 1K -n 2 -w 1 \
    --output-dir "$WORK"
[ "$rc" -ne 0 ] && grep -q 'interface of GLOO_SOCKET_IFNAME: .*cpnone0' "$WORK/err"
ok $? "GLOO_SOCKET_IFNAME=cpnone0: gloo refuses, naming the variable and the interface"
GLOO_SOCKET_IFNAME=cpnone0 cp_run --np 2 --backends gloo --ops allreduce --counts 1K -n 2 -w 1 \
    --output-dir "$WORK" -B iface=lo
ok $rc "GLOO_SOCKET_IFNAME=cpnone0 -B iface=lo: the option wins, the run passes"
# the pair addresses over PMIx (COLLPROF_OOB=pmix: no TCP channel) and over the TCP channel's
# all-to-all: both connect the full mesh; -v -v says which channel ran
for oob in pmix tcp; do
    COLLPROF_OOB=$oob cp_run --np 3 --backends gloo --ops allreduce,alltoall --counts 3K -n 2 \
        -w 1 -v -v --output-dir "$WORK"
    [ "$rc" -eq 0 ] && if [ "$oob" = pmix ]; then ! grep -q 'channel tcp' "$WORK/err"; else
        grep -q 'channel tcp' "$WORK/err"
    fi
    ok $? "COLLPROF_OOB=$oob: gloo's full mesh of 3 ranks connects, every cell exact (exit $rc)"
done
# the pairs' addresses (issue 26): by default one record per rank, never the n x n table
# (Gloo with one listener per device: the pairs' sequence numbers are derived; Gloo with a port
# per pair, as Debian 12's: a record per rank and each pair's 2-byte port); -v says which.
# COLLPROF_GLOO_ADDR=table keeps the table: the same cells and exact results, and more control
# bytes at rank 0 at start-up (its "oob (start-up)" line); another value is refused, named.
shape() { # the summary's sections and cells with their #wrong or status, no timings
    sed -n -E '/^== /p; /^Tensor Size/p; s/^  ([^:|]+): .*(#wrong: [0-9]+).*/\1 \2/p
        s/^  ([^:|]+): +(unsupported.*|failed.*|error.*)/\1 \2/p' "$1"
}
startup_bytes() { # ERR NP: rank 0's start-up control bytes, "SENT READ"
    sed -n "s/.* r0\/$2 [^]]*\] oob (start-up): .*, \([0-9]*\) bytes sent, \([0-9]*\) bytes read\$/\1 \2/p" "$1"
}
for mode in auto table; do
    d="$WORK/addr_$mode"
    mkdir -p "$d"
    COLLPROF_GLOO_ADDR=$mode cp_run --np 8 --backends gloo --ops allreduce,alltoall,broadcast \
        --counts 3K -n 2 -w 1 --variants default,ring,one_to_all -v --output-dir "$d"
    cp "$WORK/err" "$d/err"
    check_clean_run "$d" "COLLPROF_GLOO_ADDR=$mode --np 8"
done
da="$WORK/addr_auto" dt="$WORK/addr_table"
grep -q -E 'r0/8 [^]]*\] gloo: addresses: one per rank (\(derived pair sequence numbers\)|and each pair.s port)' \
    "$da/err"
ok $? "gloo's pair addresses: one record per rank by default (-v says so)"
if grep -q '^backend: *gloo .*(tcp: a listener per device)' "$(summary_of "$da")"; then
    grep -q 'r0/8 [^]]*\] gloo: addresses: one per rank (derived pair sequence numbers)' "$da/err"
    ok $? "Gloo with a listener per device: a record per rank, the pairs' addresses derived"
else
    grep -q "r0/8 [^]]*\] gloo: addresses: one per rank and each pair's port" "$da/err"
    ok $? "Gloo with a port per pair (Debian 12's): a record per rank and each pair's port"
fi
grep -q 'r0/8 [^]]*\] gloo: addresses: table (COLLPROF_GLOO_ADDR=table on rank 0)' "$dt/err"
ok $? "COLLPROF_GLOO_ADDR=table: the full table (-v says so)"
shape "$(summary_of "$da")" >"$WORK/shape_auto"
shape "$(summary_of "$dt")" >"$WORK/shape_table"
[ "$(grep -c '#wrong: 0$' "$WORK/shape_auto")" -eq 5 ] && cmp -s "$WORK/shape_auto" "$WORK/shape_table"
ok $? "COLLPROF_GLOO_ADDR=table and the default: the same cells, the same results"
read -r sa ra <<EOF2
$(startup_bytes "$da/err" 8)
EOF2
read -r st rt <<EOF2
$(startup_bytes "$dt/err" 8)
EOF2
# the table's all-to-all alone moves 7 x 8 x 144 bytes each way at rank 0
[ -n "$sa" ] && [ -n "$st" ] && [ $((st - sa)) -gt 4000 ] && [ $((rt - ra)) -gt 4000 ]
ok $? "rank 0's start-up control bytes: default $sa sent, $ra read; table $st sent, $rt read"
COLLPROF_GLOO_ADDR=bogus cp_run --np 2 --backends gloo --ops allreduce --counts 1K -n 2 -w 1 \
    --output-dir "$WORK"
[ "$rc" -ne 0 ] && grep -q "COLLPROF_GLOO_ADDR is 'bogus': neither auto nor table" "$WORK/err"
ok $? "COLLPROF_GLOO_ADDR=bogus: gloo refuses, naming the variable and its value"
# the way is decided alike on every rank, from every rank's record: under mpirun with
# COLLPROF_GLOO_ADDR=table on ranks 2-3 only, all four take the table, and a bad value on ranks
# 2-3 stops the backend on every rank, rank 0 naming rank 2
if [ -n "${CP_MPIRUN:-}" ] && [ -x "$CP_MPIRUN" ]; then
    for v in table bogus; do
        d="$WORK/addr_mpmd_$v"
        mkdir -p "$d"
        rc=0
        timeout -k 10 "$CP_TIMEOUT" "$CP_MPIRUN" --allow-run-as-root --oversubscribe \
            --bind-to none -np 2 -x COLLPROF_PLUGIN_PATH "$COLLPROF_BIN" --backends gloo \
            --ops allreduce,alltoall --counts 1K -n 2 -w 1 -v -v --output-dir "$d" : \
            -np 2 -x COLLPROF_PLUGIN_PATH env COLLPROF_GLOO_ADDR=$v "$COLLPROF_BIN" \
            --backends gloo --ops allreduce,alltoall --counts 1K -n 2 -w 1 -v -v --output-dir "$d" \
            </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
        if [ "$v" = table ]; then
            check_clean_run "$d" "mpirun, COLLPROF_GLOO_ADDR=table on ranks 2-3"
            [ "$(grep -c 'r[0-3]/4 [^]]*\] gloo: addresses: table (COLLPROF_GLOO_ADDR=table on rank 2)' \
                "$WORK/err")" -eq 4 ]
            ok $? "mpirun, COLLPROF_GLOO_ADDR=table on ranks 2-3: every rank takes the table"
        else
            [ "$rc" -ne 0 ] &&
                grep -q 'failed on rank 0: .*COLLPROF_GLOO_ADDR of rank 2 is neither auto nor table' \
                    "$WORK/err"
            ok $? "mpirun, COLLPROF_GLOO_ADDR=bogus on ranks 2-3: rank 0 refuses too, naming rank 2"
        fi
    done
fi
# a connection from outside the run at one of Gloo's pair listeners (Debian 12's Gloo accepts
# whatever connects first): COLLPROF_FAULT=gloosteal takes the first listening pair of every
# rank before its peer dials it; the mesh is tried again, and the run is as clean (issue 38)
d="$WORK/steal"
mkdir -p "$d"
COLLPROF_FAULT=gloosteal cp_run --np 4 --backends gloo --ops allreduce,alltoall --counts 1K -n 2 \
    -w 1 --output-dir "$d"
check_clean_run "$d" "gloo --np 4, a foreign connection at a pair's listener (gloosteal)"
grep -q 'warning: gloo: the full mesh of 4 ranks did not connect (.*): a fresh mesh, try 2 of 5' \
    "$WORK/err"
ok $? "gloo --np 4, gloosteal: the mesh is tried again, rank 0 saying why"
done_testing
