#!/usr/bin/env bash
# Session 4, issue 14 items 2-3 on the H200 (≤ 5 minutes): selfcheck of the new paths (strided
# bwd-data in one launch with its zeroing blocks, grouped problems), the launch count of strided
# bwd-data, then the new suite families (scripts/suites/families.txt) tuned briefly (--time 8)
# and cuDNN on the same problems in the same run.
#   Usage (repo root, release binary at target/release/convtune): scripts/session4/dgrad-check.sh
#   Results: $OUT/dgrad/ (selfcheck.log, launches.txt, tune.json, compare.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/release/convtune}
OUT=${OUT:-out}
R=$OUT/dgrad
mkdir -p "$R"
[ -f "$(dirname "$BIN")/libffi.so.8" ] && export LD_LIBRARY_PATH="$(dirname "$BIN")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "== selfcheck of the dgrad paths (2 configs a problem)"
timeout 75 "$BIN" selfcheck --configs 2 --problems scripts/session4/dgrad-problems.txt > "$R/selfcheck.log" 2>&1
echo "rc=$?"; grep -E "^(selfcheck:|FAIL)" "$R/selfcheck.log" | tail -12
echo "== launches of strided bwd-data (want 1 each)"
grep -v '^#' scripts/suites/families.txt | grep -- '-F 2' | while read -r line; do
  n=$(timeout 20 "$BIN" compile --problem "$line" --arch sm_90 -o "$R/k.ptx" --json 2>/dev/null \
      | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["manifest"]["kernels"]))' 2>/dev/null)
  echo "${n:-?} launch(es): $line"
done | tee "$R/launches.txt"
echo "== families: tune --time 8 each (the report is written after each problem), then cuDNN"
timeout 170 "$BIN" --problems scripts/suites/families.txt --arch sm_90 --time 8 \
  --db "$R/db.toml" --journal "$R/j.jsonl" --report "$R/tune.json" --quiet > "$R/tune.log" 2>&1
echo "tune rc=$?"
timeout 50 python3 scripts/compare-cudnn.py --convtune "$R/tune.json" --json "$R/cudnn.json" > "$R/compare.txt" 2>&1
tail -n 16 "$R/compare.txt"
rm -f "$R"/*.lock "$R/k.ptx"
