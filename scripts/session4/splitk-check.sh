#!/usr/bin/env bash
# Issue 14 item 1 on the GPU: split-K reduced inside the kernel (red=fixup) against f32 atomics
# plus a finishing launch (red=atomic), on the bwd-weight problems of the suite and two of the
# issue's shapes (3x3 on 14x14, 1x1 stride 2), with cuDNN in the same run. About 4 minutes.
#   1. `convtune selfcheck --red fixup` (and `--red atomic`): sampled split-K kernels of the
#      sweep's bwd-weight problems verified against the reference kernel.
#   2. Per problem, the same small space (three wgmma tiles, sk 1..64) tuned exhaustively
#      twice: red = ["atomic"] and red = ["fixup"]; the best of each, and per split the best
#      time of each mode (from the journals).
#   3. cuDNN on the same problems (scripts/compare-cudnn.py), ratios for both modes.
#   Usage: scripts/session4/splitk-check.sh [BIN]     (default target/release/convtune)
#   Results: $OUT/splitk/ (selfcheck-*.txt, report-{atomic,fixup}.json, journals, summary.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-target/release/convtune}
OUT=${OUT:-out}
R=$OUT/splitk
mkdir -p "$R"
[ -f "$(dirname "$BIN")/libffi.so.8" ] && export LD_LIBRARY_PATH="$(dirname "$BIN")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
t0=$(date +%s)

# 1. Self-check of the knob's values (sweep problems are small: seconds each).
for red in fixup atomic; do
  timeout 75 "$BIN" selfcheck --red "$red" --configs 2 > "$R/selfcheck-$red.txt" 2>&1
  echo "selfcheck --red $red: exit $? -- $(tail -n 1 "$R/selfcheck-$red.txt")"
done

# 2. The problems: the suite's bwd-weight lines and two shapes of the issue.
{
  grep -h -- "-F 4" scripts/suites/all.txt | grep -v '^#'
  echo "convbfp16 -n 32 -c 256 -H 14 -W 14 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
  echo "convbfp16 -n 32 -c 256 -H 28 -W 28 -k 512 -y 1 -x 1 -u 2 -v 2 -F 4 --layout NHWC"
} | sort -u > "$R/problems.txt"
echo "$(wc -l < "$R/problems.txt") bwd-weight problems"
for red in atomic fixup; do
  cat > "$R/space-$red.toml" <<TOML
name = "splitk-$red"
vendor = "nvidia"
[params]
block_m = [64, 128]
block_n = [128]
block_k = [64]
warp_m = [64]
warp_n = [64, 128]
stages = [3]
vec_a = [8]
vec_b = [8]
vec_c = [8]
lds = ["swz"]
split_k = [1, 4, 8, 16, 32, 64]
raster = [1]
mma = ["wg"]
red = ["$red"]
[constraints]
max_threads = 1024
min_warps = 1
max_warps = 32
TOML
  rm -f "$R/db-$red.toml" "$R/journal-$red.jsonl" "$R/report-$red.json"
  timeout 100 "$BIN" --problems "$R/problems.txt" --space "$R/space-$red.toml" --strategy exhaustive \
    --db "$R/db-$red.toml" --journal "$R/journal-$red.jsonl" --report "$R/report-$red.json" --quiet \
    > "$R/tune-$red.txt" 2>&1
  echo "tune red=$red: exit $? after $(( $(date +%s) - t0 )) s"
done

# 3. cuDNN once, then both modes' ratios and the per-split table.
timeout 90 python3 scripts/compare-cudnn.py "$R/problems.txt" --convtune "$R/report-atomic.json" \
  --json "$R/cudnn.json" > "$R/compare-atomic.txt" 2>&1
python3 - "$R" <<'PY' | tee "$R/summary.txt"
import json, math, re, sys
r = sys.argv[1]
def load(path):
    try:
        return json.load(open(path))
    except Exception as e:
        print(f"(no {path}: {e})")
        return []
def norm(line):
    # The canonical keys the tuner reports and the MIOpenDriver lines of the problem file
    # differ in spelling; compare the numbers of the flags both have.
    f = dict(p="0", q="0", u="1", v="1")
    f.update(re.findall(r"-([nckHWyxpquvF]) (\d+)", line))
    return (line.split()[0], tuple(sorted(f.items())))
cj = load(f"{r}/cudnn.json")
cud = {norm(x["problem"]): x["cudnn_us"] for x in cj.get("rows", [])} if isinstance(cj, dict) else {}
best = {m: {norm(x["problem"]): x for x in load(f"{r}/report-{m}.json")} for m in ("atomic", "fixup")}
print(f"{'problem':<84} {'cuDNN':>7} {'atomic':>7} {'fixup':>7} {'c/atom':>6} {'c/fix':>6} {'c/best':>6}  best configs")
logs = {"atomic": [], "fixup": [], "best of both": []}
for key, cu in cud.items():
    a, f = best["atomic"].get(key), best["fixup"].get(key)
    ta = a["time_us"] if a else float("nan")
    tf = f["time_us"] if f else float("nan")
    if a: logs["atomic"].append(math.log(cu / ta))
    if f: logs["fixup"].append(math.log(cu / tf))
    tb = min(t for t in (ta, tf) if t == t) if (a or f) else float("nan")
    if a or f: logs["best of both"].append(math.log(cu / tb))
    name = " ".join(f"{k}{v}" for k, v in key[1]) + " " + key[0]
    print(f"{name:<84} {cu:7.1f} {ta:7.1f} {tf:7.1f} {cu/ta:6.3f} {cu/tf:6.3f} {cu/tb:6.3f}  "
          f"{a['config'] if a else '-'} | {f['config'] if f else '-'}")
for m, l in logs.items():
    if l:
        print(f"geomean cuDNN/convtune, {m}: {math.exp(sum(l)/len(l)):.3f} over {len(l)} problems")
# Per split: the best time of each mode (from the journals).
per = {}
for m in ("atomic", "fixup"):
    try:
        lines = open(f"{r}/journal-{m}.jsonl").read().splitlines()
    except OSError:
        continue
    for line in lines:
        try:
            j = json.loads(line)
        except ValueError:
            continue
        t = j.get("time_us")
        sk = re.search(r"sk=(\d+)", j.get("config", ""))
        if t and sk:
            k = (j["problem_key"], int(sk.group(1)))
            per.setdefault(k, {})
            per[k][m] = min(per[k].get(m, 1e30), t)
print("\nper split (best of the space's tiles): problem | sk | atomic us | fixup us | atomic/fixup")
for (p, sk), v in sorted(per.items()):
    a, f = v.get("atomic"), v.get("fixup")
    ratio = f"{a / f:.3f}" if a and f else "-"
    print(f"{p[:70]:<70} sk={sk:<3} {a or float('nan'):8.1f} {f or float('nan'):8.1f} {ratio}")
PY
echo "splitk-check: $(( $(date +%s) - t0 )) s"
