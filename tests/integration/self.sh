#!/bin/sh
# The self backend: collprof's own shared-memory collectives, no library.
# Every operation, dtype and reduction, in and out of place, chunked through
# slots smaller than the buffers; alltoallv traffic patterns; and it stays
# out of the default matrix.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
if [ ! -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_self.so" ]; then
    skip_all "the self backend was not built"
fi

cp_run --list
[ $rc -eq 0 ] && grep -q '^ *self\b' "$WORK/out"
ok $? "--list shows the self backend"

# every dtype and redop on the reducing ops, through 4 KiB slots (several chunks each);
# under sanitizers (2-3x slower, ranks spinning on 2 cores) a representative subset
dtypes=all redops=all a2av_counts=1K,64K
if [ "${CP_TIMING_UNRELIABLE:-0}" = 1 ]; then
    dtypes=int8,uint64,bfloat16,float16,float64 redops=sum,max a2av_counts=1K
fi
d="$WORK/red"
mkdir -p "$d"
cp_run --np 3 --backends self --ops allreduce,reducescatter,reduce -d "$dtypes" -o "$redops" \
    --inplace both --counts 4099 -n 2 -w 1 -B self-slot-kib=4 --output-dir "$d"
check_clean_run "$d" "--np 3, reducing ops x every dtype and redop, in and out of place"

d="$WORK/all"
mkdir -p "$d"
# every op on 1-, 2- and 8-byte types; 4099 elements of 2 bytes take 3 chunks of 4 KiB
cp_run --np 3 --backends self --ops all -d int8,bfloat16,float16,float64 -o sum --inplace both \
    --counts 1K,4099 -n 2 -w 1 -B self-slot-kib=4 --output-dir "$d"
check_clean_run "$d" "--np 3, every op, in and out of place"

d="$WORK/a2av"
mkdir -p "$d"
cp_run --np 4 --backends self --ops alltoallv,alltoall --imbalance uniform,linear,spread:1,moe:1:4 \
    --inplace both --counts "$a2av_counts" -d int32 -n 2 -w 1 -B self-slot-kib=4 --output-dir "$d"
check_clean_run "$d" "--np 4, alltoallv traffic patterns"

d="$WORK/big"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce,allgather,broadcast,sendrecv --counts 1M -d float64 \
    -n 2 -w 1 --output-dir "$d"
check_clean_run "$d" "--np 2, 8 MiB buffers through 1 MiB slots"

d="$WORK/dry"
mkdir -p "$d"
cp_run --np 2 --dry-run --ops all --counts 1K --output-dir "$d"
[ $rc -eq 0 ] && grep -q 'collprof plan:' "$WORK/out" && ! grep -q '\bself\b' "$WORK/out"
ok $? "the default matrix has no self cells"
cp_run --np 2 --dry-run --backends self --ops allreduce --counts 1K --output-dir "$d"
[ $rc -eq 0 ] && grep -q '\bself\b' "$WORK/out"
ok $? "--backends self plans self cells"

d="$WORK/slot"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce --counts 1K -B self-slot-kib=zero --output-dir "$d"
[ $rc -ne 0 ] && grep -q 'self-slot-kib' "$WORK/out" "$WORK/err" "$d"/* 2>/dev/null
ok $? "a bad self-slot-kib is reported"
done_testing
