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

ok() { # ok COND-EXIT-STATUS DESCRIPTION; its status 1 when not ok (`ok ... || diagnose`)
    tap_n=$((tap_n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $tap_n - $2"
    else
        echo "not ok $tap_n - $2"
        tap_fail=$((tap_fail + 1))
        return 1
    fi
}

skip_all() {
    echo "1..0 # SKIP $1"
    exit 0
}

# a tool the test needs is missing: skip, but fail under CI (COLLPROF_CI, which
# contrib/quickstart.sh test sets, or CI), where every one should be installed
need_tool() { # WHAT-IS-MISSING
    if [ -n "${COLLPROF_CI:-}${CI:-}" ]; then
        echo "not ok 1 - $1 (needed under CI)"
        echo "1..1"
        exit 1
    fi
    skip_all "$1"
}

done_testing() {
    echo "1..$tap_n"
    [ "$tap_fail" -eq 0 ]
    exit $?
}

# A run that a crash ended (a rank, or collprof, killed by SIGILL, SIGABRT, SIGBUS, SIGFPE or
# SIGSEGV: status 128 + N): its stderr from the first line that names a signal, a backtrace or
# a sanitizer (Open MPI's and UCX's handlers print the crashed rank's backtrace), else its
# end, as TAP comments: $WORK, and the file, go with the test.
crash_diag() {
    case $rc in
    132 | 134 | 135 | 136 | 139)
        echo "# exit $rc: a process crashed; its stderr:"
        if grep -q -E 'signal|backtrace|Sanitizer' "$WORK/err"; then
            awk '!f && /signal|backtrace|Sanitizer/ { f = NR } f && NR < f + 60 { print "# " $0 }' \
                "$WORK/err"
        else
            tail -n 20 "$WORK/err" | sed 's/^/# /'
        fi
        ;;
    esac
}

# collprof with a timeout; output in $WORK/out, $WORK/err, status in $rc
cp_run() {
    rc=0
    timeout -k 10 "$CP_TIMEOUT" "$COLLPROF_BIN" "$@" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
    crash_diag
}

cp_mpirun() {
    np=$1
    shift
    rc=0
    timeout -k 10 "$CP_TIMEOUT" "$CP_MPIRUN" --allow-run-as-root --oversubscribe --bind-to none \
        -np "$np" -x COLLPROF_PLUGIN_PATH ${COLLPROF_FAULT:+-x COLLPROF_FAULT} "$COLLPROF_BIN" "$@" \
        </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
    crash_diag
}

need_mpirun() {
    if [ -z "${CP_MPIRUN:-}" ] || [ ! -x "$CP_MPIRUN" ]; then
        skip_all "mpirun not found at configure time"
    fi
    if [ ! -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
        skip_all "the MPI backend was not built"
    fi
}

# REPORT: the collprof-report beside collprof; skip without it (a build without HDF5)
need_report() {
    REPORT="$(dirname "$COLLPROF_BIN")/collprof-report"
    [ -x "$REPORT" ] || skip_all "collprof-report was not built (no HDF5)"
}

# The replay tests' start: collprof-report, h5dump and the self backend needed, the fixtures in
# $D, the test's directory the current one.  have B: backend B was built; nccl is the plugin
# built against the CUDA/NCCL stand-in in $MOCK (tests/nccl_mock: "device" memory is host
# memory; the replay's device buffers filled and checked through host copies).
replay_prelude() {
    need_report
    [ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] || skip_all "h5dump not found (hdf5-tools)"
    [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_self.so" ] || skip_all "the self backend was not built"
    D=$COLLPROF_SRCDIR/tests/data/trace
    MOCK="$(dirname "$COLLPROF_BIN")/tests/nccl_mock/.libs"
    cd "$WORK" || exit 1
}
have() {
    if [ "$1" = nccl ]; then
        [ -e "$MOCK/collprof_nccl.so" ]
    else
        [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_$1.so" ]
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

# allgatherv with every --imbalance spec (a file where rank 1 contributes nothing among them),
# in and out of place, one variant: every cell measured and exact, none unsupported.
# check_allgatherv_specs NP WHAT COLLPROF-ARGS... (--backends, --variants, -B ...)
check_allgatherv_specs() {
    local np=$1 what=$2 d s n
    shift 2
    d="$WORK/agv_${np}_$(echo "$what" | tr -c 'a-z0-9\n' '_')"
    mkdir -p "$d"
    # rank r's weight is the sum of row r: r+1, but 0 for rank 1
    awk -v n="$np" 'BEGIN { for (r = 0; r < n; r++) { w = r == 1 ? 0 : r + 1; line = w
                            for (c = 1; c < n; c++) line = line " 0"; print line } }' \
        >"$d/weights.tm"
    cp_run --np "$np" --ops allgatherv --inplace both --counts 3001 -d int32 -n 2 -w 1 \
        --imbalance "uniform,linear,spread:1,moe:1:4,file:$d/weights.tm" --output-dir "$d" "$@"
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 5
    check_clean_run "$d" "$what: allgatherv, every imbalance spec, in and out of place"
    s=$(summary_of "$d")
    n=$(grep -c 'AllGatherv.* ms | AlgBW.*#wrong: 0 ' "$s" 2>/dev/null)
    [ "$n" -eq 10 ] && ! grep -q 'unsupported:' "$s"
    ok $? "$what: allgatherv, 10 cells measured and exact, none unsupported (got $n)"
}

# gatherv and scatterv rooted at the last rank, linear and spread:1 (rank 0's block empty), in
# and out of place, one variant: 8 cells, every one measured and exact, none unsupported.
# check_rooted_v_specs NP WHAT COLLPROF-ARGS... (--backends, --variants, -B ...)
check_rooted_v_specs() {
    local np=$1 what=$2 d s g v
    shift 2
    d="$WORK/rv_${np}_$(echo "$what" | tr -c 'a-z0-9\n' '_')"
    mkdir -p "$d"
    cp_run --np "$np" --ops gatherv,scatterv --root $((np - 1)) --inplace both --counts 3001 \
        -d int32 -n 2 -w 1 --imbalance linear,spread:1 --output-dir "$d" "$@"
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | tail -n 5
    check_clean_run "$d" "$what: gatherv, scatterv, root $((np - 1)), in and out of place"
    s=$(summary_of "$d")
    g=$(grep -c '^  Gatherv (.*root .* ms | AlgBW.*#wrong: 0 ' "$s" 2>/dev/null)
    v=$(grep -c '^  Scatterv (.*root .* ms | AlgBW.*#wrong: 0 ' "$s" 2>/dev/null)
    [ "$g" -eq 4 ] && [ "$v" -eq 4 ] && ! grep -q 'unsupported:' "$s"
    ok $? "$what: gatherv and scatterv, 4 + 4 cells measured and exact, none unsupported (got $g + $v)"
}

# ---- the GPU kit (nccl_gpu.sh, nccl_gpu_gaps.sh, nccl_profiler_gpu.sh) ----

# np: one rank per GPU nvidia-smi lists, at most 8; skip without one
gpu_ranks() {
    ngpu=0
    if command -v nvidia-smi >/dev/null 2>&1; then
        ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    fi
    [ "$ngpu" -gt 0 ] || skip_all "no usable GPU (nvidia-smi lists none)"
    np=$ngpu
    [ "$np" -le 8 ] || np=8
}

# skip unless the NCCL backend was built; then gpu_ranks
need_gpus() {
    [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_nccl.so" ] || skip_all "the NCCL backend was not built"
    gpu_ranks
}

# replay_ok NAME DIR OPS (nccl_gpu.sh, nccl_gpu_gaps.sh): the run's summary has the nccl
# replay table, every row ok, OPS ops and no wrong element
replay_ok() {
    s=$(summary_of "$2")
    bad=$(sed -n '/^== replay on nccl/,/^whole trace:/p' "$s" |
        awk 'NR > 2 && !/^whole trace:/ && $12 != "ok"')
    [ "$rc" -eq 0 ] && [ -n "$s" ] && [ -z "$bad" ] &&
        grep -q "^whole trace: $3 ops, .* 0 wrong elements: ok" "$s"
    ok $? "nccl --replay $1: $3 ops, every row ok, no wrong element (exit $rc)${bad:+: $(echo "$bad" | head -n 3 | tr '\n' ';')}"
    [ -n "$s" ] && sed -n '/^== replay on nccl/,/^critical path:/p' "$s" | sed 's/^/# /'
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

# stop_rank_case WHAT RANKS CMD...: run the collprof launch CMD (one node) on six mpi
# cells with --timeout $STOP_TMO, SIGSTOP the processes of RANKS ("2", or "0 1": two
# neighbours) once the first cell is written, and check: exit 124 within --timeout + 5 s
# of the stop; one report naming those ranks alone with their host (and, with rank 0
# stopped, made by its first deputy that answers: on one node the lowest rank not
# stopped); the completed cell and a timeout row in the text and HDF5 files; no process
# left.  The stop-to-end time is printed as a TAP comment.
STOP_TMO=${STOP_TMO:-2}
STOP_ROW=yes
stop_rank_case() {
    local what=$1 r=$2 d p q victim victims t0 t1 el s host rows need res names dep want first
    shift 2
    # shellcheck disable=SC2086 # RANKS: one rank, or two neighbours
    set -- $r "$@"
    names="rank $1"
    if [ "$2" = $(($1 + 1)) ]; then
        names="ranks $1-$2"
        shift
    fi
    shift
    # rank 0 stopped: its deputies on one node are ranks 1, 2, 3 in order; the first not
    # stopped reports
    first=${r%% *} dep='' want=''
    case $r in
    0) dep=1 want="Reported in its place by rank 1, its first deputy." ;;
    "0 1") dep=2 want="Reported in its place by rank 2, deputy 2: the deputies before it (rank 1) do not answer either." ;;
    esac
    d=$(mktemp -d "$WORK/stop.XXXXXX")
    # every iteration at least 1 ms (COLLPROF_FAULT slow): on an idle machine the six cells
    # would otherwise end before the stop lands
    COLLPROF_FAULT=slow:all:1000 timeout -k 5 150 "$@" --backends mpi --variants default --ops allreduce \
        --counts 1K,2K,4K,8K,16K,32K -n 300 -w 2 --timeout "$STOP_TMO" --output-dir "$d" </dev/null >"$d/out" 2>"$d/err" &
    pid=$!
    # (a launch on a loaded machine can take half a minute before cell 0 ends)
    for _ in $(seq 1200); do
        [ "$(grep -c 'ms | AlgBW' "$(summary_of "$d")" 2>/dev/null)" -ge 1 ] 2>/dev/null && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    victims=
    for q in $r; do
        victim=
        for p in $(pgrep -f -- "--output-dir $d"); do
            tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "PMIX_RANK=$q" && victim=$p
        done
        [ -n "$victim" ] && victims="$victims $victim"
    done
    victim=${victims# }
    [ "$(echo "$victim" | wc -w)" -eq "$(echo "$r" | wc -w)" ] || victim=
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # one pid a word
    [ -n "$victim" ] && kill -STOP $victim
    rc=0
    wait $pid || rc=$?
    t1=$(date +%s.%N)
    el=$(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")
    echo "# $what, $names stopped: the run ended ${el} s after the stop (--timeout $STOP_TMO)"
    # shellcheck disable=SC2086
    [ -n "$victim" ] && kill -CONT $victim 2>/dev/null
    # srun's status is its tasks' worst: 137 when slurmstepd killed the stopped rank 0 before the
    # reporting rank's 124 came in (STOP_EXITS lists what a launcher may return).  With rank 0
    # stopped a deputy reports after waiting CP_TMO_WD_DEPUTY_WAIT_S (2 s) for the ones before
    # it: 2 s more per deputy (7.2 s for rank 0 alone once, in a distcheck beside other tests)
    slack=$((5 + ${dep:-0} * 2))
    [ -n "$victim" ] && case " ${STOP_EXITS:-124} " in *" $rc "*) true ;; *) false ;; esac &&
        awk "BEGIN { exit !($el <= $STOP_TMO + $slack) }"
    ok $? "$what, $names stopped: exit ${STOP_EXITS:-124} within --timeout + $slack s (exit $rc after $el s)"
    host=${STOP_HOST:-$(hostname)}
    [ "$(grep -c "collprof: error: timeout: cell [1-9]" "$d/err")" -eq 1 ] &&
        grep -q "No answer (stopped, dead, or cut off from PMIx): $names on $host\." "$d/err" &&
        ! grep -q 'Did not arrive' "$d/err" &&
        { [ -z "$dep" ] ||
            { grep -q "Rank 0 ($host), which writes the result files, does not answer" "$d/err" &&
                grep -qF "$want" "$d/err"; }; }
    res=$?
    ok $res "$what, $names stopped: one report names $names on $host alone${dep:+ (rank 0 stopped: rank $dep reports)}"
    [ $res -eq 0 ] || sed 's/^/# /' "$d/err"
    s=$(summary_of "$d")
    "${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}" export --csv "${s%.txt}.h5" \
        >"$d/csv" 2>&1
    rows=$(grep -c ',timeout,' "$d/csv")
    # a stopped rank 0 writes the timeout row when the launcher wakes it to end
    # it: --np does; mpirun and srun may kill it first (STOP_ROW=maybe)
    need=yes
    [ "$first" -eq 0 ] && [ "$STOP_ROW" = maybe ] && need=maybe
    # stopped while writing a finished cell (a wide window under sanitizers): that cell is in
    # the files as it finished, and no cell was running to time out
    [ "$first" -eq 0 ] && grep -q 'writing results); reporting to rank 0' "$d/err" && need=maybe
    [ -n "$s" ] && grep -q 'AllReduce: .*#wrong: 0' "$s" && [ "$(grep -c ',ok,' "$d/csv")" -ge 1 ] &&
        { [ "$need" = maybe ] || { [ "$rows" -eq 1 ] && grep -q '^timeouts: *1$' "$s"; }; }
    res=$?
    ok $res "$what, $names stopped: the files keep the completed cell ($rows timeout row, $need needed)"
    [ $res -eq 0 ] || sed 's/^/# /' "$d/err"
    sleep 0.5
    ! pgrep -f -- "--output-dir $d" >/dev/null
    ok $? "$what, $names stopped: no process left"
    # shellcheck disable=SC2086
    [ -n "$victim" ] && kill -KILL $victim 2>/dev/null
    return 0
}

# rows FILE TABLE: the rows of an HDF5 table of FILE (h5dump, CP_H5DUMP), one a line, the fields
# joined by '|' in the order of the table's columns (the trace and replay tests)
rows() {
    "$CP_H5DUMP" -d "/$2" -y -w 0 "$1" | awk '/DATA \{/ { d = 1; next } d' | tr -d '\n' |
        sed 's/}, *{/}\n{/g' | sed 's/ \+/ /g; s/^ *{ *//; s/ *}.*$//; s/"//g; s/, /|/g'
    echo
}
