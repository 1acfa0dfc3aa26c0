#!/bin/bash
# slurm-local.sh: a real Slurm cluster on one machine, in a private directory, for trying
# collprof's Slurm workflow and for its tests.  By default one node on loopback; with
# --nodes N (N >= 2) N virtual nodes, each in its own network, UTS and mount namespace.
#
#   slurm-local.sh [--nodes N [--switches S]] start
#                            start (or find running) munged, slurmctld and slurmd(s); wait until
#                            every node is idle; print the lines to paste (export SLURM_CONF=...,
#                            and with N >= 2 the interface variables)
#   slurm-local.sh status    say which daemons run (by their pid files) and show sinfo
#   slurm-local.sh stop      cancel the jobs, stop the daemons by PID, keep the directory; with
#                            N >= 2 also end what runs in the namespaces and delete them and the
#                            bridge.  Also cleans up what a crashed run left.
#   slurm-local.sh env       print the export lines only (for eval "$(slurm-local.sh env)")
#   slurm-local.sh purge     stop, then remove the directory (cleanup: the same)
# With N >= 2 only:
#   slurm-local.sh shape NODE RATE|off   tc tbf rate (e.g. 200mbit) on both ends of NODE's link
#   slurm-local.sh link NODE down|up     take NODE's link down (cable pulled) or up again
#   slurm-local.sh shape-spine RATE|off  with --switches S >= 2: tc tbf on the spine, both ways
#                                        (every link between switch s1 and another)
#   slurm-local.sh exec NODE CMD...      run CMD in NODE's namespaces (NODE: n1..nN or ctl)
#
# Directory: $COLLPROF_SLURM_DIR, default /tmp/collprof-slurm.  Everything (configuration,
# state, spool, logs, pid files, munge socket) lives there; the only thing read from outside is
# the munge key /etc/munge/munge.key that Debian's munge package creates (when it is missing, a
# key is made inside the directory).  Ports: $COLLPROF_SLURM_PORT for slurmctld and the next
# one for slurmd; by default the first free pair from 6817 (one node) or 6817 and 6818 in the
# namespaces (N nodes).  Each node gets CPUs = $COLLPROF_SLURM_CPUS, default nproc: ask for
# more tasks than that only with -O/--overcommit, or the job pends forever.
#
# One node: only loopback (127.0.0.1) is used.  N nodes ($COLLPROF_SLURM_NODES or --nodes):
# a bridge holds X.1 (this, the login namespace, where srun and sbatch run), slurmctld runs in
# namespace "ctl" at X.2 and node nK at X.(10+K), where X is $COLLPROF_SLURM_NET (default the
# first 198.18.x.0/24, the benchmarking range, that no local interface uses).  Each namespace's
# link is called cpnet0.  Must run as root (namespaces, slurmd and SlurmUser=root).
#
# $COLLPROF_SLURM_EXTRA_CONF names a file of slurm.conf lines added to the configuration.
# Switches (--switches S, $COLLPROF_SLURM_SWITCHES; default 1: one bridge, no topology): the
# nodes in S contiguous groups (sizes differ by one at most), each on a bridge of its own, leaf
# switch sK; s2..sS each joined to s1 (which holds this namespace and ctl) by a veth, the
# spine; and Slurm told so: topology.conf (SwitchName=sK Nodes=..., SwitchName=spine
# Switches=s[1-S]) and TopologyPlugin=topology/tree.  Traffic between nodes of different
# switches crosses the spine, which `shape-spine RATE` slows (a shared link, as a real
# oversubscribed spine: the pairs that cross it at once share it).
set -eu

DIR=${COLLPROF_SLURM_DIR:-/tmp/collprof-slurm}
CONF=$DIR/slurm.conf
MUNGE_DIR=$DIR/munge
MUNGE_SOCKET=$MUNGE_DIR/munge.socket
START_TIMEOUT=${COLLPROF_SLURM_START_TIMEOUT:-30}
# multi-node: the record of the running cluster, the link name inside every namespace, and a
# tag that makes this directory's namespace, veth and bridge names unique on the machine
CLUSTER=$DIR/cluster
NODE_IF=cpnet0
TAG=cp$(printf '%s' "$(realpath -m "$DIR")" | md5sum | cut -c1-6)
BR=$TAG-br
RUN_IN=() # prefix that runs a daemon in its namespaces (empty: here)

