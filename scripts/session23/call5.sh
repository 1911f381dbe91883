#!/usr/bin/env bash
# Session 23 device call 5 (H200): scripts/first-use.py over scripts/session23/setD.txt again,
# with the build that fixes what call 4 found: legality refuses swizzled [k][row] tiles whose
# rows are not a power-of-two number of 16-byte chunks (two lookups' candidates did not
# compile), and the first-call benchmark times kernels, not the host's launches.
#   Usage (repo root, on the device): bash scripts/session23/call5.sh FIRST_USE_SECONDS
set -uo pipefail
. scripts/session11/lib.sh
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
say "== first use $(el)"
grep -v '^#' scripts/session23/setD.txt > "$OUT/setD.txt"
PYTHONPATH=$site timeout "$1" python3 scripts/first-use.py "$OUT/setD.txt" --json "$OUT/first-use.json" \
  > "$OUT/first-use.log" 2>&1
say "rc=$? $(el)"; grep -v Warning "$OUT/first-use.log" | grep -E "error|geomean|first use over|timed" | cut -c1-260 | tee -a "$S"
say "== done $(el)"
