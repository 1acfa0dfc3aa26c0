#!/bin/sh
# collprof-report import of nccl-tests JSON against hostile and realistic
# inputs: the time and peak resident memory of each (/usr/bin/time), of this
# build and, with --base, of another side by side.  The inputs (written by
# python3 into a temporary directory):
#   obj      a 64 MiB object of about 6 M members {"k0":0,"k1":0,...}
#   arr      a 64 MiB array of 8 M numbers
#   res-arr  the 8 M numbers as a nccl-tests file's results (a member import reads)
#   ranks    the 179-byte file declaring 1024 x 1024 ranks, with no results
#   real     a realistic nccl-tests -J file: 64 ranks on 8 nodes, 8 B to 8 GiB
# Each run is stopped after --timeout seconds (default 60; the old reader
# took about a day on obj).  Goals (issue 39): obj, arr and res-arr imported
# or refused within 10 s and 512 MB each, ranks within 1 s.  Run from the
# build tree (or pass --collprof).
# Exit status: 0 ran, 1 failed (a file could not be written, no python3), 2 bad usage.
set -u
NAME=import_json.sh
COLLPROF_BIN=${COLLPROF_REPORT:-}
BASE=
BENCH_OPTS="BASE"
TIMEOUT=60

usage() {
    cat <<'USAGE'
Usage: bench/import_json.sh [OPTIONS]
  --timeout S        stop each import after S seconds (default: 60)
  (--collprof and --base name collprof-report binaries here)
USAGE
    bench_usage
}

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
while [ $# -gt 0 ]; do
    case $1 in
    --timeout) need_arg "$1" $# && TIMEOUT=$2 && shift ;;
    *) bench_opt "$@" || bad_usage "unknown option $1"; shift ;;
    esac
    shift
done
at_least "$TIMEOUT" 1 || bad_usage "--timeout must be a positive integer"
[ -n "$COLLPROF_BIN" ] || COLLPROF_BIN=./collprof-report
find_collprof
find_base
[ -x /usr/bin/time ] || die "no /usr/bin/time (apt-get install time)"
command -v python3 >/dev/null 2>&1 || die "no python3 to write the inputs"
make_tmp

python3 - "$tmp" <<'PY' || die "could not write the inputs"
import sys
d, cap = sys.argv[1], 64 * 1024 * 1024
def write(name, head, items, tail):
    with open(f"{d}/{name}.json", "w") as f:
        size = len(head) + len(tail)
        f.write(head)
        for i, s in enumerate(items):
            if size + len(s) + 1 > cap:
                break
            f.write(("," if i else "") + s)
            size += len(s) + 1
        f.write(tail)
write("obj", "{", (f'"k{i}":0' for i in range(10**8)), "}")
write("arr", "[", (str(10**7 + i) for i in range(8 * 1024 * 1024)), "]")
write("res-arr", '{"version":3,"args":["./all_reduce_perf"],"results":[',
      (str(10**6 + i) for i in range(8 * 1024 * 1024)), "]}")
open(f"{d}/ranks.json", "w").write(
    '{"version":3,"args":["./all_reduce_perf"],"config":{"nthreads":1024,"ngpus":1024,'
    '"devices":[{"pid":1,"hostname":"a","device":0,"device_info":"H100"}]},"results":[]}')
n, devs, res = 64, [], []
for r in range(n):
    devs.append(f'{{"rank":{r},"group":0,"pid":{40000 + r},"hostname":"gpu-{r // 8:02d}",'
                f'"device":{r % 8},"device_hex":"0000:{r:02x}:00","device_info":"NVIDIA H100"}}')
for k in range(31):
    size = 8 << k
    half = []
    for t in (20.0 + size / 150e3, 19.5 + size / 151e3):
        alg = size / t * 1e-3
        half.append(f'{{"time":{t:.6f},"alg_bw":{alg:.6f},"bus_bw":{alg * 2 * (n - 1) / n:.6f},'
                    f'"nwrong":0.000000}}')
    res.append(f'{{"size":{size},"count":{size // 4},"type":"float","redop":"sum","root":"    -1",'
               f'"out_of_place":{half[0]},"in_place":{half[1]},"actual_iterations":20}}')
open(f"{d}/real.json", "w").write(
    '{"version":3,"start_time":"2026-12-05 10:00:00","args":["./build/all_reduce_perf","-b","8",'
    '"-e","8G","-f","2","-g","1","-J","real.json"],"env":["NCCL_DEBUG=WARN"],'
    '"nccl_version":22809,"config":{"nthreads":1,"ngpus":1,"warmup_iters":5,"iterations":20,'
    '"devices":[' + ",".join(devs) + ']},"results":[' + ",".join(res) + "]}\n")
PY

# one import: "TIME s RSS MB exit N" (or "> TIMEOUT s (stopped)")
one() { # BINARY INPUT
    rm -f "$tmp/out.h5"
    timeout "$TIMEOUT" /usr/bin/time -f '%e %M' -o "$tmp/time" "$1" import --from nccl-tests-json \
        "$2" -o "$tmp/out.h5" >/dev/null 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        printf '> %s s (stopped)' "$TIMEOUT"
    else
        tail -n 1 "$tmp/time" | awk -v rc="$rc" '{ printf "%.2f s %5.0f MB exit %d", $1, $2 / 1024, rc }'
    fi
}

printf '%-8s %9s  %-28s %s\n' input bytes "this build" "${BASE:+base}"
for f in obj arr res-arr ranks real; do
    bytes=$(wc -c <"$tmp/$f.json")
    printf '%-8s %9s  %-28s' "$f" "$bytes" "$(one "$COLLPROF_BIN" "$tmp/$f.json")"
    sed "s|$tmp/||" "$tmp/err" | cut -c1-100 >"$tmp/said" # what this build said
    [ -z "$BASE" ] || printf ' %s' "$(one "$BASE" "$tmp/$f.json")"
    printf '\n'
    [ ! -s "$tmp/said" ] || printf '           %s\n' "$(cat "$tmp/said")"
done
