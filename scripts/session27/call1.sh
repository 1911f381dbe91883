#!/usr/bin/env bash
# Session 27's device call, for the first session with a GPU (H200). Carry: .carry/convtune.xz
# (this session's build: the depthwise cost model recalibrated), .carry/convtune-base.xz
# (session 26's final build), .carry/libffi.so.8, .whl/ (this session's wheel).
#  0. Depthwise backward weight as partials (red=fixup, new this session, never run on a GPU):
#     `convtune selfcheck` with a space of only mma=dw, red=fixup (every sampled kernel checked
#     against the reference on the GPU), then the same tiles with red=atomic and red=fixup
#     timed in one tuner process (the three fastest tiles of each of session 26's ten problems,
#     scripts/session27/partials/), scored by scripts/session27/partials-ab.py.
#     And convtune.torch under torch.use_deterministic_algorithms(True)
#     (scripts/session27/deterministic-check.py: no atomics, the same bits twice, within
#     tolerance of float64, with this session's wheel).
#  1. Leave-one-out over the 23 depthwise entries of the shipped database: the lookup's four
#     candidates of both builds (scripts/session27/loo/dw, written offline by
#     scripts/session25/loo-tries.py), timed beside each entry's tuned winner in one tuner
#     process per group; score offline with
#     `python3 scripts/session25/loo-score.py scripts/session27/loo/dw/picks.json J/dw-*.jsonl`.
#  2. The tuner, `--time 5` a problem, both builds one after the other on each list, on ten
#     depthwise problems without an entry (six bwd-weight from session 26, four fwd/bwd-data):
#     the guided search ranks by the model, so a better model finds a good kernel sooner.
#  3. cuDNN on the same problems in the same call (scripts/compare-cudnn.py).
#  4. Session 26's call 6: first use out of the box (scripts/first-use.py, every timed config
#     checked against PyTorch's float64 result) with this session's wheel, on the six unseen
#     depthwise bwd-weight problems and set D.
#   Usage (repo root, on the device): bash scripts/session27/call1.sh [STEP...] (default all;
#   one device call holds at most 600 s, so `0 1` and `2 4` are two calls).
set -uo pipefail
steps=${*:-0 1 2 4}
want() { [[ " $steps " == *" $1 "* ]]; }
. scripts/session11/lib.sh
J=/tmp/j; mkdir -p $J
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
want 0 && {
say "== 0 depthwise backward weight as partials $(el)"
sed 's/^mma = \[[^]]*\]/mma = ["dw"]/; s/^red = \[[^]]*\]/red = ["fixup"]/' search-spaces/nvidia.toml > /tmp/dw-fixup.toml
grep -q '^red = \["fixup"\]' /tmp/dw-fixup.toml || say "dw-fixup space not made"
selfcheck_step partials 150 --problems scripts/session26/dw-wgrad.txt --space /tmp/dw-fixup.toml --configs 4
P=scripts/session27/partials
timeout 150 "$B" --problems $P/problems.txt --arch sm_90 --try $P/tries.txt --budget 7 --time 20 \
  --time-total 130 --db /tmp/partials.toml --journal $J/partials.jsonl --quiet > $J/partials.log 2>&1
say "rc=$? $(el)"; python3 scripts/session27/partials-ab.py $J/partials.jsonl | cut -c1-200 | tee -a "$S"
PYTHONPATH=$site timeout 120 python3 scripts/session27/deterministic-check.py 2>&1 | tail -5 | cut -c1-240 | tee -a "$S"
}
want 1 && {
say "== 1 leave-one-out, depthwise entries $(el)"
for g in scripts/session27/loo/dw/g*; do
  n=${g##*/g}; tag=dw-g$n
  timeout 120 "$B" --problems "$g/problems.txt" --arch sm_90 --try "$g/tries.txt" \
    --budget $(( n + 1 )) --time 30 --time-total 100 --db /tmp/$tag.toml --journal $J/$tag.jsonl \
    --quiet > $J/$tag.log 2>&1
  say "$tag rc=$? $(el) timed: $(grep -c '"time_us":[0-9]' $J/$tag.jsonl)"
done
python3 scripts/session25/loo-score.py scripts/session27/loo/dw/picks.json $J/dw-*.jsonl | tee -a "$S"
}
want 2 && {
say "== 2 tuner --time 5, base and new $(el)"
for list in scripts/session26/dw-unseen.txt scripts/session27/dw-fwd-unseen.txt; do
  n=$(basename "$list" .txt)
  for b in new base; do
    d=$J/$n-$b; mkdir -p $d; grep -v '^#' "$list" > $d/problems.txt
    bin=$B; [ $b = base ] && bin=$PWD/target/base/convtune
    timeout 90 "$bin" --problems $d/problems.txt --arch sm_90 --time 5 --db $d/db.toml \
      --journal $d/j.jsonl --report $d/report.json > $d/tune.log 2>&1
    say "$n $b rc=$? $(el)"
    grep "^summary" $d/tune.log | sed 's/ -u 1 -v 1 -l 1 -j 1//; s/(\([0-9]* screened\).*//' | cut -c1-240 | tee -a "$S"
  done
  say "-- cuDNN, $n $(el)"
  timeout 120 python3 scripts/compare-cudnn.py $J/$n-new/problems.txt --convtune $J/$n-new/report.json \
    --json $J/$n-cudnn.json > $J/$n-cudnn.log 2>&1
  say "rc=$? $(el)"; grep -v Warning $J/$n-cudnn.log | tail -12 | cut -c1-220 | tee -a "$S"
done
}
tar czf "$OUT/j.tgz" -C /tmp j
want 4 && {
say "== 4 first use, this session's wheel $(el)"
for set in scripts/session26/dw-unseen.txt scripts/session23/setD.txt; do
  n=$(basename "$set" .txt)
  grep -v '^#' "$set" > "$OUT/$n.txt"
  PYTHONPATH=$site timeout 200 python3 scripts/first-use.py "$OUT/$n.txt" --json "$OUT/$n.json" \
    > "$OUT/$n.log" 2>&1
  say "$n rc=$? $(el)"; grep -v Warning "$OUT/$n.log" | grep -E "error|geomean|first use over|timed|skipp" | cut -c1-260 | tee -a "$S"
done
}
say "== done $(el)"
