#!/usr/bin/env bash
# Stops the single-node Slurm that setup-localhost.sh started, so its daemons do not hold CPU or
# memory on a machine that has other work. Uses the daemons' pid files: it ends only those.
set -euo pipefail

for pidfile in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do
    [[ -s $pidfile ]] || continue
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        # Wait for a clean exit (slurmctld saves its state) before stopping what it talks to.
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        echo "stopped $(basename "$pidfile" .pid) (pid $pid)"
    fi
done
