#!/bin/bash
# The bad-input table: every case of tests/data/badinput.tsv (collprof
# options, matrix and traffic files, environments; collprof-report options
# and hostile HDF5 files derived from a real run's file by badinput_h5.py,
# and hostile trace files for collprof --replay by badinput_trace.py)
# must end with the documented exit status, exactly one line on stderr that
# names the problem (matching the case's regexp), no control or
# bidirectional-override characters in what it prints, and the output
# directory as it was: same listing, same checksums of the files already
# there.  Cases that expect status 0 (hostile strings the report must print
# escaped) must print nothing on stderr.  The table's format is described at
# its top.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
TABLE=${BADINPUT_TABLE:-$COLLPROF_SRCDIR/tests/data/badinput.tsv}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)

W=$WORK/w   # canned inputs: matrices, traffic files, special files
H=$WORK/h   # hostile HDF5 files
OUT=$WORK/odir
mkdir -p "$W" "$H" "$OUT"

# ---- a real run's file, and what is derived from it ------------------------------
have_report=no
[ -x "$REPORT" ] && have_report=yes
base=
rc=0
(cd "$W" && timeout -k 5 60 "$COLLPROF_BIN" --np 2 --backends self --ops allreduce,alltoall \
    --counts 1K,4K -n 3 -w 1 </dev/null >"$W/run.out" 2>&1) || rc=$?
# shellcheck disable=SC2012 # our own file names
base=$(ls "$W"/collprof_*.h5 2>/dev/null | head -n 1)
if [ -n "$base" ]; then
    mv "$base" "$W/base.h5"
    mv "${base%.h5}.txt" "$W/base.txt"
    base=$W/base.h5
fi
h5_skip=
if [ "$have_report" = no ]; then
    h5_skip="collprof-report was not built (it needs HDF5)"
elif [ -z "$base" ]; then
    h5_skip="no result file from the real run (exit $rc)"
elif [ -z "$PY" ] || ! "$PY" -c 'import h5py, numpy' 2>/dev/null; then
    h5_skip="python3 with h5py and numpy is not installed (apt-get install python3-h5py)"
else
    mkfifo "$H/fifo"
    "$PY" "$COLLPROF_SRCDIR/tests/integration/badinput_h5.py" "$base" "$H" >"$W/gen.log" 2>&1 ||
        h5_skip="badinput_h5.py failed: $(tail -n 1 "$W/gen.log")"
    # a good trace (PARAM's fixture imported) and the hostile ones for --replay (tr_*.h5)
    TD=$COLLPROF_SRCDIR/tests/data/trace
    [ -n "$h5_skip" ] || { "$REPORT" import --trace param "$TD/param-rank0.json" \
        "$TD/param-rank1.json" -o "$W/trace.h5" &&
        "$PY" "$COLLPROF_SRCDIR/tests/integration/badinput_trace.py" "$W/trace.h5" "$H"; } \
        >>"$W/gen.log" 2>&1 || h5_skip="badinput_trace.py failed: $(tail -n 1 "$W/gen.log")"
fi
[ -z "$base" ] && base=$COLLPROF_SRCDIR/tests/data/collprof-1.3.h5
cp "$base" "$H/copy.h5"

# special files and hostile names, for both programs
mkfifo "$W/fifo" "$W/fifo.h5"
mkdir "$W/dir.h5" "$W/dir.matrix" "$W/host"
ln -s "$W/loop" "$W/loop"
ln -s /dev/zero "$W/zero.h5"
ln -s "$W/fifo" "$W/link-to-fifo.h5"
python_sock() { "$PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1" 2>/dev/null; }
python_sock "$W/sock.h5" || : >"$W/sock.h5"
cp "$base" "$W/$(printf 'esc\033[31m.h5')"
cp "$base" "$W/$(printf 'new\nline.h5')"
cp "$base" "$W/$(printf 'bidi\342\200\256.h5')"
: >"$W/empty.h5"
: >"$W/empty.matrix"

