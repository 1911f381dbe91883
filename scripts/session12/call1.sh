#!/usr/bin/env bash
# Session 12, device call 1 (H200, < 420 s): the strided bwd-data lowering of class runs (at
# most four sub-GEMMs, lowering/bwd_data.rs) and the faster output check (page-locked
# readback, per-type compare loop, runtime/measure.rs and host.rs), against the session's
# starting build (target/base/convtune), cuDNN in the same run.
#  1. selfcheck on strided bwd-data problems whose classes merge into runs (built-in space,
#     then the Hopper space for the 16-bit ones);
#  2. scripts/session10/tune-cost-ab.sh: the shipped f32 NCHW 5x5 s3 config timed with both
#     builds alternating, then the tune-cost problems (`--time 10`, cold codegen cache) with
#     both builds: first candidate, rate, and the per-stage summary (verify);
#  3. two strided problems outside the suite: `--time 10` default search with both builds,
#     cuDNN in the same run.
#   Usage (repo root, on the device): bash scripts/session12/call1.sh
set -uo pipefail
. scripts/session11/lib.sh
D=scripts/session12
OLD=$PWD/target/base/convtune
say "== 1 selfcheck strided $(el)"
timeout 100 "$B" selfcheck --problems $D/strided-problems.txt --configs 6 > "$OUT/self.log" 2>&1
say "rc=$?"; grep "^selfcheck\|FAIL" "$OUT/self.log" | tail -6 | tee -a "$S"
timeout 80 "$B" selfcheck --problems $D/strided-problems.txt --space search-spaces/nvidia-hopper.toml --configs 6 >> "$OUT/self.log" 2>&1
say "rc=$?"; grep "^selfcheck\|FAIL" "$OUT/self.log" | tail -4 | tee -a "$S"
say "== 2 tune-cost A/B $(el)"
printf '%s\t%s\n' "conv -F 2 -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -l 1 -j 1 -g 1 -I NGCHW -f GKCYX -O NGCHW" \
  "v1:bm=32,bn=32,bk=16,wm=16,wn=32,st=4,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1" > "$OUT/ab.txt"
BIN=$B OLD_BIN=$OLD AB=$OUT/ab.txt REPS=3 T=10 OLD_FOR='fwd-3x3 fwd-1x1 nchw-9' OUT=$OUT \
  timeout 170 bash scripts/session10/tune-cost-ab.sh > "$OUT/cost.txt" 2>&1
say "rc=$? $(el)"; grep -A3 "^== A/B" "$OUT/cost.txt" | tee -a "$S"; sed -n '/== table/,$p' "$OUT/cost.txt" | tee -a "$S"
tar xzf "$OUT/tune-cost-ab.tgz" -C /tmp 2>/dev/null
grep -h "^summary:" /tmp/cost/*.out 2>/dev/null | sed 's/^summary: //' | cut -c1-400 | tee -a "$S"
for f in /tmp/cost/*.out; do echo "$(basename "$f"): $(grep -h '^summary:' "$f" | grep -o 'measure .*')"; done | tee -a "$S"
say "== 3 unseen strided $(el)"
U=$OUT/unseen; mkdir -p "$U"; i=0
while read -r p; do
  i=$((i + 1)); echo "$p" > "$U/p$i.txt"
  for tag in new old; do
    bin=$B; [ $tag = old ] && bin=$OLD
    timeout 16 "$bin" --problems "$U/p$i.txt" --arch sm_90 --time 10 --db "$U/$tag$i.toml" \
      --journal "$U/$tag$i.jsonl" --report "$U/$tag$i.json" > "$U/$tag$i.log" 2>&1
    say "p$i $tag rc=$? $(el) $(grep -h '^summary:' "$U/$tag$i.log" | cut -c1-330)"
  done
done < $D/unseen-strided.txt
timeout 60 python3 scripts/compare-cudnn.py $D/unseen-strided.txt --json "$U/cudnn.json" > "$U/cudnn.txt" 2>&1
say "cudnn rc=$? $(el)"; tail -5 "$U/cudnn.txt" | tee -a "$S"
tar czf "$OUT/unseen.tgz" -C "$OUT" unseen 2>/dev/null && rm -rf "$U"
say "== done $(el)"
