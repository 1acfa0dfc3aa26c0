#!/bin/bash
# libfabric all-to-all against MPI's best all-to-all and the memcpy limit:
# R rounds, each ONE collprof launch that runs MPI's alltoall variants and
# the ofi variants (old: single, multichannel, roundrobin; new: direct) one
# after the other at 4, 16 and 64 MiB, the two backends' order swapped every
# round so that load from outside hits both sides alike.  Prints per size the
# median over rounds of busBW, and busBW as a percentage of collprof's own
# one-thread memcpy rate at the cell's size (copy1_gbs).  See bench/README.md.
# Exit status: 0 ran, 1 failed to run, 2 bad usage.
set -u

usage() {
    cat <<'EOF'
Usage: bench/ofi_alltoall.sh [OPTIONS] [-- COLLPROF OPTIONS...]
ofi all-to-all (variants single, multichannel, roundrobin = before; direct =
after) side by side with every MPI all-to-all variant, R interleaved rounds
(one collprof launch each, backend order swapped every round); medians of
busBW per size, MPI's best variant, and busBW as % of copy1 (one-thread
memcpy at the cell's size, measured by collprof itself).

  -r, --rounds R       rounds (default: 5)
  --np N               ranks (default: 2)
  -n, --iters N        timed iterations per cell (default: 20)
  -w, --warmup N       warm-up iterations per cell (default: 3)
  --counts LIST        float32 element counts (default: 1M,4M,16M = 4, 16, 64 MiB)
  --provider P         ofi provider (default: shm)
  --ofi-variants LIST  (default: single,multichannel,roundrobin,direct)
  --stat p50|mean      per cell, busBW from the median (default) or the mean of the
                       iteration times (the max over ranks each); the median shrugs
                       off iterations that other work preempted
  --analyse DIR        print the table again from a kept --out DIR (no runs)
  --collprof PATH      collprof binary (default: ./collprof, else collprof on PATH)
  --before DIR         a plugin directory holding the OLD collprof_ofi.so: every round
                       also runs --before-variants with it (its own launch, order
                       rotated), printed as 'old VARIANT' columns
  --before-variants L  (default: single,multichannel,roundrobin)
  --out DIR            keep the rounds' files in DIR (default: a temporary directory, removed)
  -h, --help           this help
Arguments after -- go to collprof unchanged.
EOF
}

NAME=ofi_alltoall.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

ROUNDS=5
NP=2
ITERS=20
WARMUP=3
COUNTS=1M,4M,16M
PROV=shm
OFI_VARIANTS=single,multichannel,roundrobin,direct
MPI_VARIANTS=default,linear,two_proc,pairwise,modified_bruck,linear_sync
COLLPROF_BIN=${COLLPROF:-}
OUT=
BEFORE=
BEFORE_VARIANTS=single,multichannel,roundrobin
STAT=p50
ANALYSE=
while [ $# -gt 0 ]; do
    case $1 in
    -r | --rounds) need_arg "$1" $#; ROUNDS=$2; shift 2 ;;
    --np) need_arg "$1" $#; NP=$2; shift 2 ;;
    -n | --iters) need_arg "$1" $#; ITERS=$2; shift 2 ;;
    -w | --warmup) need_arg "$1" $#; WARMUP=$2; shift 2 ;;
    --counts) need_arg "$1" $#; COUNTS=$2; shift 2 ;;
    --provider) need_arg "$1" $#; PROV=$2; shift 2 ;;
    --ofi-variants) need_arg "$1" $#; OFI_VARIANTS=$2; shift 2 ;;
    --collprof) need_arg "$1" $#; COLLPROF_BIN=$2; shift 2 ;;
    --out) need_arg "$1" $#; OUT=$2; shift 2 ;;
    --stat) need_arg "$1" $#; STAT=$2; shift 2 ;;
    --analyse) need_arg "$1" $#; ANALYSE=$2; shift 2 ;;
    --before) need_arg "$1" $#; BEFORE=$2; shift 2 ;;
    --before-variants) need_arg "$1" $#; BEFORE_VARIANTS=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) bad_usage "unknown argument '$1'" ;;
    esac
done
EXTRA=("$@")
case $STAT in p50 | mean) ;; *) bad_usage "--stat must be p50 or mean" ;; esac
at_least "$ROUNDS" 1 || bad_usage "--rounds must be a positive integer"
at_least "$NP" 2 || bad_usage "--np must be at least 2"
at_least "$ITERS" 1 || bad_usage "--iters must be a positive integer"
at_least "$WARMUP" 0 || bad_usage "--warmup must be a non-negative integer"
if [ -n "$BEFORE" ] && [ -z "$ANALYSE" ]; then
    [ -e "$BEFORE/collprof_ofi.so" ] || bad_usage "--before: no collprof_ofi.so in $BEFORE"
    BEFORE=$(cd "$BEFORE" && pwd)