say() { printf 'slurm-local: %s\n' "$*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# whether process $1 exists and is not a zombie (PID 1 may take seconds to reap orphans)
alive() {
    local st
    read -r st <"/proc/$1/stat" 2>/dev/null || return 1
    st=${st##*) }
    case ${st%% *} in
    Z | X) return 1 ;;
    esac
    return 0
}

# PID from pid file $1 if that process is alive and is program $2; empty otherwise
running_pid() {
    local pid comm
    [ -r "$1" ] || return 0
    pid=$(tr -dc '0-9' <"$1")
    [ -n "$pid" ] || return 0
    alive "$pid" || return 0
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 0
    [ "$comm" = "$2" ] && echo "$pid"
    return 0
}

port_free() {
    ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

pick_ports() {
    local p
    if [ -n "${COLLPROF_SLURM_PORT:-}" ]; then
        CTLD_PORT=$COLLPROF_SLURM_PORT
        SLURMD_PORT=$((COLLPROF_SLURM_PORT + 1))
        return 0
    fi
    for p in $(seq 6817 2 6899); do
        if port_free "$p" && port_free $((p + 1)); then
            CTLD_PORT=$p
            SLURMD_PORT=$((p + 1))
            return 0
        fi
    done
    die "no free pair of TCP ports in 6817-6900; set COLLPROF_SLURM_PORT"
}

find_prog() {
    command -v "$1" 2>/dev/null || { [ -x "/usr/sbin/$1" ] && echo "/usr/sbin/$1"; } ||
        die "$1 not found (apt-get install slurmctld slurmd slurm-client munge)"
}

# the lines both cluster kinds share: CTLHOST SPOOL TMPFS JOBCOMP
conf_common() {
    cat <<EOF
ClusterName=collprof
SlurmctldHost=$1
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$2
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$3
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=$4
MpiDefault=pmix
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
InactiveLimit=0
KillWait=5
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=60
EOF
}

# $COLLPROF_SLURM_EXTRA_CONF: a file of slurm.conf lines added at the end (a test's
# HealthCheckProgram, for instance)
extra_conf() {
    [ -z "${COLLPROF_SLURM_EXTRA_CONF:-}" ] || cat "$COLLPROF_SLURM_EXTRA_CONF"
}

node_cpus() { echo "${COLLPROF_SLURM_CPUS:-$(nproc)}"; }
node_mem() { awk '/^MemTotal:/ { printf "%d", $2 / 1024 }' /proc/meminfo; }

write_conf() {
    local cpus mem
    cpus=$(node_cpus)
    mem=$(node_mem)
    pick_ports
    {
        echo "# single-node loopback cluster written by collprof's contrib/slurm-local/slurm-local.sh"
        conf_common "localhost(127.0.0.1)" "$DIR/spool/slurmd.%n" "$DIR/tmp" jobcomp/none
        echo "NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN"
        echo "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
        extra_conf
    } >"$CONF.tmp"
    mv "$CONF.tmp" "$CONF"
}

start_munge() {
    local pid key munged
    pid=$(running_pid "$MUNGE_DIR/munged.pid" munged)
    if [ -n "$pid" ]; then
        say "munged already running (pid $pid)"
        return 0
    fi
    munged=$(find_prog munged)
    # munged checks that everyone may traverse the socket's directory and that only munge
    # may write it
    mkdir -p "$MUNGE_DIR"
    chown munge:munge "$MUNGE_DIR"
    chmod 755 "$MUNGE_DIR"
    key=/etc/munge/munge.key
    if [ ! -r "$key" ]; then
        key=$MUNGE_DIR/munge.key
        if [ ! -s "$key" ]; then
            say "no /etc/munge/munge.key: making a private key in $key"
            (umask 077 && dd if=/dev/urandom of="$key" bs=1024 count=1 status=none)
            chown munge:munge "$key"
            chmod 400 "$key"
        fi
    fi
    rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
    su -s /bin/sh munge -c "exec '$munged' --socket='$MUNGE_SOCKET' --key-file='$key' \
        --pid-file='$MUNGE_DIR/munged.pid' --log-file='$MUNGE_DIR/munged.log' \
        --seed-file='$MUNGE_DIR/munged.seed'" ||
        die "munged did not start: see $MUNGE_DIR/munged.log"
    pid=$(running_pid "$MUNGE_DIR/munged.pid" munged)
    [ -n "$pid" ] || die "munged did not start: see $MUNGE_DIR/munged.log"
    say "munged started (pid $pid)"
}

# wait up to 5 s until pid file $1 names a running $2; print the pid
wait_pid() {
    local i pid
    for i in $(seq 1 50); do
        pid=$(running_pid "$1" "$2")
        if [ -n "$pid" ]; then
            echo "$pid"
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# launch daemon NAME (in the namespaces RUN_IN names) unless its pid file names a running one
launch_daemon() { # NAME PIDFILE ARGS...
    local name=$1 pidfile=$2 pid prog
    shift 2
    pid=$(running_pid "$pidfile" "$name")
    if [ -n "$pid" ]; then
        say "$name already running (pid $pid)"
        return 0
    fi
    prog=$(find_prog "$name")
    rm -f "$pidfile"
    # both daemonize; their stdout/stderr only carry start-up failures
    "${RUN_IN[@]}" "$prog" -f "$CONF" "$@" >>"$DIR/log/$name.start.log" 2>&1 ||
        die "$name did not start: see $DIR/log/$name.start.log and $DIR/log/$name*.log"
}

start_daemon() { # NAME PIDFILE ARGS...
    local pid
    launch_daemon "$@"
    pid=$(wait_pid "$2" "$1") || die "$1 wrote no pid file: see $DIR/log/"
    say "$1 started (pid $pid)"
}

print_env() {
    printf 'export SLURM_CONF=%s\n' "$CONF"
}

# wait until sinfo shows $1 nodes idle (or busy with jobs)
wait_idle() {
    local i up states=""
    for i in $(seq 1 $((START_TIMEOUT * 2))); do
        states=$(timeout 5 sinfo -h -N -o '%T' 2>/dev/null | tr '\n' ' ') || states=""
        up=$(echo "$states" | tr ' ' '\n' | grep -c -E '^(idle|mixed|allocated)') || true
        [ "$up" -ge "$1" ] && return 0
        sleep 0.5
    done
    die "nodes not idle after ${START_TIMEOUT}s (state '${states:-no answer}'): see $DIR/log/"
}

cmd_start() {
    [ "$(id -u)" -eq 0 ] || die "run as root (slurmd and SlurmUser=root need it)"
    mkdir -p "$DIR"
    chmod 755 "$DIR" # munged needs everyone to traverse the path to its socket
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/log" "$DIR/tmp"
    if [ ! -s "$CONF" ] || { [ -z "$(running_pid "$DIR/run/slurmctld.pid" slurmctld)" ] &&
        [ -z "$(running_pid "$DIR/run/slurmd.localhost.pid" slurmd)" ]; }; then
        rm -f "$CLUSTER" "$DIR/cgroup.conf" # left by a stopped multi-node cluster
        write_conf                          # fresh ports when nothing of ours runs
    fi
    start_munge
    export SLURM_CONF=$CONF
    # -c: forget the state of an earlier run (jobs of a cluster that was stopped are gone)
    start_daemon slurmctld "$DIR/run/slurmctld.pid" -c
    start_daemon slurmd "$DIR/run/slurmd.localhost.pid" -N localhost
    wait_idle 1
    say "cluster up: node localhost, $(node_cpus) CPUs, partition debug; use -O for more tasks"
    say "in your shell:"
    print_env
}

# print "NAME: running (pid P)" or "NAME: not running"; status 1 when not running
daemon_status() { # NAME PIDFILE [LABEL]
    local pid
    pid=$(running_pid "$2" "$1")
    if [ -n "$pid" ]; then
        echo "${3:-$1}: running (pid $pid)"
    else
        echo "${3:-$1}: not running"
        return 1
    fi
}

show_queue() {
    echo "SLURM_CONF=$CONF"
    SLURM_CONF=$CONF timeout 5 sinfo || return 1
    SLURM_CONF=$CONF timeout 5 squeue || return 1
}

cmd_status() {
    local rc=0
    daemon_status munged "$MUNGE_DIR/munged.pid" || rc=1
    daemon_status slurmctld "$DIR/run/slurmctld.pid" || rc=1
    daemon_status slurmd "$DIR/run/slurmd.localhost.pid" || rc=1
    if [ "$rc" -eq 0 ]; then
        show_queue || rc=1
    fi
    return "$rc"
}

# TERM every pid given, wait up to 10 s for all of them, then KILL the rest
end_pids() { # WHAT PID...
    local what=$1 i p left
    shift
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null || true
    for i in $(seq 1 100); do
        left=""
        for p in "$@"; do
            alive "$p" && left="$left $p"
        done
        [ -z "$left" ] && return 0
        if [ "$i" -eq 100 ]; then
            say "$what (pid$left) ignored SIGTERM for 10 s: SIGKILL"
            # shellcheck disable=SC2086 # one pid per word
            kill -KILL $left 2>/dev/null || true
        fi
        sleep 0.1
    done
}

stop_pid() { # NAME PIDFILE
    local pid
    pid=$(running_pid "$2" "$1")
    if [ -z "$pid" ]; then
        say "$1 not running"
        return 0
    fi
    end_pids "$1" "$pid"
    rm -f "$2"
    say "$1 stopped (pid $pid)"
}

cancel_jobs() {
    local jobs
    if [ -n "$(running_pid "$DIR/run/slurmctld.pid" slurmctld)" ] && [ -s "$CONF" ]; then
        jobs=$(SLURM_CONF=$CONF timeout 5 squeue -h -o '%i' 2>/dev/null || true)
        if [ -n "$jobs" ]; then
            say "cancelling jobs: $(echo "$jobs" | tr '\n' ' ')"
            # shellcheck disable=SC2086 # one job id per word
            SLURM_CONF=$CONF timeout 10 scancel $jobs 2>/dev/null || true
            sleep 1
        fi
    fi
}

# stop every slurmd that has a pid file here (one node: localhost; N nodes: n1..nN)
stop_slurmds() {
    local f pid pids="" names=""
    for f in "$DIR"/run/slurmd.*.pid; do
        pid=$(running_pid "$f" slurmd)
        if [ -n "$pid" ]; then
            pids="$pids $pid"
            names="$names, ${f#"$DIR"/run/slurmd.}"
            names="${names%.pid} pid $pid"
        fi
        rm -f "$f"
    done
    if [ -z "$pids" ]; then
        say "slurmd not running"
        return 0
    fi
    # shellcheck disable=SC2086 # one pid per word
    end_pids slurmd $pids
    say "slurmd stopped (${names#, })"
}

cmd_stop() {
    cancel_jobs
    stop_slurmds
    stop_pid slurmctld "$DIR/run/slurmctld.pid"
    stop_pid munged "$MUNGE_DIR/munged.pid"
    mn_net_down
}

# ---- N virtual nodes in namespaces -------------------------------------------------------

# NODES, NET from the record of the cluster started here; NODES=0 when there is none
mn_load() {
    NODES=0
    NET=""
    SWITCHES=1
    if [ -s "$CLUSTER" ]; then
        NODES=$(sed -n 's/^NODES=\([0-9]*\)$/\1/p' "$CLUSTER")
        NET=$(sed -n 's/^NET=\([0-9.]*\)$/\1/p' "$CLUSTER")
        SWITCHES=$(sed -n 's/^SWITCHES=\([0-9]*\)$/\1/p' "$CLUSTER")
        SWITCHES=${SWITCHES:-1} # a record from before --switches
        if [ -z "$NODES" ] || [ -z "$NET" ]; then
            say "$CLUSTER is damaged: ignored"
            NODES=0
        fi
    fi
}

mn_need() {
    mn_load
    [ "$NODES" -ge 2 ] ||
        die "no multi-node cluster in $DIR (start one with: $0 --nodes N start)"
}

mn_names() { # ctl n1 ... nN
    local k
    echo ctl
    for k in $(seq 1 "$NODES"); do echo "n$k"; done
}

mn_addr() { # NAME -> its address
    case $1 in
    ctl) echo "$NET.2" ;;
    n*) echo "$NET.$((10 + ${1#n}))" ;;
    esac
}

mn_switch_of() { # NAME -> its leaf switch 1..SWITCHES (ctl and this namespace: 1)
    case $1 in
    n*) echo $(((${1#n} - 1) * SWITCHES / NODES + 1)) ;;
    *) echo 1 ;;
    esac
}

mn_switch_nodes() { # K -> the host list of switch K's nodes, n[A-B]
    local k first=0 last=0
    for k in $(seq 1 "$NODES"); do
        if [ "$(mn_switch_of "n$k")" -eq "$1" ]; then
            [ "$first" -gt 0 ] || first=$k
            last=$k
        fi
    done
    if [ "$first" -eq "$last" ]; then echo "n$first"; else echo "n[$first-$last]"; fi
}

mn_bridge_of() { # NAME -> the bridge of its switch
    local k
    k=$(mn_switch_of "$1")
    if [ "$k" -eq 1 ]; then echo "$BR"; else echo "$TAG-s$k"; fi
}

mn_check_node() { # NAME: n1..nN or ctl
    case $1 in
    ctl) return 0 ;;
    n[1-9] | n[1-9][0-9] | n[1-9][0-9][0-9])
        [ "${1#n}" -le "$NODES" ] && return 0
        ;;
    esac
    die "no node '$1' (nodes: ctl n1..n$NODES)"
}

# the first 198.18.x.0/24 that no local interface uses, or $COLLPROF_SLURM_NET
mn_pick_net() {
    local x n=${COLLPROF_SLURM_NET:-}
    if [ -n "$n" ]; then
        n=${n%/24}
        n=${n%.0}
        echo "$n" | grep -q -E '^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$' ||
            die "COLLPROF_SLURM_NET=$COLLPROF_SLURM_NET: expected A.B.C or A.B.C.0/24"
        NET=$n
        return 0
    fi
    for x in $(seq 0 255); do
        if ! ip -o -4 addr show | grep -q " 198\.18\.$x\.[0-9]*/"; then
            NET=198.18.$x
            return 0
        fi
    done
    die "every 198.18.x.0/24 is in use here: set COLLPROF_SLURM_NET"
}

mn_write_conf() {
    local cpus mem k
    cpus=$(node_cpus)
    mem=$(node_mem)
    CTLD_PORT=${COLLPROF_SLURM_PORT:-6817} # alone in its namespace: no clash
    SLURMD_PORT=$((CTLD_PORT + 1))
    {
        echo "# $NODES-node cluster in network namespaces written by collprof's" \
            "contrib/slurm-local/slurm-local.sh"
        conf_common "ctl($NET.2)" "$DIR/spool/%n" "$DIR/tmp/%n" jobcomp/filetxt
        echo "JobCompLoc=$DIR/log/jobcomp.txt"
        for k in $(seq 1 "$NODES"); do
            echo "NodeName=n$k NodeHostname=n$k NodeAddr=$(mn_addr "n$k") CPUs=$cpus" \
                "RealMemory=$mem State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=n[1-$NODES] Default=YES MaxTime=INFINITE State=UP" \
            "OverSubscribe=FORCE:4"
        [ "$SWITCHES" -lt 2 ] || echo "TopologyPlugin=topology/tree"
        extra_conf
    } >"$CONF.tmp"
    mv "$CONF.tmp" "$CONF"
    rm -f "$DIR/topology.conf"
    if [ "$SWITCHES" -ge 2 ]; then
        {
            echo "# $SWITCHES leaf switches under one spine, written by slurm-local.sh"
            for k in $(seq 1 "$SWITCHES"); do
                echo "SwitchName=s$k Nodes=$(mn_switch_nodes "$k")"
            done
            echo "SwitchName=spine Switches=s[1-$SWITCHES]"
        } >"$DIR/topology.conf"
    fi
    # `ip netns exec` mounts a /sys without cgroups: slurmd must not look for cgroup v2
    echo "CgroupPlugin=cgroup/v1" >"$DIR/cgroup.conf"
    {
        echo "127.0.0.1 localhost"
        echo "$NET.1 login"
        for k in $(mn_names); do echo "$(mn_addr "$k") $k"; done
    } >"$DIR/hosts"
    for k in $(seq 1 "$NODES"); do mkdir -p "$DIR/tmp/n$k" "$DIR/spool/n$k"; done
    printf 'NODES=%s\nNET=%s\nSWITCHES=%s\n' "$NODES" "$NET" "$SWITCHES" >"$CLUSTER"
}

# the bridge with X.1 on the first free network (another cluster may pick the same at once)
mn_bridge_up() {
    local err
    for _ in 1 2 3 4 5; do
        mn_pick_net
        err=$(ip link add "$BR" type bridge 2>&1) ||
            die "cannot create bridge $BR (ip link add: $err): network namespaces need root" \
                "with CAP_NET_ADMIN"
        ip addr add "$NET.1/24" dev "$BR"
        if [ "$(ip -o -4 addr show | grep -c " ${NET//./\\.}\.[0-9]*/")" -eq 1 ]; then
            ip link set "$BR" up
            mn_switches_up
            return 0
        fi
        ip link delete "$BR"
        [ -z "${COLLPROF_SLURM_NET:-}" ] ||
            die "$NET.0/24 is in use here: set another COLLPROF_SLURM_NET"
    done
    die "found no free 198.18.x.0/24 in 5 tries: set COLLPROF_SLURM_NET"
}

# switches s2..sS: a bridge each, joined to s1 ($BR) by a veth (the spine link: $TAG-uK in
# s1, $TAG-dK in sK)
mn_switches_up() {
    local k
    for k in $(seq 2 "$SWITCHES"); do
        ip link add "$TAG-s$k" type bridge &&
            ip link add "$TAG-u$k" type veth peer name "$TAG-d$k" &&
            ip link set "$TAG-u$k" master "$BR" up &&
            ip link set "$TAG-d$k" master "$TAG-s$k" up &&
            ip link set "$TAG-s$k" up || die "could not make switch s$k (bridge $TAG-s$k)"
    done
}

# for ctl and every node a namespace with a veth into the bridge
mn_ns_up() {
    local name ns err
    for name in $(mn_names); do
        ns=$TAG-$name
        if ! err=$(ip netns add "$ns" 2>&1); then
            mn_net_down
            die "network namespaces are refused here (ip netns add: $err)"
        fi
        ip link add "$ns" type veth peer name "$NODE_IF" netns "$ns"
        ip link set "$ns" master "$(mn_bridge_of "$name")" up
        ip -n "$ns" addr add "$(mn_addr "$name")/24" dev "$NODE_IF"
        ip -n "$ns" link set "$NODE_IF" up
        ip -n "$ns" link set lo up
    done
}

# end every process in this directory's namespaces (by PID), delete them and the bridge
mn_net_down() {
    local ns dev pids="" n=0
    for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep "^$TAG-" || true); do
        pids="$pids $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
        n=$((n + 1))
    done
    if [ -n "${pids// /}" ]; then
        # shellcheck disable=SC2086 # one pid per word
        end_pids "processes in the namespaces" $pids
    fi
    for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep "^$TAG-" || true); do
        ip netns delete "$ns" 2>/dev/null || say "could not delete namespace $ns"
    done
    for dev in $(ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' | sed 's/@.*//' |
        grep -E "^$TAG-[su][0-9]+$" || true); do # the other switches and the spine
        ip link delete "$dev" 2>/dev/null || true
        n=$((n + 1))
    done
    if ip link show "$BR" >/dev/null 2>&1; then
        ip link delete "$BR" 2>/dev/null || say "could not delete bridge $BR"
        n=$((n + 1))
    fi
    rm -f "$DIR"/run/ns.*.pid
    [ "$n" -eq 0 ] || say "namespaces and bridge removed ($TAG-*, $BR)"
}

# the pid of the process that holds NAME's UTS and mount namespaces (empty: none)
mn_holder() {
    local pid
    pid=$(running_pid "$DIR/run/ns.$1.pid" sleep)
    [ -n "$pid" ] && [ "$(ip netns identify "$pid" 2>/dev/null)" = "$TAG-$1" ] && echo "$pid"
    return 0
}

# a process per namespace that keeps the node's hostname and private /etc/hosts alive, so
# that its daemons and `exec` share them
mn_holders_up() {
    local name pid
    for name in $(mn_names); do
        [ -n "$(mn_holder "$name")" ] && continue
        rm -f "$DIR/run/ns.$name.pid"
        # shellcheck disable=SC2016 # expanded by the inner shell
        setsid ip netns exec "$TAG-$name" unshare --uts --mount --propagation private \
            sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts && echo $$ >"$3" &&
                exec sleep infinity' holder "$name" "$DIR/hosts" "$DIR/run/ns.$name.pid" \
            </dev/null >>"$DIR/log/ns.$name.log" 2>&1 &
    done
    for name in $(mn_names); do
        pid=$(wait_pid "$DIR/run/ns.$name.pid" sleep) ||
            die "node $name did not come up in its namespaces (unshare --uts --mount" \
                "refused?): $(tail -n 2 "$DIR/log/ns.$name.log" 2>/dev/null | tr '\n' ' ')"
    done
}

mn_in() { # NAME: the prefix that runs a command in NAME's namespaces
    local pid
    pid=$(mn_holder "$1")
    [ -n "$pid" ] || die "node $1 is not up (no process holds its namespaces)"
    RUN_IN=(nsenter -t "$pid" -n -u -m)
}

mn_start_slurmds() {
    local k pid pids=""
    for k in $(seq 1 "$NODES"); do
        mn_in "n$k"
        launch_daemon slurmd "$DIR/run/slurmd.n$k.pid" -N "n$k"
    done
    for k in $(seq 1 "$NODES"); do
        pid=$(wait_pid "$DIR/run/slurmd.n$k.pid" slurmd) ||
            die "slurmd of n$k wrote no pid file: see $DIR/log/slurmd.n$k.log"
        pids="$pids $pid"
    done
    say "slurmd started on n1..n$NODES (pid$pids)"
}

mn_start() {
    local want=$1 t0
    t0=$EPOCHREALTIME
    [ "$(id -u)" -eq 0 ] ||
        die "run as root: network namespaces, slurmd and SlurmUser=root need it"
    for p in ip unshare nsenter setsid; do
        command -v "$p" >/dev/null 2>&1 || die "$p not found (iproute2, util-linux)"
    done
    mkdir -p "$DIR"
    chmod 755 "$DIR" # munged needs everyone to traverse the path to its socket
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/log" "$DIR/tmp"
    mn_load
    if [ "$NODES" -ge 2 ] && [ -n "$(running_pid "$DIR/run/slurmctld.pid" slurmctld)" ]; then
        [ "$NODES" -eq "$want" ] ||
            die "a $NODES-node cluster runs in $DIR: stop it before starting $want nodes"
        [ -z "${SWITCHES_OPT:-}" ] || [ "$SWITCHES_OPT" -eq "$SWITCHES" ] ||
            die "a cluster of $SWITCHES switches runs in $DIR: stop it before starting $SWITCHES_OPT"
    else
        [ -z "$(running_pid "$DIR/run/slurmd.localhost.pid" slurmd)" ] ||
            die "a single-node cluster runs in $DIR: stop it first"
        mn_net_down # what a crashed run left
        NODES=$want
        SWITCHES=${SWITCHES_OPT:-1}
        [ "$SWITCHES" -le "$NODES" ] || die "--switches $SWITCHES: more switches than $NODES nodes"
        mn_bridge_up
        mn_write_conf
        mn_ns_up
    fi
    mn_holders_up
    start_munge
    export SLURM_CONF=$CONF
    mn_in ctl
    start_daemon slurmctld "$DIR/run/slurmctld.pid" -c
    mn_start_slurmds
    wait_idle "$NODES"
    t0=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    say "cluster up in $t0 s:" \
        "nodes n1..n$NODES ($NET.11..), $(node_cpus) CPUs each, controller ctl ($NET.2)," \
        "partition debug; use -O for more tasks per node than CPUs"
    [ "$SWITCHES" -lt 2 ] || say "switches: $(for k in $(seq 1 "$SWITCHES"); do
        printf 's%s %s, ' "$k" "$(mn_switch_nodes "$k")"
    done)spine s[1-$SWITCHES] (topology.conf, topology/tree)"
    say "in your shell:"
    mn_env
}

