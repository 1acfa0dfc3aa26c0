#!/bin/bash
# collprof --np N on one machine as N grows, against the floor of a bare PMIx
# program under the same embedded server (issue 26; docs/scaling.md).
#
# For each N, backend and cell, one run of `collprof --np N -v` and, from its
# log (each line is stamped) and its -v 'resources:' lines, one row:
#   wall_s        the whole run (launch to the launcher's exit)
#   conn_s        launch to every rank connected to the embedded server
#   line0_s       launch to rank 0's first line (bootstrap done)
#   cell1_s       launch to the first cell's start on rank 0
#   cell_s        the first cell on rank 0 (buffers, warm-up, timed loop,
#                 check, gathers)
#   cpu_rank_s    CPU time (user + system) of a rank, the mean over ranks;
#   cpu0_s        rank 0's; cpu_srv_s the launcher and PMIx server's (the
#                 launcher's children's total, from /usr/bin/time, less the
#                 ranks')
#   rss0_MB       rank 0's peak resident memory; rss_MB the largest of the
#                 other ranks' (both count the shared pages a rank touched: the
#                 self backend's segment, the libraries); priv_MB the largest
#                 private (anonymous) memory of the other ranks left at their end
#   r0_kB         rank 0's bytes over collprof's control channel (sent +
#                 read, the whole run)
# then the floor (bench/pmix_floor: init, put, one fence, get, finalize):
# wall, rank 0's init-to-fence, CPU and peak RSS per rank.  With --mpirun,
# an MPI hello world (init, barrier, finalize) under
# `mpirun --oversubscribe -np N` too, wall time or 'timeout'.
#
# Time on a small machine is shared by every rank, so judge scale by CPU per
# rank, memory and bytes; the load average is printed beside each row.  Run
# from the build tree (or pass --collprof).  Exit status: 0 ran (a run that
# failed or timed out is a row saying so), 1 could not run, 2 bad usage.
set -u
NAME=scale_np.sh
COLLPROF_BIN=${COLLPROF:-}
NPS="64 128 256 512 1024"
BACKENDS="self mpi"
CELLS="allgather:1K allreduce:1M"
ITERS=5
TIMEOUT=300
MPIRUN=0
FLOOR=1
KEEP=
BENCH_OPTS="NPS ITERS" # the shared options it takes (bench_opt)

usage() {
    cat <<'USAGE'
Usage: bench/scale_np.sh [OPTIONS]
  --np LIST          rank counts, comma-separated (default: 64,128,256,512,1024)
  --backends LIST    backends, comma-separated (default: self,mpi)
  --cells LIST       OP:COUNT cells, one run each (default: allgather:1K,allreduce:1M)
  -n, --iters N      timed iterations per cell (default: 5; warm-up 1)
  --timeout S        limit of each run in seconds (default: 300)
  --mpirun           also time an MPI hello world under mpirun -np N
  --no-floor         leave out bench/pmix_floor (e.g. for a build without
                     COLLPROF_BENCH_EXEC)
  --keep DIR         keep every run's log in DIR
USAGE
    bench_usage
}

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
while [ $# -gt 0 ]; do
    case $1 in
    --backends) need_arg "$1" $# && BACKENDS=$(echo "$2" | tr , ' ') && shift ;;
    --cells) need_arg "$1" $# && CELLS=$(echo "$2" | tr , ' ') && shift ;;
    --timeout) need_arg "$1" $# && TIMEOUT=$2 && shift ;;
    --mpirun) MPIRUN=1 ;;
    --no-floor) FLOOR=0 ;;
    --keep) need_arg "$1" $# && KEEP=$2 && shift ;;
    *) bench_opt "$@" || bad_usage "unknown option $1"; shift ;;
    esac
    shift
done
at_least "$ITERS" 1 || bad_usage "--iters needs a whole number >= 1"
at_least "$TIMEOUT" 1 || bad_usage "--timeout needs a whole number of seconds >= 1"
for np in $NPS; do
    at_least "$np" 1 || bad_usage "--np: whole numbers >= 1, not '$np'"
done
for c in $CELLS; do
    case $c in *?:?*) ;; *) bad_usage "--cells: OP:COUNT, not '$c'" ;; esac
done
[ -x /usr/bin/time ] || die "needs /usr/bin/time (Debian package time)"
find_collprof
FLOOR_BIN=$BUILD_DIR/bench/pmix_floor
if [ "$FLOOR" -eq 1 ]; then
    make -C "$BUILD_DIR" bench/pmix_floor >/dev/null 2>&1 || die "could not build bench/pmix_floor"
fi
make_tmp
mkdir "$tmp/out" || die "cannot make $tmp/out"
[ -n "$KEEP" ] && { mkdir -p "$KEEP" || die "cannot make $KEEP"; }
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo GLOO_SOCKET_IFNAME=lo
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo

now() { date -u +%H:%M:%S.%N; }
load() { cut -d' ' -f1 /proc/loadavg; }

