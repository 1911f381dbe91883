#!/usr/bin/env bash
# Session 7 mid pass (H200): (1) candidates assembled by the toolkit's ptxas on the worker's
# loader threads against the driver's JIT (CONVTUNE_PTXAS=off), same binary, alternating, cold
# caches, `--time 10` on four kinds of problem (scripts/session6/fast-check.sh's); (2) the
# Python/torch launcher on tensor-map kernels and the seed suite (scripts/python-gpu-check.sh).
# Results in $OUT/mid-summary.txt and $OUT/mid.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=$PWD/target/release/convtune
S=$OUT/mid-summary.txt; : > "$S"
say() { echo "$*" | tee -a "$S"; }
say "== ptxas: $(ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -3 | tr '\n' ' '); $(/usr/local/cuda/bin/ptxas --version 2>&1 | grep release)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee -a "$S"
# fast-check's run/stats with BIN=BASE, the A/B by environment.
F=$OUT/fast; mkdir -p "$F"
sed -n '/^stats() {/,/^}/p; /^run() {/,/^}/p' scripts/session6/fast-check.sh > "$F/fns.sh"
export CONVTUNE_PROGRESS_SECS=5
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
PROBLEMS=(
  "convbfp16 -n 64 -c 256 -H 56 -W 56 -k 64 -y 1 -x 1 -F 1 --layout NHWC"
  "convbfp16 -n 64 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
  "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
  "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -F 2 --layout NHWC"
)
NAMES=(fwd-1x1 fwd-3x3 bwd-weight-3x3 bwd-data-strided)
T=10 OUT_SAVE=$OUT; OUT=$F SUMMARY=$S
. "$F/fns.sh"
for i in "${!PROBLEMS[@]}"; do
  say "${NAMES[$i]}: ${PROBLEMS[$i]}"
  run jit "$B" "$i" "$F/cache/jit-$i" CONVTUNE_PTXAS=off
  run ptxas "$B" "$i" "$F/cache/ptxas-$i"
done
OUT=$OUT_SAVE
grep -h "ptxas" "$F"/*.err 2>/dev/null | sort | uniq -c | head -5 | tee -a "$S"
say "== python-gpu-check (seeds)"
cp .carry/libffi.so.8 .carry/ 2>/dev/null
timeout 240 scripts/python-gpu-check.sh .carry/convtune-*.whl scripts/suites/seeds.txt > "$OUT/pycheck.log" 2>&1
say "python-gpu-check rc=$?"
tail -25 "$OUT/pycheck.log" | tee -a "$S"
tar czf "$OUT/mid.tgz" -C "$OUT" fast pycheck.log 2>/dev/null
