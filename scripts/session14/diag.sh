#!/usr/bin/env bash
# Session 14, device calls 2 and 3 (H200, < 400 s): why bwd-weight 1x1 bf16 NHWC trails cuDNN (0.70x in
# session 14's call 1). (1) cuDNN's kernels for the two bwd-weight 1x1 layers (names, durations,
# ncu launch stats); (2) our tuned winner and pinned variants, each timed alone (exhaustive over a
# one-config space, full timing) and under Nsight Compute (every kernel of the plan: zeroing,
# GEMM, finishing; SOL, DRAM, L2, warp stalls). Results: $OUT/diag14.tgz.
#   Usage (repo root, on the device): bash scripts/session14/diag.sh
set -uo pipefail
. scripts/session11/lib.sh
R=$OUT/diag14; mkdir -p "$R"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
say "ncu=$NCU"
P1="convbfp16 -F 4 -n 64 -c 128 -H 28 -W 28 -k 512 -y 1 -x 1 --layout NHWC"
P2="convbfp16 -F 4 -n 64 -c 256 -H 56 -W 56 -k 64 -y 1 -x 1 --layout NHWC"
printf '%s\n%s\n' "$P1" "$P2" > "$R/problems.txt"
say "== cuDNN $(el)"
timeout 90 python3 scripts/session9/cudnn-kernels.py "$R/problems.txt" > "$R/cudnn-names.txt" 2>&1
grep -E "^##|us " "$R/cudnn-names.txt" | cut -c1-200 | tee -a "$S"
if [ -x "$NCU" ]; then
  timeout 100 "$NCU" --profile-from-start off --clock-control none --section LaunchStats --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --print-summary none python3 scripts/session9/cudnn-kernels.py "$R/problems.txt" > "$R/cudnn-ncu.txt" 2>&1
  grep -E "^  [a-zA-Z_].*\(|Duration|Grid Size|Block Size|Cluster Size|Registers Per|Dynamic Shared|Compute \(SM\) Throughput|DRAM Throughput|L2 Cache Throughput" "$R/cudnn-ncu.txt" | cut -c1-160 | head -80 | tee -a "$S"
fi
cat > "$R/ours.txt" <<'P'
w1|P1|v2:bm=128,bn=64,bk=64,wm=64,wn=64,st=8,va=8,vb=8,vc=8,lds=swz,sk=16,rs=1,mma=wg1
w1-64-s16|P1|v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=8,va=8,vb=8,vc=8,lds=swz,sk=16,rs=1,mma=wg,red=atomic,ld=ws,pk=0,xf=none
w1-64-s8-st12|P1|v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=12,va=8,vb=8,vc=8,lds=swz,sk=8,rs=1,mma=wg,red=atomic,ld=ws,pk=0,xf=none
w1-64-s8-cl2n|P1|v5:bm=64,bn=64,bk=64,wm=64,wn=64,st=12,va=8,vb=8,vc=8,lds=swz,sk=8,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none,cl=2n
w1-64-s8-cl2m|P1|v5:bm=64,bn=64,bk=64,wm=64,wn=64,st=12,va=8,vb=8,vc=8,lds=swz,sk=8,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none,cl=2m
w1-64x128-s16|P1|v4:bm=64,bn=128,bk=64,wm=64,wn=128,st=9,va=8,vb=8,vc=8,lds=swz,sk=16,rs=1,mma=wg,red=atomic,ld=ws,pk=0,xf=none
w1-tma-st12|P1|v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=12,va=8,vb=8,vc=8,lds=swz,sk=16,rs=1,mma=wg,red=atomic,ld=tma,pk=0,xf=none
w2|P2|v3:bm=64,bn=64,bk=64,wm=64,wn=64,st=8,va=8,vb=8,vc=8,lds=swz,sk=32,rs=1,mma=wg,red=fixup,ld=ws
w2-st12-at|P2|v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=12,va=8,vb=8,vc=8,lds=swz,sk=32,rs=1,mma=wg,red=atomic,ld=ws,pk=0,xf=none
w2-st12-s16|P2|v4:bm=64,bn=64,bk=64,wm=64,wn=64,st=12,va=8,vb=8,vc=8,lds=swz,sk=16,rs=1,mma=wg,red=atomic,ld=ws,pk=0,xf=none
P
while IFS='|' read -r n pv c; do
  p=${!pv}
  say "== $n $(el)"
  echo "$p" > "$R/$n.problem"
  "$B" space --problem "$p" --arch sm_90 --pin "$c" > "$R/$n.space.toml" 2>> "$R/errors.txt" || { say "$n: not pinned: $(tail -1 "$R/errors.txt")"; continue; }
  timeout 60 "$B" --problems "$R/$n.problem" --space "$R/$n.space.toml" --strategy exhaustive --full-timing \
    --db "$R/db.toml" --journal "$R/journal.jsonl" --report "$R/$n.report.json" --quiet > "$R/$n.tune.txt" 2>&1
  grep -h "best" "$R/$n.tune.txt" | cut -c1-220 | tail -1 | tee -a "$S"
  if [ -x "$NCU" ]; then
    timeout 90 "$NCU" --target-processes all --clock-control none -k "regex:convtune_(gemm|zero|splitk)" -c 3 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis --section SchedulerStats --print-details all \
      "$B" --problems "$R/$n.problem" --space "$R/$n.space.toml" --strategy exhaustive --full-timing \
      --db "$R/db-ncu.toml" --journal "$R/journal-ncu.jsonl" --quiet > "$R/$n.ncu.txt" 2>&1
    grep -E "  convtune_|Duration|Grid Size|Compute \(SM\) Throughput|DRAM Throughput|L2 Cache Throughput|Warp Cycles Per Issued|Stall [A-Z]|Achieved Occupancy" "$R/$n.ncu.txt" | cut -c1-160 | head -60 | tee -a "$S"
  fi
done < "$R/ours.txt"
rm -f "$R"/*.lock
say "== done $(el)"
tar czf "$OUT/diag14.tgz" -C "$OUT" diag14 2>/dev/null && rm -rf "$R"
