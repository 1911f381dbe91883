#!/usr/bin/env bash
# Session 37, device call 1 (any H100/H200, about 6 min; carry .carry with this build's
# convtune.xz, and .whl with this build's wheel):
#  1. scripts/python-gpu-check.py on the seeds with this build's wheel.
#  2. The 39 suite problems (the keys the H100 entries share with the H200's) with this GPU's
#     own entries, each launched through the Python package beside cuDNN (scripts/same-harness.py:
#     cold and graph, the bf16 8192^3 matmul rate of the same call), then scripts/ceiling.py over
#     the bf16 layers: issue 13's closing table (the per-layer ratios, the 85% targets).
#   Usage (repo root, on the device): bash scripts/session37/call1.sh
set -uo pipefail
. scripts/session11/lib.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
say "$gpu == 1 python $(el)"
python_check scripts/suites/seeds.txt 90
say "== 2 same harness, the suite with this GPU's entries $(el)"
python3 - "$gpu" <<'PY' | tee -a "$S"
import sys
sys.path.insert(0, "scripts/lib")
from tuned_db import load, rewrite
suite = {e["problem"] for e in load("tuned-db/sm_90.toml", "NVIDIA H100 80GB HBM3")[2]}
here = "NVIDIA H200" if "H200" in sys.argv[1] else "NVIDIA H100 80GB HBM3"
head, blocks, entries = load("tuned-db/sm_90.toml", here)
kept = [b for b, e in zip(blocks, entries) if e["problem"] in suite]
open("/tmp/suite.toml", "w").write(rewrite(head, kept))
print(f"{len(kept)} suite entries of {here}")
PY
same_harness 330 6 /tmp/suite.toml
rate=$(grep -o "matmul: [0-9]*" "$OUT/same-suite.log" | grep -o "[0-9]*$")
for proto in cold graph; do
  python3 scripts/ceiling.py "$OUT/same-suite.json" "${rate:-790}" --protocol $proto \
    > "$OUT/ceiling-$proto.txt" 2>&1
done
cut -c1-160 "$OUT/ceiling-cold.txt" | tee -a "$S"
say "== done $(el)"
