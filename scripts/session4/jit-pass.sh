#!/usr/bin/env bash
# Session 4, call E: the build with the JIT-aware measure timeout and the verified-first
# deadline: self-check, then the two f32 NCHW strided bwd-data families (one launch) tuned
# --time 18, then cuDNN.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session4/unpack.sh
B=target/release/convtune
R=$OUT/jit; mkdir -p "$R"
BIN=$B CONFIGS=1 LOG=$R/selfcheck.log timeout 200 scripts/gpu-tests.sh 2>&1 | tail -2
grep -v '^#' scripts/suites/families.txt | grep -E "^conv -n" > "$R/problems.txt"
timeout 120 "$B" --problems "$R/problems.txt" --arch sm_90 --time 18 --db "$R/db.toml" \
  --journal "$R/j.jsonl" --report "$R/report.json" > "$R/tune.log" 2>&1; echo "tune rc=$?"
grep "^summary" "$R/tune.log" | cut -c1-330
grep -c Timeout "$R/j.jsonl"
timeout 60 python3 scripts/compare-cudnn.py --convtune "$R/report.json" > "$R/compare.txt" 2>&1; tail -4 "$R/compare.txt"
rm -f "$R"/*.lock; tar czf "$OUT/jit.tgz" -C "$OUT" jit
