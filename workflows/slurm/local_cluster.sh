#!/usr/bin/env bash
# Real one-node SLURM cluster on localhost (Debian bookworm, slurm-wlm 22.05).
#
# Usage: workflows/slurm/local_cluster.sh {install|start|stop|restart|status|ensure|smoke|conf} [--accounting]
#
#   install  apt-get install slurmctld slurmd slurm-client munge (only if absent)
#   start    write /etc/slurm/slurm.conf for this host, start munged, slurmctld,
#            slurmd as plain daemons (no systemd needed), wait until the node is idle
#   stop     shut the daemons down (scontrol shutdown, then SIGTERM via pid files)
#   restart  stop + start
#   status   print daemon pids, sinfo and squeue; exit 0 only if the cluster is usable
#   ensure   install (if absent) + start (no-op if already up)
#   smoke    submit `sbatch --wrap hostname` and `srun -n 2 hostname`, check both
#   conf     print the slurm.conf that start would write
#
# Must run as root. Idempotent: re-running start/ensure on a running cluster is a
# no-op (if the generated config changed, it is rewritten and slurmctld/slurmd are
# restarted; saved job state is kept).
#
# Environment knobs (all optional):
#   SLURM_LOCAL_PARTITION   partition name              (default: debug)
#   SLURM_LOCAL_CLUSTER     ClusterName                 (default: localcluster)
#   SLURM_LOCAL_MAXTIME     partition MaxTime           (default: INFINITE)
#   SLURM_LOCAL_WAIT_S      seconds to wait for "idle"  (default: 90)
#   SLURM_LOCAL_CLEAN=1     start slurmctld with -c (drop saved job state)
#   SLURM_LOCAL_KEEP_JOBS=1 stop without cancelling jobs first (their processes
#                           survive the daemons; they are recovered on start)
#   SLURM_LOCAL_ACCOUNTING=1  (or pass --accounting) also install/run MariaDB +
#                           slurmdbd so that `sacct` works. submitit polls job
#                           state with sacct: without it submitit logs a warning
#                           per poll and a job killed before writing its result
#                           (scancel, time limit, OOM) leaves job.result() waiting
#                           forever. Adds ~12-35 s to install, ~3 s to start.
set -euo pipefail

ACCOUNTING="${SLURM_LOCAL_ACCOUNTING:-0}"
SUBCMD="${1:-}"
shift || true
for a in "$@"; do
    case "$a" in
        --accounting) ACCOUNTING=1 ;;
        --no-accounting) ACCOUNTING=0 ;;
        *) echo "unknown option: $a" >&2; exit 2 ;;
    esac
done

PARTITION="${SLURM_LOCAL_PARTITION:-debug}"
CLUSTER="${SLURM_LOCAL_CLUSTER:-localcluster}"
MAXTIME="${SLURM_LOCAL_MAXTIME:-INFINITE}"
WAIT_S="${SLURM_LOCAL_WAIT_S:-90}"

SLURM_CONF=/etc/slurm/slurm.conf           # Debian's compiled-in default path
STATE_DIR=/var/lib/slurm/slurmctld         # created by the Debian package
SPOOL_DIR=/var/lib/slurm/slurmd
LOG_DIR=/var/log/slurm
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
MUNGE_RUN=/run/munge
MUNGE_PID=$MUNGE_RUN/munged.pid
MUNGE_KEY=/etc/munge/munge.key
SLURMDBD_CONF=/etc/slurm/slurmdbd.conf
SLURMDBD_PID=/run/slurmdbd.pid
MYSQL_RUN=/run/mysqld
MYSQL_PID=$MYSQL_RUN/mysqld.pid
DB_NAME=slurm_acct_db

