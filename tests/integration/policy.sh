#!/bin/sh
# Measurement policies (--sync, --alloc, --rotate-buffers) on the self and mpi backends with
# --np 2: each timing mode and allocator, with buffer rotation, gives exact results, and the
# text summary, the HDF5 file and collprof-report state the policy every cell ran with; bad
# values are refused in one line with exit 2 and no file.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
[ -x "$REPORT" ] || skip_all "collprof-report was not built (no HDF5)"

# refused values: one line on stderr, exit 2, nothing written
n=0
for bad in "--sync batch:0" "--sync batch:x" "--sync sometimes" "--alloc huge" \
    "--rotate-buffers 0" "--rotate-buffers 2000" "--sync batch:4 --link-sweep" \
    "--rotate-buffers 2 --link-sweep"; do
    n=$((n + 1))
    d="$WORK/bad$n"
    mkdir -p "$d"
    # shellcheck disable=SC2086 # the option and its value are two words
    cp_run --np 2 --backends self --ops allreduce --counts 1K $bad --output-dir "$d"
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ] && [ -z "$(ls "$d")" ]
    ok $? "'$bad' refused: exit $rc, one line, no file ($(head -c 120 "$WORK/err"))"
done

backends=self
if [ -n "${CP_MPIRUN:-}" ] && [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
    backends="self mpi"
else
    echo "# the mpi backend was not built: self only"
fi

# policy_run BACKEND SYNC ALLOC ROTATE: a clean run whose every cell records the policy
policy_run() {
    be=$1 sync=$2 alloc=$3 rot=$4
    d="$WORK/$be-$sync-$alloc-$rot"
    mkdir -p "$d"
    what="$be --sync $sync --alloc $alloc --rotate-buffers $rot"
    cp_run --np 2 --backends "$be" --variants default --ops allreduce,allgather,alltoall,broadcast \
        --inplace both --counts 1K,64K -n 3 -w 1 --sync "$sync" --alloc "$alloc" \
        --rotate-buffers "$rot" --output-dir "$d"
    s=$(summary_of "$d")
    [ "$rc" -eq 0 ] && grep -q '^result: *PASSED' "$s" && grep -q '#wrong 0: PASSED' "$WORK/out"
    ok $? "$what: every cell exact, PASSED (exit $rc)"
    mode=${sync%%:*}
    batch=1
    [ "$mode" = batch ] && batch=${sync#batch:} && [ "$batch" = batch ] && batch=20
    tail="; sync $mode"
    [ "$batch" -gt 1 ] && tail="$tail:$batch (time / $batch)"
    tail="$tail; rotation $rot; check last"
    case $alloc in
    malloc) buf="posix_memalign" ;;
    mmap) buf="mmap anonymous" ;;
    hugepages) buf="mmap" ;;
    esac
    grep -q "^  measured: host memory: timer CLOCK_MONOTONIC; buffers $buf.*; device host$tail\$" "$s"
    ok $? "$what: the summary's measured line states it ($(grep '^  measured:' "$s" | head -n 1))"
    "$REPORT" summary "$d" 2>/dev/null | grep '^  measured:' >"$WORK/m_h5"
    grep '^  measured:' "$s" >"$WORK/m_txt"
    cmp -s "$WORK/m_h5" "$WORK/m_txt"
    ok $? "$what: collprof-report rebuilds the same measured line from the file"
    "$REPORT" export --csv "$d" >"$WORK/csv" 2>&1
    /usr/bin/python3 - "$WORK/csv" "$mode" "$batch" "$rot" "$buf" <<'P'
import csv, sys
path, mode, batch, rot, buf = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
assert len(rows) == 16, len(rows)
for r in rows:
    assert r["status"] == "ok" and r["wrong"] == "0", r
    assert r["sync"] == mode and r["batch"] == batch and r["rotate"] == rot, r
    assert r["allocation"].startswith(buf), r
P
    ok $? "$what: every /results row records sync $mode, batch $batch, rotate $rot, $buf"
    "$REPORT" summary "$d" 2>/dev/null | grep -q "^timing: .*rotation: $rot slot"
    ok $? "$what: the file's timing attribute states the run's policy"
    if [ "$alloc" = hugepages ] && grep -q 'no MAP_HUGETLB' "$s"; then
        [ "$(grep -c 'warning: --alloc hugepages: no explicit huge pages' "$WORK/err")" -eq 1 ]
        ok $? "$what: no explicit huge pages here: said in one warning, THP recorded"
    fi
}

for be in $backends; do
    policy_run "$be" barrier malloc 1
    policy_run "$be" none mmap 3
    policy_run "$be" batch:3 hugepages 4
    policy_run "$be" batch mmap 2
done

# a batch of N is one sample of N operations: the raw samples are per operation
d="$WORK/self-batch:3-hugepages-4"
[ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] && {
    "$CP_H5DUMP" -d /cells/000000/samples_us "$d"/collprof_*.h5 >"$WORK/samples" 2>&1
    grep -q 'DATASPACE  SIMPLE { ( 3, 2 )' "$WORK/samples"
    ok $? "--sync batch:3 -n 3: 3 samples per rank, each a batch of 3 operations / 3"
}
done_testing
