# Shared by collprof-nsys.sh and collprof-ncu.sh (sourced; POSIX sh).
# Before sourcing: prog and a usage function.

outdir=
dry=0
extra=

# prof_arg OPTION [VALUE]: VALUE must be there.
prof_arg() {
    [ $# -ge 2 ] || { echo "$prog: $1 needs a value" >&2; exit 2; }
}

# prof_opt TOOL ARGS...: one of the options both wrappers take (--help,
# --output-dir DIR, --TOOL-opt OPT, --dry-run); sets shifted to the number
# of arguments it used, 0 when $1 is not one of them.
prof_opt() {
    tool=$1
    shift
    shifted=0
    case $1 in
    -h | --help) usage; exit 0 ;;
    --output-dir) prof_arg "$@"; outdir=$2; shifted=2 ;;
    --"$tool"-opt) prof_arg "$@"; extra="$extra $2"; shifted=2 ;;
    --dry-run) dry=1; shifted=1 ;;
    esac
}

# The output directory: the wrapper's own, else collprof's --output-dir, else ".".
# Sets outdir and has_outdir (1 when collprof's arguments name one).
prof_outdir() {
    prev=
    has_outdir=0
    for a in "$@"; do
        if [ "$prev" = "--output-dir" ] && [ -z "$outdir" ]; then outdir=$a; fi
        [ "$a" = "--output-dir" ] && has_outdir=1
        prev=$a
    done
    outdir=${outdir:-.}
}

# prof_need TOOL HINT: TOOL and collprof must be runnable (exit 127 otherwise).
prof_need() {
    if ! command -v "$1" >/dev/null 2>&1; then
        echo "$prog: error: $1 not found: $2" >&2
        exit 127
    fi
    if ! command -v "$collprof" >/dev/null 2>&1; then
        echo "$prog: error: $collprof not found: put collprof in PATH or set COLLPROF_BIN" >&2
        exit 127
    fi
}

# prof_name KIND: the report's base name, per rank under a launcher.
prof_name() {
    rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${SLURM_PROCID:-}}}
    name="collprof_$1_$(date -u +%Y%m%dT%H%M%SZ)${rank:+_r$rank}"
}

# prof_run EXT COMMAND...: print it (--dry-run) or run it, naming the report.
prof_run() {
    ext=$1
    shift
    [ "$has_outdir" -eq 1 ] || set -- "$@" --output-dir "$outdir"
    if [ "$dry" -eq 1 ]; then
        echo "$@"
        exit 0
    fi
    mkdir -p "$outdir"
    echo "$prog: report: $outdir/$name.$ext" >&2
    exec "$@"
}