fi

find_collprof
REPORT_BIN=$BUILD_DIR/collprof-report
[ -x "$REPORT_BIN" ] || REPORT_BIN=$(command -v collprof-report 2>/dev/null) ||
    die "no collprof-report next to $COLLPROF_BIN or on PATH (it needs HDF5)"
if [ -z "${COLLPROF_PLUGIN_PATH:-}" ] && [ -e "$BUILD_DIR/.libs/collprof_ofi.so" ]; then
    export COLLPROF_PLUGIN_PATH=$BUILD_DIR/.libs
fi
: "${OMPI_MCA_oob_tcp_if_include:=lo}" "${OMPI_MCA_btl_tcp_if_include:=lo}"
: "${FI_TCP_IFACE:=lo}" "${FI_SOCKETS_IFACE:=lo}"
export OMPI_MCA_oob_tcp_if_include OMPI_MCA_btl_tcp_if_include FI_TCP_IFACE FI_SOCKETS_IFACE

if [ -n "$ANALYSE" ]; then
    OUT=$ANALYSE KEEP=1 ALL=$ANALYSE/all.csv
    if [ ! -r "$OUT/info" ] || [ ! -s "$ALL" ]; then
        die "$OUT holds no kept run (info, all.csv)"
    fi
    . "$OUT/info"
else
    KEEP=1
    if [ -z "$OUT" ]; then
        OUT=$(mktemp -d "${TMPDIR:-/tmp}/ofi_alltoall.XXXXXX") || die "cannot create a temporary directory"
        KEEP=0
    fi
    mkdir -p "$OUT" || die "cannot create $OUT"
    [ "$KEEP" = 1 ] || trap 'rm -rf "$OUT"' EXIT

    MPI_LINE="backends=mpi variants=$MPI_VARIANTS ops=alltoall counts=$COUNTS dtypes=float32"
    OFI_LINE="backends=ofi variants=$OFI_VARIANTS ops=alltoall counts=$COUNTS dtypes=float32"
    OLD_LINE="backends=ofi variants=$BEFORE_VARIANTS ops=alltoall counts=$COUNTS dtypes=float32"
    ALL=$OUT/all.csv
    : >"$ALL"
    loads=

    # launch SET DIR MATRIX-LINES...: one collprof run (SET "old": the --before plugins), its
    # cells appended to all.csv as "round,set,<cells.csv line>"
    launch() {
        local set=$1 d=$2
        shift 2
        mkdir -p "$d" || die "cannot create $d"
        printf '%s\n' "$@" >"$d/matrix"
        (
            [ "$set" = old ] && export COLLPROF_PLUGIN_PATH=$BEFORE
            "$COLLPROF_BIN" --np "$NP" --matrix "$d/matrix" -n "$ITERS" -w "$WARMUP" \
                --output-dir "$d" --ofi-provider "$PROV" "${EXTRA[@]}" </dev/null >"$d/out" 2>"$d/err"
        ) || die "round $r ($set): collprof failed: $(tail -n 3 "$d/err")"
        h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
        [ -n "$h5" ] || die "round $r ($set): no result file"
        "$REPORT_BIN" export --csv "$h5" -o "$d/cells.csv" || die "round $r ($set): export failed"
        tail -n +2 "$d/cells.csv" | sed "s/^/$r,$set,/" >>"$ALL"
        head -n 1 "$d/cells.csv" >"$OUT/header.csv"
    }

    for r in $(seq 1 "$ROUNDS"); do
        l0=$(cut -d' ' -f1 /proc/loadavg)
        if [ $((r % 2)) = 1 ]; then
            launch new "$OUT/round$r" "$MPI_LINE" "$OFI_LINE"
            [ -z "$BEFORE" ] || launch old "$OUT/round$r-old" "$OLD_LINE"
        else
            [ -z "$BEFORE" ] || launch old "$OUT/round$r-old" "$OLD_LINE"
            launch new "$OUT/round$r" "$OFI_LINE" "$MPI_LINE"
        fi
        l1=$(cut -d' ' -f1 /proc/loadavg)
        loads="$loads $l0/$l1"
    done
    [ -s "$ALL" ] || die "no cells"
    # what --analyse needs to print the table again
    {
        printf 'ROUNDS=%q NP=%q ITERS=%q WARMUP=%q PROV=%q\n' "$ROUNDS" "$NP" "$ITERS" "$WARMUP" "$PROV"
        printf 'OFI_VARIANTS=%q MPI_VARIANTS=%q BEFORE=%q BEFORE_VARIANTS=%q\n' \
            "$OFI_VARIANTS" "$MPI_VARIANTS" "$BEFORE" "$BEFORE_VARIANTS"
        printf 'loads=%q\n' "$loads"
    } >"$OUT/info"
