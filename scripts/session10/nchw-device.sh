#!/usr/bin/env bash
# Session 10, issue 14 item 4 (one device call, < 150 s): selfcheck the wgmma tiles whose
# MN-major operand is 16-/32-row swizzle atoms, then time them (new binary, small-tile space)
# beside today's best (session base binary, the Hopper space, same time per problem) and cuDNN,
# on bwd-weight 3x3 c256 14x14 n32 and the same with k = 32. Files travel in .carry/nchw/.
set -u
D=.carry/nchw
mkdir -p t b && xz -dc .carry/nchw.xz > t/convtune && chmod +x t/convtune \
  && cp .carry/libffi.so.8 t/ && xz -dc .carry/convtune-base.xz > b/convtune && chmod +x b/convtune
export LD_LIBRARY_PATH=$PWD/t
P=$D/nchw-problems.txt
timeout 25 t/convtune selfcheck --problems $P --space $D/nchw-small-tiles.toml --configs 6 \
  > $OUT/selfcheck.txt 2>&1; echo "selfcheck rc=$?"
tail -4 $OUT/selfcheck.txt
timeout 44 t/convtune --problems $P --arch sm_90 --space $D/nchw-small-tiles.toml --time 19 \
  --db $OUT/new.toml --journal /tmp/new.jsonl --report $OUT/new.json --quiet > $OUT/new.txt 2>&1
echo "new rc=$?"
timeout 44 b/convtune --problems $P --arch sm_90 --space search-spaces/nvidia-hopper.toml --time 19 \
  --db $OUT/base.toml --journal /tmp/base.jsonl --report $OUT/base.json --quiet > $OUT/base.txt 2>&1
echo "base rc=$?"
timeout 25 python3 scripts/compare-cudnn.py $P --convtune $OUT/new.json > $OUT/cudnn.txt 2>&1
echo "cudnn rc=$?"
echo "== base (Hopper space, session base binary)"
python3 scripts/lib/report-rows.py "$OUT/base.json" "$OUT/new.json"
cat $OUT/cudnn.txt | tail -8
