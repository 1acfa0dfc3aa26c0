#!/bin/sh
# collprof across virtual nodes: a real 4-node Slurm cluster (contrib/slurm-local --nodes 4: one
# slurmd per node, each in its own network, UTS and mount namespace on a bridge) runs every CPU
# backend that was built (mpi, gloo, ofi over tcp;ofi_rxm) with every op exact under
# `srun --mpi=pmix -N 2 --ntasks-per-node=2` (on n1 and n2), block and cyclic placement,
# `salloc -N 2` + srun and `sbatch -N 2`, and all of them in one run on 4 nodes x 1 rank over a
# control tree of fanout 2 (a leader below a leader); faults (a rank stopped on that tree's
# deepest node, a node cut off); then shape, link and exec of the harness, and stop.  One cluster start serves every check.  Skips
# (77) without root, without the Slurm and munge daemons, or when network namespaces are
# refused.  Every Slurm command is bounded (--immediate and timeout); the cluster is torn down
# at the end, also on failure.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/cluster.sh"

need_virtual_nodes

# ---- the cluster
T0=$(now)
cluster_start 4 collprof-nodes-test
NETW=$OMPI_MCA_btl_tcp_if_include
[ -s "$SLURM_CONF" ] && [ "$GLOO_SOCKET_IFNAME" = cpnet0 ] && [ "$NETW" != lo ]
ok $? "start printed SLURM_CONF and the interfaces ($NETW, cpnet0)"
[ "$(timeout 10 sinfo -h -N -o '%N %T' | sort | tr '\n' ' ')" = "n1 idle n2 idle n3 idle n4 idle " ]
ok $? "sinfo: n1..n4 idle"
[ "$(bash "$SL" exec n1 hostname)" = n1 ] && [ "$(bash "$SL" exec n2 hostname)" = n2 ] &&
    bash "$SL" exec n2 cat /etc/hosts | grep -q ' n1$'
ok $? "exec: each node has its own hostname and a hosts file that names the others"
bridge=$(bash "$SL" status 2>/dev/null | sed -n 's/.* on bridge \([^ ,]*\).*/\1/p')
tag=${bridge%-br}
[ -n "$tag" ]
ok $? "status names the bridge ($bridge)"

export COLLPROF="$COLLPROF_BIN"
COLLPROF_REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
# two counts (one below and one above the eager/inject sizes), and on 4 nodes every backend;
# under sanitizers (2-3x slower) a representative subset: one count, one backend on 4 nodes
# (gloo offers 12 of the 14 ops: not gatherv nor scatterv, whose cells are unsupported)
counts=1K,64K
cells=27 gloo_cells=23
if [ "${CP_TIMING_UNRELIABLE:-0}" = 1 ]; then
    counts=4K
    cells=14 gloo_cells=12
fi
SMALL="--ops all --counts $counts -n 3 -w 1 --variants default"
SRUN="srun --immediate=30 --mpi=pmix"
# 2 nodes x 2 ranks, always n1 and n2 (the others may still be completing an earlier job)
N2="-N 2 -w n1,n2 --ntasks-per-node=2"

# the hosts of ranks 0, 1, ... from the HDF5 file next to summary $1 (empty without h5dump)
rank_hosts() {
    [ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] && [ -e "${1%.txt}.h5" ] || return 0
    "$CP_H5DUMP" -d /ranks -y -w 0 "${1%.txt}.h5" 2>/dev/null | grep -o '"n[0-9]*"' |
        tr -d '"' | tr '\n' ' '
}

# check the run in directory $1 ($2: what) ran 4 ranks 2 per node, ranks on hosts $3
check_nodes() {
    s=$(summary_of "$1")
    case $3 in
    "n1 n2 n1 n2 ") where="n1 ranks 0,2, n2 ranks 1,3" ;;
    *) where="n1 ranks 0-1, n2 ranks 2-3" ;;
    esac
    grep -q "^world: *4 ranks on 2 nodes: $where\$" "$s" 2>/dev/null
    ok $? "$2: the summary says 4 ranks on 2 nodes: $where"
    h=$(rank_hosts "$s")
    if [ -n "$h" ]; then
        [ "$h" = "$3" ]
        ok $? "$2: ranks 0-3 ran on $3(got $h)"
    fi
}

