#!/bin/sh
# collprof --healthcheck, this node alone (no Slurm: healthcheck_slurm.sh has the real one):
#  - a pass: one line on stdout, exit 0, nothing on stderr; in a network namespace of this
#    test's own with a veth it made (never eth0), that NIC's loopback counted too;
#  - planted failures (COLLPROF_FAULT): wrong data, a slow collective, a slow memory copy:
#    exit 1, one line on stderr in LBNL NHC's form naming the check, nothing on stdout;
#  - the time bound: a rank that hangs fails the check by name within --healthcheck-time,
#    and no process of the run is left;
#  - exit 2 (inconclusive, never drained): a NIC that is not there, a backend that is not;
#  - nccl (device memory alone) run on one rank per GPU the driver lists, and failed when it
#    cannot use a GPU listed (a fake driver tree), not run where none is;
#  - --healthcheck-drain against a fake scontrol (found in PATH's absolute directories only,
#    never a planted ./scontrol): the first failure counted, the second drains this node
#    (SLURMD_NODENAME) with reason "collprof: healthcheck: ...", a pass forgets the count, a
#    node offline for another reason is left alone, a check that finds another one of this node
#    running (its lock held) is skipped.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"

[ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_self.so" ] || skip_all "the self backend was not built"
export TMPDIR="$WORK/tmp"
mkdir -p "$TMPDIR"
QUICK="--backends self --healthcheck-nics none"
OKLINE='^collprof: healthcheck: ok \([0-9]+ checks in [0-9.]+ s(; [^)]*)?\)$'
NHC='^ERROR:  collprof:  Health check failed:  '

hc() { # [ENV=VALUE...] -- collprof options: rc, $WORK/out, $WORK/err, took (s)
    envs=""
    while [ "$1" != -- ]; do
        envs="$envs $1"
        shift
    done
    shift
    t0=$(date +%s.%N)
    rc=0
    # shellcheck disable=SC2086 # envs is a list of words
    timeout -k 5 120 env $envs "$COLLPROF_BIN" --healthcheck "$@" </dev/null >"$WORK/out" \
        2>"$WORK/err" || rc=$?
    took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}
one_line() { # FILE REGEXP: exactly one line, matching
    [ "$(wc -l <"$1")" -eq 1 ] && grep -Eq "$2" "$1"
}
show() { sed 's/^/# /' "$WORK/out" "$WORK/err"; }

# ---- a pass
hc -- $QUICK
one_line "$WORK/out" "$OKLINE" && [ ! -s "$WORK/err" ] && [ "$rc" -eq 0 ]
ok $? "pass: exit $rc, one line on stdout in $took s ($(cat "$WORK/out"))" || show
n=$(sed -n 's/.*(\([0-9]*\) checks.*/\1/p' "$WORK/out")
[ "${n:-0}" -ge 20 ]
ok $? "pass: the memory copy and every self operation at two sizes counted ($n checks)"

# ---- a pass in a network of our own: the NIC (a veth made here) checked over ofi's tcp
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 &&
    [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_ofi.so" ] &&
    unshare --net true 2>/dev/null; then
    rc=0
    timeout -k 5 120 unshare --net sh -c '
        ip link set lo up && ip link add hctest0 type veth peer name hctest1 &&
        ip addr add 198.18.250.1/24 dev hctest0 && ip link set hctest0 up &&
        ip link set hctest1 up && exec "$0" --healthcheck --backends self,ofi' \
        "$COLLPROF_BIN" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
    one_line "$WORK/out" "$OKLINE" && [ "$rc" -eq 0 ] && ! grep -q 'nics:' "$WORK/out"
    ok $? "pass in a private network: hctest0's loopback checked ($(cat "$WORK/out"))" || show
    rc=0
    timeout -k 5 120 unshare --net sh -c 'ip link set lo up &&
        exec "$0" --healthcheck --backends self,ofi' "$COLLPROF_BIN" </dev/null \
        >"$WORK/out" 2>"$WORK/err" || rc=$?
    one_line "$WORK/out" "$OKLINE" && [ "$rc" -eq 0 ] && grep -q 'nics: none up' "$WORK/out"
    ok $? "pass with no NIC up but lo: said so ($(cat "$WORK/out"))" || show
else
    ok 0 "# SKIP a private network namespace (root, unshare, ip and the ofi backend)"
    ok 0 "# SKIP a private network namespace"
fi

# ---- planted failures: one NHC line on stderr, exit 1, nothing on stdout
fails() { # WHAT REGEXP ENV... -- OPTIONS
    what=$1 re=$2
    shift 2
    hc "$@"
    one_line "$WORK/err" "$NHC$re" && [ ! -s "$WORK/out" ] && [ "$rc" -eq 1 ]
    ok $? "$what: exit $rc in $took s: $(cat "$WORK/err")" || show
}
fails "wrong data" 'collectives:  self/default [a-z]+ .*: wrong data \(#wrong [1-9]' \
    COLLPROF_FAULT=wrong:1 -- $QUICK
fails "a slow collective" 'collectives:  self/default .*: slow: p50 [0-9.]+ ms, above the ceiling of 100 ms$' \
    COLLPROF_FAULT=slow:all:300000 -- $QUICK --healthcheck-max-ms 100
fails "slow memory" 'memcpy:  [0-9.]+ GB/s, below the floor of 1 GB/s$' \
    COLLPROF_FAULT=slowcopy:400000 -- $QUICK
fails "a higher memory floor" 'memcpy:  [0-9.]+ GB/s, below the floor of 10000 GB/s$' \
    -- $QUICK --healthcheck-min-copy 10000

# ---- the time bound: a rank that hangs in its third cell
fails "a hung rank" 'collectives:  no answer within the 8 s budget, in self/default [a-z]+ ' \
    COLLPROF_FAULT=hang:0:2 -- $QUICK --healthcheck-time 8
awk -v t="$took" 'BEGIN { exit !(t <= 10) }'
ok $? "a hung rank: the line within the budget plus 2 s ($took s for 8 s)"
left=$(grep -l "COLLPROF_HEALTHCHECK_CELLS=$TMPDIR" /proc/[0-9]*/environ 2>/dev/null | wc -l)
[ "$left" -eq 0 ] && [ -z "$(ls "$TMPDIR")" ]
ok $? "a hung rank: no process of the run left ($left), its files removed"

# ---- inconclusive: exit 2, never NHC's failure line
hc -- --backends self --healthcheck-nics nosuch0
one_line "$WORK/err" '^collprof: healthcheck: inconclusive: nics: .*nosuch0' && [ "$rc" -eq 2 ]
ok $? "a NIC that is not there: exit $rc ($(cat "$WORK/err"))" || show
hc -- --backends nosuch --healthcheck-nics none
one_line "$WORK/err" "^collprof: healthcheck: inconclusive: collectives: unknown backend 'nosuch'" &&
    [ "$rc" -eq 2 ]
ok $? "a backend that is not there: exit $rc ($(cat "$WORK/err"))" || show

# ---- a device backend (nccl) runs one rank per GPU the driver lists; listed GPUs it cannot
# use fail the check (a fake driver tree of one GPU, on a machine without a GPU driver)
if [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_nccl.so" ] && [ ! -e /proc/driver/nvidia ]; then
    mkdir -p "$WORK/gpus/0000:01:00.0"
    hc COLLPROF_HEALTHCHECK_GPU_DIR="$WORK/gpus" -- --backends self,nccl --healthcheck-nics none
    one_line "$WORK/err" "${NHC}gpus:  backend nccl is not initialised: " && [ "$rc" -eq 1 ]
    ok $? "a GPU listed that nccl cannot use: exit $rc ($(cat "$WORK/err"))" || show
    hc -- --backends self,nccl --healthcheck-nics none
    one_line "$WORK/out" "$OKLINE" && grep -q 'gpus: none listed, nccl not run' "$WORK/out"
    ok $? "no GPU listed: nccl not run, said ($(cat "$WORK/out"))" || show
else
    ok 0 "# SKIP the nccl backend was not built, or this machine has a GPU driver"
    ok 0 "# SKIP the nccl backend was not built, or this machine has a GPU driver"
fi

# ---- --healthcheck-drain through a fake scontrol
FAKE=$WORK/fake
mkdir -p "$FAKE" "$WORK/cwd"
cat >"$FAKE/scontrol" <<'EOF'
#!/bin/sh
# a fake scontrol: argv logged; the node's record in ./node
d=${0%/*}
printf '%s\n' "$*" >>"$d/log"
case "$1" in
show) cat "$d/node" ;;
update) echo "NodeName=n7 State=IDLE+DRAIN ${5:-} [root@2026-12-06T00:00:00]" >"$d/node" ;;
esac
EOF
printf '#!/bin/sh\necho planted >>%s/planted\n' "$WORK" >"$WORK/cwd/scontrol"
chmod 755 "$FAKE/scontrol" "$WORK/cwd/scontrol"
echo "NodeName=n7 Arch=x86_64 State=IDLE Partitions=debug" >"$FAKE/node"
ST=$WORK/hcstate
drain_run() { # ENV... : a drain run from the planted directory, PATH with empty elements
    cd "$WORK/cwd" || return 1
    hc PATH="::bin:$FAKE:/usr/bin:/bin" SLURMD_NODENAME=n7 "$@" -- $QUICK --healthcheck-drain \
        --healthcheck-state "$ST"
    cd - >/dev/null || return 1
}
drain_run COLLPROF_FAULT=wrong:1
grep -q 'failure 1 of 2 in a row before a drain' "$WORK/err" && [ "$rc" -eq 1 ] &&
    ! grep -q '^update' "$FAKE/log" 2>/dev/null &&
    [ "$(cat "$ST")" = 1 ]
ok $? "drain: the first failure counted, not drained ($(cat "$WORK/err"))" || show
drain_run COLLPROF_FAULT=wrong:1
one_line "$WORK/err" "$NHC"'collectives:  .* \[n7 drained\]$' &&
    grep -q '^update NodeName=n7 State=DRAIN Reason=collprof: healthcheck: collectives: self/default' \
        "$FAKE/log" && [ ! -e "$WORK/planted" ]
ok $? "drain: the second drains n7 with a 'collprof: healthcheck:' reason, never ./scontrol" ||
    sed 's/^/# /' "$FAKE/log"
drain_run
one_line "$WORK/out" "$OKLINE" && [ ! -e "$ST" ] && [ "$(grep -c '^update' "$FAKE/log")" -eq 1 ]
ok $? "drain: a pass forgets the count and drains nothing ($(cat "$WORK/out"))" || show
echo "NodeName=n7 Arch=x86_64 State=IDLE+DRAIN Partitions=debug Reason=maintenance [root@x]" \
    >"$FAKE/node"
drain_run COLLPROF_FAULT=wrong:1
drain_run COLLPROF_FAULT=wrong:1
grep -q 'not drained: n7 is IDLE+DRAIN for a reason not collprof' "$WORK/err" &&
    [ "$(grep -c '^update' "$FAKE/log")" -eq 1 ] && [ "$rc" -eq 1 ]
ok $? "drain: a node drained for another reason is left alone ($(cat "$WORK/err"))" || show
# a check started while another of this node runs (slurmd starts the program every
# HealthCheckInterval whether or not the last one ended; the lock held here by flock(1)):
# skipped at once, exit 0, the count untouched (wrong data planted: a run would fail)
if command -v flock >/dev/null 2>&1; then
    before=$(cat "$ST" 2>/dev/null || echo none)
    rc=0
    flock "$ST.lock" env PATH="$FAKE:/usr/bin:/bin" SLURMD_NODENAME=n7 COLLPROF_FAULT=wrong:1 \
        "$COLLPROF_BIN" --healthcheck $QUICK --healthcheck-drain --healthcheck-state "$ST" \
        </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
    one_line "$WORK/out" '^collprof: healthcheck: skipped: a check of this node that started earlier still runs \(.*hcstate\.lock\)$' &&
        [ ! -s "$WORK/err" ] && [ "$rc" -eq 0 ] && [ "$(cat "$ST" 2>/dev/null || echo none)" = "$before" ]
    ok $? "drain: a check while another runs is skipped, exit $rc, the count kept ($(cat "$WORK/out"))" ||
        show
else
    ok 0 "# SKIP flock(1) (util-linux) not found"
fi
hc PATH="$FAKE:/usr/bin:/bin" SLURMD_NODENAME=n7 -- --backends self --healthcheck-nics nosuch0 \
    --healthcheck-drain --healthcheck-confirm 1 --healthcheck-state "$ST"
[ "$rc" -eq 2 ] && [ "$(grep -c '^update' "$FAKE/log")" -eq 1 ]
ok $? "drain: an inconclusive check never drains (exit $rc)"

done_testing
