#!/usr/bin/env bash
# Installs and starts a single-node Slurm on this Debian 12 host (controller and only compute
# node), so the job-array scripts beside this file can be shown working end to end without a
# cluster. Idempotent: rerunning it rewrites the same config and starts only what is not running.
# Needs root. Stop the daemons again with scripts/slurm/stop-localhost.sh.
#
# Env: CPUS (default: nproc) CPUs the node offers; WAIT_S (default 60) how long to wait for idle.
set -euo pipefail

[[ $EUID -eq 0 ]] || { echo "setup-localhost.sh: run as root" >&2; exit 1; }
grep -q '^12' /etc/debian_version 2>/dev/null ||
    echo "setup-localhost.sh: written for Debian 12; trying anyway" >&2

# Debian's packages; no recommends, so no slurmdbd/MariaDB: accounting is the job-completion log.
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge
fi

host=$(hostname -s)
cpus=${CPUS:-$(nproc)}

# munge authenticates every message between the Slurm commands and daemons: one shared key.
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [[ ! -s /etc/munge/munge.key ]]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key

install -d -o slurm -g slurm -m 0755 /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
install -d -m 0755 /etc/slurm

# No systemd/cgroups here (a container): proctrack/linuxproc and task/none avoid cgroup plugins.
# No GresTypes: this host has no GPU Slurm knows of, so jobs must be submitted without --gres
# (submit.sh: GRES=""). config_overrides: trust CPUs= rather than drain the node when the
# hardware slurmd detects differs. MinJobAge keeps finished jobs visible to `scontrol show job`.
# MpiDefault/MailProg: Debian's defaults (PMIx, mail) are not installed and only log errors.
conf=$(mktemp)
cat >"$conf" <<EOF
# Written by convtune scripts/slurm/setup-localhost.sh: single-node Slurm on localhost.
ClusterName=localhost
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
MpiDefault=none
MailProg=/bin/true
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
SchedulerType=sched/backfill
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} State=UNKNOWN
PartitionName=debug Nodes=${host} Default=YES MaxTime=INFINITE State=UP
EOF
changed=0
cmp -s "$conf" /etc/slurm/slurm.conf || changed=1
install -m 0644 "$conf" /etc/slurm/slurm.conf
rm -f "$conf"

# Starts a daemon unless the process its pid file names is alive (rerun-safe, no name matching).
running() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
running /run/munge/munged.pid || runuser -u munge -- /usr/sbin/munged
munge -n | unmunge >/dev/null # the key works: the daemons will authenticate
if running /run/slurmctld.pid; then
    # Daemons from an earlier run read the old file: make them reread it.
    if ((changed)); then scontrol reconfigure; fi
else
    slurmctld
fi
running /run/slurmd.pid || slurmd

# The node registers as idle within seconds; a node left down by an earlier run is resumed.
deadline=$((SECONDS + ${WAIT_S:-60}))
until [[ $(sinfo -h -n "$host" -o %t 2>/dev/null) == idle ]]; do
    state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
    if [[ $state == down* || $state == drain* ]]; then
        scontrol update nodename="$host" state=resume || true
    fi
    if ((SECONDS > deadline)); then
        echo "setup-localhost.sh: node $host is '${state:-?}' after ${WAIT_S:-60}s;" \
            "see /var/log/slurm/slurmd.log and slurmctld.log" >&2
        exit 1
    fi
    sleep 1
done
sinfo