mn_env() {
    print_env
    local n=$NET.0/24 i=$NODE_IF
    echo "export OMPI_MCA_btl_tcp_if_include=$n OMPI_MCA_oob_tcp_if_include=$n"
    echo "export FI_TCP_IFACE=$i FI_SOCKETS_IFACE=$i GLOO_SOCKET_IFNAME=$i NCCL_SOCKET_IFNAME=$i"
}

mn_status() {
    local rc=0 name
    echo "nodes: $NODES, network $NET.0/24 on bridge $BR, link $NODE_IF in each namespace"
    [ "$SWITCHES" -lt 2 ] ||
        echo "switches: $SWITCHES (topology.conf), spine: bridges $TAG-s2.. joined to $BR"
    daemon_status munged "$MUNGE_DIR/munged.pid" || rc=1
    daemon_status slurmctld "$DIR/run/slurmctld.pid" || rc=1
    for name in $(mn_names); do
        if [ -n "$(mn_holder "$name")" ]; then
            echo "namespace $TAG-$name ($name, $(mn_addr "$name")): up"
        else
            echo "namespace $TAG-$name ($name): down"
            rc=1
        fi
        [ "$name" = ctl ] || daemon_status slurmd "$DIR/run/slurmd.$name.pid" "slurmd $name" ||
            rc=1
    done
    if [ "$rc" -eq 0 ]; then
        show_queue || rc=1
    fi
    return "$rc"
}