# ---- 1. every CPU backend, every op, srun -N 2 --ntasks-per-node=2 (block placement)
for b in $BACKENDS; do
    d="$WORK/srun-$b"
    mkdir -p "$d"
    opt=""
    [ "$b" = ofi ] && opt="--ofi-provider tcp;ofi_rxm -v" # -v: the provider and interface
    [ "$b" = gloo ] && opt="-v"                           # -v: the interface and why
    t=$(now)
    rc=0
    # shellcheck disable=SC2086 # SMALL, SRUN, N2 and opt are lists of options
    timeout -k 10 120 $SRUN $N2 "$COLLPROF_BIN" --backends "$b" $SMALL \
        $opt --output-dir "$d" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | head -n 20
    check_clean_run "$d" "$b on 2 nodes x 2 ($(since "$t") s)"
    labels='AllReduce|AllGather|ReduceScatter|AllToAll|AllToAllv|Broadcast|Reduce|Gather|Scatter'
    labels="$labels|Barrier|SendRecv|AllGatherv|Gatherv|Scatterv"
    n=$(grep -c -E "^  ($labels): .* ms \\| AlgBW" "$(summary_of "$d")" 2>/dev/null)
    want=$cells
    [ "$b" = gloo ] && want=$gloo_cells
    [ "$n" -eq "$want" ]
    ok $? "$b: every op it offers measured ($want cells: ops x counts $counts + barrier; got $n)"
    check_nodes "$d" "$b" "n1 n1 n2 n2 "
    if [ "$b" = ofi ]; then
        grep -q "ofi: provider tcp;ofi_rxm, fabric $NETW, domain cpnet0" "$WORK/err"
        ok $? "ofi: provider tcp;ofi_rxm on the nodes' network and link cpnet0"
    fi
    if [ "$b" = gloo ]; then
        grep -q 'gloo: full mesh of 4 ranks on .*iface=cpnet0.*(interface of GLOO_SOCKET_IFNAME;' \
            "$WORK/err"
        ok $? "gloo: the device is on cpnet0, as GLOO_SOCKET_IFNAME says"
        # collprof's control channel: rank 1 (on rank 0's node) to rank 0 over AF_UNIX, rank 2
        # (n2's first rank, its leader) to the address of rank 0's node name on the nodes'
        # network (TCP), rank 3 to rank 2 over AF_UNIX; rank 0 holds one connection per rank
        # of its node and one per other node; the sockets and their folders gone after the run
        left=0
        for p in $(sed -n 's/.*\] oob (run): .*; channel tcp unix:\([^ ]*\) .*/\1/p' "$WORK/err"); do
            if [ -e "$p" ] || [ -e "${p%/s}" ]; then left=1; fi
        done
        grep -q ' r1/4 [^]]*\] oob (run): .*; channel tcp unix:/[^ ]*/s (tree by node to rank 0): 1 links, ' "$WORK/err" &&
            grep ' r2/4 [^]]*\] oob (run): .*; channel tcp [0-9.]*:[0-9]* (tree by node to rank 0): 2 links, ' "$WORK/err" |
            grep -qv 'channel tcp 127\.' &&
            grep -q ' r3/4 [^]]*\] oob (run): .*; channel tcp unix:/[^ ]*/s (tree by node to rank 0): 1 links, ' "$WORK/err" &&
            grep -q ' r0/4 [^]]*\] oob (run): .*; channel tcp unix:/[^ ]*/s + [0-9.]*:[0-9]* (2 nodes, fanout 32, depth 2) (tree by node to rank 0): 2 links, ' "$WORK/err" &&
            ! grep -q 'no AF_UNIX listener' "$WORK/err" && [ "$left" -eq 0 ]
        ok $? "gloo: the OOB collectives go over a tree: AF_UNIX on each node, TCP on the nodes' network from n2's leader to rank 0 (2 links at rank 0; the default fanout, two levels; the sockets removed)"
    fi
done

# one backend for the launcher variants: the quickest that was built
for b in gloo mpi ofi; do
    case " $BACKENDS " in *" $b "*) break ;; esac
done
ONE="--backends $b"

# without collprof's TCP channel (COLLPROF_OOB=pmix) the agreements and the gathers to rank 0
# go through Slurm's PMIx fences across the nodes: rank 3's wrong element (on n2) is counted
d="$WORK/pmix-oob"
mkdir -p "$d"
rc=0
# shellcheck disable=SC2086 # SRUN, N2 and ONE are lists of options
COLLPROF_OOB=pmix COLLPROF_FAULT=wrong:3 timeout -k 10 120 $SRUN $N2 "$COLLPROF_BIN" $ONE \
    --ops allreduce,allgather --counts 4K -n 3 -w 1 --variants default -v --output-dir "$d" \
    </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
s=$(summary_of "$d")
[ "$rc" -eq 1 ] && grep -q ' r0/4 [^]]*\] oob (run): [1-9][0-9]* fences .*; channel pmix' "$WORK/err" &&
    [ "$(grep -c -E '#wrong: 1 .*WRONG' "$s" 2>/dev/null)" -eq 2 ]
r=$?
ok $r "COLLPROF_OOB=pmix on 2 nodes x 2: rank 3's wrong element counted by rank 0 (exit $rc)"
[ "$r" -eq 0 ] || { grep -e ' r0/4 .*oob (run)' -e 'error' "$WORK/err" | head -n 5; grep -e 'WRONG' -e '#wrong' "$s"; } | sed 's/^/# /'

