#!/usr/bin/env bash
# Session 36, device call 2 (replaces session 35's call3.sh; any H100/H200, about 3 min; carry .carry with this build's
# convtune.xz, and .whl with this build's wheel: the shipped database now holds the H100's
# entries beside the H200's):
#  1. scripts/python-gpu-check.py on the seeds with this build's wheel.
#  2. On an H200: the bwd-weight 3x3 c256's shipped entry in the same harness as cuDNN, with
#     the bf16 matmul rate (issue 13's 85% target, never measured so on an H200). Elsewhere:
#     scripts/same-harness.py over this GPU's entries (an H100: the 39 tuned in session 36's
#     call 2), each launched through the Python package beside cuDNN.
#   Usage (repo root, on the device): bash scripts/session36/call2.sh
set -uo pipefail
. scripts/session11/lib.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
say "$gpu == 1 python $(el)"
python_check scripts/suites/seeds.txt 90
case "$gpu" in
  *H200*)
    say "== 2 same harness, bw3 $(el)"
    python3 - <<'PY'
import sys
sys.path.insert(0, "scripts/lib")
from tuned_db import load, rewrite
head, blocks, _ = load("tuned-db/sm_90.toml", "NVIDIA H200")
key = "convbfp16 -F 4 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -I NHWGC"
open("/tmp/bw3.toml", "w").write(rewrite(head, [b for b in blocks if key in b]))
PY
    same_harness 80 6 /tmp/bw3.toml ;;
  *)
    say "== 2 same harness, this GPU's entries $(el)"
    same_harness 200 8 ;;
esac
say "== done $(el)"
