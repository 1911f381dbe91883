#!/usr/bin/env bash
# Session 28, device call 3 (H200, < 590 s): depthwise backward weight with both sums searched
# (atomics and the partials, `red=atomic|fixup`, this session's build; session 27's partials
# were 1.23x faster on the same tiles in call 1).
#  1. `convtune selfcheck` of the default space's depthwise kernels on session 26's backward-weight
#     list (atomics and partials mixed, as the built-in space now enumerates them).
#  2. Re-tune (default strategy, `--time 10`) the shipped database's depthwise backward-weight
#     entries and the six unseen ones of scripts/session26/dw-unseen.txt: each search measures the
#     shipped / looked-up config first, so its summary line is the A/B in one process.
#  3. cuDNN on the same problems in the same call (scripts/compare-cudnn.py).
#   Usage (repo root, on the device): bash scripts/session28/call3.sh
#   Results: $OUT/summary.txt, $OUT/retune.tgz (db.toml, j.jsonl, report.json, tune.log, cudnn.json).
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 selfcheck, depthwise backward weight, default space $(el)"
sed 's/^mma = \[[^]]*\]/mma = ["dw"]/' search-spaces/nvidia.toml > /tmp/dw.toml
selfcheck_step dw 120 --problems scripts/session26/dw-wgrad.txt --space /tmp/dw.toml --configs 6
R=/tmp/retune; mkdir -p $R
{ db_problems '^conv\S* -F 4 -n \d+ -c (\d+) .* -g \1 -I'; grep -v '^#' scripts/session26/dw-unseen.txt; } > $R/problems.txt
say "== 2 retune $(wc -l < $R/problems.txt) problems $(el)"
tune_list $R 300
say "== 3 cuDNN $(el)"
timeout 120 python3 scripts/compare-cudnn.py $R/problems.txt --convtune $R/report.json --json $R/cudnn.json > $R/cudnn.log 2>&1
say "rc=$? $(el)"; grep -v Warning $R/cudnn.log | tail -24 | cut -c1-220 | tee -a "$S"
tar czf "$OUT/retune.tgz" -C /tmp retune
say "== done $(el)"