# the star (COLLPROF_OOB=star, every rank connected to rank 0: the channel before the tree)
# still carries the same: rank 0 holds 3 links, rank 3's wrong element is counted
d="$WORK/star-oob"
mkdir -p "$d"
rc=0
# shellcheck disable=SC2086 # SRUN, N2 and ONE are lists of options
COLLPROF_OOB=star COLLPROF_FAULT=wrong:3 timeout -k 10 120 $SRUN $N2 "$COLLPROF_BIN" $ONE \
    --ops allreduce,allgather --counts 4K -n 3 -w 1 --variants default -v --output-dir "$d" \
    </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
s=$(summary_of "$d")
[ "$rc" -eq 1 ] && grep -q ' r0/4 [^]]*\] oob (run): .*(star to rank 0): 3 links, ' "$WORK/err" &&
    [ "$(grep -c -E '#wrong: 1 .*WRONG' "$s" 2>/dev/null)" -eq 2 ]
ok $? "COLLPROF_OOB=star on 2 nodes x 2: 3 links at rank 0, rank 3's wrong element counted (exit $rc)"

# a rank 0 allowed too few open files for its channel (4 ranks + 32 spare; the task's hard
# limit 35) warns and takes PMIx fences, and the run passes; its accepts used to fail until
# the channel's deadline
d="$WORK/nofile"
mkdir -p "$d"
rc=0
# shellcheck disable=SC2016,SC2086 # "$0" "$@" are the task shell's; SRUN, N2, ONE are lists
timeout -k 10 120 $SRUN $N2 sh -c 'ulimit -n 35 && exec "$0" "$@"' "$COLLPROF_BIN" \
    $ONE --ops allreduce --counts 4K -n 3 -w 1 --variants default -v --output-dir "$d" \
    </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 0 ] && grep -q "no TCP control channel (rank 0 may open 35 files (ulimit -n; hard limit 35), too few for the connections of 4 ranks; raise 'ulimit -n' to 36 or more): collprof's exchanges go through PMIx fences" "$WORK/err" &&
    grep -q ' r0/4 [^]]*\] oob (run): [1-9][0-9]* fences .*; channel pmix' "$WORK/err" &&
    grep -q '^# cells: 1 ok; #wrong 0: PASSED$' "$WORK/out"
r=$?
ok $r "ulimit -n 35 on 2 nodes x 2: rank 0 warns that its channel lacks files, PMIx fences, exit $rc"
[ "$r" -eq 0 ] || grep -e 'oob' -e 'error' "$WORK/err" | head -n 5 | sed 's/^/# /'

# rank:host pairs of `srun -N 2 --ntasks-per-node=2 $@`, sorted by rank
placement() {
    # shellcheck disable=SC2016,SC2086 # expanded by the task's shell; SRUN and N2 are lists
    timeout -k 5 60 $SRUN $N2 "$@" sh -c 'echo "$SLURM_PROCID:$(hostname)"' \
        </dev/null 2>/dev/null | sort -n | tr '\n' ' '
}

# ---- 2. placement: block (the default) and cyclic
p=$(placement)
[ "$p" = "0:n1 1:n1 2:n2 3:n2 " ]
ok $? "block placement: ranks 0,1 on n1 and 2,3 on n2 (got $p)"
p=$(placement -m cyclic)
[ "$p" = "0:n1 1:n2 2:n1 3:n2 " ]
ok $? "srun -m cyclic: ranks 0,2 on n1 and 1,3 on n2 (got $p)"
d="$WORK/cyclic"
mkdir -p "$d"
t=$(now)
rc=0
# shellcheck disable=SC2086 # SMALL, SRUN, N2 and ONE are lists of options
timeout -k 10 120 $SRUN $N2 -m cyclic "$COLLPROF_BIN" $ONE $SMALL \
    --output-dir "$d" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | head -n 20
check_clean_run "$d" "$b, -m cyclic ($(since "$t") s)"
check_nodes "$d" "$b, -m cyclic" "n1 n2 n1 n2 "
# collprof-report rebuilds the same line from the HDF5 file's ranks table
s=$(summary_of "$d")
if [ -x "$COLLPROF_REPORT" ] && [ -e "${s%.txt}.h5" ]; then
    "$COLLPROF_REPORT" summary "${s%.txt}.h5" 2>/dev/null | grep '^world:' >"$WORK/rworld"
    grep '^world:' "$s" | cmp -s - "$WORK/rworld"
    ok $? "collprof-report summary: the same world line ($(cat "$WORK/rworld"))"
fi