# matrix files (collprof(1), MATRIX FILES)
printf 'ops=allreduce counts=1K\n' >"$W/ok.matrix"
printf 'ops=allreduce nosuchkey=1\n' >"$W/key.matrix"
printf 'ops=nosuchop\n' >"$W/op.matrix"
printf 'ops=allreduce counts=1K,,2K\n' >"$W/emptyitem.matrix"
printf 'ops=allreduce counts=99999999999999999999\n' >"$W/overflow.matrix"
printf 'ops=allreduce\0counts=1K\n' >"$W/nul.matrix"
printf 'ops=allreduce tag=\033[2J\n' >"$W/esc.matrix"
printf 'ops=all\377reduce\n' >"$W/utf8.matrix"
printf 'ops\n' >"$W/novalue.matrix"
printf '=allreduce\n' >"$W/nokey.matrix"
printf 'ops=allreduce\r\n' >"$W/crlf.matrix"
printf 'ops=allreduce iters=0\n' >"$W/iters.matrix"
printf 'ops=allreduce dtype=float128\n' >"$W/dtype.matrix"
printf 'ops=allreduce backends=nope\n' >"$W/backend.matrix"
head -c 300000 /dev/zero | tr '\0' 'a' | sed 's/^/ops=/' >"$W/longline.matrix"
echo >>"$W/longline.matrix"
head -c 4096 /dev/urandom >"$W/binary.matrix" 2>/dev/null
printf '\357\273\277ops=allreduce\n' >"$W/bom.matrix"
# traffic matrices for --imbalance file: (one rank without a launcher)
printf '1 2\n3 4\n' >"$W/two.tm"
printf -- '-1\n' >"$W/neg.tm"
printf 'nan\n' >"$W/nan.tm"
printf 'inf\n' >"$W/inf.tm"
printf 'x\n' >"$W/word.tm"
printf '1e300\n' >"$W/huge.tm"
printf '99999999999999999999999\n' >"$W/overflow.tm"
printf '1 2\n' >"$W/row.tm"
printf '\033[31m1\n' >"$W/esc.tm"
printf '1\0\n' >"$W/nul.tm"

# other tools' files for collprof-report import (tests/data/import holds the good ones)
J=$COLLPROF_SRCDIR/tests/data/import/nccl-allreduce.json
head -c 700 "$J" >"$W/trunc.json"
sed 's/"version":3/"version":2/' "$J" >"$W/v2.json"
sed 's/"time":20.480000/"time":1e400/' "$J" >"$W/huge.json"
sed 's/"time":20.480000/"time":"nan"/' "$J" >"$W/nan.json"
sed 's/"alg_bw":0.200000/"alg_bw":9.5/' "$J" >"$W/algbw.json"
sed 's/"results":\[/"results":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[/' "$J" >"$W/deep.json"
sed 's/"float"/"fl\xffoat"/' "$J" >"$W/utf8.json"
sed 's/"version":3,/"version":3,"args":[],/' "$J" >"$W/dup.json"
# 1024 x 1024 ranks declared in 164 bytes, and no results: refused before any rank is built
printf '%s' '{"version":3,"args":["./all_reduce_perf"],"config":{"nthreads":1024,"ngpus":1024,' \
    '"devices":[{"pid":1,"hostname":"a","device":0,"device_info":"H100"}]},"results":[]}' \
    >"$W/ranks.json"
# with results: 1024 x 1024 GPUs in one process, then 1025 processes of 1024 GPUs (2^20 + 1024)
sed 's/"nthreads":1,"ngpus":1,/"nthreads":1024,"ngpus":1024,/' "$J" >"$W/gpus.json"
awk 'BEGIN { printf "{\"version\":3,\"args\":[\"./all_reduce_perf\"],\"config\":{\"nthreads\":32,"
    printf "\"ngpus\":32,\"devices\":["
    for (i = 0; i < 1025; i++) printf "%s{\"pid\":%d,\"hostname\":\"h\",\"device\":0,\"device_info\":\"x\"}", i ? "," : "", i
    printf "]},\"results\":[{}]}" }' >"$W/devices.json"
