#!/usr/bin/env bash
# Session 38, device call 3 (any H100/H200, about 8 min; carry .carry and .whlx with this
# build's wheel, whose convtune.torch.SECOND_ROUND is 8):
#  1. scripts/python-gpu-check.py on the seeds (now with the two-round first-use benchmark
#     check: the kept config's result against PyTorch's float64 one).
#  2. scripts/first-use.py over scripts/session23/setD.txt (the problems the database lacks),
#     out of the box against cuDNN in the same process: the first-call benchmark of sixteen
#     without the second round, then with it (each pass a fresh process, the driver's JIT cache
#     off; --pick-only: the lookup's answer and the kept config timed, not every candidate).
#   Usage (repo root, on the device): bash scripts/session38/call3.sh
set -uo pipefail
. scripts/session11/lib.sh
site=$WHEEL_SITE
mkdir -p "$site" && cp -r .whlx/. "$site/" && xz -df "$site"/convtune/*.so.xz
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) == 1 python check $(el)"
PYTHONPATH=$site timeout 150 python3 scripts/python-gpu-check.py scripts/suites/seeds.txt \
  --iters 5 --json "$OUT/python.json" > "$OUT/python.log" 2>&1
say "rc=$? $(el)"
grep -E "^(FAIL|ERROR)|first-use|suite problems" "$OUT/python.log" | cut -c1-400 | tee -a "$S"
grep -v '^#' scripts/session23/setD.txt > "$OUT/setD.txt"
for second in 0 8; do
  say "== first use, sixteen then $second $(el)"
  CUDA_CACHE_DISABLE=1 PYTHONPATH=$site timeout 190 python3 scripts/first-use.py "$OUT/setD.txt" \
    --second $second --pick-only --json "$OUT/first-use-s$second.json" > "$OUT/first-use-s$second.log" 2>&1
  say "rc=$? $(el)"
  grep -v Warning "$OUT/first-use-s$second.log" | grep -E "error|geomean|first use over|first call|timed" \
    | cut -c1-260 | tee -a "$S"
done
say "== done $(el)"