# a tbf bucket of 10 ms at RATE (at least 16 KiB), in bytes; fails on a rate tc would not take
tbf_burst() {
    echo "$1" | awk '{
        r = tolower($0)
        if (!match(r, /^[0-9]+(\.[0-9]+)?/)) exit 1
        v = substr(r, 1, RLENGTH) + 0; u = substr(r, RLENGTH + 1)
        m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9; m["tbit"] = 1e12
        m["bps"] = 8; m["kbps"] = 8e3; m["mbps"] = 8e6; m["gbps"] = 8e9
        if (!(u in m) || v <= 0) exit 1
        b = v * m[u] / 8 / 100
        printf "%d\n", b < 16384 ? 16384 : b }'
}

mn_shape() { # NODE RATE|off
    local ns=$TAG-$1 burst
    if [ "$2" = off ]; then
        tc qdisc del dev "$ns" root 2>/dev/null || true
        ip netns exec "$ns" tc qdisc del dev "$NODE_IF" root 2>/dev/null || true
        say "$1: link not shaped"
        return 0
    fi
    burst=$(tbf_burst "$2") || die "rate '$2': expected e.g. 200mbit, 1gbit, 500kbit, 10mbps"
    tc qdisc replace dev "$ns" root tbf rate "$2" burst "$burst" latency 100ms ||
        die "tc refused to shape $ns"
    ip netns exec "$ns" tc qdisc replace dev "$NODE_IF" root tbf rate "$2" burst "$burst" \
        latency 100ms || die "tc refused to shape $NODE_IF in $ns"
    say "$1: link shaped to $2 both ways (tbf, burst $burst bytes)"
}

