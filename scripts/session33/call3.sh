#!/usr/bin/env bash
# Session 33, device call 3 (about 60 s; carry .carry, convtune.xz = this build, convtune-base.xz
# = 186c1a4): is the cost model right to rank split-K fix-up and stream-K shapes first for the
# bf16 7x7 backward weight (c512 -> 2048, n64; tests/wave_rank.rs) now that they need no
# counter-clearing launch? The tuned winner (64x128, sk=1, 8 stages), the model's first 12
# shapes and a 128x128 sk=2 atomic twin, timed by both builds, alternating, twice.
#   Usage (repo root, on the device): bash scripts/session33/call3.sh
#   Results: $OUT/summary.txt, $OUT/w7-*.log (the tuner's tables), $OUT/w7-*.jsonl
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
D=scripts/session33/w7
for pass in 1 2; do
  for b in new base; do
    bin=$B; [ $b = base ] && bin=target/base/convtune
    timeout 60 "$bin" --problems $D/problems.txt --arch sm_90 --try $D/tries.txt --budget 15 --time 40 \
      --full-timing --db /tmp/w7-$b-$pass.toml --journal "$OUT/w7-$b-$pass.jsonl" > "$OUT/w7-$b-$pass.log" 2>&1
    say "$b pass $pass rc=$? $(el)"
  done
done
python3 - "$OUT" <<'PY' | tee -a "$S"
import glob, json, statistics, sys
t = {}
for f in glob.glob(f"{sys.argv[1]}/w7-*.jsonl"):
    b = f.rsplit("/", 1)[1].split("-")[1]
    for line in open(f):
        r = json.loads(line)
        if r.get("time_us"):
            t.setdefault((r["config"], b), []).append(r["time_us"])
configs = sorted({c for c, _ in t}, key=lambda c: min(t.get((c, "new"), [1e9])))
print(f"{'new us':>8} {'base us':>8}  config (min of the passes)")
for c in configs:
    n, o = min(t.get((c, "new"), [float("nan")])), min(t.get((c, "base"), [float("nan")]))
    print(f"{n:8.2f} {o:8.2f}  {c}")
PY
