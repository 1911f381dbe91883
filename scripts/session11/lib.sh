# Sourced by the session-11 device calls from the repo root: unpacks the carried build
# (scripts/session5/unpack.sh), names it B, and gives `el` (seconds since start) and `say`
# (print and append to $OUT/summary.txt).
. scripts/session5/unpack.sh
B=$PWD/target/release/convtune
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
S=$OUT/summary.txt; : > "$S"
say() { echo "$*" | tee -a "$S"; }
# WHEEL_SITE: where same_harness installs the wheel (PYTHONPATH for other scripts that need it).
WHEEL_SITE=/tmp/site
# same_harness SECONDS LINES [DB]: installs the carried wheel (.whl/) and runs
# scripts/same-harness.py on DB (default the shipped database; outputs $OUT/same.{json,log}, or
# $OUT/same-NAME.{json,log} for another DB NAME.toml), printing the log's last LINES lines.
same_harness() {
  local site=$WHEEL_SITE db=${3:-tuned-db/sm_90.toml} tag=same
  [ -n "${3:-}" ] && tag=same-$(basename "$3" .toml)
  if python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1; then
    PYTHONPATH="$site" timeout "$1" python3 scripts/same-harness.py "$db" --json "$OUT/$tag.json" \
      > "$OUT/$tag.log" 2>&1
    say "rc=$? $(el)"; grep -v Warning "$OUT/$tag.log" | tail -"$2" | cut -c1-200 | tee -a "$S"
  else
    say "wheel not installed: $(tail -2 "$OUT/pip.log")"
  fi
}
# python_check SUITE SECONDS: installs the carried wheel (.whl/) and runs
# scripts/python-gpu-check.py on SUITE (five iterations; $OUT/python.{json,log}), printing its
# failures and its suite, torch and kept-zero lines.
python_check() {
  python3 -m pip install --quiet --no-deps --no-index --target "$WHEEL_SITE" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
  PYTHONPATH="$WHEEL_SITE" timeout "$2" python3 scripts/python-gpu-check.py "$1" \
    --iters 5 --json "$OUT/python.json" > "$OUT/python.log" 2>&1
  say "rc=$? $(el)"; grep -E "^(FAIL|ERROR)|kept-zero|suite problems|torch" "$OUT/python.log" | cut -c1-300 | tee -a "$S"
}
# tune_list DIR SECONDS: tunes DIR/problems.txt (default strategy and space, `--time 10` a problem,
# `--time-total SECONDS`) into DIR/{db.toml,j.jsonl,report.json,tune.log} and prints each
# problem's summary line.
tune_list() {
  timeout $(( $2 + 15 )) "$B" --problems "$1/problems.txt" --arch sm_90 --time 10 --time-total "$2" \
    --db "$1/db.toml" --journal "$1/j.jsonl" --report "$1/report.json" > "$1/tune.log" 2>&1
  say "tune rc=$? $(el)"
  grep "^summary" "$1/tune.log" | cut -c1-220 | tee -a "$S"
  rm -f "$1"/*.lock
}
# gpu_lib_tests: the library's GPU tests from the carried test binary (.carry/libtests.xz), output
# in $OUT/libtests.log, the result lines in the summary.
gpu_lib_tests() {
  xz -dc .carry/libtests.xz > /tmp/libtests && chmod +x /tmp/libtests
  timeout 120 /tmp/libtests runtime::gpu_tests runtime::ptxas --test-threads=1 --nocapture > "$OUT/libtests.log" 2>&1
  say "rc=$? $(el)"; grep -E "test result|panicked|FAILED" "$OUT/libtests.log" | cut -c1-200 | tee -a "$S"
}
# db_problems REGEX: the problems of the shipped database that match REGEX, one a line (the
# home device's entries: scripts/lib/tuned_db.py).
db_problems() {
  python3 - "$1" <<'PY'
import re, sys
sys.path.insert(0, "scripts/lib")
from tuned_db import load
for e in load("tuned-db/sm_90.toml")[2]:
    if re.search(sys.argv[1], e["problem"]):
        print(e["problem"])
PY
}
# db_subset REGEX OUT: writes the shipped database's entries (the home device's) whose config
# matches REGEX to OUT (a database of its own, header count fixed) and prints how many.
db_subset() {
  python3 - "$1" "$2" <<'PY'
import re, sys
sys.path.insert(0, "scripts/lib")
from tuned_db import load, rewrite
head, blocks, _ = load("tuned-db/sm_90.toml")
kept = [b for b in blocks if re.search(r'^config = ".*' + sys.argv[1], b, re.M)]
open(sys.argv[2], "w").write(rewrite(head, kept))
print(len(kept))
PY
}
# tries_twice PROBLEMS TRIES DIR SECONDS: times TRIES (a --try file) on PROBLEMS twice with
# `--full-timing` (each pass at most SECONDS) into DIR/pass-{1,2}.{toml,jsonl,log}, prints each
# pass's table, and copies the faster pass's database to DIR/best.toml.
tries_twice() {
  local n; n=$(grep -vc '^#' "$2")
  for pass in 1 2; do
    timeout "$4" "$B" --problems "$1" --arch sm_90 --try "$2" --budget $(( n + 1 )) --time 60 \
      --full-timing --db "$3/pass-$pass.toml" --journal "$3/pass-$pass.jsonl" > "$3/pass-$pass.log" 2>&1
    say "pass $pass rc=$? $(el)"; grep -A$(( n + 1 )) "time us" "$3/pass-$pass.log" | cut -c1-170 | tee -a "$S"
  done
  python3 - "$3" <<'PY'
import shutil, sys, tomllib
d = sys.argv[1]
t = [tomllib.load(open(f"{d}/pass-{p}.toml", "rb"))["entry"][0]["time_us"] for p in (1, 2)]
shutil.copy(f"{d}/pass-{1 if t[0] <= t[1] else 2}.toml", f"{d}/best.toml")
PY
}
# selfcheck_step NAME SECONDS ARGS...: `convtune selfcheck ARGS` into $OUT/selfcheck-NAME.log,
# its verdict lines in the summary.
selfcheck_step() {
  local name=$1 secs=$2
  shift 2
  timeout "$secs" "$B" selfcheck "$@" > "$OUT/selfcheck-$name.log" 2>&1
  say "rc=$? $(el)"; grep -E "^(selfcheck:|FAIL)" "$OUT/selfcheck-$name.log" | tail -8 | tee -a "$S"
}
# selfcheck_red RED: selfcheck_step for the kernels of one split-K reduction, in the built-in
# space and in the Hopper space (its wgmma load paths).
selfcheck_red() {
  selfcheck_step "$1" 80 --red "$1" --configs 3
  selfcheck_step "$1-hopper" 80 --red "$1" --configs 3 --space search-spaces/nvidia-hopper.toml
}
# tune_cost SECONDS OLD_BIN OLD_FOR: scripts/session10/tune-cost-ab.sh, `--time 10`, with this build
# (and OLD_BIN on the problems named in OLD_FOR: ' ' for none), its table and each run's summary
# line in the summary.
tune_cost() {
  BIN=$B OLD_BIN=$2 T=10 OLD_FOR=$3 OUT=$OUT timeout "$1" bash scripts/session10/tune-cost-ab.sh > "$OUT/cost.txt" 2>&1
  say "rc=$? $(el)"; sed -n '/== table/,$p' "$OUT/cost.txt" | tee -a "$S"
  for f in "$OUT"/cost/*.out; do
    echo "$(basename "$f"): $(grep -h '^summary:' "$f" | grep -o 'best.*' | cut -c1-330)"
  done | tee -a "$S"
  rm -rf "$OUT/cost"
}
# Nsight Compute for the diagnostics calls: NCU (the binary, empty when there is none),
# NCU_SECTIONS (what to collect) and NCU_KEEP (a grep -E of the lines worth reading).
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
NCU_SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section MemoryWorkloadAnalysis_Tables --section SchedulerStats"
NCU_KEEP="  [a-zA-Z_].*\(|Duration|Grid Size|Block Size|Cluster Size|Registers Per|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Executed Instructions |Issue Slots Busy|Issued Ipc|Warp Cycles Per Issued|Stall [A-Z]|Bank Conflicts|Tensor|No Eligible|Active Warps Per|Achieved Occupancy|Theoretical Occupancy"