# ---- 2b. --split node,cross: each cell again on the ranks of each node and on one rank per node
# (cyclic placement: n1's node group is ranks 0 and 2), every backend in one run
d="$WORK/split"
mkdir -p "$d"
SPLIT_BACKENDS=$BACKENDS
# under sanitizers one backend through the host's group channel and MPI's own groups
[ "${CP_TIMING_UNRELIABLE:-0}" = 1 ] && SPLIT_BACKENDS=$(echo $BACKENDS | tr ' ' '\n' | grep -v ofi)
nb=$(echo $SPLIT_BACKENDS | wc -w)
t=$(now)
rc=0
# shellcheck disable=SC2086 # SRUN and N2 are lists of options
timeout -k 10 180 $SRUN $N2 -m cyclic "$COLLPROF_BIN" --backends "$(echo $SPLIT_BACKENDS | tr ' ' ,)" \
    --ofi-provider 'tcp;ofi_rxm' --ops allreduce,alltoall,alltoallv,allgatherv --counts 4K -n 3 -w 1 \
    --variants default --split node,cross -v --output-dir "$d" </dev/null >"$WORK/out" \
    2>"$WORK/err" || rc=$?
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | head -n 20
check_clean_run "$d" "--split node,cross, $nb backends ($(since "$t") s)"
s=$(summary_of "$d")
for k in node cross; do
    n=$(grep -c -E "^  (AllReduce|AllToAll|AllToAllv|AllGatherv) \($k groups of 2\): +[0-9.]+ ms" \
        "$s" 2>/dev/null)
    [ "$n" -eq $((4 * nb)) ]
    ok $? "--split: 4 ops x $nb backends measured on $k groups of 2 ranks (got $n)"
done
grep -q "initialising the node group (2 of 4 ranks)" "$WORK/err" &&
    grep -q "initialising the cross group (2 of 4 ranks)" "$WORK/err"
ok $? "--split: every backend started on its node group and its cross group of 2 ranks"
# the groups' exchanges go over TCP trees of their own: rank 3 (a member, neither a leader nor
# rank 0) publishes nothing in PMIx, where each group collective was a put
grep -q ' r3/4 [^]]*\] oob (run): 1 fences .*, 0 puts of 0 bytes, .*; channel tcp ' "$WORK/err" &&
    ! grep -q 'no TCP tree' "$WORK/err"
ok $? "--split: the groups' exchanges go over TCP trees (rank 3 put nothing in PMIx)"
if [ -x "$COLLPROF_REPORT" ] && [ -e "${s%.txt}.h5" ]; then
    "$COLLPROF_REPORT" summary "${s%.txt}.h5" 2>/dev/null | grep 'groups of 2' >"$WORK/rsplit"
    grep 'groups of 2' "$s" | cmp -s - "$WORK/rsplit" && [ -s "$WORK/rsplit" ]
    ok $? "--split: the HDF5 file records the split (collprof-report summary prints the same lines)"
fi

# ---- 3. salloc -N 2, then srun in the allocation
d="$WORK/salloc"
mkdir -p "$d"
rc=0
# shellcheck disable=SC2016,SC2086 # expanded by the inner shell; N2 is a list of options
timeout -k 10 120 salloc --immediate=30 $N2 sh -c \
    'srun --immediate=30 --mpi=pmix "$COLLPROF_BIN" $1 --ops allreduce,alltoall --counts 4K \
        -n 3 -w 1 --variants default --output-dir "$2"' salloc-step "$ONE" "$d" \
    </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | head -n 20
check_clean_run "$d" "$b, salloc -N 2 + srun"
check_nodes "$d" "$b, salloc -N 2 + srun" "n1 n1 n2 n2 "

# ---- 4. sbatch -N 2 of the shipped template
d="$WORK/sbatch"
mkdir -p "$d"
rc=0
# shellcheck disable=SC2086 # ONE and N2 are lists of options
id=$(cd "$d" && COLLPROF_SRUN="--immediate=30" timeout 30 sbatch --parsable $N2 \
    "$SB/collprof.sbatch" $ONE --ops allreduce,alltoall --counts 4K -n 3 -w 1 \
    --variants default) || rc=$?
ok $rc "sbatch -N 2 collprof.sbatch: submitted (job ${id:-none})"
check_job_done "$id" sbatch 120
rc=0
mkdir -p "$d/res"
mv "$d"/collprof_*_w4_j"$id"_s0.* "$d/res/" 2>/dev/null
check_clean_run "$d/res" "sbatch -N 2: the job's srun step"
check_nodes "$d/res" "sbatch -N 2" "n1 n1 n2 n2 "

# ---- 4b. a job array of two 2-node jobs (they may run side by side on n1,n2 and n3,n4)
d="$WORK/array"
mkdir -p "$d"
t=$(now)
rc=0
# shellcheck disable=SC2086 # ONE is a list of options
id=$(cd "$d" && COLLPROF_SRUN="--immediate=30" timeout 30 sbatch --parsable --array=0-1 -N 2 \
    --ntasks-per-node=2 "$SB/collprof.sbatch" $ONE --ops allreduce --counts 4K -n 3 -w 1 \
    --variants default) || rc=$?
