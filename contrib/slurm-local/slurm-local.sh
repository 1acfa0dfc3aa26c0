#!/bin/bash
# slurm-local.sh: a real single-node Slurm cluster (munged, slurmctld, slurmd) on loopback, in
# a private directory, for trying collprof's Slurm workflow and for its tests.
#
#   slurm-local.sh start     start (or find running) munged, slurmctld and slurmd; wait until the
#                            node is idle; print the line to paste: export SLURM_CONF=...
#   slurm-local.sh status    say which daemons run (by their pid files) and show sinfo
#   slurm-local.sh stop      cancel the jobs, stop the daemons by PID, keep the directory
#   slurm-local.sh env       print the export line only (for eval "$(slurm-local.sh env)")
#   slurm-local.sh purge     stop, then remove the directory
#
# Directory: $COLLPROF_SLURM_DIR, default /tmp/collprof-slurm.  Everything (configuration,
# state, spool, logs, pid files, munge socket) lives there; the only thing read from outside is
# the munge key /etc/munge/munge.key that Debian's munge package creates (when it is missing, a
# key is made inside the directory).  Ports: $COLLPROF_SLURM_PORT for slurmctld and the next
# one for slurmd; by default the first free pair from 6817.  The node gets CPUs = nproc: ask
# for more tasks than that only with -O/--overcommit, or the job pends forever.
#
# Must run as root (slurmd and SlurmUser=root).  Only loopback (127.0.0.1) is used.
set -eu

DIR=${COLLPROF_SLURM_DIR:-/tmp/collprof-slurm}
CONF=$DIR/slurm.conf
MUNGE_DIR=$DIR/munge
MUNGE_SOCKET=$MUNGE_DIR/munge.socket
START_TIMEOUT=${COLLPROF_SLURM_START_TIMEOUT:-30}

say() { printf 'slurm-local: %s\n' "$*" >&2; }
die() {
    say "error: $*"
    exit 1
}

# PID from pid file $1 if that process is alive and is program $2; empty otherwise
running_pid() {
    local pid comm
    [ -r "$1" ] || return 0
    pid=$(tr -dc '0-9' <"$1")
    [ -n "$pid" ] || return 0
    [ -r "/proc/$pid/comm" ] || return 0
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

write_conf() {
    local cpus mem
    cpus=$(nproc)
    mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 }' /proc/meminfo)
    pick_ports
    cat >"$CONF.tmp" <<EOF
# single-node loopback cluster written by collprof's contrib/slurm-local/slurm-local.sh
ClusterName=collprof
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/slurmd.%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$DIR/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
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
NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
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

start_daemon() { # NAME PIDFILE ARGS...
    local name=$1 pidfile=$2 pid prog i
    shift 2
    pid=$(running_pid "$pidfile" "$name")
    if [ -n "$pid" ]; then
        say "$name already running (pid $pid)"
        return 0
    fi
    prog=$(find_prog "$name")
    rm -f "$pidfile"
    # both daemonize; their stdout/stderr only carry start-up failures
    "$prog" -f "$CONF" "$@" >>"$DIR/log/$name.start.log" 2>&1 ||
        die "$name did not start: see $DIR/log/$name.start.log and $DIR/log/$name*.log"
    for i in $(seq 1 50); do
        pid=$(running_pid "$pidfile" "$name")
        [ -n "$pid" ] && break
        [ "$i" -eq 50 ] && die "$name wrote no pid file: see $DIR/log/"
        sleep 0.1
    done
    say "$name started (pid $pid)"
}

print_env() {
    printf 'export SLURM_CONF=%s\n' "$CONF"
}

cmd_start() {
    [ "$(id -u)" -eq 0 ] || die "run as root (slurmd and SlurmUser=root need it)"
    mkdir -p "$DIR"
    chmod 755 "$DIR" # munged needs everyone to traverse the path to its socket
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/log" "$DIR/tmp"
    if [ ! -s "$CONF" ] || { [ -z "$(running_pid "$DIR/run/slurmctld.pid" slurmctld)" ] &&
        [ -z "$(running_pid "$DIR/run/slurmd.localhost.pid" slurmd)" ]; }; then
        write_conf # fresh ports when nothing of ours runs
    fi
    start_munge
    export SLURM_CONF=$CONF
    # -c: forget the state of an earlier run (jobs of a cluster that was stopped are gone)
    start_daemon slurmctld "$DIR/run/slurmctld.pid" -c
    start_daemon slurmd "$DIR/run/slurmd.localhost.pid" -N localhost
    local i state=""
    for i in $(seq 1 $((START_TIMEOUT * 2))); do
        state=$(timeout 5 sinfo -h -N -o '%T' 2>/dev/null | head -n 1) || state=""
        case $state in
        idle* | mixed* | allocated*) break ;;
        esac
        [ "$i" -eq $((START_TIMEOUT * 2)) ] &&
            die "node not idle after ${START_TIMEOUT}s (state '${state:-no answer}'): see $DIR/log/"
        sleep 0.5
    done
    say "cluster up: node localhost ($state), $(nproc) CPUs, partition debug; use -O for more tasks"
    say "in your shell:"
    print_env
}

cmd_status() {
    local rc=0 pid n
    for n in "munged:$MUNGE_DIR/munged.pid" "slurmctld:$DIR/run/slurmctld.pid" \
        "slurmd:$DIR/run/slurmd.localhost.pid"; do
        pid=$(running_pid "${n#*:}" "${n%%:*}")
        if [ -n "$pid" ]; then
            echo "${n%%:*}: running (pid $pid)"
        else
            echo "${n%%:*}: not running"
            rc=1
        fi
    done
    if [ "$rc" -eq 0 ]; then
        echo "SLURM_CONF=$CONF"
        SLURM_CONF=$CONF timeout 5 sinfo || rc=1
        SLURM_CONF=$CONF timeout 5 squeue || rc=1
    fi
    return "$rc"
}

stop_pid() { # NAME PIDFILE
    local pid i
    pid=$(running_pid "$2" "$1")
    if [ -z "$pid" ]; then
        say "$1 not running"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
        [ -d "/proc/$pid" ] || break
        if [ "$i" -eq 100 ]; then
            say "$1 (pid $pid) ignored SIGTERM for 10 s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        sleep 0.1
    done
    rm -f "$2"
    say "$1 stopped (pid $pid)"
}

cmd_stop() {
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
    stop_pid slurmd "$DIR/run/slurmd.localhost.pid"
    stop_pid slurmctld "$DIR/run/slurmctld.pid"
    stop_pid munged "$MUNGE_DIR/munged.pid"
}

case ${1:-} in
start) cmd_start ;;
status) cmd_status ;;
stop) cmd_stop ;;
env) print_env ;;
purge)
    cmd_stop
    case $DIR in
    / | /tmp | /tmp/ | "") die "refusing to remove '$DIR'" ;;
    esac
    rm -rf "$DIR"
    say "removed $DIR"
    ;;
*)
    echo "usage: $0 start|status|stop|env|purge   (directory: \$COLLPROF_SLURM_DIR, now $DIR)" >&2
    exit 2
    ;;
esac
