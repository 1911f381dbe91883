#!/usr/bin/env bash
# Session 34, device call 2 (< 590 s, an H200; carry .carry with convtune.xz = this build and
# convtune-base.xz = cba54ca, and .whl = this build's wheel): the aligned stream-K cut in its
# balanced form (heads cut at the same K offsets in every tile, numbered as the tile-major cut
# numbers them; the tails walked tile-major by the blocks left over; taken only where it is
# about as balanced as the tile-major cut).
#  1. `convtune selfcheck --red stream` (built-in space and the Hopper space).
#  2. A/B (scripts/ab-builds.sh, alternating, both orders) of the shipped red=stream entries.
#  3. Issue 13's bwd-weight 3x3 c256: scripts/session34/bw3/tries.txt timed by this build
#     (full timing), the winner in the same harness as cuDNN (cold and graph) with the bf16
#     matmul rate of the same call.
#  4. Re-tune (`--time 10`, what is left of the call in total) the shipped non-depthwise
#     bwd-weight and red=stream entries of at least 25 us, slowest first: stream-K's aligned
#     cut is new in their space. Each search measures the shipped config first. Then cuDNN on
#     the same problems. Merge afterwards with `convtune db merge`.
#   Usage (repo root, on the device): bash scripts/session34/call2.sh (RETUNE=0: steps 1-3;
#   CALL_S: the seconds the whole call may take, default 545)
#   Results: $OUT/summary.txt, $OUT/selfcheck-*.log, $OUT/ab.txt, $OUT/same-bw3.*, $OUT/retune.tgz
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 selfcheck $(el)"
selfcheck_red stream
say "== 2 A/B shipped red=stream entries $(el)"
db_subset "red=stream" /tmp/stream.toml
timeout 120 bash scripts/ab-builds.sh /tmp/stream.toml '' new=$B base=target/base/convtune > "$OUT/ab.txt" 2>&1
say "rc=$? $(el)"; tail -17 "$OUT/ab.txt" | cut -c1-160 | tee -a "$S"
rm -rf "$OUT/ab"
say "== 3 bw3 $(el)"
D=scripts/session34/bw3
n=$(grep -vc '^#' $D/tries.txt)
timeout 80 "$B" --problems $D/problems.txt --arch sm_90 --try $D/tries.txt --budget $(( n + 1 )) \
  --time 60 --full-timing --db /tmp/bw3.toml --journal "$OUT/bw3.jsonl" > "$OUT/bw3.log" 2>&1
say "rc=$? $(el)"; grep -A9 "time us" "$OUT/bw3.log" | cut -c1-150 | tee -a "$S"
same_harness 70 8 /tmp/bw3.toml
[ "${RETUNE:-1}" = 0 ] && { say "== done (no retune) $(el)"; exit 0; }
say "== 4 retune $(el)"
R=/tmp/retune; mkdir -p $R
python3 - > $R/problems.txt <<'PY'
import re, tomllib
es = []
for e in tomllib.load(open("tuned-db/sm_90.toml", "rb"))["entry"]:
    p, c = e["problem"], e["config"]
    dw = re.search(r"-c (\d+) .* -g \1 -I", p)
    if not dw and ("-F 4" in p or "red=stream" in c) and e["time_us"] >= 25:
        es.append((e["time_us"], p))
for _, p in sorted(es, reverse=True):
    print(p)
PY
left=$(( ${CALL_S:-545} - $(date +%s) + t0 ))
say "$(wc -l < $R/problems.txt) problems, ${left} s"
tune_list $R $left
say "-- cuDNN $(el)"
timeout 35 python3 scripts/compare-cudnn.py $R/problems.txt --convtune $R/report.json --json $R/cudnn.json > $R/cudnn.log 2>&1
say "rc=$? $(el)"; grep -v Warning $R/cudnn.log | tail -3 | cut -c1-200 | tee -a "$S"
tar czf "$OUT/retune.tgz" -C /tmp retune
say "== done $(el)"
