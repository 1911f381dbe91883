#!/usr/bin/env bash
# Session 6, diagnostics pass on the H200 (the build the session started from): where the
# shipped kernels of the families that trail cuDNN lose time. For each chosen entry of
# tuned-db/sm_90.toml: the entry's config verified and timed through the tuner (pinned space),
# and the same run under Nsight Compute (speed of light, occupancy, launch stats, warp stall
# reasons) for the first GEMM launch; ptxas -v and SASS instruction counts of the module.
# Results under $OUT/diag/ (one tarball).
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session5/unpack.sh
B=${BIN:-target/release/convtune}
R=$OUT/diag
mkdir -p "$R"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/gpu.txt" 2>&1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
PTXAS=$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1)
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
echo "ncu=$NCU ptxas=$PTXAS" | tee "$R/tools.txt"
# entry indices of tuned-db/sm_90.toml (name:index)
entries=${ENTRIES:-"fwd1x1:10 fwd3x3:12 seed003:19 wgrad1x1-7:30 wgrad3x3-28:27 f16nchw3x3:34 dgrad3x3s2:20"}
python3 - "$R" $entries <<'PY'
import sys, tomllib
e = tomllib.load(open("tuned-db/sm_90.toml", "rb"))["entry"]
for arg in sys.argv[2:]:
    name, i = arg.split(":")
    open(f"{sys.argv[1]}/{name}.problem", "w").write(e[int(i)]["problem"] + "\n")
    open(f"{sys.argv[1]}/{name}.config", "w").write(e[int(i)]["config"] + "\n")
PY
for ent in $entries; do
  n=${ent%%:*}
  p=$(cat "$R/$n.problem"); c=$(cat "$R/$n.config")
  echo "== $n $(el)"
  "$B" space --problem "$p" --arch sm_90 --pin "$c" > "$R/$n.space.toml" 2>> "$R/errors.txt" || { echo "$n: not pinned"; continue; }
  "$B" compile --arch sm_90 --problem "$p" --config "$c" -o "$R/$n.ptx" > /dev/null 2>> "$R/errors.txt"
  if [ -x "$PTXAS" ]; then
    "$PTXAS" -arch=sm_90a -v -o "$R/$n.cubin" "$R/$n.ptx" > "$R/$n.ptxas.txt" 2>&1
    grep -E "registers|C75[0-9][0-9]|spill" "$R/$n.ptxas.txt" | head -8
    [ -x "$CUOBJDUMP" ] && "$CUOBJDUMP" --dump-sass "$R/$n.cubin" 2>/dev/null | grep -oE "^\s+/\*[0-9a-f]+\*/\s+[A-Z][A-Z0-9.]+" | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -25 > "$R/$n.sass-hist.txt"
  fi
  [ -z "${SKIP_TUNE:-}" ] && timeout 60 "$B" --problems "$R/$n.problem" --space "$R/$n.space.toml" --strategy exhaustive --full-timing \
    --db "$R/db.toml" --journal "$R/journal.jsonl" --report "$R/$n.report.json" --quiet > "$R/$n.tune.txt" 2>&1
  grep -E "summary|us" "$R/$n.tune.txt" | tail -2
  if [ -x "$NCU" ]; then
    timeout 120 "$NCU" --target-processes all --clock-control none -k "regex:convtune_(gemm|phases)" -c 2 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --print-details all \
      "$B" --problems "$R/$n.problem" --space "$R/$n.space.toml" --strategy exhaustive --full-timing \
      --db "$R/db-ncu.toml" --journal "$R/journal-ncu.jsonl" --quiet > "$R/$n.ncu.txt" 2>&1
    echo "ncu rc=$? $(grep -c 'convtune_' "$R/$n.ncu.txt") kernel sections"
    grep -E "convtune_|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall" "$R/$n.ncu.txt" | head -30
  fi
done
rm -f "$R"/*.lock
echo "== done $(el)"
tar czf "$OUT/diag.tgz" -C "$OUT" diag 2>/dev/null
