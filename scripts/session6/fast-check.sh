#!/usr/bin/env bash
# Session 6, issue 16 (time to a good kernel) on the H200: the parallel module load/JIT in the
# worker and the faster guided ranking, old binary BASE against new BIN, alternating, with
# `--time 10` on four problems of different kinds (a 1x1 fwd, a 3x3 fwd, a bwd-weight, a
# strided bwd-data). Every run gets an empty driver JIT cache of its own (CUDA_CACHE_PATH), so
# neither binary profits from the other's JITs; then BIN once more with loader threads
# (CONVTUNE_JIT_THREADS=15: the JIT of the next candidates in parallel; off by default since
# this script's first run showed it slower) and once more with its
# first run's warm cache (what a rerun or resume sees). Per run: wall time, candidates/s at
# steady state (evaluated / measure stage), fixed cost (enumerate + rank + reference + waiting
# for the first compiled batch), JIT work vs load wait, best time. About 130 s, at most 200.
# Run from the repo root; results in $OUT/fast-summary.txt.
set -uo pipefail
BASE=${BASE:-target/base/convtune}
BIN=${BIN:-target/release/convtune}
OUT=${OUT:-/tmp/fast-check}
T=${T:-10}
mkdir -p "$OUT"
export CONVTUNE_PROGRESS_SECS=5
SUMMARY="$OUT/fast-summary.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
PROBLEMS=(
  "convbfp16 -n 64 -c 256 -H 56 -W 56 -k 64 -y 1 -x 1 -F 1 --layout NHWC"
  "convbfp16 -n 64 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
  "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
  "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -F 2 --layout NHWC"
)
NAMES=(fwd-1x1 fwd-3x3 bwd-weight-3x3 bwd-data-strided)
# One line per run from its journal's @stages record and summary line.
stats() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
journal, out, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
st, n = None, 0
for line in open(journal):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("config") == "@stages":
        st = r.get("outcome") or {}
    else:
        n += 1
best = next((l.split("best ", 1)[1].split(";")[0] for l in open(out) if l.startswith("summary:") and "best " in l), "none")
if st is None:
    print(f"wall {wall:.2f} s, {n} journalled, no @stages record; best {best}")
    sys.exit()
g = lambda k: float(st.get(k, 0.0))
fixed = g("enumerate_s") + g("rank_s") + g("reference_s") + g("codegen_wait_s")
rate = n / g("measure_s") if g("measure_s") > 0 else 0.0
print(f"wall {wall:.2f} s, {n} candidates, {rate:.1f}/s steady (measure {g('measure_s'):.2f} s), "
      f"fixed {fixed:.2f} s (enumerate {g('enumerate_s'):.2f}, rank {g('rank_s'):.2f}, "
      f"reference {g('reference_s'):.2f}, codegen wait {g('codegen_wait_s'):.2f}), "
      f"load waited {g('load_s'):.2f} s of JIT {g('jit_s'):.2f} s; best {best}")
PY
}
run() { # tag binary problem-index cache-dir [env...]
  local tag=$1 bin=$2 i=$3 cache=$4; shift 4
  local p=${PROBLEMS[$i]} f="$OUT/${NAMES[$i]}-$tag"
  mkdir -p "$cache"
  local t0; t0=$(now)
  env CUDA_CACHE_PATH="$cache" "$@" timeout 40 "$bin" --problem "$p" --time "$T" \
    --db "$f.toml" --journal "$f.jsonl" --report "$f.json" > "$f.out" 2> "$f.err"
  local rc=$? wall; wall=$(since "$t0")
  say "  $tag (rc $rc): $(stats "$f.jsonl" "$f.out" "$wall" 2>&1)"
}
say "== fast-check: --time $T, BASE=$BASE BIN=$BIN, $(date -u +%FT%TZ)"
for i in "${!PROBLEMS[@]}"; do
  say "${NAMES[$i]}: ${PROBLEMS[$i]}"
  run base "$BASE" "$i" "$OUT/cache/base-$i"
  run new "$BIN" "$i" "$OUT/cache/new-$i"
done
say "== BIN with loader threads (CONVTUNE_JIT_THREADS=15), cold cache, problems 1 and 3"
for i in 0 2; do
  run new-jit15 "$BIN" "$i" "$OUT/cache/jit15-$i" CONVTUNE_JIT_THREADS=15
done
say "== BIN again on its own warm JIT cache, problem 1"
run new-warm "$BIN" 0 "$OUT/cache/new-0"
say "== done; per-run files in $OUT"
