#!/bin/sh
# From a screen's verdict to a drain, safely, without Slurm: collprof-report screen --format
# drain --apply against a fake scontrol (--scontrol, a script of this test that logs its argv,
# keeps node records and answers `show node -o` and `show partition -o`).  On the 4-node
# screen of collprof-1.7.h5 (n3 slow) and copies of it made other screens with h5py:
#  - every reason starts "collprof: "; --apply needs --state (one line, exit 2);
#  - n3's first failing verdict is not drained (the same screen again counts once), the
#    second screen's drains it, once; drained already, it is left as it is; a healthy
#    verdict forgets its count;
#  - a flagged node outside the run's allocation (the job's nodes without it) is refused;
#  - an untested or unreachable node is never drained (a comment line says so);
#  - the circuit breaker holds at its cap (10 % of a 20-node partition: 2), trips on the
#    third drain in the window, stays tripped for the next screen, --reset-breaker resets it;
#  - --resume touches only nodes of the run drained with a "collprof:" reason;
#  - scontrol is never taken from an empty or relative PATH element (a planted ./scontrol);
#  - a state file that is not ours (garbage, a link, writable by others) and an scontrol
#    that refuses: one line, exit 2, the state file as it was (or the drain not counted).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/report_lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)

F1=$COLLPROF_SRCDIR/tests/data/collprof-1.7.h5
S=$WORK/state
FAKE=$WORK/fake
mkdir -p "$FAKE"
cat >"$FAKE/scontrol" <<'EOF'
#!/bin/sh
# a fake scontrol: argv logged; nodes in ./nodes (one `show node -o` record a line)
PATH=/usr/bin:/bin
d=${0%/*}
printf '%s\n' "$*" >>"$d/log"
case "$1" in
show)
    case "$2" in
    node) cat "$d/nodes" ;;
    partition) cat "$d/partition" ;;
    esac
    ;;
update)
    if [ -e "$d/refuse" ]; then
        echo "slurm_update error: Invalid user id"
        exit 1
    fi
    awk -v n="${2#nodename=}" -v s="${3#state=}" -v r="${4#reason=}" '
        $1 == "NodeName=" n {
            sub(/ Reason=.*$/, "")
            if (s == "drain") {
                sub(/State=[A-Z+]*/, "State=IDLE+DRAIN")
                $0 = $0 " Reason=" r " [root@2026-12-01T00:00:00]"
            } else {
                sub(/State=[A-Z+]*/, "State=IDLE")
            }
        }
        { print }' "$d/nodes" >"$d/nodes.new" && mv "$d/nodes.new" "$d/nodes"
    ;;
esac
EOF
chmod 755 "$FAKE/scontrol"
echo "PartitionName=debug AllowGroups=ALL Nodes=n[1-20] State=UP TotalCPUs=20 TotalNodes=20" \
    >"$FAKE/partition"
nodes_idle() { # n1..n6 idle
    : >"$FAKE/nodes"
    for i in 1 2 3 4 5 6; do
        echo "NodeName=n$i Arch=x86_64 CPUTot=1 State=IDLE ThreadsPerCore=1 Partitions=debug" \
            >>"$FAKE/nodes"
    done
    rm -f "$FAKE/log"
}
nodes_idle

DIAG_MORE=$FAKE/log
updates() { # the fake's update calls
    { grep '^update ' "$FAKE/log" 2>/dev/null || true; } | wc -l
}
apply() { # FILE [options]: --apply --state $S through the fake
    f=$1
    shift
    rep screen "$f" --format drain --apply --state "$S" --scontrol "$FAKE/scontrol" "$@"
}

rep screen "$F1" --format drain
[ "$rrc" -eq 1 ] && [ "$(cat "$WORK/rout")" = 'scontrol update nodename=n3 state=drain reason="collprof: screen: slow, 0.03x of the median with 3 of 3 partners, confirmed with n4"' ]
check "--format drain: n3's line, its reason with the owner's prefix 'collprof: screen: '"

