#!/bin/bash
# collprof's nccl backend against a plain loop of the same NCCL calls
# (bench/nccl_loop.c), side by side on the GPUs of this machine: a byte
# sweep per op, both timed with CUDA events, interleaved over several
# launches.  Prints per op and size the median-of-rounds mean time of each,
# ratio = collprof / plain (the goal: within 1.05 at every size) and a
# verdict that says whether the rounds can tell the two apart.
# Needs a GPU (but --analyse); see bench/README.md and docs/nccl.md.  Exit
# status: 0 ran (whatever the ratios), 1 failed to run, 2 bad usage.
set -u

usage() {
    cat <<'EOF'
Usage: bench/nccl_compare.sh [OPTIONS]
Times NCCL collectives through collprof (--backends nccl --variants default,
out of place, float32 sum) and through bench/nccl_loop.c over a byte sweep,
interleaved over R rounds of one launch each, and prints per op and size the
median-of-rounds means, ratio = collprof / plain, each program's spread over
its rounds (slowest / fastest round) and a verdict:
  ok         the medians within 5 %
  ok*        within 5 %, but every round of one program beyond every round of
             the other (a small difference the rounds agree on)
  SLOWER     collprof beyond 5 % slower, and every collprof round slower than
             every plain round
  faster     the same the other way
  undecided  beyond 5 %, but the rounds overlap: the programs' own round-to-
             round variation is as large as the difference
Rounds all apart happen by chance with p = 2 / C(2R, R) per cell when both
programs time the same (R = 5: 0.008); with p above 0.05 (R below 4) no
verdict is ok* or SLOWER/faster.

  -r, --rounds R         launches of each program (default: 5)
  -n, --iters N          timed iterations per op, size and launch (default: 50)
  -w, --warmup W         warm-up iterations (default: 10)
  -b, --minbytes SIZE    sweep start, K/M/G suffixes (default: 8)
  -e, --maxbytes SIZE    sweep end (default: 256M)
  -f, --stepfactor F     sweep multiplier (default: 2)
      --np N             ranks, one GPU each (default: 1)
      --ops LIST         allreduce,allgather,reducescatter,broadcast,sendrecv
                         (default: allreduce; broadcast is in place in both, as
                         collprof's has one buffer)
      --pin CPUS         run both programs under taskset -c CPUS (default: unpinned)
      --control          also run the plain loop with buffers of each cell's size,
                         allocated per op and size as collprof's cells are
                         (nccl_loop -a each; the plain loop allocates the largest
                         once, as nccl-tests): columns each(us), ratio-each
                         (collprof / each) and verdict-each; tells an effect of
                         buffer placement from one of collprof's code
      --analyse DIR      run nothing: print the table of the raw outputs that
                         --keep left in DIR (its file "times")
      --collprof PATH    collprof binary (default: $COLLPROF, ./collprof, or on PATH)
      --plugin-path DIR  COLLPROF_PLUGIN_PATH (default: the environment's, or
                         .libs next to a build-tree collprof)
      --nccl-loop PATH   the plain loop (default: $NCCL_LOOP, bench/nccl_loop in
                         collprof's build tree, else compiled here with $CC
                         against $CUDA_HOME, default /usr/local/cuda, and
                         $NCCL_HOME when set)
      --keep             keep the raw outputs (their directory is printed)
  -h, --help             this help
EOF
}

NAME=nccl_compare.sh
# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

ROUNDS=5 ITERS=50 WARMUP=10 MINB=8 MAXB=256M FACTOR=2 NP=1 OPS=allreduce KEEP=0 PIN='' CONTROL=0
ANALYSE=
COLLPROF_BIN=${COLLPROF:-}
PLUGIN_PATH=${COLLPROF_PLUGIN_PATH:-}
LOOP_BIN=${NCCL_LOOP:-}
BENCH_OPTS="ROUNDS ITERS WARMUP NP OPS PLUGIN_PATH" # the shared options it takes (bench_opt)

while [ $# -gt 0 ]; do
    case $1 in
    -b | --minbytes) need_arg "$1" $#; MINB=$2; shift 2 ;;
    -e | --maxbytes) need_arg "$1" $#; MAXB=$2; shift 2 ;;
    -f | --stepfactor) need_arg "$1" $#; FACTOR=$2; shift 2 ;;
    --nccl-loop) need_arg "$1" $#; LOOP_BIN=$2; shift 2 ;;
    --pin) need_arg "$1" $#; PIN=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --control) CONTROL=1; shift ;;
    --analyse | --analyze) need_arg "$1" $#; ANALYSE=$2; shift 2 ;;
    *) bench_opt "$@" || bad_usage "unknown argument '$1'"; shift 2 ;;
    esac
