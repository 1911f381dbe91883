#!/usr/bin/env bash
# Session 33, device call 5 (about 90 s; carry .carry): why stream-K on the warp-specialised
# wgmma path (`red=stream,ld=ws,pk=1`) ran 134-150 µs where the fix-up shapes ran 87-92 on the
# bf16 bwd-weight 3x3 c256 (call 4): Nsight Compute on one stream-K config and the shipped
# fix-up config, the same problem.
#   Usage (repo root, on the device): bash scripts/session33/call5.sh
#   Results: $OUT/summary.txt, $OUT/sk-*.ncu.txt
set -uo pipefail
. scripts/session11/lib.sh
P=$(cat scripts/session33/bw3/problems.txt)
echo "$P" > /tmp/p.txt
i=0
for c in "v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=4,vc=4,lds=swz,sk=1,rs=1,mma=wg,red=stream,ld=ws,pk=1,xf=none" \
         "v3:bm=128,bn=192,bk=64,wm=64,wn=192,st=4,va=8,vb=4,vc=4,lds=swz,sk=5,rs=1,mma=wg1,red=fixup,ld=ws"; do
  i=$((i + 1))
  "$B" space --problem "$P" --arch sm_90 --pin "$c" > /tmp/s$i.toml
  timeout 70 "$NCU" --target-processes all --clock-control none -k "regex:convtune_gemm" -c 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section SchedulerStats --print-details all "$B" --problems /tmp/p.txt --space /tmp/s$i.toml \
    --strategy exhaustive --full-timing --db /tmp/db$i.toml --quiet > "$OUT/sk-$i.ncu.txt" 2>&1
  say "== $c rc=$? $(el)"
  grep -E "$NCU_KEEP" "$OUT/sk-$i.ncu.txt" | grep -v "Table\|DP)\|INT)" | cut -c1-150 | head -40 | tee -a "$S"
done