log() { printf '[local_cluster] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root"; }

host_short() { hostname -s 2>/dev/null || hostname; }

# ---------------------------------------------------------------- install --
PKGS="slurmctld slurmd slurm-client munge"
ACCT_PKGS="slurmdbd mariadb-server"

installed() {
    local p pkgs=$PKGS
    [ "$ACCOUNTING" = 1 ] && pkgs="$pkgs $ACCT_PKGS"
    for p in $pkgs; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || return 1
    done
}

cmd_install() {
    need_root
    if installed; then
        log "packages already installed ($(slurmd -V 2>/dev/null))"
        return 0
    fi
    export DEBIAN_FRONTEND=noninteractive
    # Fresh machines may have empty apt lists: update only when needed.
    if ! apt-cache policy slurmd 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        log "apt-get update"
        apt-get update -q >/dev/null
    fi
    local pkgs=$PKGS
    [ "$ACCOUNTING" = 1 ] && pkgs="$pkgs $ACCT_PKGS"
    log "apt-get install $pkgs"
    # The maintainer scripts run `invoke-rc.d <svc> start || exit 1`; with no
    # systemd that would run the SysV scripts (slurmctld fails: no slurm.conf
    # yet). Deny service starts during the install, like Docker images do;
    # `start` runs the daemons itself.
    local policy=/usr/sbin/policy-rc.d added_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 0755 "$policy"
        added_policy=1
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    local rc=0
    # shellcheck disable=SC2086
    if ! apt-get install -y -q --no-install-recommends $pkgs >/dev/null; then
        # stale package lists (404 on a superseded version): refresh, retry once
        log "apt-get install failed: apt-get update and retry"
        apt-get update -q >/dev/null || true
        apt-get install -y -q --no-install-recommends $pkgs >/dev/null || rc=$?
    fi
    if [ "$added_policy" = 1 ]; then rm -f "$policy"; trap - EXIT; fi
    [ "$rc" = 0 ] || die "apt-get install failed (rc=$rc)"
    installed || die "package install failed"
    log "installed $(slurmd -V)"
}

# ---------------------------------------------------------------- helpers --
pid_alive() {  # pid_alive PIDFILE EXE-BASENAME
    local f=$1 exe=$2 pid
    [ -s "$f" ] || return 1
    pid=$(tr -dc '0-9' <"$f")
    [ -n "$pid" ] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    # guard against a recycled pid
    [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)" 2>/dev/null)" = "$exe" ] \
        || grep -q "$exe" "/proc/$pid/cmdline" 2>/dev/null
}

pid_of() { tr -dc '0-9' <"$1" 2>/dev/null || true; }

stop_pidfile() {  # stop_pidfile PIDFILE EXE
    local f=$1 exe=$2 pid
    pid_alive "$f" "$exe" || { rm -f "$f"; return 0; }
    pid=$(pid_of "$f")
    log "stopping $exe (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "$exe did not exit after SIGTERM, sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
}

