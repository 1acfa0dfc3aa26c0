#!/bin/sh
# The libfabric (OFI) backend: RMA-write collectives on the shm and
# tcp;ofi_rxm providers, 2 and 4 ranks, every op and channel variant,
# exact results; an unknown provider is refused with the usable ones listed.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
[ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_ofi.so" ] || skip_all "the ofi backend was not built"
# never the sockets provider for bulk data (milliseconds per 64 KiB here)
unset FI_PROVIDER

for prov in shm "tcp;ofi_rxm"; do
    for np in 2 4; do
        tag=$(echo "$prov" | tr -c 'a-z0-9\n' '_')
        d="$WORK/${tag}_np$np"
        mkdir -p "$d"
        cp_run --np "$np" --backends ofi -B "ofi-provider=$prov" --ops all --counts 4K,64K \
            --inplace both -n 3 -w 1 --output-dir "$d"
        [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 5
        check_clean_run "$d" "ofi $prov --np $np, every op and variant, in and out of place"
        s=$(summary_of "$d")
        for v in single multichannel roundrobin; do
            grep -q "^== ofi / $v" "$s" 2>/dev/null || grep -q "ofi *$v *alltoall" "$WORK/out"
            ok $? "ofi $prov --np $np: alltoall measured with variant $v"
        done
    done
done

# reductions over every dtype and operator, uneven counts, rooted ops off rank 0
d="$WORK/dtypes"
mkdir -p "$d"
cp_run --np 3 --backends ofi -B ofi-provider=shm -B ofi-channels=3 \
    --ops allreduce,reducescatter,reduce,alltoallv,gather,scatter,broadcast \
    --dtype int8,int32,uint64,float32,float64 --redop sum,max --root 2 --counts 999 \
    --imbalance uniform,linear --inplace both -n 2 -w 1 --variants multichannel --output-dir "$d"
check_clean_run "$d" "ofi shm --np 3: dtypes, redops, uneven counts, root 2"

# an unknown provider: init fails on every rank, the backend is skipped, and
# the reason names the providers that would work
d="$WORK/unknown"
mkdir -p "$d"
cp_run --np 2 --backends ofi -B ofi-provider=nosuchprov --ops alltoall --counts 4K -n 1 -w 0 \
    --output-dir "$d"
all=$(cat "$WORK/out" "$WORK/err" "$d"/collprof_*.txt 2>/dev/null)
echo "$all" | grep -q "nosuchprov"
ok $? "unknown provider: named in the error"
echo "$all" | grep -q "usable providers: .*shm"
ok $? "unknown provider: the usable providers are listed"
echo "$all" | grep -q "tcp;ofi_rxm"
ok $? "unknown provider: tcp;ofi_rxm is among them"
done_testing
