#!/usr/bin/env bash
# Session 26, device call 3 (H200): the lookup's heuristic from the tuner's own enumeration and
# the exact entry compiled at once (build 6a3d4c8), against the session's starting build
# (b324c7b): time to the first candidate (scripts/session26/first.sh, `--time 5`, 2 rounds,
# six problems), then a three-problem list with this build (`--time 4` each: the worker is
# started once and kept; each problem's summary line).
#   Usage (repo root, on the device): bash scripts/session26/call3.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 first candidate, new and old, $(el)"
T=5 REPS=2 OUT=$OUT timeout 300 bash scripts/session26/first.sh 2>&1 | tee -a "$S"
tar czf "$OUT/first.tgz" -C "$OUT" first && rm -rf "$OUT/first"
say "== 2 a list of three, --time 4 $(el)"
mkdir -p "$OUT/list"
cat > "$OUT/list/problems.txt" <<'P'
convbfp16 -n 32 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC
convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC
conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2
P
/usr/bin/time -f "wall %e s" timeout 40 "$B" --problems "$OUT/list/problems.txt" --time 4 --db "$OUT/list/db.toml" \
  --journal "$OUT/list/j.jsonl" --report "$OUT/list/report.json" > "$OUT/list/tune.log" 2>&1
say "rc=$? $(el) $(tail -1 "$OUT/list/tune.log")"
grep "^summary" "$OUT/list/tune.log" | cut -c1-400 | tee -a "$S"
say "== done $(el)"
