#!/usr/bin/env bash
# Prepared in session 33 for the next device call (H200, < 590 s; carry .carry with this
# build's convtune.xz and libtests.xz): with fix-up and stream-K plans rid of their
# counter-clearing launch (abi::KEPT_ZERO_BYTES), shapes that lost to it by 1.3–2.7 µs may now
# win.
#  1. The library's GPU tests from the carried test binary (runtime::gpu_tests: the new
#     kept-zero part of gpu_measurer_outcomes among them).
#  2. Re-tune (default strategy, `--time 10`) the shipped entries that are not depthwise and
#     run in under 60 µs with a split-K config or a bwd-weight direction (where split-K
#     applies), into retune/db.toml: each search measures the shipped config first, so its
#     summary line is the A/B in one process. Merge on the development machine with
#     `convtune db merge --output tuned-db/sm_90.toml tuned-db/sm_90.toml retune/db.toml` and
#     `convtune db check tuned-db/sm_90.toml`.
#  3. cuDNN on the same problems (scripts/compare-cudnn.py, this call).
#   Usage (repo root, on the device): bash scripts/session33/next-retune.sh
#   Results: $OUT/summary.txt, $OUT/libtests.log, $OUT/retune.tgz
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 GPU unit tests $(el)"
gpu_lib_tests
R=/tmp/retune; mkdir -p $R
python3 - > $R/problems.txt <<'PY'
import re, tomllib
for e in tomllib.load(open("tuned-db/sm_90.toml", "rb"))["entry"]:
    p, c = e["problem"], e["config"]
    dw = re.search(r"-c (\d+) .* -g \1 -I", p)
    split = re.search(r"\bsk=([2-9]|\d\d)", c) or "red=stream" in c or "-F 4" in p
    if not dw and split and e["time_us"] < 60:
        print(p)
PY
say "== 2 retune: $(wc -l < $R/problems.txt) problems $(el)"
tune_list $R 380
say "-- cuDNN $(el)"
timeout 60 python3 scripts/compare-cudnn.py $R/problems.txt --convtune $R/report.json --json $R/cudnn.json > $R/cudnn.log 2>&1
say "rc=$? $(el)"; grep -v Warning $R/cudnn.log | tail -12 | cut -c1-200 | tee -a "$S"
tar czf "$OUT/retune.tgz" -C /tmp retune
say "== done $(el)"
