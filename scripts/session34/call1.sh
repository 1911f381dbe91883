#!/usr/bin/env bash
# Session 34, device call 1 (< 590 s; carry .carry with convtune.xz = this build and
# convtune-base.xz = cba54ca): stream-K's aligned cut (config::StreamCut::Aligned: with fewer
# output tiles than SMs every tile is cut at the same K offsets, so co-resident blocks read the
# same operand rows; the tile-major cut put them at unrelated offsets and fetched the long-K
# operands from DRAM ~4x).
#  1. `convtune selfcheck --red stream` (built-in space and the Hopper space): every sampled
#     stream-K kernel verified on poisoned buffers, this build.
#  2. issue 13's bwd-weight 3x3 c256 (scripts/session34/bw3/): the shipped winner and six
#     stream-K shapes, `--full-timing`, this build and the base alternating (new, base, new,
#     base): the tile-major cut against the aligned one on the same GPU in the same call.
#  3. A guided search of that problem with this build (`--time 20`): what the cost model now
#     finds among stream-K and split-K shapes.
#  4. A/B (scripts/ab-builds.sh, alternating, both orders) of the shipped red=stream entries.
#   Usage (repo root, on the device): bash scripts/session34/call1.sh
#   Results: $OUT/summary.txt, $OUT/selfcheck-*.log, $OUT/bw3.tgz, $OUT/ab.txt
set -uo pipefail
. scripts/session11/lib.sh
nvidia-smi --query-gpu=name,clocks.max.sm,temperature.gpu --format=csv,noheader | tee -a "$S"
say "== 1 selfcheck $(el)"
selfcheck_red stream
say "== 2 bw3 tile-major vs aligned $(el)"
D=scripts/session34/bw3 W=/tmp/bw3; mkdir -p $W
n=$(grep -vc '^#' $D/tries.txt)
for pass in new1 base1 new2 base2; do
  bin=$B; [[ $pass == base* ]] && bin=target/base/convtune
  timeout 80 "$bin" --problems $D/problems.txt --arch sm_90 --try $D/tries.txt --budget $(( n + 1 )) \
    --time 60 --full-timing --db $W/$pass.toml --journal $W/$pass.jsonl > $W/$pass.log 2>&1
  say "$pass rc=$? $(el)"; grep -A9 "time us" $W/$pass.log | cut -c1-150 | tee -a "$S"
done
say "== 3 guided search, this build $(el)"
timeout 60 "$B" --problems $D/problems.txt --arch sm_90 --time 20 --db $W/search.toml \
  --journal $W/search.jsonl > $W/search.log 2>&1
say "rc=$? $(el)"; grep -A6 "time us" $W/search.log | cut -c1-150 | tee -a "$S"
tar czf "$OUT/bw3.tgz" -C /tmp bw3
say "== 4 A/B shipped red=stream entries $(el)"
db_subset "red=stream" /tmp/stream.toml
left=$(( 585 - $(date +%s) + t0 ))
timeout $left bash scripts/ab-builds.sh /tmp/stream.toml '' new=$B base=target/base/convtune > "$OUT/ab.txt" 2>&1
say "rc=$? $(el)"; tail -20 "$OUT/ab.txt" | cut -c1-200 | tee -a "$S"
rm -rf "$OUT/ab"
say "== done $(el)"
