#!/usr/bin/env bash
# Session 9, diagnostics on the H200: (1) the kernels cuDNN picks for the problems we trail on
# (names → tile shapes; ncu launch stats → grid, cluster, registers, shared memory), (2) Nsight
# Compute on our kernels for the short-K 1×1 problems: the shipped config and its stream-K
# variant (warp stalls, tensor pipe, DRAM, L2). Results under $OUT/diag9/, one tarball.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=target/release/convtune
R=$OUT/diag9; mkdir -p "$R"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "ncu=$NCU"
cat > "$R/problems.txt" <<'P'
convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC
convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC
convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 4 --layout NHWC
convfp16 -n 32 -c 96 -H 56 -W 56 -k 128 -y 5 -x 5 -p 2 -q 2 -u 2 -v 2 -F 2 --layout NHWC
convbfp16 -n 32 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC
convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -F 2 --layout NHWC
convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC
convbfp16 -n 64 -c 384 -H 14 -W 14 -k 384 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC
P
echo "== cuDNN kernels $(el)"
timeout 120 python3 scripts/session9/cudnn-kernels.py "$R/problems.txt" > "$R/cudnn-names.txt" 2>&1
grep -E "^##|us " "$R/cudnn-names.txt" | cut -c1-230
if [ -x "$NCU" ]; then
  timeout 150 "$NCU" --profile-from-start off --clock-control none --section LaunchStats --section SpeedOfLight \
    --print-summary none python3 scripts/session9/cudnn-kernels.py "$R/problems.txt" > "$R/cudnn-ncu.txt" 2>&1
  echo "ncu cudnn rc=$?"
  grep -E "^  [a-zA-Z_].*\(|Duration|Grid Size|Block Size|Cluster Size|Registers Per|Shared Memory Config|Dynamic Shared|Compute \(SM\) Throughput" "$R/cudnn-ncu.txt" | cut -c1-200 | head -150
fi
# (2) ours: name problem config
cat > "$R/ours.txt" <<'P'
fwd1x1-14|convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=256,bn=128,bk=64,wm=128,wn=128,st=4,va=4,vb=8,vc=4,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none
fwd1x1-14-sk|convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=stream,ld=ws,pk=1,xf=none
fwd1x1-14-dp|convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none
fwd1x1-7|convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=256,bn=64,bk=64,wm=128,wn=64,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=8,mma=wg,red=atomic,ld=ws,pk=1,xf=none
fwd1x1-7-sk|convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=stream,ld=ws,pk=1,xf=none
fwd1x1-7-dp|convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 1 --layout NHWC|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,pk=1,xf=none
P
while IFS='|' read -r n p c; do
  echo "== $n $(el)"
  echo "$p" > "$R/$n.problem"
  "$B" space --problem "$p" --arch sm_90 --pin "$c" > "$R/$n.space.toml" 2>> "$R/errors.txt" || { echo "$n: not pinned"; continue; }
  timeout 60 "$B" --problems "$R/$n.problem" --space "$R/$n.space.toml" --strategy exhaustive --full-timing \
    --db "$R/db.toml" --journal "$R/journal.jsonl" --report "$R/$n.report.json" --quiet > "$R/$n.tune.txt" 2>&1
  tail -2 "$R/$n.tune.txt"
  if [ -x "$NCU" ]; then
    timeout 90 "$NCU" --target-processes all --clock-control none -k "regex:convtune_(gemm|phases)" -c 2 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis --section SchedulerStats --print-details all \
      "$B" --problems "$R/$n.problem" --space "$R/$n.space.toml" --strategy exhaustive --full-timing \
      --db "$R/db-ncu.toml" --journal "$R/journal-ncu.jsonl" --quiet > "$R/$n.ncu.txt" 2>&1
    grep -E "  convtune_|Duration|Compute \(SM\) Throughput|DRAM Throughput|L2 Cache Throughput|Warp Cycles Per Issued|Stall [A-Z]" "$R/$n.ncu.txt" | head -40
  fi
done < "$R/ours.txt"
rm -f "$R"/*.lock
echo "== done $(el)"
tar czf "$OUT/diag9.tgz" -C "$OUT" diag9 2>/dev/null