fi

echo "# bench/ofi_alltoall.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(hostname), $(nproc) CPUs"
echo "# $("$COLLPROF_BIN" --version 2>/dev/null | head -n 1); $NP ranks, ofi provider $PROV;" \
    "$ROUNDS rounds x (-n $ITERS -w $WARMUP), backend order swapped every round"
echo "# load average (1 min) before/after each round:$loads"
echo "# busBW GB/s = median over rounds of busBW per cell, from the $STAT over iterations of"
echo "#   the max over ranks;"
echo "# copy1 = collprof's one-thread memcpy at the cell's size (median); % = busBW / copy1"
awk -v header="$OUT/header.csv" -v ovars="$OFI_VARIANTS" -v mvars="$MPI_VARIANTS" \
    -v stat="$STAT" -v bvars="$([ -n "$BEFORE" ] && echo "$BEFORE_VARIANTS")" "$CSV_AWK"'
function median(s,    a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n == 0 ? 0 : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
}
BEGIN {
    getline hl < header
    nh = csv(hl, h)
    for (i = 1; i <= nh; i++) col[h[i]] = i + 2 # +2: round and set in front
    nov = split(ovars, ov, ","); nmv = split(mvars, mv, ","); nbv = split(bvars, bv, ",")
}
{
    csv($0, f)
    k = (f[2] == "old" ? "old" : f[col["backend"]]) "/" f[col["variant"]]
    if (f[col["status"]] != "ok" || f[col["wrong"]] != 0) { bad[k]++; next }
    b = f[col["bytes"]]
    t = f[col[stat == "p50" ? "time_p50_us" : "time_mean_us"]]
    if (t <= 0) { bad[k]++; next }
    bw[k, b] = bw[k, b] " " f[col["busbw_gbs"]] * f[col["time_mean_us"]] / t
    c1[b] = c1[b] " " f[col["copy1_gbs"]]
    if (!(b in seen)) { seen[b] = 1; sz[++ns] = b + 0 }
}
END {
    for (i = 2; i <= ns; i++) for (j = i; j > 1 && sz[j - 1] > sz[j]; j--) { t = sz[j]; sz[j] = sz[j - 1]; sz[j - 1] = t }
    printf "| size | copy1 | MPI best (variant) |"
    for (v = 1; v <= nbv; v++) printf " old %s |", bv[v]
    for (v = 1; v <= nov; v++) printf " ofi %s |", ov[v]
    printf "\n|---:|---:|---:|"
    for (v = 1; v <= nbv + nov; v++) printf "---:|"
    printf "\n"
    for (s = 1; s <= ns; s++) {
        b = sz[s]; cp = median(c1[b]); best = 0; bestv = "-"
        for (v = 1; v <= nmv; v++) { m = median(bw["mpi/" mv[v], b]); if (m > best) { best = m; bestv = mv[v] } }
        # a count rounded down to a multiple of the ranks (--np 3) is no whole MiB: bytes then
        size = b % 1048576 ? sprintf("%d B", b) : sprintf("%d MiB", b / 1048576)
        printf "| %s | %.2f | %.2f (%.0f%%, %s) |", size, cp, best, (cp > 0 ? 100 * best / cp : 0), bestv
        for (v = 1; v <= nbv; v++) {
            m = median(bw["old/" bv[v], b])
            printf " %.2f (%.0f%%) |", m, (cp > 0 ? 100 * m / cp : 0)
        }
        for (v = 1; v <= nov; v++) {
            m = median(bw["ofi/" ov[v], b])
            printf " %.2f (%.0f%%) |", m, (cp > 0 ? 100 * m / cp : 0)
        }
        printf "\n"
    }
    for (k in bad) printf "# %s: %d cell(s) failed or wrong, left out\n", k, bad[k]
}' "$ALL" || die "cannot analyse the results"
[ "$KEEP" = 1 ] && echo "# files: $OUT"
exit 0