rep screen "$F1" --format drain --apply --scontrol "$FAKE/scontrol"
one_error 'screen: --apply needs --state FILE' && [ ! -e "$FAKE/log" ]
check "--apply without --state: one line, exit 2, scontrol not run"

for bad in "--drain-after 0" "--drain-after 1.5" "--max-drain-share 0" "--max-drain-share 1.5" \
    "--window x" "--window 0"; do
    # shellcheck disable=SC2086 # an option and its value
    rep screen "$F1" --format drain --apply --state "$S" $bad
    [ "$rrc" -eq 2 ] && [ "$(wc -l <"$WORK/rerr")" -eq 1 ] && [ ! -e "$S" ]
    check "$bad: one line, exit 2, no state file"
done
rep screen "$F1" --format drain --state "$S" --reset-breaker
one_error 'need --apply'
check "--reset-breaker without --apply: one line, exit 2"
rep screen "$F1" --format json --resume
one_error '--resume takes'
check "--resume --format json: one line, exit 2"
rep screen "$F1" --format drain --apply --state "$S" --scontrol scontrol
one_error 'screen: --scontrol scontrol: not an absolute path' && [ ! -e "$S" ] && [ ! -e "$FAKE/log" ]
check "--scontrol not absolute: one line, exit 2"

# ---- two failing verdicts in a row --------------------------------------------------------
apply "$F1"
[ "$rrc" -eq 1 ] && [ ! -s "$WORK/rerr" ] && [ "$(updates)" -eq 0 ] &&
    grep -q '^# n3: failing verdict 1 of 2 in a row: not drained yet (collprof: screen: slow, ' "$WORK/rout" &&
    grep -q '^# --apply: no node to drain yet$' "$WORK/rout" && ! grep -q '^scontrol' "$WORK/rout" &&
    grep -q "^fail n3 1 [0-9]* 2026-11-27T09:08:00Z/j15.0 .*collprof-1.7.h5$" "$S"
check "first failing verdict: not drained yet, exit 1, counted in the state file"
apply "$F1"
[ "$rrc" -eq 1 ] && [ "$(updates)" -eq 0 ] && grep -q '^# n3: failing verdict 1 of 2 ' "$WORK/rout"
check "the same screen again: still 1 of 2 (one screen, one verdict), not drained"
rep screen "$F1" --format drain --drain-after 1 --state "$S"
[ "$rrc" -eq 1 ] && grep -q '^scontrol update nodename=n3 state=drain reason="collprof: ' "$WORK/rout"
check "--drain-after 1 (no --apply): n3's line printed"

if [ -z "$PY" ] || ! "$PY" -c 'import h5py' 2>/dev/null; then
    echo "ok $((tap_n += 1)) # SKIP python3 with h5py is not installed (other screens)"
    done_testing
fi
# copies of the screen: another job and time (a new screen), the job's nodes, n3's and n2's
# verdicts (h5py)
mkscreen() { # OUT JOB [nodelist=L] [VERDICT_OF_HOST=...]
    "$PY" - "$F1" "$@" <<'EOF'
import shutil, sys, h5py
src, out, job = sys.argv[1:4]
shutil.copy(src, out)
with h5py.File(out, "r+") as f:
    f.attrs["slurm_job_id"] = job
    f.attrs["created"] = "2026-11-27T1%s:00:00Z" % job[-1]
    for a in sys.argv[4:]:
        k, v = a.split("=")
        if k == "nodelist":
            f.attrs["slurm_nodelist"] = v
            continue
        s = f["screen"]
        for i in range(len(s)):
            r = s[i]
            if r["what"] == b"node" and r["host_a"] == k.encode():
                r["verdict"] = v.encode()
                r["score"] = 0.5 if v == "slow" else 1.0
                s[i] = r
EOF
}
mkscreen "$WORK/f2.h5" 16
mkscreen "$WORK/f3.h5" 17 nodelist='n[1-2,4]'
mkscreen "$WORK/f4.h5" 18 n3=healthy
mkscreen "$WORK/f5.h5" 19 n2=slow
mkscreen "$WORK/f6.h5" 20
mkscreen "$WORK/f7.h5" 21
mkscreen "$WORK/f8.h5" 22 n2=untested n4=unreachable