# 2^21 + 1 numbers where import reads (results): refused by the count, not by memory
awk 'BEGIN { printf "{\"version\":3,\"results\":[0"; for (i = 0; i < 2097152; i++) printf ",1"; printf "]}" }' \
    >"$W/values.json"
O=$COLLPROF_SRCDIR/tests/data/import/osu-allreduce-f.txt
cp "$O" "$W/good.osu"
sed 's/^16384 .*/16384                  33.05             31.90/' "$O" >"$W/cols.osu"
sed 's/^4096 .*/4096                   nan             20.11             22.64        1000/' "$O" >"$W/nan.osu"
sed 's/^4096 .*/4096                   1e999             20.11             22.64        1000/' "$O" >"$W/huge.osu"
# a per-rank size whose product with --ranks wraps to 0 in 64 bits (2^44 x 2^20)
sed -e 's/^# OSU MPI Allreduce/# OSU MPI Allgather/' \
    -e 's/^4096 .*/17592186044416         21.37             20.11             22.64        1000/' "$O" >"$W/wrap.osu"
printf '\357\273\277# OSU MPI Allreduce Latency Test v7.3\n# Size  \377Avg Latency(us)\n' >"$W/utf8.osu"
sed 's/^# OSU MPI Allreduce/# OSU MPI Frobnicate/' "$O" >"$W/op.osu"
sed 's/^# Size .*/# Size       Min Latency(us)/' "$O" >"$W/noavg.osu"
sed '/^# Size/d' "$O" >"$W/nohead.osu"
N=$COLLPROF_SRCDIR/tests/data/import/nccl-allreduce.txt
sed 's/ 0\.53 /  x.53 /' "$N" >"$W/word.nccl"
sed 's/^ *16384 .*/       16384          4096     float     sum      -1    30.72/' "$N" >"$W/cols.nccl"
cat "$N" "$N" >"$W/two.nccl"
# traces for import --trace (tests/data/trace holds the good ones)
T=$COLLPROF_SRCDIR/tests/data/trace
head -c 300 "$T/param-rank0.json" >"$W/trunc-rank0.json"
sed 's/"all_reduce"/"all_frobnicate"/' "$T/param-rank0.json" >"$W/op-rank0.json"
sed 's/"dtype": "Float"/"dtype": "Quaternion"/' "$T/param-rank0.json" >"$W/dtype-rank0.json"
sed 's/"in_split": \[10, 20\]/"in_split": [10, 20, 30]/' "$T/param-rank0.json" >"$W/split-rank0.json"
sed 's/"global_ranks": \[1, 0\]/"global_ranks": [1, 1]/' "$T/param-rank0.json" >"$W/twice-rank0.json"
sed 's/"root": 1,/"root": 1048576,/' "$T/param-rank0.json" >"$W/root-rank0.json"
sed 's/"global_ranks": \[1, 0\]/"global_ranks": [0, 1]/' "$T/param-rank1.json" >"$W/differ-rank1.json"
printf '{"comms": "all_reduce"}' >"$W/obj-rank0.json"
# entries alike but the third, whose names are the others' until one comes again (the reader
# compares an entry's names with the last entry's while they match: the repeat is still found)
awk 'BEGIN { e = "\"comms\": \"all_reduce\", \"pg_id\": 0, \"global_ranks\": [0], \"in_msg_size\": 1, \"out_msg_size\": 1, \"dtype\": \"Float\""
    printf "[{%s},\n{%s},\n{%s, \"pg_id\": 1},\n{%s}]\n", e, e, e, e }' >"$W/dupkey-rank0.json"
