#!/usr/bin/env bash
# Session 17, device call 2 (H200, < 560 s): which of call 1's two kernel changes cost time.
# Call 1's A/B put the build with both (stmatrix epilogue + tensor-map prefetch) 2.6% behind the
# base on the kernels that got both. Four builds — base, stmatrix only (stm), prefetch only
# (pf), both (new) — each time every shipped 16-bit entry's own config (scripts/ab-builds.sh:
# the builds alternating per entry, in forward then reverse order, so drift cancels); then
# Nsight Compute on the entry that lost most (bwd-data 1x1 c1024 ping-pong), base and new.
#   Usage (repo root, on the device): bash scripts/session17/call2.sh
#   Results: $OUT/summary.txt, $OUT/ab.txt, $OUT/ncu.txt
set -uo pipefail
. scripts/session11/lib.sh
for v in stm pf; do xz -dc .carry/convtune-$v.xz > target/base/convtune-$v && chmod +x target/base/convtune-$v; done
declare -A BIN=([base]=$PWD/target/base/convtune [stm]=$PWD/target/base/convtune-stm [pf]=$PWD/target/base/convtune-pf [new]=$B)
R=$OUT/ab
say "== 1 16-bit entries x 4 builds x 2 orders $(el)"
OUT=$OUT bash scripts/ab-builds.sh tuned-db/sm_90.toml '^conv(b?fp16)' base="${BIN[base]}" stm="${BIN[stm]}" \
  pf="${BIN[pf]}" new="${BIN[new]}" | tee "$OUT/ab.txt" | tee -a "$S"
say "== 2 ncu bwd-data 1x1 c1024 ping-pong, base and new $(el)"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
SECTIONS="--section SpeedOfLight --section LaunchStats --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables"
KEEP="Duration|Registers Per|Executed Instructions |Issue Slots Busy|Warp Cycles Per Issued|Stall [A-Z]|Bank Conflicts|Tensor|Shared"
i=$(grep -l -- "-F 2 -n 64 -c 1024" "$R"/p*.txt | head -1 | sed 's/.*p\([0-9]*\).txt/\1/')
for v in base new; do
  [ -n "$i" ] && [ -x "$NCU" ] || break
  timeout 70 "$NCU" --target-processes all --clock-control none -k "regex:convtune_gemm" -c 1 $SECTIONS --print-details all \
    "${BIN[$v]}" --problems "$R/p$i.txt" --space "$R/s$i.toml" --strategy exhaustive --full-timing \
    --db "$R/ncu-$v.toml" --journal "$R/ncu-$v.jsonl" --quiet > "$R/ncu-$v.txt" 2>&1
  say "-- $v rc=$? $(el)"; grep -E "$KEEP" "$R/ncu-$v.txt" | cut -c1-150 | head -40 | tee -a "$OUT/ncu.txt" | tee -a "$S"
done
rm -f "$R"/*.lock
say "== done $(el)"
