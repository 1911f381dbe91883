#!/usr/bin/env bash
# Session 4 final GPU pass, call B: one-launch strided bwd-data and packed groups (the new
# suite families, tuned --time 8, vs cuDNN), time to a good kernel (--time holds, adaptive
# timing, the untuned fallback on held-out entries), and the shipped database vs cuDNN.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session4/unpack.sh
B=target/release/convtune
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee "$OUT/gpu.txt"
echo "== dgrad-check $(el)"
BIN=$B OUT=$OUT timeout 290 scripts/session4/dgrad-check.sh 2>&1 | tail -30
echo "== fasttune-check $(el)"
BIN=$B OUT=$OUT/fasttune timeout 170 scripts/session4/fasttune-check.sh 2>&1 | tail -30
echo "== shipped database vs cuDNN $(el)"
OUT=$OUT timeout 100 scripts/db-vs-cudnn.sh tuned-db/sm_90.toml $B 2>&1 | tail -32
rm -rf "$OUT"/dbrun/spaces "$OUT"/*/*.lock
echo "== done $(el)"
tar czf "$OUT/all.tgz" -C "$OUT" --exclude=all.tgz . 2>/dev/null
