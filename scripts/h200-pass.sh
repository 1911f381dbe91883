#!/usr/bin/env bash
# One measured pass on a GPU machine, everything side by side in one run:
#   1. the GPU self-check (scripts/gpu-tests.sh),
#   2. kill-and-resume of a tuning run (SIGKILL at half of RESUME_BUDGET journalled; then the
#      resumed run and an uninterrupted one side by side),
#   3. tuning a suite into a fresh database, then cuDNN on the same problems through PyTorch
#      (scripts/compare-cudnn.py) with the bf16 matmul rate of this run, and the SASS of the
#      wgmma winners (scripts/sass-check.sh),
#   4. optional: SCALE=FILE one GPU vs all GPUs on the same candidates,
#   5. optional: RECORD=FILE exhaustive recordings over search-spaces/nvidia-replay.toml.
# Usage: scripts/h200-pass.sh SUITE BUDGET [SELFCHECK_CONFIGS]
# STAGES=selfcheck,resume,tune,scale,record picks stages (default: all that are configured).
# Results: $OUT/run/*, packed into $OUT/results.tgz after every stage (a cut-off run keeps what
# it finished).
set -uo pipefail
cd "$(dirname "$0")/.."
suite=${1:-scripts/suites/seeds.txt}
budget=${2:-100}
configs=${3:-3}
OUT=${OUT:-out}
R=$OUT/run
mkdir -p "$R"
BIN=${BIN:-target/release/convtune}
[ -f "$(dirname "$BIN")/libffi.so.8" ] && export LD_LIBRARY_PATH="$(dirname "$BIN")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
stage() { [[ ",${STAGES:-selfcheck,resume,tune,scale,record}," == *",$1,"* ]]; }

pack() { tar czf "$OUT/results.tgz" -C "$OUT" run; }
date -u +%FT%TZ | tee "$R/date.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$R/gpu.txt"

if [ "$configs" -gt 0 ] && stage selfcheck; then
  echo "== selfcheck"
  BIN=$BIN CONFIGS=$configs LOG=$R/selfcheck.log timeout 240 scripts/gpu-tests.sh | tail -4
  pack
fi

if stage resume; then
  echo "== kill-and-resume"
  first=${RESUME_PROBLEM:-$(grep -v '^#' "$suite" | grep -v '^\s*$' | head -1)}
  n=${RESUME_BUDGET:-40}
  resume=(--problem "$first" --budget "$n" --strategy "${RESUME_STRATEGY:-exhaustive}" --quiet)
  # Killed with SIGKILL once half the candidates are in the journal (not after a fixed time:
  # candidates take 0.1-0.6 s, so a timer lands anywhere).
  "$BIN" "${resume[@]}" --db "$R/resume.toml" --journal "$R/resume.jsonl" >/dev/null 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    [ "$(cat "$R/resume.jsonl" 2>/dev/null | wc -l)" -ge $((n / 2)) ] && { kill -KILL "$pid"; break; }
    sleep 0.05
  done
  wait "$pid" 2>/dev/null
  echo "killed after $(wc -l < "$R/resume.jsonl") of $n journal records; database written: $([ -f "$R/resume.toml" ] && echo yes || echo no)" | tee "$R/resume.txt"
  "$BIN" "${resume[@]}" --db "$R/resume.toml" --journal "$R/resume.jsonl" > "$R/resume.log" 2>&1
  "$BIN" "${resume[@]}" --db "$R/fresh.toml" --journal "$R/fresh.jsonl" > "$R/fresh.log" 2>&1
  grep "evaluated" "$R/resume.log" | tee -a "$R/resume.txt"
  python3 - "$R" <<'PY' | tee -a "$R/resume.txt"
import json, sys, statistics
r = sys.argv[1]
def recs(p): return {(j := json.loads(l))["config"]: j.get("time_us") for l in open(p) if l.strip()}
a, b = recs(f"{r}/resume.jsonl"), recs(f"{r}/fresh.jsonl")
print(f"resumed run evaluated {len(a)} configs, uninterrupted run {len(b)}; same set: {set(a) == set(b)}")
both = [(a[c], b[c]) for c in a if c in b and a[c] and b[c]]
if both:
    print(f"per-config time ratio resumed/fresh: median {statistics.median(x / y for x, y in both):.3f}")
