#!/usr/bin/env bash
# Session 18, device call 4 (H200, < 590 s), the final build:
#  0. the library's GPU tests (carried .carry/libtests.xz);
#  1. `--l2 warm`: four layers re-tuned under the warm protocol (default strategy, `--time 20`,
#     into a copy of the shipped database, so each search times the shipped cold-tuned config
#     first, warm); then scripts/same-harness.py (carried wheel) on those four entries of the
#     warm database and of the shipped one, graph and cold protocols, cuDNN in the same process;
#  2. 10 s against 80 s on fwd bf16 3x3 c192 35x35 n32, each run with empty caches of its own
#     (convtune's codegen cache and the driver's JIT cache), so neither starts from the
#     other's compiles;
#  3. the shipped database against cuDNN (scripts/same-harness.py, every entry).
#   Usage (repo root, on the device): [LIMIT=580] bash scripts/session18/call4.sh
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-580} - $(date +%s) + t0 )); }
say "== 0 gpu lib tests (the warm protocol's check among them) $(el)"
gpu_lib_tests
ONLY='^convbfp16 -F (1 -n 64 -c (1024 -H 14|512 -H 7|256 -H 28 -W 28 -k 256 -y 3 .* -g 1 )|2 -n 16 -c 2048)'
W=$OUT/warm; mkdir -p "$W"
cp tuned-db/sm_90.toml "$W/warm.toml"
db_problems "$ONLY" > "$W/problems.txt"
say "== 1a tune --l2 warm --time 20: $(wc -l < "$W/problems.txt") problems $(el)"
timeout 140 "$B" --problems "$W/problems.txt" --arch sm_90 --l2 warm --time 20 --db "$W/warm.toml" \
  --journal /tmp/warm.jsonl --report "$W/report.json" > /tmp/warm.log 2>&1
say "rc=$? $(el)"; grep -h '^summary' /tmp/warm.log | cut -c1-250 | tee -a "$S"
rm -f "$W"/*.lock
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1 \
  || say "wheel not installed: $(tail -2 "$OUT/pip.log")"
for db in "$W/warm.toml" tuned-db/sm_90.toml; do
  say "== 1b same harness, $(basename "$db"), the four entries $(el)"
  PYTHONPATH="$site" timeout 90 python3 scripts/same-harness.py "$db" --only "$ONLY" \
    --json "$W/same-$(basename "$db" .toml).json" > "$W/same-$(basename "$db" .toml).log" 2>&1
  say "rc=$? $(el)"; grep -v Warning "$W/same-$(basename "$db" .toml).log" | tail -8 | cut -c1-200 | tee -a "$S"
done
say "== 2 10 s vs 80 s, empty caches each $(el)"
P="convbfp16 -F 1 -n 32 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 --layout NHWC"
for t in 10 80; do
  [ "$(left)" -lt $(( t + 150 )) ] && { say "skipped $t s: $(left) s left"; continue; }
  c=/tmp/cache-$t; rm -rf "$c"; mkdir -p "$c"
  CONVTUNE_CODEGEN_CACHE=$c/codegen CUDA_CACHE_PATH=$c/cuda timeout $(( t + 30 )) "$B" --problem "$P" \
    --arch sm_90 --time $t --db /tmp/db-$t.toml --journal /tmp/j-$t.jsonl > /tmp/log-$t.txt 2>&1
  say "$t s rc=$? $(el): $(grep -h '^summary' /tmp/log-$t.txt | grep -o 'best .*' | cut -c1-230)"
done
if [ "$(left)" -gt 100 ]; then
  say "== 3 same harness, the shipped database $(el)"
  PYTHONPATH="$site" timeout $(( $(left) - 10 )) python3 scripts/same-harness.py tuned-db/sm_90.toml \
    --json "$OUT/same.json" > "$OUT/same.log" 2>&1
  say "rc=$? $(el)"; grep -v Warning "$OUT/same.log" | tail -6 | cut -c1-200 | tee -a "$S"
else
  say "== 3 skipped: $(left) s left"
fi
say "== done $(el)"