cp "$T/param-rank0.json" "$W/noname.json"
cp "$T/param-rank0.json" "$W/again-rank0.json"
sed 's/"rank":1,"n_ranks":2/"rank":2,"n_ranks":2/' "$T/gpu-b-pid200.log" >"$W/rank-pid2.log"
sed 's/"p2p_peer":0/"p2p_peer":5/' "$T/gpu-b-pid200.log" >"$W/peer-pid2.log"
sed '1d' "$T/gpu-b-pid200.log" >"$W/nohead-pid2.log"
cp "$T/gpu-a-pid100.log" "$W/good-pid1.log"
sed 's/"rank":[0-9]*,"n_ranks":[0-9]*,//' "$T/gpu-b-pid200.log" >"$W/norank-pid2.log"
sed 's/,"n_ranks":[0-9]*//' "$T/gpu-b-pid200.log" >"$W/v3-pid2.log"
printf '\200\002}q\000.' >"$W/fr-pickle0"
sed 's/"version": "2.4"/"version": "1.0"/' "$T/fr-rank0.json" >"$W/fr-v1-rank0.json"
sed 's/"nccl:send 1->0"/"nccl:send 1->7"/' "$T/fr-rank0.json" >"$W/fr-peer-rank0.json"
sed 's/"ranks": "\[0, 1\]"/"ranks": "[0, x]"/' "$T/fr-rank0.json" >"$W/fr-ranks-rank0.json"
sed 's/"\[1, 0\]"/"[0, 1]"/' "$T/fr-rank0.json" >"$W/fr-me-rank0.json"
awk 'BEGIN { printf "["; for (i = 0; i < 70; i++) printf "["; printf "]" }' >"$W/deep-rank0.json"
C=$T/collprof-trace
sed '1d' "$C.0.jsonl" >"$W/ct-nohead.0.jsonl"
sed 's/"members": \[1, 0\]/"members": [0, 1]/' "$C.1.jsonl" >"$W/ct-differ.1.jsonl"
sed 's/"comm": 1, "dtype": "float64"/"comm": 9, "dtype": "float64"/' "$C.0.jsonl" >"$W/ct-comm.0.jsonl"
sed 's/"root": 1}/"root": 2}/' "$C.0.jsonl" >"$W/ct-root.0.jsonl"
sed '2s/^/{"collprof_trace": 1, "rank": 0, "size": 2}\n/' "$C.0.jsonl" >"$W/ct-twohead.0.jsonl"
cp "$C.0.jsonl" "$W/ct-alone.0.jsonl"
# execution traces and Chakra's (make_et.py writes the hostile .et files)
sed 's/"in_msg_nelems", "type": "uint64", "value": 1024/"in_msg_nelems", "type": "uint64", "value": "1024"/' \
    "$T/et-rank0.json" >"$W/et-str-rank0.json"
sed 's/"in_msg_nelems", "type": "uint64", "value": 1024/"in_msg_nelems", "type": "uint64", "value": 1e20/' \
    "$T/et-rank0.json" >"$W/et-huge-rank0.json"
head -c 3000 "$T/et-rank0.json" >"$W/et-trunc-rank0.json"
sed 's/"dtype", "type": "string", "value": "Float"/"dtype", "type": "string", "value": 7/' \
    "$T/et-rank0.json" >"$W/et-dtype-rank0.json"
sed 's/, 1, "broadcast", \[\]/, 7, "broadcast", []/' "$T/et-rank0.json" >"$W/et-root-rank0.json"
sed 's/"pg_name", "type": "string", "value": "1"/"pg_name", "type": "string", "value": "9"/' \
    "$T/et-rank0.json" >"$W/et-pg-rank0.json"
cp "$T/et-rank0.json" "$W/et-rank0.json"
cp "$T/et-rank1.json" "$W/et-rank7.json"
sed 's/"value": "\[1, 2, 1\]"/"value": "[1, 2]"/' "$T/et-rank0.json" >"$W/et-split-rank0.json"
sed 's/"value": "all_to_allv"/"value": "all_frobnicate"/' "$T/et-rank0.json" >"$W/et-op-rank0.json"
sed 's/"1.1.1-chakra.0.0.4"/"1.0.1"/' "$T/et-rank0.json" >"$W/et-old-rank0.json"
# members import drops unread (a comm node's outputs) are still checked
sed '5s/"outputs": {"values": \[\], "shapes": \[\]/&, "shapes": []/' "$T/et-rank0.json" \
    >"$W/et-dropdup-rank0.json"
