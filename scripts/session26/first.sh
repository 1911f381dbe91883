#!/usr/bin/env bash
# Session 26 (issue 16, fixed cost): time to the first measured candidate, this build
# ($B, target/release) against the base build (target/base), on scripts/session10/tune-cost-ab.sh's
# four problems and two without a database entry, `--time T` each, REPS rounds alternating which build goes first; every run
# with a cold codegen cache and a cold CUDA JIT cache of its own (a shared one would favour the
# build that runs second). One line a run: build, problem, wall s, first candidate s, candidates,
# candidates/s, best µs, and the run's stages (lookup, enumerate, reference) from its journal.
#   Usage (repo root, on the device, after scripts/session11/lib.sh): T=6 REPS=2 bash scripts/session26/first.sh
set -uo pipefail
T=${T:-6}
REPS=${REPS:-2}
R=${OUT:-/tmp}/first
mkdir -p "$R"
# The first four have exact entries in the shipped database; the last two have none.
NAMES=(fwd-3x3 fwd-1x1 bwdw-3x3 nchw-9 u-bwdw u-fwd)
PROBLEMS=(
  "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
  "convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC"
  "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
  "conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2"
  "convbfp16 -n 32 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
  "convbfp16 -n 32 -c 384 -H 17 -W 17 -k 192 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
)
row() { # tag name wall: scripts/lib/run-row.py with the stages before the first candidate
  python3 "$(dirname "$0")/../lib/run-row.py" "$R" "$@" lookup_s enumerate_s reference_s
}
echo "build problem   wall s first s  cands  rate/s  best us  lookup   enum    ref"
for rep in $(seq "$REPS"); do
  order="new old"; [ $((rep % 2)) = 0 ] && order="old new"
  for i in "${!NAMES[@]}"; do
    n=${NAMES[$i]} p=${PROBLEMS[$i]}
    for tag in $order; do
      bin=$PWD/target/release/convtune; [ $tag = old ] && bin=$PWD/target/base/convtune
      rm -rf "$R/cg" "$R/jit" "$R/$tag-$n".*
      CUDA_CACHE_PATH="$R/jit" CONVTUNE_CODEGEN_CACHE="$R/cg" /usr/bin/time -f "%e" -o "$R/$tag-$n.wall" \
        timeout $((T + 8)) "$bin" --problem "$p" --time "$T" --db "$R/$tag-$n.db.toml" \
        --journal "$R/$tag-$n.jsonl" --report "$R/$tag-$n.json" > "$R/$tag-$n.out" 2>&1
      row "$tag" "$n" "$(tail -1 "$R/$tag-$n.wall" 2>/dev/null || echo nan)"
    done
  done
done
rm -rf "$R/cg" "$R/jit"