ok $rc "sbatch --array=0-1 -N 2 collprof.sbatch: submitted (job ${id:-none})"
job_state=""
[ -n "$id" ] && wait_job "$id" 120
ok $? "job array $id: both tasks ended within 120 s ($(since "$t") s, state $job_state)"
n=$(timeout 10 scontrol show job -o "$id" 2>/dev/null | grep -c 'JobState=COMPLETED .*ExitCode=0:0')
[ "$n" -eq 2 ]
ok $? "job array $id: both tasks COMPLETED with exit code 0:0 (got $n)"
for task in 0 1; do
    rc=0
    mkdir -p "$d/a$task"
    mv "$d"/collprof_*_w4_j*_a"$task"_s0.* "$d/a$task/" 2>/dev/null
    check_clean_run "$d/a$task" "job array task $task"
    grep -q '^world: *4 ranks on 2 nodes: n[1-4] ranks 0-1, n[1-4] ranks 2-3$' \
        "$(summary_of "$d/a$task")" 2>/dev/null
    ok $? "job array task $task: the summary says 4 ranks on 2 nodes, 2 on each"
done

# ---- 4c. mpirun across the nodes, the mpi backend: from a host list, the harness's rsh agent
# entering each node's namespaces (as ssh would log in), and in an allocation, where Open MPI
# starts its daemons with srun (not under sanitizers: the same ranks, another launch path)
mpirun_check() { # DIR WHAT: the run in DIR was started by mpirun, 2 ranks on each of n1, n2
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | head -n 20
    check_clean_run "$1" "$2"
    check_nodes "$1" "$2" "n1 n1 n2 n2 "
    grep -q '^launcher: *mpirun' "$(summary_of "$1")" 2>/dev/null
    ok $? "$2: the summary names the launcher mpirun"
}
if [ -n "${CP_MPIRUN:-}" ] && [ -x "$CP_MPIRUN" ] && [ "${BACKENDS#* mpi}" != "$BACKENDS" ]; then
    MPIRUN="$CP_MPIRUN --allow-run-as-root --bind-to none -x COLLPROF_PLUGIN_PATH"
    MPI1="--backends mpi --ops allreduce,alltoall --counts 4K -n 3 -w 1 --variants default"
    d="$WORK/mpirun-rsh"
    mkdir -p "$d"
    t=$(now)
    rc=0
    # shellcheck disable=SC2086 # MPIRUN and MPI1 are lists of options
    timeout -k 10 120 $MPIRUN --mca plm_rsh_agent "bash $SL rsh" --host n1:2,n2:2 -np 4 \
        "$COLLPROF_BIN" $MPI1 --output-dir "$d" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
    mpirun_check "$d" "mpirun --host n1:2,n2:2, rsh agent ($(since "$t") s)"
    if [ "${CP_TIMING_UNRELIABLE:-0}" != 1 ]; then
        d="$WORK/mpirun-salloc"
        mkdir -p "$d"
        t=$(now)
        rc=0
        # shellcheck disable=SC2086 # N2, MPIRUN and MPI1 are lists of options
        timeout -k 10 120 salloc --immediate=30 $N2 $MPIRUN "$COLLPROF_BIN" $MPI1 \
            --output-dir "$d" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
        mpirun_check "$d" "salloc -N 2 + mpirun ($(since "$t") s)"
    fi
fi

# ---- 5. every backend (under sanitizers the quickest) in one run on 4 nodes x 1 rank, over a
# control tree of fanout 2 (COLLPROF_TREE_FANOUT): n2's leader (rank 1) below rank 0, n4's
# (rank 3) below n2's, so every collective of the run also crosses a leader of leaders
d="$WORK/four"
mkdir -p "$d"
all=$(echo "${BACKENDS# }" | tr ' ' ',')
[ "${CP_TIMING_UNRELIABLE:-0}" = 1 ] && all=$b
nb=$(echo "$all" | tr ',' '\n' | wc -l)
t=$(now)
rc=0
# shellcheck disable=SC2086 # SRUN is a list of options
COLLPROF_TREE_FANOUT=2 timeout -k 10 180 $SRUN -N 4 --ntasks-per-node=1 "$COLLPROF_BIN" \
    --backends "$all" --ops all --counts 4K -n 3 -w 1 --variants default \
    --ofi-provider 'tcp;ofi_rxm' -v --output-dir "$d" </dev/null >"$WORK/out" 2>"$WORK/err" ||
    rc=$?
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | head -n 20
check_clean_run "$d" "$all on 4 nodes x 1 ($(since "$t") s)"
s=$(summary_of "$d")
n=$(grep -c -E ' ms \| AlgBW' "$s" 2>/dev/null)
want=$((14 * nb))
case ",$all," in *,gloo,*) want=$((want - 2)) ;; esac # gloo: no gatherv, no scatterv
[ "$n" -eq "$want" ]
ok $? "$all on 4 nodes: every op each backend offers, $want cells (got $n)"
grep -q '^world: *4 ranks on 4 nodes: n1 rank 0, n2 rank 1, n3 rank 2, n4 rank 3$' "$s" 2>/dev/null
ok $? "$all on 4 nodes: the summary says 4 ranks on 4 nodes, one on each"
# rank 0: 3 links (n2's and n3's leaders, n4's leader's side link: one per node), the shape in
# its channel line; rank 1: 2 (rank 0 and n4's leader); rank 2 one; rank 3 two: to n2's
# address, not to rank 0's node's, and its side link to rank 0's
n1addr=$(bash "$SL" exec n1 sed -n 's/^\([0-9.]*\) n1$/\1/p' /etc/hosts)
n2addr=$(bash "$SL" exec n1 sed -n 's/^\([0-9.]*\) n2$/\1/p' /etc/hosts)
chan() { grep " r$1/4 [^]]*\] oob (run): " "$WORK/err" | sed -n 's/.*; channel \(.*\)/\1/p'; }
chan 0 | grep -q ' (4 nodes, fanout 2, depth 2, 1 side link) (tree by node to rank 0): 3 links, ' &&
    chan 1 | grep -q '(tree by node to rank 0): 2 links, ' &&
    chan 2 | grep -qv "^tcp $n2addr:" && chan 2 | grep -q '(tree by node to rank 0): 1 links, ' &&
    chan 3 | grep -q "^tcp $n2addr:[0-9]* + side link $n1addr:[0-9]* (tree by node to rank 0): 2 links, " &&
    ! grep -q 'no side messages' "$WORK/err"
