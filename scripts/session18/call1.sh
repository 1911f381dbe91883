#!/usr/bin/env bash
# Session 18, device call 1 (H200, < 590 s): the shared phase body (one GEMM body for every
# phase of a one-launch strided bwd-data kernel, constants picked at run time), checked and
# measured against the session's base build (.carry/convtune-base.xz).
#  1. the library's GPU tests (carried test binary .carry/libtests.xz);
#  2. `convtune selfcheck --configs 2` (the sweep) and `--problems scripts/session18/strided.txt
#     --configs 8` (strided bwd-data, every dtype and layout, uncovered pixels, groups);
#  3. A/B of the two builds on the shipped strided bwd-data entries (scripts/ab-builds.sh);
#  4. what a multi-phase candidate costs the tuner: `--time 10`, default strategy, on the
#     4-phase f32 NCHW 5x5 s3 problem, its one-phase twin (s1, same sub-GEMM shape) and a bf16
#     NHWC 3x3 s2 problem outside the suite, base then new;
#  5. cuDNN on the same problems in the same call (scripts/compare-cudnn.py).
#   Usage (repo root, on the device): [LIMIT=580] bash scripts/session18/call1.sh
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-580} - $(date +%s) + t0 )); }
A=target/base/convtune
say "== 1 gpu lib tests $(el)"
gpu_lib_tests
say "== 2a selfcheck --configs 2 $(el)"
selfcheck_step sweep 120 --configs 2
say "== 2b selfcheck strided --configs 8 $(el)"
selfcheck_step strided 100 --problems scripts/session18/strided.txt --configs 8
say "== 3 A/B base vs shared body, shipped strided bwd-data entries $(el)"
OUT=$OUT timeout 170 bash scripts/ab-builds.sh tuned-db/sm_90.toml '-F 2 .*-u [2-9] ' base=$A new=$B > "$OUT/ab.txt" 2>&1
say "rc=$? $(el)"; cut -c1-200 "$OUT/ab.txt" | tail -14 | tee -a "$S"
say "== 4 tuner cost, --time 10 $(el)"
T=$OUT/tune; mkdir -p "$T"
cat > "$T/problems.txt" <<'P'
conv -F 2 -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3
conv -F 2 -n 16 -c 64 -H 16 -W 16 -k 64 -y 5 -x 5 -p 2 -q 2 -u 1 -v 1
convbfp16 -F 2 -n 16 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 --layout NHWC
P
i=0
while read -r p; do
  for v in base new; do
    if [ "$(left)" -lt 60 ]; then say "skipped $v $i: $(left) s left"; continue; fi
    bin=$B; [ $v = base ] && bin=$A
    s0=$(date +%s.%N)
    timeout 40 "$bin" --problem "$p" --arch sm_90 --time 10 --db "$T/db-$v-$i.toml" --journal "$T/j-$v-$i.jsonl" \
      --report "$T/r-$v-$i.json" > "$T/log-$v-$i.txt" 2>&1
    rc=$?; w=$(echo "$(date +%s.%N) - $s0" | bc)
    say "$v p$i rc=$rc wall ${w:0:5} s: $(grep -h '^summary' "$T/log-$v-$i.txt" | cut -c1-190)"
  done
  i=$((i + 1))
done < "$T/problems.txt"
rm -f "$T"/*.lock
python3 - "$T" <<'PY' > "$T/report-new.json"
import glob, json, sys
rows = []
for f in sorted(glob.glob(f"{sys.argv[1]}/r-new-*.json")):
    rows += json.load(open(f))
print(json.dumps(rows))
PY
say "== 5 cuDNN, same problems $(el)"
timeout $(( $(left) > 30 ? $(left) - 5 : 25 )) python3 scripts/compare-cudnn.py "$T/problems.txt" --convtune "$T/report-new.json" \
  > "$OUT/cudnn.txt" 2>&1
say "rc=$? $(el)"; grep -v Warning "$OUT/cudnn.txt" | tail -8 | cut -c1-200 | tee -a "$S"
say "== done $(el)"