# shape the link between NODE and PEER alone, both ways: a veth of their own between the
# two namespaces (cps-PEER in NODE's, cps-NODE in PEER's), a host route to the other's
# address over it, and a tbf on each end; their other traffic still takes the bridge.  (A
# filter on one interface would need the prio qdisc, which kernels without sch_prio lack.)
mn_shape_pair() { # NODE PEER RATE|off
    local burst tmp=cpq$$
    ip -n "$TAG-$1" link del "cps-$2" 2>/dev/null || true # removes both ends and the routes
    if [ "$3" = off ]; then
        say "$1-$2: link not shaped"
        return 0
    fi
    burst=$(tbf_burst "$3") || die "rate '$3': expected e.g. 200mbit, 1gbit, 500kbit, 10mbps"
    ip link add "${tmp}a" type veth peer name "${tmp}b" || die "could not make a veth"
    ip link set "${tmp}a" netns "$TAG-$1" && ip link set "${tmp}b" netns "$TAG-$2" &&
        ip -n "$TAG-$1" link set "${tmp}a" name "cps-$2" &&
        ip -n "$TAG-$2" link set "${tmp}b" name "cps-$1" || die "could not place the veth"
    for end in "$1:$2" "$2:$1"; do
        local me=${end%%:*} peer=${end#*:}
        ip -n "$TAG-$me" link set "cps-$peer" up &&
            ip -n "$TAG-$me" route add "$(mn_addr "$peer")/32" dev "cps-$peer" \
                src "$(mn_addr "$me")" &&
            ip netns exec "$TAG-$me" tc qdisc replace dev "cps-$peer" root tbf rate "$3" \
                burst "$burst" latency 100ms || die "could not route or shape $me to $peer"
    done
    say "$1-$2: the link between them shaped to $3 both ways (own veth, tbf, burst $burst bytes)"
}

mn_shape_spine() { # RATE|off: both ends of every spine link
    local k burst
    [ "$SWITCHES" -ge 2 ] || die "shape-spine: this cluster has one switch (start it with --switches S)"
    if [ "$1" = off ]; then
        for k in $(seq 2 "$SWITCHES"); do
            tc qdisc del dev "$TAG-u$k" root 2>/dev/null || true
            tc qdisc del dev "$TAG-d$k" root 2>/dev/null || true
        done
        say "spine: not shaped"
        return 0
    fi
    burst=$(tbf_burst "$1") || die "rate '$1': expected e.g. 200mbit, 1gbit, 500kbit, 10mbps"
    for k in $(seq 2 "$SWITCHES"); do
        tc qdisc replace dev "$TAG-u$k" root tbf rate "$1" burst "$burst" latency 100ms &&
            tc qdisc replace dev "$TAG-d$k" root tbf rate "$1" burst "$burst" latency 100ms ||
            die "tc refused to shape the spine link of s$k"
    done
    say "spine: s1 to s[2-$SWITCHES] shaped to $1 both ways (tbf, burst $burst bytes)"
}

mn_link() { # NODE down|up
    case $2 in
    down | up) ;;
    *) die "link $1 $2: expected down or up" ;;
    esac
    ip link set "$TAG-$1" "$2" || die "could not set $TAG-$1 $2"
    say "$1: link $2"
}

