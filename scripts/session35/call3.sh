#!/usr/bin/env bash
# Session 35's last device call, small (carry .carry with this build's convtune.xz, and .whl):
#  1. scripts/python-gpu-check.py on the seeds with this build's wheel (the torch layer names
#     its GPU to the lookup: exact entries on an H200, a first-call benchmark elsewhere).
#  2. On an H200: the bwd-weight 3x3 c256's shipped entry in the same harness as cuDNN, with
#     the bf16 matmul rate (issue 13's target, never measured so on an H200). Elsewhere: four
#     suite problems tuned from the H200's winners (`--time 10`).
#   Usage (repo root, on the device): bash scripts/session35/call3.sh
set -uo pipefail
. scripts/session11/lib.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
say "$gpu == 1 python $(el)"
python_check scripts/suites/seeds.txt 90
case "$gpu" in
  *H200*)
    say "== 2 same harness, bw3 $(el)"
    python3 - <<'PY'
import re
text = open("tuned-db/sm_90.toml").read()
head, *entries = text.split("\n[[entry]]\n")
key = "convbfp16 -F 4 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -I NHWGC"
kept = [e for e in entries if key in e]
h = re.sub(r"^entries = \d+", f"entries = {len(kept)}", head, flags=re.M)
open("/tmp/bw3.toml", "w").write(h + "".join("\n[[entry]]\n" + e for e in kept))
PY
    same_harness 80 6 /tmp/bw3.toml ;;
  *)
    say "== 2 four suite problems tuned from the H200's winners $(el)"
    R=/tmp/four; mkdir -p $R
    grep -v '^#' scripts/suites/seeds.txt | grep . | head -4 > $R/problems.txt
    tune_list $R 45 ;;
esac
say "== done $(el)"