r=$?
ok $r "COLLPROF_TREE_FANOUT=2 on 4 nodes: rank 0 holds 3 links (2 children, n4's side link), n4's leader hangs below n2's ($n2addr) and links to rank 0 ($n1addr)"
[ "$r" -eq 0 ] || grep ' oob (run): ' "$WORK/err" | sed 's/^/# /'

# ---- 5b. faults across nodes: a rank on n2 stopped (SIGSTOP), then n2's link down mid-run
# (2 x 2 ranks, then 3 x 4).
# The watchdog (--timeout 3) reports within --timeout + 5 s, naming n2 and its ranks; the
# files keep every completed cell; srun returns (once the link is back) and no rank is left.
FT=3
# 12 gloo ranks on 2 CPUs took 18 s a cell of 302 iterations (56 ms an allreduce, the same
# with the code of 2026-11-26), so their second cell could come after 36 s (2026-11-27); under
# the sanitizers it took over 30 s with 2 x 2 ranks too (2026-11-26).  The 3 x 4 run has 100
# iterations a cell: it waits a third as long for its 2 cells before the fault (23-25 s of
# each stage with 300, 2026-12-06), which still comes with 4 cells of about 6 s to go (the
# 2 x 2 runs, with 300, leave about 2 s)
slack=0 fwait=900 flimit=240
[ "${CP_TIMING_UNRELIABLE:-0}" = 1 ] && slack=5 fwait=1200 flimit=240
FARGS="--backends $b --ops allreduce --counts 1K,2K,4K,8K,16K,32K -n 300 -w 2 --variants default"
franks() { pgrep -f "^$COLLPROF_BIN $FARGS --timeout $FT" 2>/dev/null; }
# fault_run NAME ACTION UNDO NAMED [FROM]: ACTION after two cells, UNDO once the hang is
# reported; NAMED: the silent ranks the one report names; FROM: what it says of who made it
# (rank 0 stopped: a deputy; then srun may return 137 and the text summary is not closed).
# ACTION may set t, the moment its fault took hold.  With FROM, UNDO waits for srun: srun's
# end of the job kills the stopped rank 0 where it stands, while a rank 0 resumed at the
# report would run on into a SIGKILL at any point of its work, between its two files' writes
# of a cell too (the HDF5 file then holds one cell more than the text summary), or, its peers
# gone, through its last cells as errors to close the HDF5 file as complete (once in 4 stops
# made in a write, 2026-12-06)
fault_run() {
    from=${5:-}
    d="$WORK/fault-$1"
    mkdir -p "$d"
    # shellcheck disable=SC2086 # SRUN, N2 and FARGS are lists of options
    timeout -k 5 "$flimit" env ${FENV:-} $SRUN ${FNODES:-$N2} "$COLLPROF_BIN" $FARGS --timeout "$FT" \
        --output-dir "$d" </dev/null >"$WORK/fout" 2>"$WORK/ferr" &
    fpid=$!
    i=0
    # (grep -c prints 0 and fails when nothing matches, and nothing without a summary)
    until c=$(grep -c ' ms | AlgBW' "$(summary_of "$d")" 2>/dev/null); [ "${c:-0}" -ge 2 ] ||
        [ "$i" -ge "$fwait" ]; do
        sleep 0.1
        i=$((i + 1))
    done
    echo "# $1: ${c:-0} cells done after $((i / 10)) s (at most $((fwait / 10)) s): the fault now"
    t=$(now)
    $2
    i=0
    until grep -q '^collprof: error: timeout' "$WORK/ferr" || [ "$i" -ge 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    reported=$(since "$t")
    [ -n "$from" ] || $3
    rc=0
    wait "$fpid" || rc=$?
    ended=$(since "$t")
    [ -z "$from" ] || $3
    awk -v r="$reported" -v lim=$((FT + 5 + slack)) 'BEGIN { exit !(r <= lim) }'
    ok $? "$1: ${from:+a deputy of }rank 0 reported the hang ${reported} s after the fault (at most $FT + 5 s)"
    [ "$rc" -eq 124 ] || { [ -n "$from" ] && [ "$rc" -eq 137 ]; }
    ok $? "$1: srun returned with status 124 (got $rc, ${ended} s after the fault)"
    grep -q "No answer (stopped, dead, or cut off from PMIx): $4\\.\( Rank 0 .*\)\?\$" "$WORK/ferr"
    named=$?
    ok $named "$1: the message names $4"
    # exactly one report, whoever makes it (a deputy of a node cut off keeps silent)
    [ "$(grep -c '^collprof: error: timeout: cell' "$WORK/ferr")" -eq 1 ] &&
        { [ -z "$from" ] || grep -qF "$from" "$WORK/ferr"; }
    one=$?
    ok $one "$1: exactly one report${from:+ ($from)}"
    [ "$named" -eq 0 ] && [ "$one" -eq 0 ] ||
        grep -e '^collprof: error: timeout' -e 'Reported in its place' "$WORK/ferr" | sed 's/^/# /'
    [ "$rc" -eq 124 ] || sed 's/^/# /' "$WORK/ferr" | head -n 20
    s=$(summary_of "$d")
    n=$(grep -c ' ms | AlgBW' "$s" 2>/dev/null)
    [ "${n:-0}" -ge 2 ] &&
        { [ -n "$from" ] || grep -q '^result: *INCOMPLETE: an operation timed out' "$s"; }
    ok $? "$1: the summary keeps the $n completed cells$([ -n "$from" ] || echo " and says INCOMPLETE")"
    if [ -x "$COLLPROF_REPORT" ] && [ -n "$s" ] && [ -e "${s%.txt}.h5" ]; then
        "$COLLPROF_REPORT" summary "${s%.txt}.h5" >"$WORK/rsum" 2>&1
        [ "$(grep -c ' ms | AlgBW' "$WORK/rsum")" -eq "$n" ] &&
            grep -q 'status: *incomplete' "$WORK/rsum"
        ok $? "$1: the HDF5 file holds the same $n cells, status incomplete"
    fi
    sleep 1
    left=$(franks | tr '\n' ' ')
    [ -z "$left" ]
    ok $? "$1: no rank left on any node${left:+ (left: $left)}"
    for p in $left; do kill -KILL "$p" 2>/dev/null; done
}
victim=""
# shellcheck disable=SC2317 # the actions below are called through fault_run's arguments
stop_rank() { # the process of rank $1 (the nodes share the PID namespace)
    victim=""
    for p in $(franks); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$1" && victim=$p
    done
    [ -n "$victim" ] && kill -STOP "$victim"
}
# shellcheck disable=SC2317
stop_rank3() { stop_rank 3; }
# the completed cells of run $d: in its text summary, and in its HDF5 file (empty if unreadable)
text_cells() { grep -c ' ms | AlgBW' "$(summary_of "$d")" 2>/dev/null; }
h5_cells() {
    h5=$(summary_of "$d")
    h5=${h5%.txt}.h5
    [ -e "$h5" ] && "$COLLPROF_REPORT" summary "$h5" 2>/dev/null | grep -c ' ms | AlgBW'
}
# Rank 0 writes a cell to the HDF5 file, flushes it, then writes the text summary: stopped
# between the two (or in the middle of the HDF5 write), and killed there by srun, it leaves
# files that differ by that cell, whatever the deputy does; the test can stop it there when
# its stop comes a whole cell late (1 run in 25 at load 14-22, 2026-12-06).  The
# case is a rank 0 stopped in a measurement, nearly all of its time: until its files agree
# (they do not change while it is stopped), it is resumed until the text summary shows the
# cell it was writing (15-20 ms from its first HDF5 write to the text's, under strace at load
# 10, 2026-12-06; the wait: at most 10 s in 0.1 s steps, 500x) and stopped again, twice at most
# (the run has 6 cells: a stop in a write, rare, twice in a row; files that still differ then
# fail the check below).
# shellcheck disable=SC2317
stop_rank0() {
    try=0
    while :; do
        t=$(now) # the peers' --timeout counts from the stop that holds
        stop_rank 0 || return 1
        was=$(text_cells)
        [ ! -x "$COLLPROF_REPORT" ] || [ "$(h5_cells)" = "$was" ] || [ "$try" -ge 2 ] && return 0
        echo "# rank 0 stopped in the write of cell ${was:-0} (try $try): resumed until it is written"
        kill -CONT "$victim"
        j=0
        until [ "$(text_cells)" -gt "${was:-0}" ] 2>/dev/null || [ "$j" -ge 100 ]; do
            sleep 0.1
            j=$((j + 1))
        done
        try=$((try + 1))
    done
}
# shellcheck disable=SC2317
cont_victim() { [ -z "$victim" ] || kill -CONT "$victim" 2>/dev/null; }
# shellcheck disable=SC2317
n2_down() { bash "$SL" link n2 down 2>/dev/null; }
# shellcheck disable=SC2317
n2_up() { bash "$SL" link n2 up 2>/dev/null; }
if [ "${CP_TIMING_UNRELIABLE:-0}" != 1 ]; then
    # on 4 nodes x 1 over a tree of fanout 2: rank 3 leads n4, below n2's leader (rank 1)
    FENV=COLLPROF_TREE_FANOUT=2 FNODES="-N 4 --ntasks-per-node=1" fault_run \
        "SIGSTOP of rank 3 on n4 (fanout 2: below n2's leader)" stop_rank3 cont_victim "rank 3 on n4"
    FENV='' FNODES=''
    # rank 0's first deputy is the first rank of the next node (rank 2 on n2), not rank 1
    fault_run "SIGSTOP of rank 0 on n1" stop_rank0 cont_victim "rank 0 on n1" \
        "Reported in its place by rank 2, its first deputy."
fi
fault_run "n2's link down" n2_down n2_up "ranks 2-3 on n2"
# the watchdog asks every rank at once: 4 ranks on a cut-off node (each never answers) must not
# use up rank 0's time for the ranks on n3 after them (one at a time, 0.5 s each, they did)
FARGS=$(echo "$FARGS" | sed 's/ -n 300 / -n 100 /')
FNODES="-O -N 3 -n 12 -w n1,n2,n3" fault_run "n2's link down, 3 x 4 ranks" n2_down \
    n2_up "ranks 4-7 on n2"

# ---- 6. the harness: link shaping, link down and up
host_if=$tag-n2
bash "$SL" shape n2 50mbit 2>/dev/null && tc qdisc show dev "$host_if" | grep -q 'tbf.*rate 50Mbit' &&
    bash "$SL" exec n2 tc qdisc show dev cpnet0 | grep -q 'tbf.*rate 50Mbit'
ok $? "shape n2 50mbit: tbf on both ends of n2's link"
bash "$SL" shape n2 off 2>/dev/null && ! tc qdisc show dev "$host_if" | grep -q tbf &&
    ! bash "$SL" exec n2 tc qdisc show dev cpnet0 | grep -q tbf
ok $? "shape n2 off: no tbf left"
n2addr=$(bash "$SL" exec n1 sed -n 's/^\([0-9.]*\) n2$/\1/p' /etc/hosts)
# slurmd listens on SlurmdPort (6818) on every node
reach() { # can n1 open a TCP connection to n2's slurmd within 2 s?
    # shellcheck disable=SC2016 # expanded by the inner shell
    bash "$SL" exec n1 timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/6818"' reach "$n2addr" 2>/dev/null
}
reach
ok $? "n1 reaches n2 ($n2addr) through the bridge"
bash "$SL" link n2 down 2>/dev/null && ! reach
ok $? "link n2 down: n1 no longer reaches n2"
bash "$SL" link n2 up 2>/dev/null
i=0
until reach || [ "$i" -ge 10 ]; do
    sleep 0.2
    i=$((i + 1))
done
reach
ok $? "link n2 up: n1 reaches n2 again"

# ---- 7. stop: every daemon and namespace gone
# pid:name of every daemon now
daemons=$(bash "$SL" status 2>/dev/null |
    sed -n 's/^\(.*\): running (pid \([0-9]*\))$/\2:\1/p' | tr ' ' '_' | tr '\n' ' ')
t=$(now)
rc=0
timeout -k 5 60 bash "$SL" stop >"$WORK/stop.log" 2>&1 || rc=$?
ok $rc "4-node cluster stopped in $(since "$t") s"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/stop.log"
! ip netns list | grep -q "^$tag-" && ! ip link show "$bridge" >/dev/null 2>&1
ok $? "stop: no namespace $tag-* and no bridge $bridge left"
# still there: the pid runs the same program and is no zombie (PID 1 reaps orphans slowly)
left=""
for pd in $daemons; do
    p=${pd%%:*}
    st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)
    case $st in
    "" | Z | X) ;;
    *) case ${pd#*:} in "$(cat "/proc/$p/comm" 2>/dev/null)"*) left="$left $pd($st)" ;; esac ;;
    esac
done
[ -n "$daemons" ] && [ -z "$left" ]
ok $? "stop: the daemons are gone ($daemons)${left:+; left:$left}"
[ -z "$left" ] || sed 's/^/# /' "$WORK/stop.log"

echo "# nodes.sh took $(since "$T0") s"
done_testing
