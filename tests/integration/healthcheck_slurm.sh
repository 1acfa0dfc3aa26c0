#!/bin/sh
# collprof --healthcheck as Slurm's HealthCheckProgram, with a real slurmctld and one slurmd per
# virtual node (contrib/slurm-local --nodes 2): slurm.conf names a script of this test that
# runs `collprof --healthcheck --healthcheck-drain` (the default two failures in a row) every
# HealthCheckInterval (5 s: slurmd starts a run whether or not the last has ended, and one that
# finds the node's check running is skipped); on n2 the script plants wrong data
# (COLLPROF_FAULT=wrong:1).  n2 ends DRAIN with a reason that starts "collprof: healthcheck:",
# n1 (its checks pass) stays up.  Also under the sanitizers (contrib/sanitize.sh).
# Then, the program off and n2 resumed, one check per node of an allocation through srun, with
# and without PMIx (the check starts its own ranks whatever started it), and a --np run in an
# allocation, whose ranks ask slurmctld nothing from their private network namespace.
# slurmd runs the program with an environment of its own (SLURMD_NODENAME and little else), so
# the script sets what collprof and scontrol need.  Skips (77) as nodes.sh does.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/cluster.sh"

need_virtual_nodes
[ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_self.so" ] || skip_all "the self backend was not built"
HC=$WORK/hc
mkdir -p "$HC/tmp"
cat >"$HC/program" <<EOF
#!/bin/sh
# HealthCheckProgram of tests/integration/healthcheck_slurm.sh
PATH=/usr/bin:/bin:/usr/sbin:/sbin
COLLPROF_PLUGIN_PATH='$COLLPROF_PLUGIN_PATH'
TMPDIR='$HC/tmp'
export PATH COLLPROF_PLUGIN_PATH TMPDIR
[ -r '$HC/env' ] && . '$HC/env'
[ -e '$HC/off' ] && exit 0
node=\${SLURMD_NODENAME:-\$(hostname)}
echo "\$(date +%s) \$node SLURMD_NODENAME=\${SLURMD_NODENAME:-unset}" >>'$HC/runs'
[ "\$node" = n2 ] && COLLPROF_FAULT=wrong:1 && export COLLPROF_FAULT
'$COLLPROF_BIN' --healthcheck --backends self,ofi --healthcheck-time 40 --healthcheck-drain \\
    --healthcheck-state '$HC/state-'"\$node" >>'$HC/out-'"\$node" 2>&1
rc=\$?
echo "exit \$rc" >>'$HC/out-'"\$node"
exit \$rc
EOF
chmod 755 "$HC/program"
cat >"$HC/slurm.conf" <<EOF
HealthCheckProgram=$HC/program
HealthCheckInterval=5
HealthCheckNodeState=ANY
EOF
export COLLPROF_SLURM_EXTRA_CONF="$HC/slurm.conf"

# Under the sanitizers (contrib/sanitize.sh), their options: slurmd's environment has none, and
# without LSAN_OPTIONS's suppressions (and the libraries' components kept loaded) the leak check
# reports what Open MPI, PMIx and libfabric keep until exit and fails the healthy check ("the
# run ended with status 1").  Written before the cluster starts: slurmd runs the program once as
# it starts, before it registers (that first check of n1 failed when $HC/env came later).
: >"$HC/env"
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS OMPI_MCA_mca_base_component_disable_dlclose \
    PMIX_MCA_mca_base_component_disable_dlclose; do
    eval "x=\${$v-}"
    [ -n "$x" ] && printf "%s='%s'; export %s\n" "$v" "$x" "$v" >>"$HC/env"
done

cluster_start 2 collprof-healthcheck-test
# scontrol, run from the program, needs the cluster's configuration (the first check, before
# this line, does not drain: failure 1 of 2)
echo "SLURM_CONF='$SLURM_CONF'; export SLURM_CONF" >>"$HC/env"
grep -q "^HealthCheckProgram=$HC/program" "$SLURM_CONF"
ok $? "slurm.conf names the health check program ($HC/program, every 5 s)"

# n2 drained after its second failure; n1 passes every time
t=$(now)
i=0
while [ "$i" -lt 90 ]; do
    r2=$(timeout 10 scontrol show node n2 -o 2>/dev/null | sed -n 's/.* Reason=\(.*\)$/\1/p')
    case $r2 in "collprof: healthcheck:"*) break ;; esac
    sleep 1
    i=$((i + 1))
done
st2=$(timeout 10 sinfo -h -n n2 -o '%T' 2>/dev/null)
case $r2 in "collprof: healthcheck: collectives: "*"wrong data"*) r=0 ;; *) r=1 ;; esac
case $st2 in drain* | drained*) ;; *) r=1 ;; esac
ok $r "n2 (wrong data planted) ends $st2 after $(since "$t") s, reason '$r2'"
runs2=$(grep -c ' n2 ' "$HC/runs" 2>/dev/null || echo 0)
grep -q 'failure 1 of 2 in a row before a drain' "$HC/out-n2" &&
    grep -q '\[n2 drained\]' "$HC/out-n2"
