#!/bin/bash
# collprof three-backend benchmark: the default matrix (allreduce, allgather,
# reducescatter, alltoall of 1M, 4M, 16M float32) on mpi, gloo and ofi, each
# with its default variant, plus the libfabric RMA-write all-to-all study
# (single, multichannel, roundrobin, direct at 4 MiB .. 128 MiB), all in ONE collprof
# run (a two-line matrix file), with the machine's memcpy bandwidth measured
# by bench/memcpy_bw.c just before and just after it.  Prints busBW per
# backend and its ratio to the best backend, and the ofi all-to-all variants
# as percentages of memcpy bandwidth.  See bench/README.md.
# Exit status: 0 ran, 1 failed to run, 2 bad usage.
set -u

usage() {
    cat <<'EOF'
Usage: bench/backends.sh [OPTIONS] [-- COLLPROF OPTIONS...]
One collprof run over the backends mpi, gloo and ofi:
  1. the default matrix (allreduce, allgather, reducescatter, alltoall;
     1M, 4M, 16M float32 elements), every backend with its DEFAULT variant
     (the library's own choice; ofi: roundrobin);
  2. ofi alltoall, variants single, multichannel, roundrobin, direct, 4 MiB to
     128 MiB (bytes, x2 steps: 1M .. 32M float32 elements);
then prints per operation and size each backend's busBW and its ratio to the
best backend, and the ofi all-to-all busBW as a percentage of the memcpy
bandwidth of this machine at the same size (bench/memcpy_bw.c, measured
right before and right after the collprof run; the better of the two medians
is the yardstick).

  --np N               ranks (default: 4)
  -n, --iters N        timed iterations per cell (default: 20)
  -w, --warmup N       warm-up iterations per cell (default: 3)
  --memcpy-iters N     timed copies per size for memcpy_bw (default: 10)
  --thp | --no-thp     memcpy_bw buffers with MADV_HUGEPAGE / MADV_NOHUGEPAGE
                       (default: no madvise, like collprof's buffers)
  --collprof PATH      collprof binary (default: $COLLPROF, ./collprof, or
                       collprof on PATH); collprof-report is looked up next to
                       it, then on PATH
  --plugin-path DIR    COLLPROF_PLUGIN_PATH (default: the environment's, or
                       .libs next to a build-tree collprof)
  --out DIR            keep the result files, the CSV and the printout in DIR
                       (default: a new directory backends-<UTC time> here)
  -h, --help           this help
Arguments after -- go to collprof unchanged (e.g. --ofi-provider 'tcp;ofi_rxm',
--link-gbps 100, --sync none).

Environment: CC (default cc) builds memcpy_bw.  Unless set, traffic is kept
on loopback (OMPI_MCA_*_if_include=lo, FI_TCP_IFACE=lo, GLOO_SOCKET_IFNAME=lo).
EOF
}

NAME=backends.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

NP=4
ITERS=20
WARMUP=3
MC_ITERS=10
THP=
COLLPROF_BIN=${COLLPROF:-}
PLUGIN_PATH=${COLLPROF_PLUGIN_PATH:-}
OUT=

while [ $# -gt 0 ]; do
    case $1 in
    --np) need_arg "$1" $#; NP=$2; shift 2 ;;
    -n | --iters) need_arg "$1" $#; ITERS=$2; shift 2 ;;
    -w | --warmup) need_arg "$1" $#; WARMUP=$2; shift 2 ;;
    --memcpy-iters) need_arg "$1" $#; MC_ITERS=$2; shift 2 ;;
    --thp) THP=--thp; shift ;;
    --no-thp) THP=--no-thp; shift ;;
    --collprof) need_arg "$1" $#; COLLPROF_BIN=$2; shift 2 ;;
    --plugin-path) need_arg "$1" $#; PLUGIN_PATH=$2; shift 2 ;;
    --out) need_arg "$1" $#; OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) bad_usage "unknown argument '$1'" ;;
    esac
done
EXTRA=("$@")

at_least "$NP" 2 || bad_usage "--np must be at least 2"
at_least "$ITERS" 1 || bad_usage "--iters must be a positive integer"
at_least "$WARMUP" 0 || bad_usage "--warmup must be a non-negative integer"
at_least "$MC_ITERS" 1 || bad_usage "--memcpy-iters must be a positive integer"

HERE=$(cd "$(dirname "$0")" && pwd) || die "cannot find the script's directory"
MC_SRC=$HERE/memcpy_bw.c
[ -r "$MC_SRC" ] || die "$MC_SRC is missing"

# ---- collprof, collprof-report and the plugins --------------------------------
find_collprof
REPORT_BIN=$BUILD_DIR/collprof-report
[ -x "$REPORT_BIN" ] || REPORT_BIN=$(command -v collprof-report 2>/dev/null) ||
    die "no collprof-report next to $COLLPROF_BIN or on PATH (it needs HDF5)"
if [ -z "$PLUGIN_PATH" ] && [ -e "$BUILD_DIR/.libs/collprof_ofi.so" ]; then
    PLUGIN_PATH=$BUILD_DIR/.libs
