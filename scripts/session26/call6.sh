#!/usr/bin/env bash
# Session 26, device call 6 (H200): out of the box with this session's wheel (the depthwise
# bwd-weight kernel, its shipped entries, the fallback keeping a dw neighbour's widths):
# scripts/first-use.py (lookup, first-use benchmark, best of the candidates, cuDNN; every timed
# config checked against PyTorch's float64 result) over
#  1. scripts/session26/dw-unseen.txt: six depthwise bwd-weight problems without an entry;
#  2. scripts/session23/setD.txt: the 30 random problems of sessions 23 and 25 (those the
#     database now has are skipped by the script).
#   Usage (repo root, on the device): bash scripts/session26/call6.sh
set -uo pipefail
. scripts/session11/lib.sh
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
for set in scripts/session26/dw-unseen.txt scripts/session23/setD.txt; do
  n=$(basename "$set" .txt)
  say "== first use, $n $(el)"
  grep -v '^#' "$set" > "$OUT/$n.txt"
  PYTHONPATH=$site timeout 200 python3 scripts/first-use.py "$OUT/$n.txt" --json "$OUT/$n.json" \
    > "$OUT/$n.log" 2>&1
  say "rc=$? $(el)"; grep -v Warning "$OUT/$n.log" | grep -E "error|geomean|first use over|timed|skipp" | cut -c1-260 | tee -a "$S"
done
say "== done $(el)"
