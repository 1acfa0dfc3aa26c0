# Shared by the bench/ and contrib/gpu/ scripts (sourced; POSIX sh).  Before sourcing: NAME.

die() {
    printf '%s: %s\n' "$NAME" "$*" >&2
    exit 1
}

bad_usage() {
    printf '%s: %s (see --help)\n' "$NAME" "$*" >&2
    exit 2
}

# need_arg OPTION ARGS-LEFT: the option has a value after it
need_arg() {
    [ "$2" -ge 2 ] || bad_usage "$1 needs a value"
}

# at_least VALUE MINIMUM: VALUE is a whole number >= MINIMUM
at_least() {
    case $1 in '' | *[!0-9]*) return 1 ;; esac
    [ "$1" -ge "$2" ]
}

# COLLPROF_BIN as an absolute path (./collprof, else the one on PATH, unless
# already set) and BUILD_DIR, the folder it is in.
find_collprof() {
    if [ -z "$COLLPROF_BIN" ]; then
        if [ -x ./collprof ]; then
            COLLPROF_BIN=./collprof
        else
            COLLPROF_BIN=$(command -v collprof 2>/dev/null) ||
                die "no collprof: run from the build tree, or pass --collprof PATH"
        fi
    fi
    [ -x "$COLLPROF_BIN" ] || die "$COLLPROF_BIN is not executable"
    COLLPROF_BIN=$(cd "$(dirname "$COLLPROF_BIN")" && pwd)/$(basename "$COLLPROF_BIN")
    BUILD_DIR=$(dirname "$COLLPROF_BIN")
}

# BASE (--base: another collprof build to run beside this one), when set, as an absolute path
find_base() {
    [ -n "$BASE" ] || return 0
    [ -x "$BASE" ] || die "--base: $BASE is not executable"
    BASE=$(cd "$(dirname "$BASE")" && pwd)/$(basename "$BASE")
}

# bench_opt OPTION [VALUE...]: an option the benches share, where the script lists its
# variable in BENCH_OPTS (set before): --np LIST (NPS, blanks for its commas) or --np N (NP),
# -r/--rounds R (ROUNDS), -n/--iters N (ITERS), -w/--warmup W (WARMUP), --ops LIST (OPS),
# --base PATH (BASE), --plugin-path DIR (PLUGIN_PATH); and in every script --collprof PATH
# (COLLPROF_BIN) and -h/--help (the script's usage, exit 0).  Returns 0 having taken OPTION
# and its value (the caller shifts both), 1 when it is none of the script's: the last arm of
# its parse loop, then,
#   *) bench_opt "$@" || bad_usage "unknown option $1"; shift ;;
bench_opt() {
    case $1 in
    --np) bench_var=NP ;;
    -r | --rounds) bench_var=ROUNDS ;;
    -n | --iters) bench_var=ITERS ;;
    -w | --warmup) bench_var=WARMUP ;;
    --ops) bench_var=OPS ;;
    --base) bench_var=BASE ;;
    --plugin-path) bench_var=PLUGIN_PATH ;;
    --collprof) bench_var=COLLPROF_BIN ;;
    -h | --help)
        usage
        exit 0
        ;;
    *) return 1 ;;
    esac
    # --np: a list of counts where the script takes one
    [ "$bench_var" = NP ] && bench_takes NPS && bench_var=NPS
    bench_takes "$bench_var" || return 1
    need_arg "$1" $#
    if [ "$bench_var" = NPS ]; then
        NPS=$(echo "$2" | tr , ' ')
    else
        eval "$bench_var=\$2"
    fi
}

# the script takes bench_opt's option that sets VARIABLE (COLLPROF_BIN: every script)
bench_takes() { # VARIABLE
    case " ${BENCH_OPTS:-} COLLPROF_BIN " in *" $1 "*) return 0 ;; esac
    return 1
}

# the end of a bench's usage: --base (where it takes it), --collprof, -h
bench_usage() {
    bench_takes BASE && cat <<'USAGE'
  --base PATH        another collprof build to run beside this one (its
                     plugins: .libs next to it)
USAGE
    cat <<'USAGE'
  --collprof PATH    collprof binary (default: $COLLPROF, ./collprof, PATH)
  -h, --help         this help
USAGE
}

# every rank count of NPS a whole number >= MIN (WHY, when given, says why in the message)
check_nps() { # MIN [WHY]
    for np in $NPS; do
        at_least "$np" "$1" || bad_usage "--np: whole numbers >= $1${2:+ ($2)}, not '$np'"
    done
}

# the rounds, timed and warm-up iterations of a comparison against a plain loop
# (nccl_compare.sh, overhead.sh)
check_loop_counts() {
    at_least "$ROUNDS" 1 || bad_usage "--rounds must be a positive integer"
    at_least "$ITERS" 1 || bad_usage "--iters must be a positive integer"
    at_least "$WARMUP" 0 || bad_usage "--warmup must be a non-negative integer"
}

# tmp: a new temporary directory, removed at exit
make_tmp() {
    tmp=$(mktemp -d) || die "no temporary directory"
    trap 'rm -rf "$tmp"' EXIT
}

# the collprof binary of BUILD: this (COLLPROF_BIN) or base (BASE); the benches that run two
# builds side by side loop over: this ${BASE:+base}
build_bin() { # BUILD
    if [ "$1" = base ]; then
        echo "$BASE"
    else
        echo "$COLLPROF_BIN"
    fi
}

# a collprof run that wrote its stderr to $tmp/err failed: its last lines, then die MESSAGE
die_run() { # MESSAGE
    tail -n 5 "$tmp/err" >&2
    die "$1"
}

# ---- virtual Slurm clusters of this machine (scale.sh, screen.sh; needs root) ----

# SL: contrib/slurm-local's script; COLLPROF_PLUGIN_PATH (unless set): .libs beside collprof
# (find_collprof first); WORK: a new directory /tmp/NAME.XXXXXX with the cluster's in it
# (COLLPROF_SLURM_DIR); at exit the cluster is purged and WORK removed (unless KEEP is set)
cluster_setup() { # NAME
    SL=$(cd "$(dirname "$0")/.." && pwd)/contrib/slurm-local/slurm-local.sh
    [ -f "$SL" ] || die "no $SL"
    export COLLPROF_PLUGIN_PATH="${COLLPROF_PLUGIN_PATH:-$BUILD_DIR/.libs}"
    WORK=$(mktemp -d "/tmp/$1.XXXXXX")
    chmod 755 "$WORK" # munged wants every directory up to its socket searchable
    export COLLPROF_SLURM_DIR="$WORK/slurm"
    trap 'bash "$SL" purge >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT INT TERM
}

# until the previous job is gone from every node (srun --immediate would find them busy; at
# most a minute)
wait_idle() {
    i=0
    while [ -n "$(squeue -h 2>/dev/null)" ] && [ "$i" -lt 120 ]; do
        sleep 0.5
        i=$((i + 1))
    done
}

# CSV_AWK: the awk function csv(line, f), which splits one CSV line (RFC 4180
# quoting, no embedded newlines) into f[1..n] and returns n.  Put it in front of
# a program: awk -v ... "$CSV_AWK"'PROGRAM' (plain awk text: mawk has no -e).
CSV_AWK='
function csv(line, f,    n, i, c, q, cur) {
    n = 0; cur = ""; q = 0
    for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) {
            if (c == "\"") {
                if (substr(line, i + 1, 1) == "\"") { cur = cur "\""; i++ } else q = 0
            } else cur = cur c
        } else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = cur; cur = "" }
        else cur = cur c
    }
    f[++n] = cur
    return n
}
'