fi
[ -n "$PLUGIN_PATH" ] && export COLLPROF_PLUGIN_PATH=$PLUGIN_PATH

# keep everything on loopback unless the caller decided otherwise
: "${OMPI_MCA_oob_tcp_if_include:=lo}" "${OMPI_MCA_btl_tcp_if_include:=lo}"
: "${FI_TCP_IFACE:=lo}" "${FI_SOCKETS_IFACE:=lo}" "${GLOO_SOCKET_IFNAME:=lo}"
export OMPI_MCA_oob_tcp_if_include OMPI_MCA_btl_tcp_if_include FI_TCP_IFACE FI_SOCKETS_IFACE \
    GLOO_SOCKET_IFNAME

[ -n "$OUT" ] || OUT=backends-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
[ -z "$(ls "$OUT"/collprof_*.h5 2>/dev/null)" ] || die "$OUT already holds result files"

# ---- memcpy_bw -------------------------------------------------------------
MC_BIN=$OUT/memcpy_bw
"${CC:-cc}" -O2 -o "$MC_BIN" "$MC_SRC" 2>"$OUT/memcpy_bw.build.log" ||
    die "cannot build $MC_SRC with ${CC:-cc} (see $OUT/memcpy_bw.build.log)"
STUDY_SIZES="4M 8M 16M 32M 64M 128M"

# ---- the matrix: one run, two lines ----------------------------------------
MATRIX=$OUT/backends.matrix
cat >"$MATRIX" <<EOF
# bench/backends.sh: default matrix on every CPU backend, default variants
backends=mpi,gloo,ofi variants=default ops=allreduce,allgather,reducescatter,alltoall counts=1M,4M,16M
# the libfabric RMA-write all-to-all study (sizes in bytes)
backends=ofi variants=single,multichannel,roundrobin,direct ops=alltoall bytes=$(echo "$STUDY_SIZES" | tr ' ' ,)
EOF

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
t0=$(date +%s)
# shellcheck disable=SC2086 # $THP is empty or one word
"$MC_BIN" -n "$MC_ITERS" $THP $STUDY_SIZES >"$OUT/memcpy_before.txt" ||
    die "memcpy_bw failed"
rc=0
"$COLLPROF_BIN" --np "$NP" --matrix "$MATRIX" -n "$ITERS" -w "$WARMUP" --output-dir "$OUT" \
    --tag bench-backends "${EXTRA[@]}" </dev/null >"$OUT/collprof.out" 2>"$OUT/collprof.err" || rc=$?
# shellcheck disable=SC2086
"$MC_BIN" -n "$MC_ITERS" $THP $STUDY_SIZES >"$OUT/memcpy_after.txt" ||
    die "memcpy_bw failed"
t1=$(date +%s)
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
H5=$(ls "$OUT"/collprof_*.h5 2>/dev/null | head -n 1)
[ -n "$H5" ] || die "collprof wrote no result file (exit $rc): $(tail -n 3 "$OUT/collprof.err")"
"$REPORT_BIN" export --csv "$H5" -o "$OUT/cells.csv" || die "collprof-report export failed"
SUMMARY=${H5%.h5}.txt

# ---- the printout ------------------------------------------------------------
{
    echo "# bench/backends.sh, $started, $(hostname), $(nproc) CPUs, $((t1 - t0)) s"
    echo "# collprof: $("$COLLPROF_BIN" --version 2>/dev/null | head -n 1); exit status $rc"
    echo "# command: collprof --np $NP --matrix backends.matrix -n $ITERS -w $WARMUP ${EXTRA[*]}"
    echo "# libraries: $(grep '^backend:' "$SUMMARY" | sed 's/^backend: *//' | paste -sd ';' | sed 's/;/; /g')"
    echo "# policy (collprof): $NP ranks on one node (self-launched; oversubscribed when NP > CPUs);"
    echo "#   $(grep '^timing:' "$SUMMARY" | sed 's/^timing: *//')"
    echo "#   time = mean over iterations of the max over ranks; busBW = algBW x bus factor"
    echo "#   buffers: $(sed -n 's/^buffers: *//p' "$SUMMARY") $(sed -n '/^buffers:/{n;s/^ *//p}' "$SUMMARY")"
    echo "#   allocator: glibc malloc/posix_memalign, GLIBC_TUNABLES=${GLIBC_TUNABLES:-unset};" \
        "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
    echo "#   backends: default variant each (the library's own choice; ofi: roundrobin)"
    echo "# policy (memcpy): $(sed -n 's/^# memcpy_bw: //p' "$OUT/memcpy_before.txt"); measured before and"
    echo "#   after the collprof run, the better median of the two is used"
    echo "# load average: ${load_before:-?} before, ${load_after:-?} after (this benchmark alone adds" \
        "about $NP while it runs; more means other work shared the CPUs)"
} >"$OUT/report.txt"