# row LABEL START LOG TIMES EXTRA: one row from a collprof run's log; the lines under it (the
# phases, memory by kind, the cells of a launch with several) go to the file EXTRA
row() {
    awk -v label="$1" -v start="$2" -v times="$4" -v extra="$5" '
        function sec(hms,   p) { split(hms, p, ":"); return p[1] * 3600 + p[2] * 60 + p[3] }
        function at(line) { return sec(substr(line, 13, 12)) - t0 }
        BEGIN { t0 = sec(start); getline tl < times; split(tl, tt, " ") }
        { isr0 = ($0 ~ / r0\//) }
        /r-1\/0 .*ranks connected/ { for (i = 1; i <= NF; i++) if ($i == "after") conn = $(i - 2) }
        / r0\// && !line0 { line0 = at($0) }
        / r0\/.*\] cell 1\// && !cell1 { cell1 = at($0) }
        / r0\/.*\] cell 1\/[0-9]+: (ok|wrong|error|timeout)/ { cellend = at($0) }
        / r0\/.*oob \(run\)/ { for (i = 1; i <= NF; i++) if ($i == "bytes") b += $(i - 1) }
        /resources: CPU/ {
            p = 0
            for (i = 1; i <= NF; i++) {
                if ($i == "CPU") c = $(i + 1); if ($i == "RSS") r = $(i + 1); if ($i == "private") p = $(i + 1)
            }
            n++; cpu += c
            if ($0 ~ / r0\//) { c0 = c; r0 = r } else { if (r > rmax) rmax = r; if (p > pmax) pmax = p }
        }
        / r0\/.*\] cell [0-9]+\/[0-9]+: [a-z]+\// {
            split($5, k, "/"); nc = k[1] + 0; cname[nc] = $7; cstart[nc] = at($0)
        }
        / r0\/.*\] cell [0-9]+\/[0-9]+: (ok|wrong|error|timeout)/ {
            split($5, k, "/"); cdur[k[1] + 0] = at($0) - cstart[k[1] + 0]; cres[k[1] + 0] = $6
        }
        /phases \(CPU ms/ {
            sub(/.*kB resident at the end\): */, "")
            np_ = split($0, w, " ")
            r0p = 0
            for (i = 1; i + 2 <= np_; i += 3) {
                split(w[i + 1], cc, "/"); split(w[i + 2], m, "+"); nm = w[i]
                if (!(nm in seen)) { seen[nm] = 1; order[++nph] = nm }
                if (isr0) { p0[nm] = cc[1]; continue }
                pc[nm] += cc[1]; pv[nm] += cc[2]; pi_[nm] += cc[3]; pf[nm] += cc[4]
                if (m[1] > ka) ka = m[1]; if (m[2] > kf) kf = m[2]; if (m[3] > ks) ks = m[3]
            }
            if (!isr0) nphr++
        }
        END {
            srv = tt[2] + tt[3] - cpu
            printf "%s %8.2f %7.2f %8.2f %8.2f %7.2f %10.4f %7.3f %9.2f %7.1f %7.1f %7.1f %9.1f", label,
                tt[1], conn, line0, cell1, cellend - cell1, n ? cpu / n : 0, c0, srv, r0, rmax, pmax, b / 1000
            if (n == 0) printf "  (no resources lines: failed?)"
            if (nphr > 0) {
                x = sprintf("%27s phases, mean of the other ranks (CPU ms voluntary/involuntary switches faults):", "")
                for (j = 1; j <= nph; j++) {
                    nm = order[j]
                    x = x sprintf(" %s %.2f %.0f/%.0f %.0f", nm, pc[nm] / nphr, pv[nm] / nphr, pi_[nm] / nphr, pf[nm] / nphr)
                }
                print x > extra
                x = sprintf("%27s other ranks resident at a phase end, largest (MB): private %.2f files %.2f shared %.2f;",
                    "", ka / 1024, kf / 1024, ks / 1024)
                x = x " rank 0 CPU ms:"
                for (j = 1; j <= nph; j++) x = x sprintf(" %s %.1f", order[j], p0[order[j]])
                print x > extra
            }
            if (nc > 1) {
                x = sprintf("%27s cells on rank 0 (s):", "")
                for (j = 1; j <= nc; j++) x = x sprintf(" %s %.2f (%s)", cname[j], cdur[j], cres[j])
                print x > extra
            }
        }' "$3"
}

