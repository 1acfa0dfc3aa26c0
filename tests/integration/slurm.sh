#!/bin/sh
# shellcheck disable=SC2012 # ls of our own file names
# collprof under a real single-node Slurm cluster on loopback (contrib/slurm-local): srun
# --mpi=pmix, two steps in one salloc, the sbatch template, a job-array campaign with its
# collection job, and the refusal of srun --mpi=none.  Skips (77) without the Slurm and munge
# daemons, without root, or when the cluster does not start.  Every Slurm command is bounded
# (--immediate and timeout); the cluster is stopped at the end, also when a test fails.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"

need_slurm "a local Slurm cluster needs root (slurmd, SlurmUser=root)"
command -v ss >/dev/null 2>&1 || skip_all "ss (iproute2) not found: needed to pick free ports"
[ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ] || skip_all "the MPI backend was not built"
slurm_local_setup collprof-slurm-test

if ! timeout -k 5 90 bash "$SL" start >"$WORK/start.out" 2>"$WORK/start.err"; then
    skip_all "the local Slurm cluster did not start: $(tail -n 1 "$WORK/start.err")"
fi
SLURM_CONF=$(sed -n 's/^export SLURM_CONF=//p' "$WORK/start.out")
export SLURM_CONF
[ -s "$SLURM_CONF" ] || skip_all "slurm-local.sh start printed no SLURM_CONF"
# keep collprof and the job's files in our directory
export COLLPROF="$COLLPROF_BIN"
SMALL="--counts 4K -n 3 -w 1 --variants default"

ok 0 "local cluster started ($(grep -c CPUs "$SLURM_CONF") node, SLURM_CONF=$SLURM_CONF)"

# ---- 1. srun --mpi=pmix -O -n 4 (more tasks than CPUs), results in the submit directory
d="$WORK/srun"
mkdir -p "$d"
rc=0
# shellcheck disable=SC2086 # SMALL is a list of options
(cd "$d" && timeout -k 10 "$CP_TIMEOUT" srun --immediate=60 --mpi=pmix -O -n 4 \
    "$COLLPROF_BIN" $SMALL </dev/null >"$WORK/out" 2>"$WORK/err") || rc=$?
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err"
check_clean_run "$d" "srun --mpi=pmix -O -n 4"
s=$(summary_of "$d")
job=$(job_of "$d")
case ${s##*/} in
collprof_*_w4_j"$job"_s0.txt) r=0 ;;
*) r=1 ;;
esac
[ -n "$job" ]
ok $((r | $?)) "srun: file named ..._w4_j<job>_s0.txt in the submit directory (${s##*/})"
grep -q '^world: *4 ranks on 1 node' "$s" && grep -q '^launcher: *slurm' "$s" &&
    grep -q "^slurm: *job $job step 0" "$s"
ok $? "srun: summary names 4 ranks, launcher slurm, job $job step 0"
if [ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] && [ -e "${s%.txt}.h5" ]; then
    "$CP_H5DUMP" -a slurm_job_id "${s%.txt}.h5" 2>/dev/null | grep -q "\"$job\""
    ok $? "srun: HDF5 root attribute slurm_job_id = $job"
    "$CP_H5DUMP" -a slurm_partition "${s%.txt}.h5" 2>/dev/null | grep -q '"debug"' &&
        "$CP_H5DUMP" -a slurm_nodelist "${s%.txt}.h5" 2>/dev/null | grep -q '"localhost"'
    ok $? "srun: HDF5 root attributes slurm_partition = debug, slurm_nodelist = localhost"
fi

# ---- 2. salloc -O -n 2, then two srun steps: one file per step
d="$WORK/salloc"
mkdir -p "$d"
rc=0
# shellcheck disable=SC2016 # expanded by the inner shell
timeout -k 10 "$CP_TIMEOUT" salloc --immediate=60 -O -n 2 sh -c '
    for step in 0 1; do
        srun --immediate=30 --mpi=pmix -n 2 "$COLLPROF_BIN" $1 --output-dir "$2" --tag "step$step" ||
            exit $?
    done' salloc-steps "$SMALL" "$d" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err"