awk -v memcpy_before="$OUT/memcpy_before.txt" -v memcpy_after="$OUT/memcpy_after.txt" "$CSV_AWK"'
function human(b,    u) {
    u = "B"
    if (b >= 1048576 && b % 1048576 == 0) { b /= 1048576; u = "MiB" }
    else if (b >= 1024 && b % 1024 == 0) { b /= 1024; u = "KiB" }
    return b " " u
}
function elems(c) {
    return (c >= 1048576 && c % 1048576 == 0) ? (c / 1048576 "M") : c
}
BEGIN {
    while ((getline l < memcpy_before) > 0) if (l ~ /^memcpy /) { split(l, a, " "); mc[a[2]] = a[3]; mb[a[2]] = a[3] }
    while ((getline l < memcpy_after) > 0) if (l ~ /^memcpy /) { split(l, a, " "); ma[a[2]] = a[3]; if (a[3] > mc[a[2]]) mc[a[2]] = a[3] }
    nb = split("mpi gloo ofi", be, " ")
    nops = split("allreduce allgather reducescatter alltoall", opl, " ")
    nv = split("single multichannel roundrobin direct", vl, " ")
}
NR == 1 {
    n = csv($0, h)
    for (i = 1; i <= n; i++) col[h[i]] = i
    next
}
{
    csv($0, f)
    b = f[col["backend"]]; v = f[col["variant"]]; op = f[col["op"]]; st = f[col["status"]]
    cnt = f[col["count"]] + 0; by = f[col["bytes"]] + 0
    ok = (st == "ok")
    if (v == "default") {
        key = op SUBSEP cnt
        seen[key] = 1; bytes[key] = by
        bus[key, b] = ok ? f[col["busbw_gbs"]] + 0 : -1
        why[key, b] = st
    } else if (b == "ofi" && op == "alltoall") {
        sbytes[by] = 1; sbus[by, v] = ok ? f[col["busbw_gbs"]] + 0 : -1
        salg[by, v] = ok ? f[col["algbw_gbs"]] + 0 : -1; slat[by, v] = f[col["time_mean_us"]] + 0
    }
}
END {
    print ""
    print "## busBW (GB/s) per backend, default variant; (x) = ratio to the best backend of the row"
    print ""
    hdr = "| op | count | bytes |"; sep = "|---|---:|---:|"
    for (i = 1; i <= nb; i++) { hdr = hdr " " be[i] " |"; sep = sep "---:|" }
    print hdr " best |"; print sep "---|"
    for (o = 1; o <= nops; o++) {
        nc = 0
        for (k in seen) { split(k, kk, SUBSEP); if (kk[1] == opl[o]) cl[++nc] = kk[2] + 0 }
        for (i = 1; i <= nc; i++) for (j = i + 1; j <= nc; j++) if (cl[j] < cl[i]) { t = cl[i]; cl[i] = cl[j]; cl[j] = t }
        for (c = 1; c <= nc; c++) {
            key = opl[o] SUBSEP cl[c]; best = -1; bn = "-"
            for (i = 1; i <= nb; i++) if (((key, be[i]) in bus) && bus[key, be[i]] > best) { best = bus[key, be[i]]; bn = be[i] }
            line = "| " opl[o] " | " elems(cl[c]) " | " human(bytes[key]) " |"
            for (i = 1; i <= nb; i++) {
                if (!((key, be[i]) in bus)) line = line " - |"
                else if (bus[key, be[i]] < 0) line = line " " why[key, be[i]] " |"
                else line = line sprintf(" %.2f (%.2f) |", bus[key, be[i]], best > 0 ? bus[key, be[i]] / best : 0)
            }
            print line " " bn " |"
        }
    }
    print ""
    print "## ofi alltoall (RMA write) per variant: busBW GB/s and % of memcpy bandwidth at the same size"
    print ""
    hdr = "| size | memcpy GB/s (before/after) |"; sep = "|---:|---:|"
    for (i = 1; i <= nv; i++) { hdr = hdr " " vl[i] " busBW | % memcpy | lat (us) |"; sep = sep "---:|---:|---:|" }
    print hdr; print sep
    ns = 0
    for (s in sbytes) sl[++ns] = s + 0
    for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (sl[j] < sl[i]) { t = sl[i]; sl[i] = sl[j]; sl[j] = t }
    for (s = 1; s <= ns; s++) {
        by = sl[s]; m = (by in mc) ? mc[by] + 0 : 0
        line = sprintf("| %s | %.2f (%.2f/%.2f) |", human(by), m, mb[by], ma[by])
        for (i = 1; i <= nv; i++) {
            if (!((by, vl[i]) in sbus) || sbus[by, vl[i]] < 0) { line = line " - | - | - |"; continue }
            line = line sprintf(" %.2f | %.0f%% | %.0f |", sbus[by, vl[i]], m > 0 ? 100 * sbus[by, vl[i]] / m : 0, slat[by, vl[i]])
        }
        print line
    }
}' "$OUT/cells.csv" >>"$OUT/report.txt" || die "cannot analyse $OUT/cells.csv"

cat "$OUT/report.txt"
echo
echo "# files: $OUT (result file $(basename "$H5"), cells.csv, report.txt)"
[ "$rc" -eq 0 ] || echo "# collprof exited with status $rc: see $OUT/collprof.err and the summary"
exit 0
