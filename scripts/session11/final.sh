#!/usr/bin/env bash
# Session 11, final device call (H200, < 560 s), the merged build, from the repo root with
# .carry/{convtune.xz,libffi.so.8} and the wheel in .whl/:
#  1. selfcheck of the Hopper space, and of ep=tma on grouped outputs (rank-3 store maps, the
#     rank the wrapped-row maps that faulted had);
#  2. Nsight Compute on fwd 1x1 c1024 14x14 (256x128 one wave against 256x96 two waves) and
#     fwd 1x1 c512 7x7's winner: what limits the shapes cuDNN still wins;
#  3. scripts/session9/final-b.sh on the shipped database: db-vs-cudnn, the fallback holdout,
#     both sides through one harness (cuDNN and the bf16 matmul rate in the same run).
set -uo pipefail
. scripts/session11/lib.sh
D=scripts/session11
say "== 1a selfcheck hopper $(el)"
timeout 70 "$B" selfcheck --space search-spaces/nvidia-hopper.toml > "$OUT/self.log" 2>&1
say "rc=$?"; grep "^selfcheck\|FAIL" "$OUT/self.log" | tail -6 | tee -a "$S"
say "== 1b selfcheck ep=tma grouped $(el)"
timeout 30 "$B" selfcheck --problems $D/ep-grouped-problems.txt --space $D/ep-wrap.toml --configs 6 >> "$OUT/self.log" 2>&1
say "rc=$?"; grep "^selfcheck\|FAIL" "$OUT/self.log" | tail -4 | tee -a "$S"
say "== 2 ncu $(el)"
N=$OUT/ncu; mkdir -p "$N"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
k=0
while IFS='|' read -r p c; do
  k=$((k + 1)); echo "$p" > "$N/p$k.txt"
  "$B" space --problem "$p" --arch sm_90 --pin "$c" > "$N/s$k.toml" 2>/dev/null || { say "pin $k refused"; continue; }
  timeout 60 "$NCU" --target-processes all --clock-control none -k "regex:convtune_gemm" -c 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
    --section Occupancy --print-details all \
    "$B" --problems "$N/p$k.txt" --space "$N/s$k.toml" --strategy exhaustive \
    --db "$N/db.toml" --journal "$N/j$k.jsonl" --quiet > "$N/ncu$k.txt" 2>&1
  say "ncu $k rc=$? $(el) $c"; rm -f "$N"/*.lock
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued" "$N/ncu$k.txt" | head -24 | tee -a "$S"
done <<'PINS'
convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=256,bn=128,bk=64,wm=128,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none
convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=256,bn=96,bk=64,wm=128,wn=96,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none
convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=256,bn=96,bk=64,wm=128,wn=96,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none
PINS
tar czf "$OUT/ncu.tgz" -C "$OUT" ncu self.log 2>/dev/null && rm -rf "$N" "$OUT/self.log"
say "== 3 final-b $(el)"
DB=tuned-db/sm_90.toml DB_LIMIT=150 HOLD_LIMIT=60 SAME_LIMIT=150 bash scripts/session9/final-b.sh > "$OUT/final-b.txt" 2>&1
say "rc=$? $(el)"
grep -E "geomean|^== " "$OUT/final-b.txt" | tail -12 | tee -a "$S"
rm -rf "$OUT/dbrun" "$OUT/holdout" "$OUT/pin" "$OUT/merged-b.toml"
say "== done $(el)"