# Node line from the hardware (slurmd -C), RealMemory trimmed a little so the
# node never drains with "Low RealMemory" if free memory wobbles.
node_line() {
    local host c cpus sockets cores threads mem
    host=$(host_short)
    c=$(slurmd -C 2>/dev/null | head -n1)
    cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$c")
    sockets=$(sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$c")
    cores=$(sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$c")
    threads=$(sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$c")
    mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$c")
    [ -n "$cpus" ] || cpus=$(nproc)
    [ -n "$mem" ] || mem=$(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo)
    mem=$(( mem * 95 / 100 ))
    if [ -n "$sockets" ] && [ -n "$cores" ] && [ -n "$threads" ] \
        && [ $(( sockets * cores * threads )) -eq "$cpus" ]; then
        echo "NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus Sockets=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem State=UNKNOWN"
    else
        echo "NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN"
    fi
}

slurm_user() { id -u slurm >/dev/null 2>&1 && echo slurm || echo root; }

gen_conf() {
    local host user
    host=$(host_short)
    user=$(slurm_user)
    cat <<EOF
# Generated by workflows/slurm/local_cluster.sh -- one-node localhost cluster.
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$user
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire also sets how long a requeued job waits before it may start again
# (default 120 s); keep it short so requeue/preemption tests are quick.
AuthInfo=cred_expire=10
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# schedule every few seconds (defaults: 60 s main loop, 30 s backfill)
SchedulerParameters=sched_interval=5,bf_interval=5
ReturnToService=2
JobRequeue=1
StateSaveLocation=$STATE_DIR
SlurmdSpoolDir=$SPOOL_DIR
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
$(if [ "$ACCOUNTING" = 1 ]; then
    echo "AccountingStorageType=accounting_storage/slurmdbd"
    echo "AccountingStorageHost=localhost"
else
    echo "AccountingStorageType=accounting_storage/none"
fi)
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# keep finished jobs visible to squeue/scontrol for 10 min (sacct may be off)
MinJobAge=600
KillWait=30
MailProg=/bin/true
InactiveLimit=0
SlurmctldTimeout=120
SlurmdTimeout=300
$(node_line)
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=$MAXTIME State=UP OverSubscribe=NO
EOF
}

# ---------------------------------------------------------------- munge --
munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
    if pid_alive "$MUNGE_PID" munged && munge_ok; then
        log "munged already running (pid $(pid_of "$MUNGE_PID"))"
        return 0
    fi
    # alive but not answering (e.g. key replaced): restart it
    stop_pidfile "$MUNGE_PID" munged
    install -d -o munge -g munge -m 0755 "$MUNGE_RUN"
    install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
    if [ ! -s "$MUNGE_KEY" ]; then
        log "creating munge key"
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile="$MUNGE_KEY" --force
        else
            dd if=/dev/urandom bs=1 count=1024 of="$MUNGE_KEY" status=none
        fi
    fi
    chown munge:munge "$MUNGE_KEY"
    chmod 0400 "$MUNGE_KEY"
    rm -f "$MUNGE_RUN/munge.socket.2.lock"
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 1 50); do munge_ok && break; sleep 0.1; done
    munge_ok || die "munged did not come up (see /var/log/munge/munged.log)"
}

# ------------------------------------------------- accounting (optional) --
gen_dbd_conf() {
    cat <<EOF
# Generated by workflows/slurm/local_cluster.sh
AuthType=auth/munge
DbdHost=localhost
SlurmUser=$(slurm_user)
PidFile=$SLURMDBD_PID
LogFile=$LOG_DIR/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
# MariaDB over its unix socket, authenticated as the OS user (unix_socket): no password
StorageHost=localhost
StorageUser=$(slurm_user)
StorageLoc=$DB_NAME
EOF
}

mysql_ok() { mariadb-admin --protocol=socket ping >/dev/null 2>&1; }

start_mariadb() {
    if mysql_ok; then
        log "mariadb already running"
    else
        install -d -o mysql -g mysql -m 0755 "$MYSQL_RUN"
        rm -f "$MYSQL_PID"
        log "starting mariadb"
        # no systemd: run the server directly, detached, logging to our log dir
        setsid /usr/sbin/mariadbd --user=mysql --pid-file="$MYSQL_PID" \
            --bind-address=127.0.0.1 --innodb-buffer-pool-size=128M \
            --innodb-lock-wait-timeout=900 \
            </dev/null >>"$LOG_DIR/mariadb.log" 2>&1 &
        for _ in $(seq 1 150); do mysql_ok && break; sleep 0.2; done
        mysql_ok || { tail -n 20 "$LOG_DIR/mariadb.log" >&2; die "mariadb did not come up"; }
    fi
    local u
    u=$(slurm_user)
    mariadb --protocol=socket <<SQL
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$u'@'localhost' IDENTIFIED VIA unix_socket;
GRANT ALL ON $DB_NAME.* TO '$u'@'localhost';
SQL
}

dbd_ok() { sacctmgr -n -P show cluster format=cluster >/dev/null 2>&1; }

start_slurmdbd() {
    local new changed=0
    new=$(gen_dbd_conf)
    if [ ! -f "$SLURMDBD_CONF" ] || [ "$new" != "$(cat "$SLURMDBD_CONF")" ]; then
        printf '%s\n' "$new" >"$SLURMDBD_CONF"
        changed=1
    fi
    # slurmdbd refuses a config readable by others
    chown "$(slurm_user)":"$(slurm_user)" "$SLURMDBD_CONF"
    chmod 0600 "$SLURMDBD_CONF"
    if [ "$changed" = 1 ]; then stop_pidfile "$SLURMDBD_PID" slurmdbd; fi
    if pid_alive "$SLURMDBD_PID" slurmdbd; then
        log "slurmdbd already running (pid $(pid_of "$SLURMDBD_PID"))"
    else
        rm -f "$SLURMDBD_PID"
        log "starting slurmdbd"
        /usr/sbin/slurmdbd
    fi
    for _ in $(seq 1 100); do dbd_ok && break; sleep 0.2; done
    dbd_ok || { tail -n 20 "$LOG_DIR/slurmdbd.log" >&2; die "slurmdbd did not come up"; }
    if ! sacctmgr -n -P show cluster format=cluster | grep -qx "$CLUSTER"; then
        log "sacctmgr add cluster $CLUSTER"
        sacctmgr -i add cluster "$CLUSTER" >/dev/null
    fi
}

stop_accounting() {
    stop_pidfile "$SLURMDBD_PID" slurmdbd
    if pid_alive "$MYSQL_PID" mariadbd; then
        stop_pidfile "$MYSQL_PID" mariadbd
    fi
}

# ---------------------------------------------------------------- slurm --
node_state() { sinfo -h -N -n "$(host_short)" -o '%T' 2>/dev/null | head -n1; }

cluster_up() {
    { [ "$ACCOUNTING" != 1 ] || { pid_alive "$SLURMDBD_PID" slurmdbd && mysql_ok; }; } \
        && pid_alive "$CTLD_PID" slurmctld && pid_alive "$SLURMD_PID" slurmd \
        && scontrol ping 2>/dev/null | grep -q 'is UP' \
        && case "$(node_state)" in idle*|mixed*|allocated*|completing*) true ;; *) false ;; esac
}