sed '5s/"outputs": {"values": \[\], "shapes": \[/&1e999/' "$T/et-rank0.json" >"$W/et-droprange-rank0.json"
printf '{"x": 1}\n' >"$W/et-obj-rank0.json"
sed 's/\\"ranks\\": \[2, 0\]/\\"ranks\\": [2, 2]/' "$T/et-rank0.json" >"$W/et-twice-rank0.json"
sed '0,/"ts": 1700000000105, "inclusive_dur": 40/s//"ts": "x", "inclusive_dur": 40/' \
    "$T/chakra-rank0.json" >"$W/ck-ts-rank0.json"
head -c 5000 "$T/chakra-rank0.json" >"$W/ck-trunc-rank0.json"
cp "$T/chakra-comm_group.json" "$W/chakra-comm_group.json"
"$PY" "$T/make_et.py" --hostile "$W"
gzip -c "$W/et-good.0.et" >"$W/et-gz.0.et"
# chakra-et is refused by a collprof-report built without protobuf-c: its cases are skipped
pb_skip=
if [ "$have_report" = yes ] &&
    "$REPORT" import --trace chakra-et "$W/et-good.0.et" -o "$W/pb.h5" 2>&1 | grep -q 'without protobuf-c'; then
    pb_skip="collprof-report was built without protobuf-c (libprotobuf-c-dev, protobuf-c-compiler)"
fi

# ---- the checks -------------------------------------------------------------------
# the output directory holds a result and a canary before every case
cp "$base" "$OUT/collprof_20260101T000000Z_w2.h5"
echo canary >"$OUT/canary.txt"
snapshot() {
    (cd "$OUT" && LC_ALL=C ls -lA --time-style=+%s.%N && sha256sum -- * 2>/dev/null)
}
snapshot >"$WORK/snap0"