# untested (no pair of it measured) and unreachable: never drained, said so
rep screen "$WORK/f8.h5" --format drain
[ "$rrc" -eq 1 ] && [ "$(grep -c '^scontrol' "$WORK/rout")" -eq 1 ] &&
    grep -q '^scontrol update nodename=n3 state=drain ' "$WORK/rout" &&
    grep -q '^# n2: untested: never drained (no pair of it was measured' "$WORK/rout" &&
    grep -q '^# n4: unreachable: never drained (it stopped answering' "$WORK/rout"
check "n2 untested, n4 unreachable: never drained (a comment line each), n3's line alone"

apply "$WORK/f2.h5"
[ "$rrc" -eq 1 ] && [ ! -s "$WORK/rerr" ] && [ "$(updates)" -eq 1 ] &&
    grep -q '^update nodename=n3 state=drain reason=collprof: screen: slow, 0\.03x of the median with 3 of 3 partners, confirmed with n4$' "$FAKE/log" &&
    grep -q '^scontrol update nodename=n3 state=drain reason="collprof: screen: slow, ' "$WORK/rout" &&
    grep -q '^# drained n3: collprof: screen: slow, ' "$WORK/rout" &&
    grep -q "^# --apply: drained 1 of 1 flagged node through $FAKE/scontrol " "$WORK/rout" &&
    grep -q '^fail n3 2 .*/j16\.0 ' "$S" && grep -q '^drained n3 [0-9]* debug$' "$S" &&
    grep -q '^NodeName=n3 .*State=IDLE+DRAIN .*Reason=collprof: screen: ' "$FAKE/nodes"
check "second failing verdict in a row: n3 drained once (its reason 'collprof: screen: ...'), recorded"
apply "$WORK/f6.h5"
[ "$rrc" -eq 1 ] && [ "$(updates)" -eq 1 ] &&
    grep -q "^# n3: already drained by collprof (reason 'collprof: screen: slow, [^']*'): left as it is" "$WORK/rout"
check "a third: n3 drained already by collprof, left as it is (no update)"

cp "$S" "$WORK/state.before"
apply "$WORK/f3.h5"
one_error "screen: .*f3.h5: flagged node n3 is outside the run's allocation (its ranks' hosts within its job's nodes n\[1-2,4\]): refused, nothing drained" &&
    [ ! -s "$WORK/rout" ] && [ "$(updates)" -eq 1 ] && cmp -s "$S" "$WORK/state.before"
check "n3 outside the job's nodes (n[1-2,4]): one line, exit 2, nothing drained, the state as it was"

apply "$WORK/f4.h5"
[ "$rrc" -eq 0 ] && grep -q '^# n3: healthy: its 3 failing verdicts in a row forgotten$' "$WORK/rout" &&
    ! grep -q '^fail n3 ' "$S" && grep -q '^drained n3 ' "$S"
check "n3 healthy in the next screen: its count forgotten (the drain still recorded), exit 0"

# ---- the circuit breaker: 10 % of debug's 20 nodes, 2 in an hour -------------------------
S=$WORK/state2
nodes_idle
apply "$WORK/f5.h5" --drain-after 1
[ "$rrc" -eq 1 ] && [ "$(updates)" -eq 2 ] && grep -q '^# --apply: drained 2 of 2 flagged nodes' "$WORK/rout"
check "breaker: n2 and n3 drained (2, the cap of 10 % of 20 nodes)"
nodes_idle
apply "$WORK/f6.h5" --drain-after 1
one_error 'screen: --apply: circuit breaker tripped: 1 more drain with 2 in the last 3600 s would pass 10% of partition debug.s 20 nodes (at most 2): nothing drained; it stays tripped until --reset-breaker' &&
    [ "$(updates)" -eq 0 ] && grep -q '^breaker tripped [0-9]* 1 more drain ' "$S"
