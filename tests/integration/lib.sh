# Shared helpers for collprof's shell tests (TAP output, skips, timeouts).
# Every test sources this file; all traffic stays on loopback.
set -u
: "${COLLPROF_BIN:?run through make check}"
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo GLOO_SOCKET_IFNAME=lo NCCL_SOCKET_IFNAME=lo
# bound every multi-process command
CP_TIMEOUT=${CP_TIMEOUT:-180}
tap_n=0
tap_fail=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/collprof-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

ok() { # ok COND-EXIT-STATUS DESCRIPTION
    tap_n=$((tap_n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $tap_n - $2"
    else
        echo "not ok $tap_n - $2"
        tap_fail=$((tap_fail + 1))
    fi
}

skip_all() {
    echo "1..0 # SKIP $1"
    exit 0
}

done_testing() {
    echo "1..$tap_n"
    [ "$tap_fail" -eq 0 ]
    exit $?
}

# collprof with a timeout; output in $WORK/out, $WORK/err, status in $rc
cp_run() {
    rc=0
    timeout -k 10 "$CP_TIMEOUT" "$COLLPROF_BIN" "$@" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
}

cp_mpirun() {
    np=$1
    shift
    rc=0
    timeout -k 10 "$CP_TIMEOUT" "$CP_MPIRUN" --allow-run-as-root --oversubscribe --bind-to none \
        -np "$np" -x COLLPROF_PLUGIN_PATH ${COLLPROF_FAULT:+-x COLLPROF_FAULT} "$COLLPROF_BIN" "$@" \
        </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
}

need_mpirun() {
    if [ -z "${CP_MPIRUN:-}" ] || [ ! -x "$CP_MPIRUN" ]; then
        skip_all "mpirun not found at configure time"
    fi
    if [ ! -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
        skip_all "the MPI backend was not built"
    fi
}

# the one summary file of a run in directory $1
summary_of() {
    ls "$1"/collprof_*.txt 2>/dev/null | head -n 1
}

# check a finished run: exit 0, summary present, every data cell ok with #wrong 0 and busBW > 0
check_clean_run() { # DIR WHAT
    local s
    s=$(summary_of "$1")
    ok $rc "$2: exit status 0"
    [ -n "$s" ] && [ -s "$s" ]
    ok $? "$2: text summary written"
    grep -q '^result: *PASSED' "$s" 2>/dev/null
    ok $? "$2: summary says PASSED"
    ! grep -q -E 'WRONG|: error:' "$s" 2>/dev/null
    ok $? "$2: no wrong or failed cell"
    # timings on a shared 2-core machine vary a lot: demand sane numbers, not fast ones
    # (a 2-rank barrier can take under 0.5 us, which the summary prints as 0.000 ms)
    awk -F'|' '/ ms \| AlgBW/ { n++; split($4, w, ":"); if (w[2] + 0 != 0) bad++;
                 if (!match($1, / [0-9]+\.[0-9]+ ms *$/)) bad++;
                 split($3, b, ":"); if (b[2] !~ /^ *[0-9]+\.[0-9]+ GB\/s *$/) bad++ }
               END { exit (n > 0 && bad == 0) ? 0 : 1 }' "$s"
    ok $? "$2: every measured cell has #wrong 0, a numeric time and a numeric busBW"
}

# ---- Slurm (tests/integration/slurm.sh, nodes.sh) ----

# skip unless the Slurm and munge programs are installed and we are root ($1: why root)
need_slurm() {
    for p in munged slurmctld slurmd srun salloc sbatch scontrol sinfo squeue scancel; do
        if ! command -v "$p" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$p" ]; then
            skip_all "$p not found (apt-get install slurmctld slurmd slurm-client munge)"
        fi
    done
    [ "$(id -u)" -eq 0 ] || skip_all "$1"
}

# a fresh directory /tmp/$1.XXXXXX for contrib/slurm-local (COLLPROF_SLURM_DIR), stopped and
# removed with $WORK at exit; SL is the script, SB the directory of the sbatch templates
slurm_local_setup() {
    SL="$COLLPROF_SRCDIR/contrib/slurm-local/slurm-local.sh"
    # shellcheck disable=SC2034 # for the tests that source this file
    SB="$COLLPROF_SRCDIR/share/collprof/sbatch"
    # munged wants every directory up to its socket searchable by all: not under $WORK (0700)
    COLLPROF_SLURM_DIR=$(mktemp -d "/tmp/$1.XXXXXX")
    export COLLPROF_SLURM_DIR
    chmod 755 "$COLLPROF_SLURM_DIR"
    trap slurm_local_cleanup EXIT
    trap 'exit 130' INT TERM HUP
}

slurm_local_cleanup() {
    timeout -k 5 60 bash "$SL" stop >"$WORK/stop.log" 2>&1 || cat "$WORK/stop.log" >&2
    rm -rf "$COLLPROF_SLURM_DIR" "$WORK"
}

# the job id in the name of the first summary file in directory $1
# shellcheck disable=SC2012 # our own file names
job_of() {
    ls "$1" | sed -n "s/^collprof_.*_j\([0-9]*\).*\.txt$/\1/p" | head -n 1
}

# wait until every record of job $1 is finished (at most $2 s); state(s) in $job_state
wait_job() {
    i=0
    while [ "$i" -lt $(($2 * 2)) ]; do
        job_state=$(timeout 10 scontrol show job -o "$1" 2>/dev/null |
            sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | sort -u | tr '\n' ' ')
        case $job_state in
        "" | *PENDING* | *RUNNING* | *CONFIGURING* | *COMPLETING* | *SUSPENDED* | *REQUEUE*) ;;
        *) return 0 ;;
        esac
        sleep 0.5
        i=$((i + 1))
    done
    timeout 10 scancel "$1" 2>/dev/null
    return 1
}

# job $1 ($2: what) ends within $3 s, COMPLETED with exit code 0:0
check_job_done() {
    job_state=""
    [ -n "$1" ] && wait_job "$1" "$3"
    ok $? "$2: job $1 ended within $3 s (state $job_state)"
    timeout 10 scontrol show job -o "$1" 2>/dev/null | grep -q 'JobState=COMPLETED .*ExitCode=0:0'
    ok $? "$2: job COMPLETED with exit code 0:0"
}