usage() {
    cat >&2 <<USAGE
usage: $0 [--nodes N [--switches S]] start|status|stop|env|purge|cleanup
       $0 shape NODE RATE|off | shape-pair NODE PEER RATE|off | link NODE down|up
       $0 shape-spine RATE|off   (a cluster started with --switches S >= 2)
       $0 exec NODE CMD...   (these: N >= 2)
       $0 rsh NODE CMDLINE...   (Open MPI's rsh agent: mpirun --mca plm_rsh_agent "$0 rsh")
directory: \$COLLPROF_SLURM_DIR, now $DIR; nodes: --nodes or \$COLLPROF_SLURM_NODES (default 1)
switches: --switches or \$COLLPROF_SLURM_SWITCHES (default 1: no topology)
USAGE
    exit 2
}

NODES_OPT=${COLLPROF_SLURM_NODES:-}
SWITCHES_OPT=${COLLPROF_SLURM_SWITCHES:-}
while [ $# -gt 0 ]; do
    case $1 in
    --switches)
        [ $# -ge 2 ] || usage
        SWITCHES_OPT=$2
        shift 2
        ;;
    --switches=*)
        SWITCHES_OPT=${1#--switches=}
        shift
        ;;
    --nodes | -N)
        [ $# -ge 2 ] || usage
        NODES_OPT=$2
        shift 2
        ;;
    --nodes=*)
        NODES_OPT=${1#--nodes=}
        shift
        ;;
    *) break ;;
    esac
done
if [ -n "$NODES_OPT" ]; then
    if ! echo "$NODES_OPT" | grep -q -E '^[0-9]+$' || [ "$NODES_OPT" -lt 1 ] ||
        [ "$NODES_OPT" -gt 200 ]; then
        die "--nodes $NODES_OPT: expected 1 to 200"
    fi
fi
if [ -n "$SWITCHES_OPT" ]; then
    if ! echo "$SWITCHES_OPT" | grep -q -E '^[0-9]+$' || [ "$SWITCHES_OPT" -lt 1 ] ||
        [ "$SWITCHES_OPT" -gt 50 ]; then
        die "--switches $SWITCHES_OPT: expected 1 to 50"
    fi
fi

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
start)
    mn_load
    want=${NODES_OPT:-1}
    # a bare start on a running multi-node cluster only checks it
    [ -n "$NODES_OPT" ] || [ "$NODES" -lt 2 ] ||
        [ -z "$(running_pid "$DIR/run/slurmctld.pid" slurmctld)" ] || want=$NODES
    if [ "$want" -ge 2 ]; then
        mn_start "$want"
    else
        [ "${SWITCHES_OPT:-1}" -le 1 ] || die "--switches $SWITCHES_OPT: needs --nodes N >= 2"
        [ "$NODES" -lt 2 ] || [ -z "$(running_pid "$DIR/run/slurmctld.pid" slurmctld)" ] ||
            die "a $NODES-node cluster runs in $DIR: stop it first"
        cmd_start
    fi
    ;;