# one word of the table: placeholders, then printf %b escapes ('' is the empty word)
word() {
    local w=$1
    [ "$w" = "''" ] && { REPLY=; return; }
    w=${w//@W@/$W}
    w=${w//@H@/$H}
    w=${w//@OUT@/$OUT}
    w=${w//@BASE@/$base}
    if [[ $w =~ @LONG:([0-9]+)@ ]]; then
        w=${w//${BASH_REMATCH[0]}/$(head -c "${BASH_REMATCH[1]}" /dev/zero | tr '\0' a)}
    fi
    REPLY=$(printf '%b.' "$w")
    REPLY=${REPLY%.}
}

# what a program printed: at most one control character or bidi override, as a name
hostile_bytes() {
    LC_ALL=C grep -c -P '[\x00-\x08\x0b-\x1f\x7f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]' "$1"
}

run_case() { # LINE-NO TOOL ENV EXIT REGEXP ARGS
    local no=$1 tool=$2 envs=$3 want=$4 re=$5 args=$6 prog host='' lines bad why=
    local -a argv=() envv=()
    local a
    [ "$tool" = cp ] && argv=(--backends self --ops allreduce --counts 1K -n 1 -w 0)
    set -f
    for a in $args; do
        word "$a"
        argv+=("$REPLY")
    done
    if [ "$envs" != - ]; then
        for a in $envs; do
            word "$a"
            case $REPLY in
            UTS_HOSTNAME=*) host=${REPLY#UTS_HOSTNAME=} ;;
            *) envv+=("$REPLY") ;;
            esac
        done
    fi
    set +f
    case $tool in
    cp | cp0) prog=$COLLPROF_BIN ;;
    rep) prog=$REPORT ;;
    esac
    local desc
    desc="$tool:$no $(printf '%s' "${envv[*]} ${host:+UTS_HOSTNAME=$host }${argv[*]}" | head -c 160 | LC_ALL=C tr -c '[:print:]' '?')"
    if [ -n "$h5_skip" ] && [[ $args == *@H@* ]]; then
        echo "ok $((tap_n += 1)) - $desc # SKIP $h5_skip"
        return
    fi
    if [ "$tool" = rep ] && [ "$have_report" = no ]; then
        echo "ok $((tap_n += 1)) - $desc # SKIP collprof-report was not built"
        return
    fi
    if [ "$tool" = rep ] && [ -n "$pb_skip" ] && [[ $args == *chakra-et* ]]; then
        echo "ok $((tap_n += 1)) - $desc # SKIP $pb_skip"
        return
    fi
    if [ -n "$host" ] && [ "$can_unshare" = no ]; then
        echo "ok $((tap_n += 1)) - $desc # SKIP no UTS namespace (unshare -u) to set a host name"
        return
    fi
    rc=0
    if [ -n "$host" ]; then
        # shellcheck disable=SC2016 # the inner shell expands them
        (cd "$OUT" && timeout -k 5 20 unshare -u sh -c 'printf %s "$1" >/proc/sys/kernel/hostname && shift && exec "$@"' sh \
            "$host" env "${envv[@]}" "$prog" "${argv[@]}") </dev/null >"$WORK/case.out" 2>"$WORK/case.err" || rc=$?
    else
        (cd "$OUT" && timeout -k 5 20 env "${envv[@]}" "$prog" "${argv[@]}") </dev/null \
            >"$WORK/case.out" 2>"$WORK/case.err" || rc=$?
    fi
    lines=$(wc -l <"$WORK/case.err")
    [ -s "$WORK/case.err" ] && [ "$(tail -c 1 "$WORK/case.err" | od -An -c | tr -d ' ')" != '\n' ] &&
        lines=$((lines + 1))
    [ "$rc" -eq "$want" ] || why="exit $rc, not $want"
    if [ -z "$why" ] && [ "$want" -eq 0 ]; then
        [ "$lines" -eq 0 ] || why="$lines lines on stderr"
    elif [ -z "$why" ]; then
        [ "$lines" -eq 1 ] || why="$lines lines on stderr"
        [ -z "$why" ] && ! LC_ALL=C grep -q -E "^collprof(-report)?: error: " "$WORK/case.err" &&
            why="not an error line"
        [ -z "$why" ] && ! LC_ALL=C grep -q -E -- "$re" "$WORK/case.err" && why="no match for /$re/"
    fi
    bad=$(($(hostile_bytes "$WORK/case.err") + $(hostile_bytes "$WORK/case.out")))
    [ -z "$why" ] && [ "$bad" -ne 0 ] && why="raw control or bidi characters printed"
    snapshot >"$WORK/snap1"
    if ! cmp -s "$WORK/snap0" "$WORK/snap1"; then
        [ -z "$why" ] && why="the output directory changed: $(diff "$WORK/snap0" "$WORK/snap1" |
            grep '^[<>]' | head -n 2 | tr '\n' ' ')"
        # put it back for the next case
        find "$OUT" -mindepth 1 -maxdepth 1 ! -name canary.txt ! -name 'collprof_20260101T000000Z_w2.h5' \
            -exec rm -rf {} +
        cp "$base" "$OUT/collprof_20260101T000000Z_w2.h5"
        echo canary >"$OUT/canary.txt"
        touch -r "$WORK/snap0" "$OUT"
        snapshot >"$WORK/snap0"
    fi
    if [ -z "$why" ]; then
        echo "ok $((tap_n += 1)) - $desc"
    else
        tap_n=$((tap_n + 1))
        tap_fail=$((tap_fail + 1))
        echo "not ok $tap_n - $desc: $why"
        head -c 400 "$WORK/case.err" | LC_ALL=C tr -c '[:print:]\n' '?' | sed 's/^/#   /'
    fi
}

can_unshare=no
unshare -u true 2>/dev/null && can_unshare=yes

sha_inputs() { (cd "$H" && find . -type f -name '*.h5' -exec sha256sum {} + | sort); }
sha_inputs >"$WORK/inputs0"
cases=0
while IFS=$'\t' read -r tool envs want re args; do
    case $tool in '' | '#'*) continue ;; esac
    cases=$((cases + 1))
    run_case "$cases" "$tool" "$envs" "$want" "$re" "$args"
done <"$TABLE"
sha_inputs >"$WORK/inputs1"
cmp -s "$WORK/inputs0" "$WORK/inputs1"
ok $? "collprof-report changed none of the $(wc -l <"$WORK/inputs0") files it read"
echo "# $cases cases, $tap_fail failed"
done_testing
