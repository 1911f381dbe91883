#!/usr/bin/env bash
# Session 24 device call 5 (H200): non-power-of-two split-K for bwd-weight. The three bf16
# bwd-weight layers of scripts/session24/wrw3.txt tuned for SECS each with the Hopper space
# whose split_k list adds 3, 5, 7, 11, 22, 44 (scripts/session24/hopper-oddsk.toml), the
# shipped entry timed first in the same run (the report's before_us), then again with the
# shipped Hopper space for the same time (the control), then cuDNN on the winners.
#   Usage (repo root, on the device): bash scripts/session24/call5.sh SECS
set -uo pipefail
. scripts/session11/lib.sh
grep -v '^#' scripts/session24/wrw3.txt > /tmp/wrw3.txt
for sp in oddsk control; do
  space=scripts/session24/hopper-oddsk.toml; [ $sp = control ] && space=search-spaces/nvidia-hopper.toml
  say "== $sp $(el)"
  timeout $(( 3 * $1 + 60 )) "$B" --problems /tmp/wrw3.txt --arch sm_90 --space "$space" --time "$1" \
    --db "$OUT/$sp.toml" --journal "$OUT/j-$sp.jsonl" --report "$OUT/r-$sp.json" > "$OUT/tune-$sp.log" 2>&1
  say "rc=$? $(el)"
  python3 - "$OUT/r-$sp.json" <<'PY' | tee -a "$S"
import json, sys
for r in json.load(open(sys.argv[1])):
    print(f"  shipped {r.get('before_us', 0):7.1f} us  found {r['time_us']:7.1f} us  {r['config']}  {r['problem'][:60]}")
PY
done
rm -f "$OUT"/*.lock
timeout 120 python3 scripts/compare-cudnn.py --convtune "$OUT/r-oddsk.json" > "$OUT/cudnn.txt" 2>&1
say "cudnn rc=$? $(el)"; tail -6 "$OUT/cudnn.txt" | cut -c1-200 | tee -a "$S"
say "== done $(el)"
