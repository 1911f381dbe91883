#!/usr/bin/env bash
# Times every entry of a tuned database as it stands — the entry's own config, verified against
# the reference kernel first, no search — and then cuDNN on the same problems in the same run
# (scripts/compare-cudnn.py). With a second binary, each entry is timed with both, alternating
# (an A/B of two builds on the same configs).
#   Usage: scripts/db-vs-cudnn.sh [DB] [BIN] [BIN_B]      (defaults: tuned-db/sm_90.toml, target/release/convtune)
#   Results: $OUT/dbrun/ (report.json, compare.txt, ab.txt with two binaries).
set -uo pipefail
cd "$(dirname "$0")/.."
db=${1:-tuned-db/sm_90.toml}
bins=("${2:-target/release/convtune}")
[ -n "${3:-}" ] && bins+=("$3")
OUT=${OUT:-out}
R=$OUT/dbrun
mkdir -p "$R/spaces"
for b in "${bins[@]}"; do
  [ -f "$(dirname "$b")/libffi.so.8" ] && export LD_LIBRARY_PATH="$(dirname "$b")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
# One problem file and one single-config search space per entry: `convtune space --pin` writes
# the space (so this script needs no list of config fields) and refuses a config that is not
# legal for its problem. The first binary's reading of the config is used for both builds.
n=$(python3 - "$db" "$R/spaces" <<'PY'
import subprocess, sys
sys.path.insert(0, "scripts/lib")
from tuned_db import load
# This GPU's entries where the database holds any, else the home device's.
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.split("\n")[0].strip()
except OSError:
    gpu = None
_, _, entries = load(sys.argv[1], gpu)
for i, e in enumerate(entries):
    open(f"{sys.argv[2]}/p{i}.txt", "w").write(e["problem"] + "\n")
    open(f"{sys.argv[2]}/c{i}.txt", "w").write(e["config"] + "\n")
print(len(entries))
PY
)
arch=$(python3 -c "import sys,tomllib; print(tomllib.load(open(sys.argv[1],'rb'))['header']['arch'])" "$db" 2>/dev/null || echo sm_90)
for ((i = 0; i < n; i++)); do
  "${bins[0]}" space --problem "$(cat "$R/spaces/p$i.txt")" --arch "$arch" --pin "$(cat "$R/spaces/c$i.txt")" \
    > "$R/spaces/s$i.toml" 2>> "$R/errors.txt" || echo "entry $i: config not pinned" | tee -a "$R/errors.txt"
done
echo "db-vs-cudnn: $n entries of $db, ${#bins[@]} build(s)"
for ((i = 0; i < n; i++)); do
  for j in "${!bins[@]}"; do
    "${bins[$j]}" --problems "$R/spaces/p$i.txt" --space "$R/spaces/s$i.toml" --strategy exhaustive \
      --db "$R/db$j.toml" --journal "$R/j$j.jsonl" --report "$R/report$j.json" --quiet >> "$R/log$j.txt" 2>&1 \
      || echo "entry $i with ${bins[$j]}: exit $?" | tee -a "$R/errors.txt"
  done
done
if [ "${#bins[@]}" -eq 2 ]; then
  python3 - "$R" <<'PY' | tee "$R/ab.txt"
import json, sys
r = sys.argv[1]
a, b = ({x["problem"]: x["time_us"] for x in json.load(open(f"{r}/report{j}.json"))} for j in (0, 1))
for p in a:
    if p in b:
        print(f"{a[p]:9.1f} {b[p]:9.1f}  A/B {a[p] / b[p]:.3f}  {p}")
PY
fi
last=$(( ${#bins[@]} - 1 ))
timeout 300 python3 scripts/compare-cudnn.py --convtune "$R/report$last.json" --json "$R/cudnn.json" > "$R/compare.txt" 2>&1
tail -n "$((n + 3))" "$R/compare.txt"
rm -f "$R"/*.lock
