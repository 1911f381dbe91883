#!/usr/bin/env bash
# Session 11, device call 4 (H200, < 330 s): the search seeded with what `convtune lookup`
# answers even outside the built-in space (tune/device_run.rs start_from). With SHORT_ONLY=1
# (call 5, < 120 s): only the unseen problems' `--time 10` default searches and cuDNN;
# LIST=FILE names other problems (scripts/session11/unseen-more.txt).
#  1. the session-9 tune-cost problems, default strategy and space, `--time 10`, cold
#     codegen cache (scripts/session10/tune-cost-ab.sh with the new build only);
#  2. three problems outside the suite: the lookup's config (the search's first record),
#     a `--time 10` default search, and a `--time 40` search of the Hopper space as the long
#     reference; cuDNN in the same run.
set -uo pipefail
. scripts/session11/lib.sh
if [ -z "${SHORT_ONLY:-}" ]; then
say "== 1 tune-cost $(el)"
BIN=$B OLD_BIN=$B T=10 OLD_FOR=' ' OUT=$OUT timeout 110 bash scripts/session10/tune-cost-ab.sh > "$OUT/cost.txt" 2>&1
say "rc=$? $(el)"; sed -n '/== table/,$p' "$OUT/cost.txt" | tee -a "$S"
rm -rf "$OUT/cost"
fi
say "== 2 unseen $(el)"
LIST=${LIST:-scripts/session11/unseen-problems.txt}
U=$OUT/unseen; mkdir -p "$U"; i=0
while read -r p; do
  i=$((i + 1)); echo "$p" > "$U/p$i.txt"
  "$B" lookup --problem "$p" --arch sm_90 > "$U/lookup$i.txt" 2>&1
  timeout 16 "$B" --problems "$U/p$i.txt" --arch sm_90 --time 10 --db "$U/short$i.toml" \
    --journal "$U/short$i.jsonl" --report "$U/short$i.json" --quiet > "$U/short$i.log" 2>&1
  say "p$i short rc=$? $(el)"
  [ -n "${SHORT_ONLY:-}" ] && continue
  timeout 50 "$B" --problems "$U/p$i.txt" --arch sm_90 --time 40 --space search-spaces/nvidia-hopper.toml \
    --db "$U/long$i.toml" --journal "$U/long$i.jsonl" --report "$U/long$i.json" --quiet > "$U/long$i.log" 2>&1
  say "p$i long rc=$? $(el)"; rm -f "$U"/*.lock
done < "$LIST"
timeout 40 python3 scripts/compare-cudnn.py "$LIST" --json "$U/cudnn.json" > "$U/cudnn.txt" 2>&1
say "cudnn rc=$? $(el)"
python3 - "$U" "$i" <<'PY' | tee -a "$S"
import json, sys
u, count = sys.argv[1], int(sys.argv[2])
cud = {}
try:
    cud = {r["problem"].strip(): r["cudnn_us"] for r in json.load(open(f"{u}/cudnn.json"))["rows"]}
except Exception as e:
    print("cudnn:", e)
ratios = []
print(f"{'problem':70} {'cuDNN':>7} {'lookup':>7} {'10 s':>7} {'40 s H':>7}")
for i in range(1, count + 1):
    p = open(f"{u}/p{i}.txt").read().strip()
    first = best_s = best_l = float("nan")
    try:
        for line in open(f"{u}/short{i}.jsonl"):
            j = json.loads(line)
            if not j["config"].startswith("@"):
                first = j.get("time_us") or float("nan"); break
        best_s = json.load(open(f"{u}/short{i}.json"))[0]["time_us"]
    except Exception as e:
        print("short", i, e)
    try:
        best_l = json.load(open(f"{u}/long{i}.json"))[0]["time_us"]
    except Exception as e:
        print("long", i, e)
    c = next((v for k, v in cud.items() if k == p), float("nan"))
    print(f"{p[:70]:70} {c:7.1f} {first:7.1f} {best_s:7.1f} {best_l:7.1f}")
    if c == c and best_s == best_s:
        ratios.append(c / best_s)
if ratios:
    import math
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"geomean cuDNN / 10 s default search: {g:.3f} over {len(ratios)} (min {min(ratios):.3f})")
PY
tar czf "$OUT/unseen.tgz" -C "$OUT" unseen 2>/dev/null && rm -rf "$U"
say "== done $(el)"