ok $rc "salloc -O -n 2 with two srun steps: exit status 0"
n=$(ls "$d"/collprof_*.txt 2>/dev/null | wc -l)
job=$(job_of "$d")
[ "$n" -eq 2 ] && [ -n "$job" ] && ls "$d"/collprof_*_w2_j"${job}"_s0.txt >/dev/null 2>&1 &&
    ls "$d"/collprof_*_w2_j"${job}"_s1.txt >/dev/null 2>&1
ok $? "salloc: 2 summaries, one per step: _j${job}_s0 and _j${job}_s1 (got $n)"
if [ -n "${CP_H5DUMP:-}" ]; then
    n=$(ls "$d"/collprof_*_j"${job}"_s[01].h5 2>/dev/null | wc -l)
    [ "$n" -eq 2 ]
    ok $? "salloc: 2 HDF5 files, one per step (got $n)"
fi
grep -l '^tag: *step1' "$d"/collprof_*_s1.txt >/dev/null 2>&1 &&
    grep -q '^result: *PASSED' "$d"/collprof_*_s0.txt "$d"/collprof_*_s1.txt
ok $? "salloc: each step's file holds its own run, both PASSED"

# ---- 3. wrong use: srun --mpi=none -n 2 gives every task a 1-rank world
d="$WORK/mpinone"
mkdir -p "$d"
rc=0
# shellcheck disable=SC2086 # SMALL is a list of options
timeout -k 10 60 srun --immediate=60 --mpi=none -O -n 2 "$COLLPROF_BIN" $SMALL --output-dir "$d" \
    </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 2 ]
ok $? "srun --mpi=none -n 2: exit status 2, no hang (got $rc)"
grep -q 'collprof: error: .*--mpi=pmix' "$WORK/err"
ok $? "srun --mpi=none: the message says to use --mpi=pmix"
[ "$(grep -c 'collprof: error:' "$WORK/err")" -eq 1 ]
ok $? "srun --mpi=none: one message, not one per task"
[ -z "$(ls "$d")" ]
ok $? "srun --mpi=none: no file left behind"
[ "$rc" -eq 2 ] || sed 's/^/# /' "$WORK/err" | head -n 20

# ---- 3b. a hung rank under srun: the watchdog names it, the step ends
d="$WORK/srunhang"
mkdir -p "$d"
rc=0
(cd "$d" && COLLPROF_FAULT=hang:2:0 timeout -k 10 120 srun --immediate=60 --mpi=pmix -O -n 3 \
    "$COLLPROF_BIN" --backends mpi --ops allreduce --counts 1K -n 10 -w 1 --variants default \
    --timeout 3 --output-dir "$d" </dev/null >"$WORK/out" 2>"$WORK/err") || rc=$?
[ "$rc" -eq 124 ] && grep -q 'Did not arrive: rank 2 (' "$WORK/err" &&
    grep -q 'timeout: cell 0 ' "$(summary_of "$d")"
ok $? "srun: a hung rank is named by the watchdog, the cell is a timeout row (exit $rc)"
[ "$rc" -eq 124 ] || sed 's/^/# /' "$WORK/err" | head -n 20

# ---- 3c. rank 0 (the writer) stopped under srun: its first deputy (rank 1) reports
# (stop.sh has the other ranks and launchers); slurmstepd may kill rank 0 before it writes
STOP_ROW=maybe
STOP_EXITS="124 137"
STOP_HOST=$(grep -m 1 -o 'NodeName=[^ ]*' "$SLURM_CONF" | cut -d= -f2)
stop_rank_case "srun --mpi=pmix -O -n 4" 0 timeout -k 10 60 srun --immediate=60 --mpi=pmix -O \
    -n 4 "$COLLPROF_BIN"

