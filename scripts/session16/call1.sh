#!/usr/bin/env bash
# Session 16, device call 2 (H200, < 560 s): the re-tuned database (session 16 call 1 = session
# 15's call3.sh re-tune, merged into tuned-db/sm_90.toml) against cuDNN, the fallback on it, and
# why the short-K fwd 1x1 layers trail cuDNN.
#  1. scripts/db-vs-cudnn.sh tuned-db/sm_90.toml: every entry's config timed (read sweep), cuDNN
#     graph replays and the bf16 matmul rate in the same run;
#  2. scripts/fallback-holdout.sh 8 on the re-tuned database;
#  3. Nsight Compute on cuDNN's kernel and on ours for fwd 1x1 c1024->256 14x14 (GEMM 256 x
#     12544 x 1024, one wave of 131-132 tiles in both): the new shipped 256x96 tile and the
#     128x192 tile cuDNN uses, with and without a 2-block cluster (cl=2m multicasts the
#     activations both M halves share, as cuDNN's 2x1 cluster does); the 128x192 variants timed.
#   Usage (repo root, on the device): bash scripts/session16/call1.sh
#   Results: $OUT/summary.txt, $OUT/{dbrun,diag}.tgz.
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 db vs cuDNN $(el)"
OUT=$OUT timeout 260 bash scripts/db-vs-cudnn.sh tuned-db/sm_90.toml "$B" > "$OUT/dbrun.log" 2>&1
say "rc=$? $(el)"
tail -50 "$OUT/dbrun.log" | cut -c1-200 | tee -a "$S"
tar czf "$OUT/dbrun.tgz" -C "$OUT" dbrun 2>/dev/null && rm -rf "$OUT/dbrun"
say "== 2 fallback holdout $(el)"
OUT=$OUT timeout 80 bash scripts/fallback-holdout.sh 8 tuned-db/sm_90.toml "$B" > "$OUT/holdout.log" 2>&1
say "rc=$? $(el)"; tail -20 "$OUT/holdout.log" | cut -c1-220 | tee -a "$S"
rm -rf "$OUT/holdout"
say "== 3 ncu $(el)"
R=$OUT/diag; mkdir -p "$R"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section MemoryWorkloadAnalysis_Tables --section SchedulerStats"
KEEP="  [a-zA-Z_].*\(|Duration|Grid Size|Block Size|Cluster Size|Registers Per|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Executed Instructions |Issue Slots Busy|Issued Ipc|Warp Cycles Per Issued|Stall [A-Z]|Bank Conflicts|Tensor|No Eligible|Active Warps Per|Achieved Occupancy|Dynamic Shared"
P="convbfp16 -F 1 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 --layout NHWC"
echo "$P" > "$R/problems.txt"
left() { echo $(( ${LIMIT:-560} - $(date +%s) + t0 )); }
if [ -x "$NCU" ] && [ "$(left)" -gt 120 ]; then
  timeout 90 "$NCU" --profile-from-start off --clock-control none $SECTIONS --print-details all \
    --print-summary none python3 scripts/session9/cudnn-kernels.py "$R/problems.txt" > "$R/cudnn-ncu.txt" 2>&1
  say "cuDNN rc=$? $(el)"; grep -E "$KEEP" "$R/cudnn-ncu.txt" | cut -c1-170 | head -60 | tee -a "$S"
fi
cat > "$R/ours.txt" <<'C'
shipped-256x96|v3:bm=256,bn=96,bk=64,wm=128,wn=96,st=4,va=4,vb=8,vc=4,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws
wg1-128x192-pk1-cl2m|v5:bm=128,bn=192,bk=64,wm=64,wn=192,st=5,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=ws,pk=1,xf=none,cl=2m
wg1-128x192-pk1|v4:bm=128,bn=192,bk=64,wm=64,wn=192,st=5,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=ws,pk=1,xf=none
wg1-128x192-pk1-cl2n|v5:bm=128,bn=192,bk=64,wm=64,wn=192,st=5,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic,ld=ws,pk=1,xf=none,cl=2n
C
while IFS='|' read -r n c; do
  [ "$(left)" -gt 25 ] || { say "$n: skipped, $(left) s left"; continue; }
  say "== $n $(el)"
  "$B" space --problem "$P" --arch sm_90 --pin "$c" > "$R/$n.space.toml" 2>> "$R/errors.txt" || { say "$n: not pinned: $(tail -1 "$R/errors.txt")"; continue; }
  "$B" compile --problem "$P" --arch sm_90 --config "$c" -o "$R/$n.ptx" > /dev/null 2>&1
  timeout 40 "$B" --problems "$R/problems.txt" --space "$R/$n.space.toml" --strategy exhaustive --full-timing \
    --db "$R/db.toml" --journal "$R/journal.jsonl" --report "$R/$n.report.json" --quiet > "$R/$n.tune.txt" 2>&1
  say "$n: $(grep -h '^summary' "$R/$n.tune.txt" | grep -o 'best [0-9.]* us')"
  case $n in wg1-128x192-pk1|wg1-128x192-pk1-cl2n) continue ;; esac  # timed only
  [ -x "$NCU" ] && [ "$(left)" -gt 70 ] || continue
  timeout 60 "$NCU" --target-processes all --clock-control none -k "regex:convtune_gemm" -c 2 $SECTIONS \
    --print-details all "$B" --problems "$R/problems.txt" --space "$R/$n.space.toml" --strategy exhaustive \
    --full-timing --db "$R/db-ncu.toml" --journal "$R/journal-ncu.jsonl" --quiet > "$R/$n.ncu.txt" 2>&1
  say "rc=$? $(el)"; grep -E "$KEEP" "$R/$n.ncu.txt" | cut -c1-170 | head -45 | tee -a "$S"
done < "$R/ours.txt"
rm -f "$R"/*.lock
tar czf "$OUT/diag.tgz" -C "$OUT" diag 2>/dev/null && rm -rf "$R"
say "== done $(el)"