check "breaker: a third drain in the hour trips it: one line, exit 2, nothing drained, recorded"
cp "$S" "$WORK/state.before"
rm -f "$FAKE/log"
apply "$WORK/f7.h5" --drain-after 1 --max-drain-share 1
one_error 'screen: --apply: the circuit breaker tripped at 20[0-9-]*T[0-9:]*Z (1 more drain .*): nothing drained, the state file unchanged; see to it, then add --reset-breaker' &&
    [ ! -e "$FAKE/log" ] && cmp -s "$S" "$WORK/state.before"
check "breaker: stays tripped for the next screen (even with a larger share): exit 2, scontrol not run"
apply "$WORK/f7.h5" --drain-after 1 --reset-breaker
[ "$rrc" -eq 2 ] && grep -q '^# --reset-breaker: the circuit breaker, tripped at .*, is reset$' "$WORK/rout" &&
    grep -q 'circuit breaker tripped: 1 more drain with 2 ' "$WORK/rerr" && [ "$(updates)" -eq 0 ]
check "--reset-breaker: reset, but the hour's 2 drains still count: trips again, nothing drained"
apply "$WORK/f7.h5" --drain-after 1 --reset-breaker --max-drain-share 0.5
[ "$rrc" -eq 1 ] && [ "$(updates)" -eq 1 ] && grep -q '^# drained n3: ' "$WORK/rout" &&
    ! grep -q '^breaker' "$S" && [ "$(grep -c '^drained ' "$S")" -eq 3 ]
check "--reset-breaker --max-drain-share 0.5 (10 of 20): n3 drained, the breaker cleared"

# ---- --resume: only collprof's drains, only the run's nodes -------------------------------
nodes_idle
"$FAKE/scontrol" update nodename=n1 state=drain "reason=maint: disk"
"$FAKE/scontrol" update nodename=n3 state=drain "reason=collprof: screen: slow, 0.03x"
"$FAKE/scontrol" update nodename=n5 state=drain "reason=collprof: screen: slow, 0.5x"
rm -f "$FAKE/log"
rep screen "$F1" --resume --scontrol "$FAKE/scontrol"
[ "$rrc" -eq 0 ] && [ "$(grep -c '^scontrol' "$WORK/rout")" -eq 1 ] &&
    grep -q '^scontrol update nodename=n3 state=resume$' "$WORK/rout" &&
    grep -q "^# n1: drained by someone else (reason 'maint: disk'): not resumed$" "$WORK/rout" &&
    [ "$(updates)" -eq 0 ]
check "--resume: n3's line (collprof's reason); n1 (another's reason) said not resumed; nothing run"
apply "$F1" --drain-after 1 >/dev/null # n3 flagged again: counted
grep -q '^fail n3 ' "$S"
r1=$?
rm -f "$FAKE/log"
rep screen "$F1" --resume --apply --state "$S" --scontrol "$FAKE/scontrol"
[ "$r1" -eq 0 ] && [ "$rrc" -eq 0 ] && [ "$(updates)" -eq 1 ] &&
    grep -q '^update nodename=n3 state=resume$' "$FAKE/log" &&
    grep -q '^# resumed n3$' "$WORK/rout" &&
    grep -q '^# --resume --apply: resumed 1 node drained by collprof through ' "$WORK/rout" &&
    grep -q '^NodeName=n1 .*State=IDLE+DRAIN .*Reason=maint: disk' "$FAKE/nodes" &&
    grep -q '^NodeName=n5 .*State=IDLE+DRAIN .*Reason=collprof: ' "$FAKE/nodes" &&
    grep -q '^NodeName=n3 .*State=IDLE ' "$FAKE/nodes" && ! grep -q '^fail n3 ' "$S"
