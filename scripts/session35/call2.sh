#!/usr/bin/env bash
# Session 35's second device call (carry .carry with this build's convtune.xz, and .whl).
# On an H200: scripts/session34/next.sh (the cut pairs, the bwd-weight 3x3 c256 in the same
# harness with cuDNN and the matmul rate, a re-tune to merge), its re-tune ending at CALL_S.
# On another GPU: scripts/python-gpu-check.py on the seeds with this build's wheel (the torch
# layer now names its GPU to the lookup: on this GPU a first-call benchmark of the shipped
# winner and the fallback's next configs); the 39 suite problems (scripts/suites/all.txt + families.txt) tuned there
# (`--time 10`, `--time-total 240`), each search starting from the shipped H200 winner (this
# build's lookup across GPUs), so each summary's "config used before" is that winner measured
# on this GPU; then cuDNN on the same problems.
#   Usage (repo root, on the device): bash scripts/session35/call2.sh
#   Results: $OUT/summary.txt (+ next.sh's files on an H200), $OUT/suite.tgz elsewhere.
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H200*) CALL_S=${CALL_S:-470} exec bash scripts/session34/next.sh ;;
esac
. scripts/session11/lib.sh
say "$gpu: the Python package and torch layer (this build's wheel: the lookup names the GPU) $(el)"
python_check scripts/suites/seeds.txt 100
say "$gpu: the suite tuned from the H200's winners $(el)"
R=/tmp/suite; mkdir -p $R
cat scripts/suites/all.txt scripts/suites/families.txt | grep -v '^#' | grep . > $R/problems.txt
tune_list $R ${TUNE_S:-240}
say "-- cuDNN $(el)"
timeout 45 python3 scripts/compare-cudnn.py $R/problems.txt --convtune $R/report.json --json $R/cudnn.json > $R/cudnn.log 2>&1
say "rc=$? $(el)"; grep -v Warning $R/cudnn.log | tail -2 | cut -c1-200 | tee -a "$S"
python3 - $R/report.json <<'PY' | tee -a "$S"
import json, math, sys
rows = json.load(open(sys.argv[1]))
r = [x["before_us"] / x["time_us"] for x in rows if x.get("before_us") and x.get("time_us")]
if r:
    g = math.exp(sum(map(math.log, r)) / len(r))
    print(f"re-tuned here / the H200 winner measured here: geomean {g:.3f} over {len(r)} "
          f"(max {max(r):.3f}, >= 1.05: {sum(x >= 1.05 for x in r)})")
PY
tar czf "$OUT/suite.tgz" -C /tmp suite
say "== done $(el)"
