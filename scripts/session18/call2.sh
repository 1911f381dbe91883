#!/usr/bin/env bash
# Session 18, device call 2 (H200, < 300 s): what a multi-phase candidate costs the tuner, base
# build (.carry/convtune-base.xz) against the shared phase body: `--time 10`, default strategy,
# on the 4-phase f32 NCHW 5x5 s3 problem, its one-phase twin (s1, the same sub-GEMM shape), the
# shipped f32 NCHW 3x3 s2 problem, and a bf16 NHWC 3x3 s2 problem outside the suite; then one
# 80 s search of the fwd 3x3 c192 problem the 10 s search fell short on (issue 16), beside the
# new build's 10 s one.
#   Usage (repo root, on the device): [LIMIT=290] bash scripts/session18/call2.sh
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-290} - $(date +%s) + t0 )); }
A=target/base/convtune
T=/tmp/tune; mkdir -p "$T"
# tune NAME BIN SECONDS PROBLEM: one search, its wall time and the summary's counts.
tune() {
  local s0; s0=$(date +%s%N)
  timeout $(( $3 + 30 )) "$2" --problem "$4" --arch sm_90 --time "$3" --db "$T/db-$1.toml" \
    --journal "$T/j-$1.jsonl" --report "$T/r-$1.json" > "$T/log-$1.txt" 2>&1
  local rc=$? w=$(( ($(date +%s%N) - s0) / 1000000 ))
  say "$1 rc=$rc wall ${w} ms: $(grep -h '^summary' "$T/log-$1.txt" | grep -o 'best .*' | cut -c1-170)"
}
say "== 1 tuner cost, --time 10 $(el)"
i=0
while read -r p; do
  say "p$i: $p"
  for v in base new; do
    bin=$B; [ $v = base ] && bin=$A
    tune "$v-p$i" "$bin" 10 "$p"
  done
  i=$((i + 1))
done <<'P'
conv -F 2 -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3
conv -F 2 -n 16 -c 64 -H 16 -W 16 -k 64 -y 5 -x 5 -p 2 -q 2 -u 1 -v 1
conv -F 2 -n 16 -c 128 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2
convbfp16 -F 2 -n 16 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 --layout NHWC
P
if [ "$(left)" -gt 110 ]; then
  say "== 2 10 s vs 80 s, fwd 3x3 c192 $(el)"
  P="convbfp16 -F 1 -n 32 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 --layout NHWC"
  tune short "$B" 10 "$P"
  tune long "$B" $(( $(left) - 25 < 80 ? $(left) - 25 : 80 )) "$P"
fi
rm -f "$T"/*.lock
say "== done $(el)"