status)
    mn_load
    if [ "$NODES" -ge 2 ]; then mn_status; else cmd_status; fi
    ;;
stop) cmd_stop ;;
env)
    mn_load
    if [ "$NODES" -ge 2 ]; then mn_env; else print_env; fi
    ;;
purge | cleanup)
    cmd_stop
    case $DIR in
    / | /tmp | /tmp/ | "") die "refusing to remove '$DIR'" ;;
    esac
    rm -rf "$DIR"
    say "removed $DIR"
    ;;
shape | link)
    [ $# -eq 2 ] || usage
    [ "$(id -u)" -eq 0 ] || die "run as root (tc and ip link need it)"
    mn_need
    mn_check_node "$1"
    if [ "$cmd" = shape ]; then mn_shape "$1" "$2"; else mn_link "$1" "$2"; fi
    ;;
shape-spine)
    [ $# -eq 1 ] || usage
    [ "$(id -u)" -eq 0 ] || die "run as root (tc needs it)"
    mn_need
    mn_shape_spine "$1"
    ;;
shape-pair)
    [ $# -eq 3 ] || usage
    [ "$(id -u)" -eq 0 ] || die "run as root (tc needs it)"
    mn_need
    mn_check_node "$1"
    mn_check_node "$2"
    [ "$1" != "$2" ] || die "shape-pair $1 $2: two different nodes"
    mn_shape_pair "$1" "$2" "$3"
    ;;
exec)
    [ $# -ge 2 ] || usage
    [ "$(id -u)" -eq 0 ] || die "run as root (nsenter needs it)"
    mn_need
    mn_check_node "$1"
    mn_in "$1"
    shift
    exec "${RUN_IN[@]}" --wd="$PWD" -- "$@"
    ;;
rsh)
    # as ssh would: the words after NODE are one command line for the node's shell
    [ $# -ge 2 ] || usage
    mn_need
    mn_check_node "$1"
    mn_in "$1"
    shift
    exec "${RUN_IN[@]}" --wd="$PWD" -- sh -c "$*"
    ;;
*) usage ;;
esac
