#!/usr/bin/env bash
# Session 37, device call 2 (any H100/H200, about 8 min; carry .carry and .whlx (or .whl) with this
# build's wheel, whose convtune.torch.BENCHMARK_CANDIDATES is 16): scripts/first-use.py over the 30
# problems of scripts/session23/setD.txt the database lacks, out of the box against cuDNN in
# the same process, the first-call benchmark timing eight candidates, then sixteen (each
# pass a fresh process; the driver's JIT cache off, so each first call compiles and JITs all
# of its candidates). Then the tune-cost problems (scripts/session10/tune-cost-ab.sh:
# `--time 10`, cold codegen cache) with this build, whose tuner measures the lookup's sixteen
# first, and the session's starting build (carried as .carry/convtune-base.xz), four first.
#   Usage (repo root, on the device): bash scripts/session37/call2.sh
set -uo pipefail
. scripts/session11/lib.sh
site=$WHEEL_SITE
# The wheel unpacked, its native library xz-compressed (.whlx/: the carry limit), or .whl/.
if [ -d .whlx ]; then
  mkdir -p "$site" && cp -r .whlx/. "$site/" && xz -df "$site"/convtune/*.so.xz
else
  python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
fi
grep -v '^#' scripts/session23/setD.txt > "$OUT/setD.txt"
for n in 8 16; do
  say "== first use, $n candidates $(el)"
  CUDA_CACHE_DISABLE=1 PYTHONPATH=$site timeout 170 python3 scripts/first-use.py "$OUT/setD.txt" \
    --candidates $n --json "$OUT/first-use-$n.json" > "$OUT/first-use-$n.log" 2>&1
  say "rc=$? $(el)"
  grep -v Warning "$OUT/first-use-$n.log" | grep -E "error|geomean|first use over|first call|timed" \
    | cut -c1-260 | tee -a "$S"
done
say "== tune cost, this build (16 first) and the base (4 first) $(el)"
tune_cost 160 "$PWD/target/base/convtune" 'fwd-3x3 fwd-1x1 bwdw-3x3 nchw-9'
say "== done $(el)"
