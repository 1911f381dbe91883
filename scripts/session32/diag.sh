#!/usr/bin/env bash
# Session 32, prepared for the next device call (H200, < 560 s; carry .carry): what limits the
# layers issue 13's targets still miss, each with the shipped database's config: Nsight Compute
# (`--clock-control none`: METHOD.md) on our kernel and on cuDNN's for the same problem —
# duration, tensor-pipe activity, achieved occupancy, registers, warp stalls, bank conflicts
# (cuBLAS on the layers' own GEMMs: call 4's scripts/gemm-ceiling.py).
#   Layers (scripts/session32/gap-layers.txt): seed 003, bwd-weight 3x3 c256 28², fwd 3x3 c256
#   28², fwd 1x1 c1024->256 14², fwd 1x1 c512->2048 7² (bf16, n64 where the suite has it).
#   Usage (repo root, on the device): bash scripts/session32/diag.sh
#   Results: $OUT/summary.txt, $OUT/diag32.tgz (each layer's ncu text, its tuner run).
set -uo pipefail
. scripts/session11/lib.sh
R=$OUT/diag32; mkdir -p "$R"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee -a "$S"
[ -x "$NCU" ] || say "no ncu on this machine: durations only"
i=0
grep -v '^#' scripts/session32/gap-layers.txt | while read -r P; do
  i=$((i + 1)); n=layer$i
  echo "$P" > "$R/$n.txt"
  c=$("$B" lookup --problem "$P" --arch sm_90 2>/dev/null | head -1)
  say "== $n: $P | $c $(el)"
  if [ -x "$NCU" ]; then
    timeout 52 "$NCU" --profile-from-start off --clock-control none $NCU_SECTIONS --print-details all \
      --print-summary none python3 scripts/session9/cudnn-kernels.py "$R/$n.txt" > "$R/$n.cudnn-ncu.txt" 2>&1
    say "cuDNN rc=$?"; grep -E "$NCU_KEEP" "$R/$n.cudnn-ncu.txt" | cut -c1-170 | head -30 | tee -a "$S"
    "$B" space --problem "$P" --arch sm_90 --pin "$c" > "$R/$n.space.toml" 2>> "$R/errors.txt" || { say "$n: not pinned"; continue; }
    timeout 52 "$NCU" --target-processes all --clock-control none -k "regex:convtune_(gemm|phases|splitk|zero)" -c 4 $NCU_SECTIONS \
      --print-details all "$B" --problems "$R/$n.txt" --space "$R/$n.space.toml" --strategy exhaustive \
      --full-timing --db "$R/db-ncu.toml" --journal "$R/j-ncu.jsonl" --quiet > "$R/$n.ncu.txt" 2>&1
    say "ours rc=$?"; grep -E "$NCU_KEEP" "$R/$n.ncu.txt" | cut -c1-170 | head -30 | tee -a "$S"
  fi
done
rm -f "$R"/*.lock
say "== done $(el)"
tar czf "$OUT/diag32.tgz" -C "$OUT" diag32 2>/dev/null && rm -rf "$R"