done

check_loop_counts
at_least "$NP" 1 || bad_usage "--np must be a positive integer"
at_least "$FACTOR" 2 || bad_usage "--stepfactor must be an integer of at least 2"
for s in "$MINB" "$MAXB"; do
    case ${s%[KMG]} in '' | *[!0-9]*) bad_usage "bad size '$s'" ;; esac
done
for op in ${OPS//,/ }; do
    case $op in allreduce | allgather | reducescatter | broadcast | sendrecv) ;;
    *) bad_usage "--ops: '$op' is not allreduce, allgather, reducescatter, broadcast or sendrecv" ;;
    esac
done

# the table of a "times" file: per op and position in the sweep, each program's median over
# rounds, the ratios, the spreads and the verdicts (see --help)
analyse() {
    awk '
    function sortv(key, v,   n, i, j, t) {
        n = cnt[key]
        for (i = 1; i <= n; i++) v[i] = val[key, i]
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return n
    }
    function median(key,   v, n) { n = sortv(key, v); return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
    function lo(key,   v) { sortv(key, v); return v[1] }
    function hi(key,   v, n) { n = sortv(key, v); return v[n] }
    function spread(key) { return lo(key) > 0 ? hi(key) / lo(key) : 0 }
    function choose(n, k,   r, i) { r = 1; for (i = 1; i <= k; i++) r = r * (n - k + i) / i; return r }
    # p that every round of one of two like programs falls beyond every round of the other
    function chance(c, p) { return 2 / choose(cnt[c] + cnt[p], cnt[c]) }
    function verdict(c, p,   ratio, apart) {
        ratio = median(p) > 0 ? median(c) / median(p) : 0
        apart = chance(c, p) <= 0.05 && (lo(c) > hi(p) || hi(c) < lo(p))
        if (ratio >= 0.95 && ratio <= 1.05) return apart ? "ok*" : "ok"
        if (!apart) return "undecided"
        return ratio > 1 ? "SLOWER" : "faster"
    }
    function tally(name, cell, v) { n[name, v]++; if (v == "SLOWER" || v == "faster") list[name, v] = list[name, v] " " cell }
    function summary(name, ref,   v, k, s) {
        s = ""
        for (k = 1; k <= 5; k++) { v = kinds[k]; s = s sprintf("%s%s %d", k > 1 ? ", " : "", v, n[name, v]) }
        printf "verdicts, collprof against %s: %s (every round apart by chance: p = %.3g per cell)\n", ref, s, pmax[name]
        for (k = 4; k <= 5; k++)
            if ((name, kinds[k]) in list) printf "%s against %s:%s\n", kinds[k], ref, list[name, kinds[k]]
    }
    BEGIN { split("ok ok* undecided SLOWER faster", kinds, " ") }
    {
        cell = $3 SUBSEP $4
        key = $2 SUBSEP cell
        val[key, ++cnt[key]] = $6
        rounds = $1 > rounds ? $1 : rounds
        if ($7 ~ /^[0-9.]+$/) { ik = "issue" SUBSEP key; val[ik, ++cnt[ik]] = $7 }
        bytes[key] = $5
        rv[key, $1] = $6
        if ($2 == "plain-each") control = 1
        if (!(cell in seen)) { seen[cell] = 1; order[++no] = cell }
        if (!($3 in opseen)) { opseen[$3] = 1; opo[++nop] = $3 }
    }
    # per op, over the sizes the host launch rate bounds (the plain loop within 1.5x of its
    # fastest size): each round of each program as one geometric mean over those sizes, so
    # that a launch is one sample, then the same verdict on those samples as on a cell
    function pooled(op,   k, f, p, m, minp, sel, ns, r, g, prog, q, key, ok, lb, ub, v, c, e) {
        minp = -1
        for (k = 1; k <= no; k++) {
            split(order[k], f, SUBSEP); p = "plain" SUBSEP order[k]
            if (f[1] != op || !(p in cnt) || !(("collprof" SUBSEP order[k]) in cnt)) continue
            m = median(p); if (minp < 0 || m < minp) minp = m
        }
        if (minp <= 0) return
        ns = 0
        for (k = 1; k <= no; k++) {
            split(order[k], f, SUBSEP); p = "plain" SUBSEP order[k]
            if (f[1] != op || !(p in cnt) || !(("collprof" SUBSEP order[k]) in cnt) || median(p) > 1.5 * minp) continue
            sel[++ns] = order[k]
            if (lb == "" || bytes[p] + 0 < lb + 0) lb = bytes[p]
            if (ub == "" || bytes[p] + 0 > ub + 0) ub = bytes[p]
        }
        for (q = 1; q <= 3; q++) {
            prog = q == 1 ? "plain" : q == 2 ? "collprof" : "plain-each"
            key = "pool" SUBSEP prog SUBSEP op
            for (r = 1; r <= rounds; r++) {
                g = 0; ok = 1
                for (k = 1; k <= ns && ok; k++) {
                    if (!((prog SUBSEP sel[k], r) in rv) || rv[prog SUBSEP sel[k], r] <= 0) ok = 0
                    else g += log(rv[prog SUBSEP sel[k], r])
                }
                if (ok) val[key, ++cnt[key]] = exp(g / ns)
            }
        }
        p = "pool" SUBSEP "plain" SUBSEP op; c = "pool" SUBSEP "collprof" SUBSEP op
        e = "pool" SUBSEP "plain-each" SUBSEP op
        if (!(p in cnt) || !(c in cnt)) return
        v = verdict(c, p)
        printf "pooled %s, %d launch-bound size(s) %s-%s B: plain %.2f, collprof %.2f us (geometric means, medians of %d rounds): ratio %.3f %s, best rounds %.3f", op, ns, lb, ub, median(p), median(c), cnt[c], median(c) / median(p), v, lo(c) / lo(p)
        if (e in cnt) printf "; against plain-each %.3f %s, best rounds %.3f", median(c) / median(e), verdict(c, e), lo(c) / lo(e)
        printf "\n"
    }
    END {
        printf "%-14s %12s %11s %13s %7s %-9s %12s %15s %15s %18s", "op", "bytes", "plain(us)", "collprof(us)",
               "ratio", "verdict", "spread-plain", "spread-collprof", "plain-issue(us)", "collprof-issue(us)"
        printf control ? sprintf(" %9s %10s %s\n", "each(us)", "ratio-each", "verdict-each") : "\n"
        worst = 0
        for (k = 1; k <= no; k++) {
            split(order[k], f, SUBSEP)
            p = "plain" SUBSEP order[k]; c = "collprof" SUBSEP order[k]; e = "plain-each" SUBSEP order[k]
            b = (p in bytes) ? bytes[p] : bytes[c]
            if ((p in bytes) && (c in bytes) && bytes[p] != bytes[c]) b = bytes[p] "/" bytes[c]
            if (!(p in cnt) || !(c in cnt)) {
                printf "%-14s %12s %11s %13s %7s\n", f[1], b, (p in cnt) ? median(p) : "-",
                       (c in cnt) ? median(c) : "-", "n/a"
                continue
            }
            mp = median(p); mc = median(c); ratio = mp > 0 ? mc / mp : 0
            dev = ratio > 1 ? ratio - 1 : 1 - ratio
            worst = dev > worst ? dev : worst
            v = verdict(c, p); tally("plain", f[1] " " b, v)
            pmax["plain"] = chance(c, p) > pmax["plain"] ? chance(c, p) : pmax["plain"]
            iss = ("issue" SUBSEP p) in cnt ? sprintf("%.2f", median("issue" SUBSEP p)) : "-"
            isc = ("issue" SUBSEP c) in cnt ? sprintf("%.2f", median("issue" SUBSEP c)) : "-"
            printf "%-14s %12s %11.2f %13.2f %7.3f %-9s %12.2f %15.2f %15s %18s", f[1], b, mp, mc, ratio, v,
                   spread(p), spread(c), iss, isc
            if (control && (e in cnt)) {
                me = median(e); v = verdict(c, e); tally("each", f[1] " " b, v)
                pmax["each"] = chance(c, e) > pmax["each"] ? chance(c, e) : pmax["each"]
                printf " %9.2f %10.3f %s", me, (me > 0 ? mc / me : 0), v
            }
            printf "\n"
        }
        printf "worst deviation %.1f %% over %d cells, medians of %d round(s)\n", 100 * worst, no, rounds
        summary("plain", "plain")
        if (control) summary("each", "plain-each")
        for (k = 1; k <= nop; k++) pooled(opo[k])
    }' "$1"
}

if [ -n "$ANALYSE" ]; then
    [ -f "$ANALYSE/times" ] || die "--analyse: no file $ANALYSE/times (the raw outputs of a --keep run)"
    analyse "$ANALYSE/times"
    exit 0
fi

HERE=$(cd "$(dirname "$0")" && pwd) || die "cannot find the script's directory"
find_collprof
if [ -z "$PLUGIN_PATH" ] && [ -e "$BUILD_DIR/.libs/collprof_nccl.so" ]; then
    PLUGIN_PATH=$BUILD_DIR/.libs
fi
[ -n "$PLUGIN_PATH" ] && export COLLPROF_PLUGIN_PATH="$PLUGIN_PATH"
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/collprof-nccl.XXXXXX") || die "mktemp failed"
if [ "$KEEP" = 1 ]; then
    echo "raw outputs in $TMP"
else
    trap 'rm -rf "$TMP"' EXIT
fi

# ---- the plain loop -----------------------------------------------------------
if [ -z "$LOOP_BIN" ] && [ -x "$BUILD_DIR/bench/nccl_loop" ]; then
    LOOP_BIN=$BUILD_DIR/bench/nccl_loop
fi
if [ -z "$LOOP_BIN" ]; then
    cuda=${CUDA_HOME:-/usr/local/cuda}
    inc="-I$cuda/include" lib="-L$cuda/lib64 -Wl,-rpath,$cuda/lib64"
    if [ -n "${NCCL_HOME:-}" ]; then
        inc="-I$NCCL_HOME/include $inc" lib="-L$NCCL_HOME/lib -Wl,-rpath,$NCCL_HOME/lib $lib"
    fi
    LOOP_BIN=$TMP/nccl_loop
    # shellcheck disable=SC2086 # flags split on purpose
    "${CC:-cc}" -O2 -Wall $inc -o "$LOOP_BIN" "$HERE/nccl_loop.c" $lib -lnccl -lcudart ||
        die "cannot build $HERE/nccl_loop.c (set CUDA_HOME, NCCL_HOME or --nccl-loop)"
fi
[ -x "$LOOP_BIN" ] || die "$LOOP_BIN is not executable"

# "OP BYTES MEAN ISSUE" lines from collprof's table (columns found from its header). From
# the -v -v lines of the cell's timed batch, where there are, MEAN is the device's time per
# operation to 0.01 us (the table has 0.1) and ISSUE the host's time per launch, each the
# max over ranks, as the plain loop reports both
parse_collprof() {
    awk -v iters="$ITERS" '/^# backend/ { for (i = 1; i <= NF; i++) { if ($i == "time(us)") m = i - 1; if ($i == "size(B)") b = i - 1 } }
        / collprof nccl\/default [a-z]+ .*: [0-9]+ launches, host [0-9.]+ us each, device [0-9.]+ us each/ {
            for (i = 1; i < NF; i++) {
                if ($i == "nccl/default") o = $(i + 1)
                if ($i == "launches," && $(i - 1) == iters) {
                    if (!(o in iss) || $(i + 2) > iss[o]) iss[o] = $(i + 2)
                    if (!(o in dev) || $(i + 6) > dev[o]) dev[o] = $(i + 6)
                }
            }
        }
        m && b && $1 == "nccl" && $2 == "default" && $m ~ /^[0-9.]+$/ {
            print $3, $b, ($3 in dev) ? dev[$3] : $m, ($3 in iss) ? iss[$3] : "-"; delete iss[$3]; delete dev[$3]
        }' "$1"
}

# the same from nccl_loop's key-value lines, with its host time per launch
parse_loop() {
    awk '$1 == "op" { u = "-"
        for (i = 3; i < NF; i++) { if ($i == "bytes") b = $(i + 1); if ($i == "mean_us") m = $(i + 1); if ($i == "issue_us") u = $(i + 1) }
        print $2, b, m, u }' "$1"
}

