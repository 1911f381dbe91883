#!/usr/bin/env bash
# Session 4, issue 15 on the H200 (an NVIDIA machine without ROCm): the backend choice that came
# with the HIP backend must leave CUDA tuning as it was. Checks, with BIN (default
# target/release/convtune) and results under $OUT:
#   1. no --arch: the first runtime with GPUs (CUDA here) tunes, for sm_90;
#   2. --arch gfx90a: exit 2 naming the HIP runtime (no ROCm here), not CUDA;
#   3. a worker started with --runtime hip reports the missing runtime and exits 3.
# Prints "hip-check: N/3 passed".
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-${BIN:-target/release/convtune}}
OUT=${OUT:-/tmp/convtune-hip-check}
mkdir -p "$OUT"
P="conv -n 1 -c 8 -H 6 -W 6 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1"
pass=0
"$BIN" --problem "$P" --budget 3 --db "$OUT/db.toml" --journal "$OUT/j.jsonl" >"$OUT/1.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "config" "$OUT/db.toml" 2>/dev/null && grep -qi "nvidia\|sm_90" "$OUT/1.log"; then
  echo "1 ok: no --arch tuned on the CUDA GPU"; pass=$((pass+1))
else echo "1 FAIL (rc $rc)"; tail -5 "$OUT/1.log"; fi
"$BIN" --problem "$P" --arch gfx90a --budget 3 --db "$OUT/amd.toml" >"$OUT/2.log" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "HIP runtime" "$OUT/2.log" && ! grep -q "CUDA" "$OUT/2.log"; then
  echo "2 ok: --arch gfx90a exits 2 naming the HIP runtime"; pass=$((pass+1))
else echo "2 FAIL (rc $rc)"; cat "$OUT/2.log"; fi
echo '{"Shutdown":null}' | "$BIN" worker --device 0 --runtime hip >"$OUT/3.log" 2>&1
rc=$?
if [ $rc -eq 3 ] && grep -q "HIP runtime" "$OUT/3.log"; then
  echo "3 ok: a HIP worker without ROCm says so and exits 3"; pass=$((pass+1))
else echo "3 FAIL (rc $rc)"; cat "$OUT/3.log"; fi
echo "hip-check: $pass/3 passed"
[ $pass -eq 3 ]