wait_ready() {
    local st host
    host=$(host_short)
    for _ in $(seq 1 "$WAIT_S"); do
        st=$(node_state || true)
        case "$st" in
            idle*|mixed*|allocated*|completing*) log "node $host is $st"; return 0 ;;
            down*|drain*|fail*)
                # e.g. "Node unexpectedly rebooted" after a restart: resume it
                scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true ;;
        esac
        sleep 1
    done
    log "node state after ${WAIT_S}s: '${st:-?}'"
    sinfo -R 2>/dev/null >&2 || true
    tail -n 20 "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" >&2 2>/dev/null || true
    die "node $host did not become idle"
}

stop_slurm() {
    if pid_alive "$CTLD_PID" slurmctld; then
        # asks slurmctld to shut down every slurmd too
        scontrol shutdown >/dev/null 2>&1 || true
        for _ in $(seq 1 100); do
            pid_alive "$CTLD_PID" slurmctld || pid_alive "$SLURMD_PID" slurmd || break
            sleep 0.1
        done
    fi
    stop_pidfile "$SLURMD_PID" slurmd
    stop_pidfile "$CTLD_PID" slurmctld
}

cmd_start() {
    need_root
    if ! installed; then
        die "packages not installed: run '$0 install $([ "$ACCOUNTING" = 1 ] && echo --accounting)' (or ensure)"
    fi
    local user new changed=0
    user=$(slurm_user)
    install -d -m 0755 /etc/slurm
    install -d -o "$user" -g "$user" -m 0755 "$STATE_DIR" "$LOG_DIR"
    install -d -o root -g root -m 0755 "$SPOOL_DIR"
    new=$(gen_conf)
    if [ ! -f "$SLURM_CONF" ] || [ "$new" != "$(cat "$SLURM_CONF")" ]; then
        printf '%s\n' "$new" >"$SLURM_CONF.tmp"
        chmod 0644 "$SLURM_CONF.tmp"
        mv "$SLURM_CONF.tmp" "$SLURM_CONF"
        changed=1
        log "wrote $SLURM_CONF"
    fi

    start_munge

    if [ "$ACCOUNTING" = 1 ]; then
        start_mariadb
        start_slurmdbd
    else
        stop_accounting
    fi

    if [ "$changed" = 1 ] && { pid_alive "$CTLD_PID" slurmctld || pid_alive "$SLURMD_PID" slurmd; }; then
        # simpler and more reliable than `scontrol reconfigure` (some keys,
        # e.g. AccountingStorageType, need a restart anyway); job state is kept
        log "config changed while running: restarting slurmctld/slurmd"
        stop_slurm
    fi

    if pid_alive "$CTLD_PID" slurmctld; then
        log "slurmctld already running (pid $(pid_of "$CTLD_PID"))"
    else
        rm -f "$CTLD_PID"
        log "starting slurmctld"
        if [ "${SLURM_LOCAL_CLEAN:-0}" = 1 ]; then
            /usr/sbin/slurmctld -c
        else
            /usr/sbin/slurmctld
        fi
    fi
    for _ in $(seq 1 100); do scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.2; done
    scontrol ping 2>/dev/null | grep -q 'is UP' \
        || { tail -n 30 "$LOG_DIR/slurmctld.log" >&2 || true; die "slurmctld did not come up"; }

    if pid_alive "$SLURMD_PID" slurmd; then
        log "slurmd already running (pid $(pid_of "$SLURMD_PID"))"
    else
        rm -f "$SLURMD_PID"
        log "starting slurmd"
        /usr/sbin/slurmd -N "$(host_short)"
    fi
    wait_ready
    log "cluster up: partition=$PARTITION node=$(host_short) accounting=$([ "$ACCOUNTING" = 1 ] && echo slurmdbd || echo none)"
}

