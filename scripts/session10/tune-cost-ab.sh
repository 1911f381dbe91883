#!/usr/bin/env bash
# Session 10 (issue 16), one device call: first, when AB lists pinned (problem<TAB>config)
# lines whose PTX the build changed, each timed with this build (BIN) and the session's
# starting build (OLD_BIN), alternating, REPS times; then the session-9 tune-cost problems
# tuned for `--time T` with BIN (and OLD_BIN for those in OLD_FOR), cold codegen cache each.
#   Usage (repo root): BIN=t/convtune OLD_BIN=b/convtune [AB=file] [T=10] [OLD_FOR='fwd-3x3 nchw-9'] bash tune-cost-ab.sh
set -uo pipefail
BIN=${BIN:-t/convtune}
OLD_BIN=${OLD_BIN:-b/convtune}
OUT=${OUT:-/tmp/tune-cost-ab}
T=${T:-10}
AB=${AB:-}
REPS=${REPS:-2}
OLD_FOR=${OLD_FOR:-fwd-3x3 fwd-1x1 bwdw-3x3 nchw-9} # problems also tuned with OLD_BIN
R=$OUT/cost
mkdir -p "$R"
export CONVTUNE_PROGRESS_SECS=5
NAMES=(fwd-3x3 fwd-1x1 bwdw-3x3 nchw-9)
PROBLEMS=(
  "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
  "convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC"
  "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
  "conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2"
)
t0=$(date +%s)
row() { # tag name wall: scripts/lib/run-row.py with the codegen and JIT CPU seconds
  python3 "$(dirname "$0")/../lib/run-row.py" "$R" "$@" codegen_s jit_s
}
if [ -n "$AB" ] && [ -s "$AB" ]; then
  echo "== A/B of configs whose PTX changed (µs, verified, --full-timing; old/new alternating x$REPS)"
  k=0
  while IFS=$'\t' read -r p c; do
    k=$((k + 1)); echo "$p" > "$R/ab$k.problem.txt"
    line="ab$k"
    for rep in $(seq "$REPS"); do
      for tag in old new; do
        bin=$BIN; [ $tag = old ] && bin=$OLD_BIN
        "$bin" space --problem "$p" --arch sm_90 --pin "$c" > "$R/ab$k.pin.toml" 2>/dev/null
        rm -f "$R/ab$k-$tag.json" "$R/ab$k-$tag.jsonl" "$R/ab$k-$tag.db.toml"
        CONVTUNE_CODEGEN_CACHE=off timeout 12 "$bin" --problems "$R/ab$k.problem.txt" --space "$R/ab$k.pin.toml" --strategy exhaustive \
          --db "$R/ab$k-$tag.db.toml" --journal "$R/ab$k-$tag.jsonl" --report "$R/ab$k-$tag.json" --quiet --full-timing > /dev/null 2>&1
        us=$(python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))[0]["time_us"])' "$R/ab$k-$tag.json" 2>/dev/null || echo "-")
        line+=" $tag $us"
      done
    done
    echo "$line  $c  $p"
  done < "$AB"
fi
echo "== tune-cost A/B: --time $T, new=$BIN old=$OLD_BIN $(date -u +%FT%TZ)"
table=$(printf '%-4s %-9s %6s %7s %6s %7s %8s %8s %7s' build problem "wall s" "first s" cands "rate/s" "best us" "LLVM cs" "JIT cs")
echo "$table"
for i in "${!NAMES[@]}"; do
  n=${NAMES[$i]} p=${PROBLEMS[$i]}
  for tag in new old; do
    bin=$BIN; [ $tag = old ] && bin=$OLD_BIN
    [ $tag = old ] && [[ " $OLD_FOR " != *" $n "* ]] && continue
    rm -rf "$R/codegen-cache"
    CONVTUNE_CODEGEN_CACHE="$R/codegen-cache" /usr/bin/time -f "%e" -o "$R/$tag-$n.wall" timeout 18 "$bin" --problem "$p" --time "$T" \
      --db "$R/$tag-$n.db.toml" --journal "$R/$tag-$n.jsonl" --report "$R/$tag-$n.json" > "$R/$tag-$n.out" 2> "$R/$tag-$n.err"
    line=$(row "$tag" "$n" "$(tail -1 "$R/$tag-$n.wall" 2>/dev/null || echo nan)")
    echo "$line [$(($(date +%s) - t0)) s]"
    table+=$'\n'"$line"
  done
done
echo "== table"
echo "$table"
rm -rf "$R/codegen-cache"
tar czf "$OUT/tune-cost-ab.tgz" -C "$OUT" cost 2>/dev/null
echo "== done [$(($(date +%s) - t0)) s]"
