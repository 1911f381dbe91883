#!/usr/bin/env bash
# Session 33, device call 4 (about 120 s; carry .carry and .whl, this build): issue 13's
# bwd-weight target (bf16 3x3 c256 28² n64 >= 85% of the matmul rate) with split-K shapes that
# fill every SM, now that fix-up and stream-K plans have no counter-clearing launch: the shipped
# winner (120 blocks on 132 SMs) and ten stream-K / fix-up shapes (scripts/session33/bw3/),
# timed twice by the tuner (full timing); the faster pass's winner then in the same harness as
# cuDNN (cold and graph), with the bf16 8192³ matmul rate of the same call.
#   Usage (repo root, on the device): bash scripts/session33/call4.sh
#   Results: $OUT/summary.txt, $OUT/bw3-*.log, $OUT/bw3-*.jsonl, $OUT/same-bw3.*
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
D=scripts/session33/bw3
n=$(grep -vc '^#' $D/tries.txt)
for pass in 1 2; do
  timeout 90 "$B" --problems $D/problems.txt --arch sm_90 --try $D/tries.txt --budget $(( n + 1 )) \
    --time 60 --full-timing --db /tmp/bw3-$pass.toml --journal "$OUT/bw3-$pass.jsonl" > "$OUT/bw3-$pass.log" 2>&1
  say "pass $pass rc=$? $(el)"; grep -A14 "time us" "$OUT/bw3-$pass.log" | cut -c1-150 | tee -a "$S"
done
best=$(python3 - <<'PY'
import tomllib
e = [tomllib.load(open(f"/tmp/bw3-{p}.toml", "rb"))["entry"][0] for p in (1, 2)]
print(f"/tmp/bw3-{1 if e[0]['time_us'] <= e[1]['time_us'] else 2}.toml")
PY
)
cp "$best" /tmp/bw3.toml
same_harness 60 8 /tmp/bw3.toml
say "== done $(el)"