# "ROUND PROGRAM OP INDEX BYTES MEAN ISSUE", INDEX the position in the op's sweep
number() { # round program
    awk -v r="$1" -v p="$2" '{ print r, p, $1, ++k[$1], $2, $3, (NF > 3 ? $4 : "-") }'
}

pin=()
if [ -n "$PIN" ]; then
    command -v taskset >/dev/null 2>&1 || die "--pin needs taskset (util-linux)"
    taskset -c "$PIN" true 2>/dev/null || bad_usage "--pin: taskset -c '$PIN' fails here"
    pin=(taskset -c "$PIN")
fi
launch=()
[ "$NP" -gt 1 ] && launch=(--np "$NP")
for r in $(seq 1 "$ROUNDS"); do
    out=$TMP/loop.$r
    "${pin[@]}" "$LOOP_BIN" -g "$NP" -o "$OPS" -b "$MINB" -e "$MAXB" -f "$FACTOR" -n "$ITERS" -w "$WARMUP" \
        >"$out" 2>&1 || { cat "$out" >&2; die "nccl_loop failed in round $r (output above)"; }
    parse_loop "$out" | number "$r" plain >>"$TMP/times"
    if [ "$CONTROL" = 1 ]; then
        out=$TMP/each.$r
        "${pin[@]}" "$LOOP_BIN" -g "$NP" -o "$OPS" -b "$MINB" -e "$MAXB" -f "$FACTOR" -n "$ITERS" \
            -w "$WARMUP" -a each >"$out" 2>&1 ||
            { cat "$out" >&2; die "nccl_loop -a each failed in round $r (output above)"; }
        parse_loop "$out" | number "$r" plain-each >>"$TMP/times"
    fi
    out=$TMP/collprof.$r
    mkdir -p "$out.d"
    "${pin[@]}" "$COLLPROF_BIN" "${launch[@]}" --backends nccl --variants default --ops "$OPS" \
        -b "$MINB" -e "$MAXB" -f "$FACTOR" --dtype float32 --redop sum --inplace out \
        -n "$ITERS" -w "$WARMUP" -v -v --output-dir "$out.d" >"$out" 2>&1 ||
        { cat "$out" >&2; die "collprof failed in round $r (output above)"; }
    parse_collprof "$out" | number "$r" collprof >>"$TMP/times"
done

analyse "$TMP/times"