check "--resume --apply: n3 resumed and its count cleared; n1 (another's drain) and n5 (not the run's) stay drained"

# ---- scontrol: never from an empty or relative PATH element -------------------------------
mkdir -p "$WORK/cwd/bin" "$WORK/nobin"
for p in "$WORK/cwd/scontrol" "$WORK/cwd/bin/scontrol"; do
    printf '#!/bin/sh\necho planted >>%s/planted\n' "$WORK" >"$p"
    chmod 755 "$p"
done
for path in ":$WORK/nobin" "$WORK/nobin::bin" "bin:."; do
    rrc=0
    (cd "$WORK/cwd" && PATH=$path "$REPORT" screen "$F1" --resume) >"$WORK/rout" 2>"$WORK/rerr" || rrc=$?
    one_error 'screen: scontrol is not in PATH (its absolute directories; or give --scontrol PATH): nothing resumed' &&
        [ ! -e "$WORK/planted" ]
    check "PATH='$path', a ./scontrol and bin/scontrol planted: not run, one line, exit 2"
done
rrc=0
(cd "$WORK/cwd" && PATH="::$FAKE" "$REPORT" screen "$F1" --resume) >"$WORK/rout" 2>"$WORK/rerr" || rrc=$?
[ "$rrc" -eq 0 ] && [ ! -e "$WORK/planted" ] && grep -q '^show node -o$' "$FAKE/log"
check "PATH='::FAKEDIR': the absolute element's scontrol, not the planted one"

# ---- a state file that is not ours; an scontrol that refuses ------------------------------
nodes_idle
for kind in garbage count link writable foreign; do
    S=$WORK/bad-$kind
    case $kind in
    garbage) printf 'hello\n' >"$S" ;;
    count) printf 'collprof-drain-state 1\nfail n3 x 1 a/b f\n' >"$S" ;;
    link) ln -s "$WORK/state2" "$S" ;;
    writable) cp "$WORK/state2" "$S" && chmod 666 "$S" ;;
    foreign) cp "$WORK/state2" "$S" && chown 65534 "$S" 2>/dev/null ;;
    esac
    [ "$kind" = foreign ] && [ "$(stat -c %u "$S")" != 65534 ] && continue
    cp -P "$S" "$WORK/bad.before"
    apply "$WORK/f2.h5" --drain-after 1
    one_error "screen: --state $S: " && [ ! -e "$FAKE/log" ] && [ ! -s "$WORK/rout" ] &&
        { [ -L "$S" ] || cmp -s "$S" "$WORK/bad.before"; }
    check "a state file ($kind): one line, exit 2, nothing run, the file as it was"
done
S=$WORK/state3
touch "$FAKE/refuse"
apply "$WORK/f2.h5" --drain-after 1
one_error "screen: --apply: $FAKE/scontrol refused to drain n3 (exit 1: slurm_update error: Invalid user id): drained 0 of 1" &&
    grep -q '^fail n3 1 ' "$S" && ! grep -q '^drained ' "$S"
check "scontrol refuses: one line, exit 2; the verdict counted, the drain not"
rm -f "$FAKE/refuse"
mv "$FAKE/nodes" "$FAKE/nodes.off"
printf 'Slurm is down\n' >"$FAKE/nodes"
cp "$S" "$WORK/state.before"
rm -f "$FAKE/log"
apply "$WORK/f6.h5" --drain-after 1
one_error "screen: $FAKE/scontrol show node -o: not a node record: 'Slurm is down': nothing changed" &&
    cmp -s "$S" "$WORK/state.before" && [ "$(updates)" -eq 0 ]
check "scontrol's node records unreadable: one line, exit 2, nothing drained, the state as it was"
mv "$FAKE/nodes.off" "$FAKE/nodes"

done_testing
