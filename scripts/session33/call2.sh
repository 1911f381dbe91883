#!/usr/bin/env bash
# Session 33, device call 2 (< 590 s; carry .carry with convtune.xz = this build,
# convtune-base.xz = 186c1a4, and .whl = this build's wheel): the kept-zero workspace region
# (abi::KEPT_ZERO_BYTES): split-K fix-up and stream-K plans without their counter-clearing
# launch.
#  1. `convtune selfcheck --red fixup` and `--red stream` (built-in space, and the Hopper space
#     for the wgmma paths): every sampled kernel verified on poisoned buffers, the region
#     cleared before and checked clear after (`dirty-workspace` otherwise).
#  2. scripts/python-gpu-check.py on the seeds suite, with its kept-zero part: three such
#     configs run repeatedly, interleaved and on two streams through convtune.torch's kept
#     workspaces, each result against PyTorch's float64 one, the buffers' region clear after.
#  3. A/B, this build against 186c1a4 (scripts/ab-builds.sh, alternating, both orders): the
#     shipped entries whose config is red=fixup or red=stream (at most AB_MAX).
#  4. The same harness as cuDNN (scripts/same-harness.py) on those entries with this wheel.
#   Usage (repo root, on the device): bash scripts/session33/call2.sh
#   Results: $OUT/summary.txt, $OUT/selfcheck-*.log, $OUT/python.log, $OUT/ab.txt, $OUT/same-kept-all.*
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 selfcheck $(el)"
selfcheck_step fixup 70 --red fixup --configs 3
selfcheck_step stream 70 --red stream --configs 3
selfcheck_step fixup-hopper 70 --red fixup --configs 3 --space search-spaces/nvidia-hopper.toml
selfcheck_step stream-hopper 70 --red stream --configs 3 --space search-spaces/nvidia-hopper.toml
say "== 2 python-gpu-check $(el)"
python_check scripts/suites/seeds.txt 120
say "== 3 A/B $(el)"
python3 - tuned-db/sm_90.toml /tmp/kept.toml "${AB_MAX:-20}" <<'PY'
import re, sys, tomllib
src, dst, most = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(src).read()
head, *entries = text.split("\n[[entry]]\n")
kept = [e for e in entries if re.search(r'^config = ".*red=(fixup|stream)', e, re.M)]
# Spread over the list (the shortest kernels gain the most from one launch less).
kept.sort(key=lambda e: float(re.search(r"^time_us = ([\d.]+)", e, re.M).group(1)))
def write(path, chosen):
    h = re.sub(r"^entries = \d+", f"entries = {len(chosen)}", head, flags=re.M)
    open(path, "w").write(h + "".join("\n[[entry]]\n" + e for e in chosen))
write("/tmp/kept-all.toml", kept)
step = max(1, len(kept) / most)
write(dst, [kept[int(i * step)] for i in range(min(most, len(kept)))])
print(len(kept), min(most, len(kept)))
PY
timeout 230 bash scripts/ab-builds.sh /tmp/kept.toml '' new=$B base=target/base/convtune > "$OUT/ab.txt" 2>&1
say "rc=$? $(el)"; tail -28 "$OUT/ab.txt" | cut -c1-200 | tee -a "$S"
say "== 4 same harness, kept-zero entries $(el)"
left=$(( 580 - $(date +%s) + t0 ))
same_harness $(( left > 20 ? left - 10 : 10 )) 50 /tmp/kept-all.toml
say "== done $(el)"