# run_collprof NP BACKEND OP COUNT
run_collprof() {
    local np=$1 be=$2 op=$3 count=$4 log=$tmp/log rc=0 start l0
    l0=$(load)
    start=$(now)
    COLLPROF_PLUGIN_PATH=$BUILD_DIR/.libs timeout -k 10 "$TIMEOUT" /usr/bin/time -o "$tmp/time" \
        -f '%e %U %S' "$COLLPROF_BIN" --np "$np" --backends "$be" --ops "$(echo "$op" | tr + ,)" --counts "$count" \
        -n "$ITERS" -w 1 -v --output-dir "$tmp/out" >"$tmp/stdout" 2>"$log" || rc=$?
    [ -n "$KEEP" ] && cp "$log" "$KEEP/np$np-$be-$op-$count.log"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        printf '%5d %-5s %-14s timeout after %d s (load %s)\n' "$np" "$be" "$op:$count" "$TIMEOUT" "$l0"
        return
    fi
    : >"$tmp/extra"
    row "$(printf '%5d %-5s %-14s' "$np" "$be" "$op:$count")" "$start" "$log" "$tmp/time" "$tmp/extra"
    [ "$rc" -eq 0 ] || printf '  (exit %d: %s)' "$rc" "$(grep -m1 'error' "$log" | cut -d']' -f2- | cut -c1-70)"
    printf ' %6s\n' "$l0"
    cat "$tmp/extra"
}

# run_floor NP: the bare PMIx program under the same launcher
run_floor() {
    local np=$1 rc=0 l0
    l0=$(load)
    COLLPROF_PLUGIN_PATH=$BUILD_DIR/.libs COLLPROF_BENCH_EXEC=$FLOOR_BIN timeout -k 10 "$TIMEOUT" \
        /usr/bin/time -o "$tmp/time" -f '%e %U %S' "$COLLPROF_BIN" --np "$np" --backends self --counts 1K \
        >"$tmp/stdout" 2>"$tmp/log" || rc=$?
    awk -v np="$np" -v rc="$rc" -v l0="$l0" -v times="$tmp/time" '
        BEGIN { getline tl < times; split(tl, tt, " ") }
        /init to fence done/ { f = $(NF - 4) }
        /resources: CPU/ { n++; cpu += $(NF - 5); if ($(NF - 1) > r) r = $(NF - 1) }
        /phases \(CPU ms\):/ && $3 != 0 {
            np_++
            for (i = 7; i + 1 <= NF; i += 2) { if (!(($i) in ph)) order[++nph] = $i; ph[$i] += $(i + 1) }
        }
        END {
            printf "%5d floor %-14s %8.2f %7s %8.2f %8s %7s %10.4f %7s %9.2f %7s %7.1f %7s %9s %6s%s\n",
                np, "init+fence", tt[1], "-", f, "-", "-", n ? cpu / n : 0, "-",
                tt[2] + tt[3] - cpu, "-", r, "-", "-", l0, rc != 0 || n != np ? "  (failed)" : ""
            if (np_ > 0) {
                printf "%27s phases, mean of the other ranks (CPU ms):", ""
                for (j = 1; j <= nph; j++) printf " %s %.2f", order[j], ph[order[j]] / np_
                printf "\n"
            }
        }' "$tmp/stdout"
}

# run_mpirun NP: MPI hello world (init, barrier, finalize) under mpirun
run_mpirun() {
    local np=$1 rc=0 l0 t0 t1 root=
    [ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
    l0=$(load)
    t0=$(date +%s.%N)
    timeout -k 10 "$TIMEOUT" mpirun $root --oversubscribe -np "$np" "$tmp/hello" \
        >/dev/null 2>&1 || rc=$?
    t1=$(date +%s.%N)
    if [ "$rc" -eq 0 ]; then
        printf '%5d mpirun %-13s %8.2f %91s %6s\n' "$np" "hello" "$(echo "$t1 - $t0" | bc)" "" "$l0"
    else
        printf '%5d mpirun %-13s %s (exit %d) %6s\n' "$np" "hello" \
            "$([ "$rc" -eq 124 ] && echo "timeout after $TIMEOUT s" || echo failed)" "$rc" "$l0"
    fi
}

if [ "$MPIRUN" -eq 1 ]; then
    command -v mpicc >/dev/null && command -v mpirun >/dev/null || die "--mpirun needs mpicc and mpirun"
    printf '#include <mpi.h>\nint main(int c, char **v)\n{ MPI_Init(&c, &v); MPI_Barrier(MPI_COMM_WORLD); MPI_Finalize(); return 0; }\n' >"$tmp/hello.c"
    mpicc -o "$tmp/hello" "$tmp/hello.c" || die "mpicc failed"
fi
echo "# $(date -u +%FT%TZ), $(nproc) CPUs, $("$COLLPROF_BIN" --version 2>/dev/null | head -1); -n $ITERS -w 1; times in s from the launch"
printf '%5s %-5s %-14s %8s %7s %8s %8s %7s %10s %7s %9s %7s %7s %7s %9s %6s\n' ranks what cell \
    wall_s conn_s line0_s cell1_s cell_s cpu_rank_s cpu0_s cpu_srv_s rss0_MB rss_MB priv_MB r0_kB load
for np in $NPS; do
    [ "$FLOOR" -eq 1 ] && run_floor "$np"
    for be in $BACKENDS; do
        for c in $CELLS; do
            run_collprof "$np" "$be" "${c%%:*}" "${c#*:}"
        done
    done
    [ "$MPIRUN" -eq 1 ] && run_mpirun "$np"
done
exit 0