cancel_all_jobs() {
    # slurmstepd (and so the job) outlives `scontrol shutdown`: cancel first so
    # that `stop` leaves no job processes behind
    scontrol ping 2>/dev/null | grep -q 'is UP' || return 0
    [ -n "$(squeue -h -o %i 2>/dev/null)" ] || return 0
    log "cancelling all jobs"
    scancel --partition="$PARTITION" >/dev/null 2>&1 || true
    scancel --user=root >/dev/null 2>&1 || true
    for _ in $(seq 1 150); do
        [ -z "$(squeue -h -t RUNNING,COMPLETING,PENDING,SUSPENDED,CONFIGURING -o %i 2>/dev/null)" ] && break
        sleep 0.2
    done
}

cmd_stop() {
    need_root
    [ "${SLURM_LOCAL_KEEP_JOBS:-0}" = 1 ] || cancel_all_jobs
    stop_slurm
    stop_accounting
    stop_pidfile "$MUNGE_PID" munged
    log "stopped"
}

cmd_status() {
    local rc=0
    if [ "$ACCOUNTING" = 1 ] || pid_alive "$SLURMDBD_PID" slurmdbd; then
        for d in "mariadbd:$MYSQL_PID" "slurmdbd:$SLURMDBD_PID"; do
            if pid_alive "${d#*:}" "${d%%:*}"; then
                echo "${d%%:*}: running (pid $(pid_of "${d#*:}"))"
            else
                echo "${d%%:*}: stopped"; rc=1
            fi
        done
    fi
    for d in "munged:$MUNGE_PID" "slurmctld:$CTLD_PID" "slurmd:$SLURMD_PID"; do
        if pid_alive "${d#*:}" "${d%%:*}"; then
            echo "${d%%:*}: running (pid $(pid_of "${d#*:}"))"
        else
            echo "${d%%:*}: stopped"; rc=1
        fi
    done
    if [ $rc -eq 0 ]; then
        scontrol ping || rc=1
        sinfo || rc=1
        squeue || true
        cluster_up || rc=1
    fi
    return $rc
}

cmd_smoke() {
    # quick end-to-end check: batch job with output file, then a 2-task srun
    local d j st
    d=$(mktemp -d /tmp/slurm-smoke.XXXXXX)
    j=$(sbatch --parsable --chdir="$d" -o "$d/out-%j.txt" -t 2 --wrap 'hostname')
    for _ in $(seq 1 150); do
        st=$(scontrol show job "$j" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
        case "$st" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
        sleep 0.2
    done
    if [ "$st" != COMPLETED ] || [ ! -s "$d/out-$j.txt" ]; then
        die "smoke: sbatch job $j ended as '${st:-?}' (output in $d)"
    fi
    log "smoke: sbatch job $j COMPLETED, output: $(cat "$d/out-$j.txt")"
    [ "$(timeout 60 srun -n 2 -t 1 hostname | wc -l)" = 2 ] || die "smoke: srun -n 2 failed"
    log "smoke: srun -n 2 OK"
    rm -rf "$d"
}

cmd_ensure() {
    cmd_install
    if cluster_up; then
        log "cluster already up"
        # still rewrite/reconfigure if the generated config changed
        [ "$(gen_conf)" = "$(cat "$SLURM_CONF" 2>/dev/null)" ] && return 0
    fi
    cmd_start
}

case "$SUBCMD" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    restart) cmd_stop; cmd_start ;;
    status) cmd_status ;;
    ensure) cmd_ensure ;;
    conf) gen_conf ;;
    smoke) cmd_smoke ;;
    *) echo "usage: $0 {install|start|stop|restart|status|ensure|smoke|conf} [--accounting]" >&2; exit 2 ;;
esac
