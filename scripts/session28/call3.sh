#!/usr/bin/env bash
# Session 28, device call 3 (H200, < 590 s): depthwise backward weight with both sums searched
# (atomics and the partials, `red=atomic|fixup`, this session's build and wheel; session 27's
# partials were 1.23x faster on the same tiles in call 1).
#  1. `convtune selfcheck` of the default space's depthwise kernels on session 26's backward-weight
#     list (atomics and partials mixed, as the built-in space now enumerates them).
#  2. Re-tune (default strategy, `--time 10`) the shipped database's depthwise backward-weight
#     entries (into shipped/db.toml, merged into tuned-db/ afterwards on the development
#     machine) and, apart, the six unseen ones of scripts/session26/dw-unseen.txt (unseen/):
#     each search measures the shipped / looked-up config first, so its summary line is the A/B
#     in one process.
#  3. cuDNN on both lists in the same call (scripts/compare-cudnn.py).
#  4. First use out of the box (scripts/first-use.py with this session's wheel, every timed
#     config checked against PyTorch's float64 result) on dw-unseen (and set D with SETD=1), with the re-tuned
#     entries of step 2 as the user database (`$CONVTUNE_DB`), as a user who re-tuned has them.
#   Usage (repo root, on the device): [SETD=1] bash scripts/session28/call3.sh
#   Results: $OUT/summary.txt, $OUT/retune.tgz, $OUT/{dw-unseen,setD}.{json,log}.
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 selfcheck, depthwise backward weight, default space $(el)"
sed 's/^mma = \[[^]]*\]/mma = ["dw"]/' search-spaces/nvidia.toml > /tmp/dw.toml
selfcheck_step dw 90 --problems scripts/session26/dw-wgrad.txt --space /tmp/dw.toml --configs 6
R=/tmp/retune; mkdir -p $R/shipped $R/unseen
db_problems '^conv\S* -F 4 -n \d+ -c (\d+) .* -g \1 -I' > $R/shipped/problems.txt
grep -v '^#' scripts/session26/dw-unseen.txt > $R/unseen/problems.txt
for part in shipped:140 unseen:65; do
  d=$R/${part%:*}
  say "== 2 retune ${part%:*}: $(wc -l < $d/problems.txt) problems $(el)"
  tune_list $d ${part#*:}
  say "-- cuDNN $(el)"
  timeout 60 python3 scripts/compare-cudnn.py $d/problems.txt --convtune $d/report.json --json $d/cudnn.json > $d/cudnn.log 2>&1
  say "rc=$? $(el)"; grep -v Warning $d/cudnn.log | tail -16 | cut -c1-200 | tee -a "$S"
done
tar czf "$OUT/retune.tgz" -C /tmp retune
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
for set in scripts/session26/dw-unseen.txt ${SETD:+scripts/session23/setD.txt}; do
  n=$(basename "$set" .txt)
  say "== 4 first use, $n $(el)"
  grep -v '^#' "$set" > "$OUT/$n.txt"
  CONVTUNE_DB=$R/shipped/db.toml PYTHONPATH=$site timeout 100 python3 scripts/first-use.py "$OUT/$n.txt" \
    --json "$OUT/$n.json" > "$OUT/$n.log" 2>&1
  say "rc=$? $(el)"; grep -v Warning "$OUT/$n.log" | grep -E "error|geomean|first use over|first call|timed|skipp" | cut -c1-260 | tee -a "$S"
done
say "== done $(el)"
