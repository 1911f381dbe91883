#!/usr/bin/env bash
# Session 12, device call 2 (H200, < 420 s): the output check on the GPU (runtime/gpu_compare.rs)
# and the reference timed once, against the session's starting build (target/base/convtune),
# cuDNN in the same run.
#  1. the library's GPU tests (carried test binary .carry/libtests.xz): the measurer's outcomes
#     (right, unwritten, wrong, non-finite) through the GPU check;
#  2. `convtune selfcheck` (the built-in sweep: every direction and type) with the GPU check;
#  3. scripts/session10/tune-cost-ab.sh, `--time 10`, both builds: first candidate, rate and
#     the per-stage summary;
#  4. cuDNN on the tune-cost problems.
#   Usage (repo root, on the device): bash scripts/session12/call2.sh
set -uo pipefail
. scripts/session11/lib.sh
OLD=$PWD/target/base/convtune
say "== 1 gpu lib tests $(el)"
xz -dc .carry/libtests.xz > /tmp/libtests && chmod +x /tmp/libtests
timeout 120 /tmp/libtests runtime::gpu_tests --test-threads=1 > "$OUT/libtests.log" 2>&1
say "rc=$?"; grep -E "^test |test result|panicked" "$OUT/libtests.log" | tee -a "$S"
say "== 2 selfcheck $(el)"
timeout 150 "$B" selfcheck > "$OUT/self.log" 2>&1
say "rc=$?"; grep -E "^selfcheck|FAIL|checked on the CPU" "$OUT/self.log" | tail -8 | tee -a "$S"
say "== 3 tune-cost A/B $(el)"
BIN=$B OLD_BIN=$OLD T=10 OLD_FOR='fwd-3x3 fwd-1x1 bwdw-3x3' OUT=$OUT timeout 150 bash scripts/session10/tune-cost-ab.sh > "$OUT/cost.txt" 2>&1
say "rc=$? $(el)"; sed -n '/== table/,$p' "$OUT/cost.txt" | tee -a "$S"
rm -rf /tmp/cost; tar xzf "$OUT/tune-cost-ab.tgz" -C /tmp 2>/dev/null
for f in /tmp/cost/*.out; do echo "$(basename "$f"): $(grep -h '^summary:' "$f" | grep -o 'evaluated.*')"; done | tee -a "$S"
grep -h "checked on the CPU" /tmp/cost/*.err | head -3 | tee -a "$S"
say "== 4 cuDNN $(el)"
grep -o '"conv[^"]*"' scripts/session10/tune-cost-ab.sh | tr -d '"' > "$OUT/cost-problems.txt"
timeout 60 python3 scripts/compare-cudnn.py "$OUT/cost-problems.txt" --json "$OUT/cudnn.json" > "$OUT/cudnn.txt" 2>&1
say "rc=$? $(el)"; tail -6 "$OUT/cudnn.txt" | tee -a "$S"
say "== done $(el)"