ok $? "n2: its first failure counted, the second drained it ($runs2 runs)" ||
    sed 's/^/# n2: /' "$HC/out-n2"
# n1: at least two passes, never drained
i=0
while [ "$i" -lt 30 ] && [ "$(grep -c '^collprof: healthcheck: ok' "$HC/out-n1" 2>/dev/null)" -lt 2 ]; do
    sleep 1
    i=$((i + 1))
done
st1=$(timeout 10 sinfo -h -n n1 -o '%T' 2>/dev/null)
r1=$(timeout 10 scontrol show node n1 -o 2>/dev/null | sed -n 's/.* Reason=\(.*\)$/\1/p')
[ "$(grep -c '^collprof: healthcheck: ok' "$HC/out-n1" 2>/dev/null)" -ge 2 ] &&
    ! grep -q 'Health check failed' "$HC/out-n1" && [ -z "$r1" ] &&
    case $st1 in idle* | mixed* | alloc*) true ;; *) false ;; esac
ok $? "n1 (healthy) passes every check and stays $st1 ($(grep -c ' n1 ' "$HC/runs") runs)" ||
    sed 's/^/# n1: /' "$HC/out-n1"
echo "# $(head -n 1 "$HC/runs")"
tail -n 2 "$HC/out-n1" | sed 's/^/# n1: /'
# the program's runs each fit Slurm's 60 s
took_max=$(sed -n 's/.* in \([0-9.]*\) s.*/\1/p' "$HC/out-n1" | sort -n | tail -n 1)
awk -v t="${took_max:-99}" 'BEGIN { exit !(t < 50) }'
ok $? "n1: the longest check took ${took_max:-?} s (under 50 s)"

# ---- every node of an allocation checked at once, through srun
touch "$HC/off"
# the runs started before it end first: one of n2's, ending after the resume, drained n2 again
# (under the sanitizers, where a check takes 5-15 s), and the srun checks found no node
i=0
while [ "$i" -lt 120 ] && [ "$(cat "$HC"/out-n1 "$HC"/out-n2 2>/dev/null | grep -c '^exit ')" -lt \
    "$(wc -l <"$HC/runs")" ]; do
    sleep 0.5
    i=$((i + 1))
done
timeout 10 scontrol update NodeName=n2 State=RESUME
for mpi in none pmix; do
    rc=0
    timeout -k 10 120 srun --immediate=30 --mpi=$mpi -N 2 --ntasks-per-node=1 "$COLLPROF_BIN" \
        --healthcheck --backends self --healthcheck-nics none </dev/null >"$WORK/out" \
        2>"$WORK/err" || rc=$?
    [ "$rc" -eq 0 ] && [ "$(grep -c '^collprof: healthcheck: ok' "$WORK/out")" -eq 2 ] &&
        [ "$(wc -l <"$WORK/out")" -eq 2 ]
    ok $? "srun --mpi=$mpi -N 2: one passing line per node (exit $rc)" ||
        sed 's/^/# /' "$WORK/out" "$WORK/err"
done
rc=0
COLLPROF_FAULT=wrong:1 timeout -k 10 120 srun --immediate=30 --mpi=pmix -N 2 \
    --ntasks-per-node=1 "$COLLPROF_BIN" --healthcheck --backends self --healthcheck-nics none \
    </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 1 ] && [ "$(grep -c '^ERROR:  collprof:  Health check failed:  collectives:  ' "$WORK/err")" -eq 2 ]
ok $? "srun -N 2 with wrong data planted: one NHC line per node, exit $rc" ||
    sed 's/^/# /' "$WORK/out" "$WORK/err"
# --np in a job (the check's own ranks above; here in an salloc) runs its ranks in their private
# network namespace, where slurmctld is out of reach: they ask libslurm nothing (it retried 10 s
# a lookup before it gave up, which made each srun check above take 21 s), and the file says why
d=$WORK/np
mkdir -p "$d"
rc=0
timeout -k 10 120 salloc --immediate=30 -N 1 "$COLLPROF_BIN" --np 2 --backends self --ops allreduce \
    --counts 1K -n 2 -w 0 --output-dir "$d" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
s=$(summary_of "$d")
[ "$rc" -eq 0 ] && grep -q "^slurm: *meta_source = environment; slurm_load_job: not asked (--np's private network namespace" "$s" &&
    ! grep -q 'Unable to resolve' "$WORK/err"
ok $? "salloc -N 1 collprof --np 2: the ranks ask slurmctld nothing from their namespace (exit $rc)" ||
    sed 's/^/# /' "$WORK/err" | head -n 5

done_testing
