#!/usr/bin/env bash
# Session 26, device call 5 (H200): the depthwise backward-weight kernel's block sums by
# shared-memory atomics (this build, 083ade7) against lane after lane (6f51100, .carry/convtune-base.xz).
#  1. `convtune selfcheck` over scripts/session26/dw-wgrad.txt, a space of only `mma=dw`;
#  2. A/B on the same configs: scripts/session26/dw-tries.txt (call 4's three fastest dw
#     configs a problem), each build timing exactly those (`--try`, `--budget 4`: the lookup's
#     config, then the three), two rounds alternating which build goes first;
#  3. the eleven problems tuned `--time 10` with this build, cuDNN in the same call.
#   Usage (repo root, on the device): bash scripts/session26/call5.sh
set -uo pipefail
. scripts/session11/lib.sh
L=scripts/session26/dw-wgrad.txt
sed 's/^mma = \[[^]]*\]/mma = ["dw"]/' search-spaces/nvidia.toml > /tmp/dw-space.toml
say "== 1 selfcheck, mma=dw only $(el)"
selfcheck_step dw 200 --problems "$L" --space /tmp/dw-space.toml --configs 6
say "== 2 A/B on the same configs $(el)"
mkdir -p "$OUT/ab"
grep -v '^#' scripts/session26/dw-tries.txt | cut -d'|' -f1 | sed 's/ *$//' | sort -u > "$OUT/ab/problems.txt"
for rep in 1 2; do
  order="new base"; [ $rep = 2 ] && order="base new"
  for b in $order; do
    bin=$B; [ $b = base ] && bin=$PWD/target/base/convtune
    timeout 120 "$bin" --problems "$OUT/ab/problems.txt" --arch sm_90 --try scripts/session26/dw-tries.txt \
      --budget 4 --db "$OUT/ab/$b$rep.toml" --journal "$OUT/ab/$b$rep.jsonl" > "$OUT/ab/$b$rep.log" 2>&1
    say "$b round $rep rc=$? $(el)"
  done
done
python3 - "$OUT/ab" <<'PY' | tee -a "$S"
import json, math, sys, collections
d = sys.argv[1]
t = collections.defaultdict(dict)
for b in ("new", "base"):
    for rep in (1, 2):
        for l in open(f"{d}/{b}{rep}.jsonl"):
            j = json.loads(l)
            if "mma=dw" in j["config"] and j.get("time_us"):
                t[(j["problem_key"], j["config"])].setdefault(b, []).append(j["time_us"])
logs = []
for (p, c), v in sorted(t.items()):
    if "new" in v and "base" in v:
        n, o = min(v["new"]), min(v["base"])
        logs.append(math.log(o / n))
        print(f"{o:8.2f} {n:8.2f} {o / n:6.3f}  {c[3:70]}  {p[:50]}")
print(f"geomean base/new over {len(logs)} configs: {math.exp(sum(logs) / max(len(logs), 1)):.3f}")
PY
say "== 3 tune, --time 10 each, and cuDNN $(el)"
mkdir -p "$OUT/new"
grep -v '^#' "$L" > "$OUT/new/problems.txt"
timeout 170 "$B" --problems "$OUT/new/problems.txt" --arch sm_90 --time 10 --db "$OUT/new/db.toml" \
  --journal "$OUT/new/j.jsonl" --report "$OUT/new/report.json" > "$OUT/new/tune.log" 2>&1
say "rc=$? $(el)"
grep "^summary" "$OUT/new/tune.log" | sed 's/ -u 1 -v 1 -l 1 -j 1//; s/(\([0-9]* screened\).*//' | cut -c1-260 | tee -a "$S"
timeout 120 python3 scripts/compare-cudnn.py "$OUT/new/problems.txt" --convtune "$OUT/new/report.json" \
  --json "$OUT/new/cudnn.json" > "$OUT/new/cudnn.log" 2>&1
say "rc=$? $(el)"; grep -v Warning "$OUT/new/cudnn.log" | tail -14 | cut -c1-220 | tee -a "$S"
tar czf "$OUT/runs.tgz" -C "$OUT" ab new && rm -rf "$OUT/ab" "$OUT/new"
say "== done $(el)"