# ---- 4. sbatch of the shipped template
d="$WORK/sbatch"
mkdir -p "$d"
rc=0
# shellcheck disable=SC2086 # SMALL is a list of options
id=$(cd "$d" && timeout 30 sbatch --parsable -O -n 4 "$SB/collprof.sbatch" $SMALL) || rc=$?
ok $rc "sbatch collprof.sbatch: submitted (job ${id:-none})"
check_job_done "$id" sbatch 120
[ -s "$d/collprof-$id.out" ]
ok $? "sbatch: job log collprof-$id.out in the submit directory"
rc=0
s=$(ls "$d"/collprof_*_w4_j"${id}"_s0.txt 2>/dev/null | head -n 1)
[ -n "$s" ] && mkdir -p "$d/res" && mv "$d"/collprof_*_j"$id"_* "$d/res/"
check_clean_run "$d/res" "sbatch: the job's srun step (_w4_j${id}_s0)"

# ---- 5. a campaign: job array over 2 matrices x 1 backend, then the collection job
d="$WORK/campaign"
mkdir -p "$d"
printf 'ops=allreduce counts=4K iters=3 warmup=1 variants=default\n' >"$d/a.matrix"
printf 'ops=allgather,alltoall counts=1K iters=3 warmup=1 variants=default\n' >"$d/b.matrix"
export COLLPROF_MATRICES="a.matrix b.matrix" COLLPROF_BACKENDS=mpi
plan=$(cd "$d" && bash "$SB/campaign.sbatch" --plan)
echo "$plan" | grep -q 'sbatch --array=0-1 '
ok $? "campaign --plan: 2 tasks, says --array=0-1"
rc=0
aid=$(cd "$d" && timeout 30 sbatch --parsable --array=0-1 -O -n 2 "$SB/campaign.sbatch") || rc=$?
ok $rc "campaign: array job submitted (${aid:-none})"
cid=$(cd "$d" && timeout 30 sbatch --parsable --dependency=afterany:"$aid" \
    --output="$d/collect-%j.out" "$SB/collect.sh" "$d/campaign_$aid")
job_state=""
[ -n "$aid" ] && wait_job "$aid" 180
ok $? "campaign: every array task ended within 180 s ($job_state)"
job_state=""
[ -n "$cid" ] && wait_job "$cid" 60
ok $? "campaign: collection job $cid ran after the array ($job_state)"
timeout 10 scontrol show job -o "$cid" 2>/dev/null | grep -q 'JobState=COMPLETED .*ExitCode=0:0'
ok $? "campaign: collection job exit code 0:0 (every task passed)"
cd_="$d/campaign_$aid"
for t in 0 1; do
    ls "$cd_"/collprof_*_w2_j*_a"${t}"_s0.txt >/dev/null 2>&1
    ok $? "campaign: task $t wrote collprof_..._a${t}_s0.txt"
done
[ "$(awk -F'\t' 'NR > 1 && $6 == "PASSED"' "$cd_/index.tsv" 2>/dev/null | wc -l)" -eq 2 ] &&
    grep -q 'a.matrix' "$cd_/index.tsv" && grep -q 'b.matrix' "$cd_/index.tsv"
ok $? "campaign: index.tsv lists both matrices, both PASSED"
a0=$(ls "$cd_"/collprof_*_a0_s0.txt 2>/dev/null | head -n 1)
a1=$(ls "$cd_"/collprof_*_a1_s0.txt 2>/dev/null | head -n 1)
grep -q '^ *AllReduce: .* ms | AlgBW' "$a0" && ! grep -q '^ *AllGather: ' "$a0" &&
    grep -q '^ *AllGather: .* ms | AlgBW' "$a1" && ! grep -q '^ *AllReduce: ' "$a1"
ok $? "campaign: each task ran its own matrix"

done_testing
