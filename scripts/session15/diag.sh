#!/usr/bin/env bash
# Session 15, device call 3 (H200, < 500 s): why fwd 1x1 c1024->256 14x14 (GEMM 256 x 12544 x
# 1024) trails cuDNN with the very tile cuDNN uses (128x192, 5 stages, 132 tiles, 384 threads:
# session 9's diagnostics). Nsight Compute on cuDNN's kernel and on ours (pinned configs, each
# also timed alone, exhaustive over a one-config space, full timing): duration, instructions
# executed, tensor-pipe activity, warp stalls, shared-memory bank conflicts.
#   Usage (repo root, on the device): bash scripts/session15/diag.sh
#   Results: $OUT/diag15.tgz, $OUT/summary.txt.
set -uo pipefail
. scripts/session11/lib.sh
R=$OUT/diag15; mkdir -p "$R"
P="convbfp16 -F 1 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 --layout NHWC"
echo "$P" > "$R/problems.txt"
say "== cuDNN back to back: do its kernels overlap (PDL)? $(el)"
printf '%s\n' "$P" "convbfp16 -F 1 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 --layout NHWC" \
  "convbfp16 -F 1 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 --layout NHWC" > "$R/overlap.txt"
timeout 60 python3 scripts/session15/overlap.py "$R/overlap.txt" 2>&1 | grep -v Warning | tee -a "$S"
say "== cuDNN $(el)"
if [ -x "$NCU" ]; then
  timeout 120 "$NCU" --profile-from-start off --clock-control none $NCU_SECTIONS --print-details all \
    --print-summary none python3 scripts/session9/cudnn-kernels.py "$R/problems.txt" > "$R/cudnn-ncu.txt" 2>&1
  say "rc=$?"; grep -E "$NCU_KEEP" "$R/cudnn-ncu.txt" | cut -c1-170 | head -70 | tee -a "$S"
fi
cat > "$R/ours.txt" <<'C'
wg-128x192-pk1|v4:bm=128,bn=192,bk=64,wm=64,wn=192,st=5,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none
wg1-128x192-pk1|v4:bm=128,bn=192,bk=64,wm=64,wn=192,st=5,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=ws,pk=1,xf=none
shipped-256x96|v3:bm=256,bn=96,bk=64,wm=128,wn=96,st=5,va=2,vb=4,vc=4,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws
C
while IFS='|' read -r n c; do
  say "== $n $(el)"
  "$B" space --problem "$P" --arch sm_90 --pin "$c" > "$R/$n.space.toml" 2>> "$R/errors.txt" || { say "$n: not pinned: $(tail -1 "$R/errors.txt")"; continue; }
  timeout 60 "$B" --problems "$R/problems.txt" --space "$R/$n.space.toml" --strategy exhaustive --full-timing \
    --db "$R/db.toml" --journal "$R/journal.jsonl" --report "$R/$n.report.json" --quiet > "$R/$n.tune.txt" 2>&1
  grep -h "best" "$R/$n.tune.txt" | cut -c1-220 | tail -1 | tee -a "$S"
  "$B" compile --problem "$P" --arch sm_90 --config "$c" -o "$R/$n.ptx" > /dev/null 2>&1
  if [ -x "$NCU" ]; then
    timeout 100 "$NCU" --target-processes all --clock-control none -k "regex:convtune_gemm" -c 2 $NCU_SECTIONS \
      --print-details all "$B" --problems "$R/problems.txt" --space "$R/$n.space.toml" --strategy exhaustive \
      --full-timing --db "$R/db-ncu.toml" --journal "$R/journal-ncu.jsonl" --quiet > "$R/$n.ncu.txt" 2>&1
    grep -E "$NCU_KEEP" "$R/$n.ncu.txt" | cut -c1-170 | head -45 | tee -a "$S"
  fi
done < "$R/ours.txt"
rm -f "$R"/*.lock
say "== done $(el)"
tar czf "$OUT/diag15.tgz" -C "$OUT" diag15 2>/dev/null && rm -rf "$R"