def best(p): return min((t, c) for c, t in recs(p).items() if t)
bests = {}
for name in ("resume", "fresh"):
    t, c = bests[name] = best(f"{r}/{name}.jsonl")
    print(f"{name}: fastest in journal {c} {t:.1f} us")
print(f"same winner: {bests['resume'][1] == bests['fresh'][1]}")
PY
  for f in resume fresh; do echo "--- $f.toml"; grep -v '^#' "$R/$f.toml" | grep -E 'config|time_us'; done | tee -a "$R/resume.txt"
  pack
fi

if stage tune; then
echo "== tune $suite (budget $budget per problem, devices ${DEVICES:-0})"
"$BIN" --problems "$suite" --budget "$budget" ${TUNE_TIME:+--time "$TUNE_TIME"} --devices "${DEVICES:-0}" --db "$R/tuned.toml" \
  --journal "$R/journal.jsonl" --report "$R/report.json" --quiet > "$R/tune.log" 2>&1
grep -c "evaluated" "$R/tune.log"
pack

echo "== cuDNN"
timeout 200 python3 scripts/compare-cudnn.py --convtune "$R/report.json" --json "$R/cudnn.json" 2>&1 | tee "$R/compare.txt"
pack
echo "== SASS of the wgmma winners"
timeout 120 scripts/sass-check.sh "$R/tuned.toml" "$BIN" > "$R/sass.txt" 2>&1; tail -1 "$R/sass.txt"
pack
fi

if [ -n "${SCALE:-}" ] && stage scale; then
  echo "== scaling: $SCALE on one GPU, then on all GPUs (exhaustive order, budget 16: same candidates)"
  for devs in 0 all; do
    start=$(date +%s.%N)
    "$BIN" --problems "$SCALE" --devices "$devs" --strategy exhaustive --budget 16 --db "$R/scale-$devs.toml" \
      --journal "$R/scale-$devs.jsonl" --quiet > "$R/scale-$devs.log" 2>&1
    end=$(date +%s.%N)
    n=$(cat "$R"/scale-$devs.jsonl* | wc -l)
    python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); print(f'devices={sys.argv[3]}: {sys.argv[4]} candidates in {s:.1f} s = {int(sys.argv[4])/s:.2f} candidates/s')" "$start" "$end" "$devs" "$n" | tee -a "$R/scale.txt"
  done
  python3 - "$R" <<'PY' | tee -a "$R/scale.txt"
import json, glob, sys
r = sys.argv[1]
def load(pat):
    out = {}
    for f in glob.glob(f"{r}/{pat}"):
        for l in open(f):
            if l.strip():
                j = json.loads(l); out[(j["problem_key"], j["config"])] = j.get("time_us")
    return out
a, b = load("scale-0.jsonl*"), load("scale-all.jsonl*")
print(f"same candidates evaluated on 1 and on all GPUs: {set(a) == set(b)} ({len(a)} vs {len(b)})")
PY
  pack
fi

if [ -n "${RECORD:-}" ] && stage record; then
  echo "== exhaustive recordings of $RECORD over search-spaces/nvidia-replay.toml"
  timeout "${RECORD_SECS:-200}" "$BIN" --problems "$RECORD" --strategy exhaustive --space search-spaces/nvidia-replay.toml \
    --devices "${DEVICES:-0}" --db "$R/record.toml" --journal "$R/record.jsonl" --quiet > "$R/record.log" 2>&1
  cat "$R"/record.jsonl* > "$R/record-all.jsonl"  # one journal per GPU with DEVICES=all
  python3 scripts/journal-to-recording.py "$R/record-all.jsonl" "$R/recordings" --arch sm_90 \
    --device "$(head -2 "$R/gpu.txt" | tail -1 | cut -d, -f1,2)"
  pack
fi
cp "$R/compare.txt" "$R/selfcheck.log" "$OUT/" 2>/dev/null
echo "== done"
