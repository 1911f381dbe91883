#!/usr/bin/env bash
# Session 4, issue 13 step 1: TMA loads (`ld=tma`) on the H200.
#   1. Verification: each case's config with ld=cp and ld=tma, run through the tuner's worker
#      (every candidate is checked against the reference kernel; a hung pipeline is the worker's
#      10 s measure timeout, recorded in the journal, and the run goes on), plus small odd
#      shapes (partial tiles, groups) with ld=tma.
#   2. Timing: ld=cp vs ld=tma on the same configs (A/B table), cuDNN and the bf16 matmul
#      rate in the same run (scripts/compare-cudnn.py).
#   3. A short guided search with ld in {cp, tma} on the fwd 3x3 layer (SEARCH="fwd3x3 seed003"
#      for more).
# Runs from the repo root with target/release/convtune (BIN=...); results under $OUT (one
# summary, one tarball).
set -uo pipefail
cd "${REPO:-$(dirname "$0")/../..}"
OUT=${OUT:-out}
BIN=${BIN:-target/release/convtune}
R=$OUT/tma
mkdir -p "$R/spaces"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt" 2>&1
S=$OUT/tma-summary.txt
: > "$S"
log() { echo "$*" | tee -a "$S"; }

# name | problem | config (its ld is replaced by cp and tma)
cases=(
  "fwd3x3|convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC|bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1"
  "seed003|convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC|bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg"
  "fwd1x1|convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1"
  "wgrad1x1|convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 4 --layout NHWC|bm=64,bn=64,bk=64,wm=64,wn=64,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg"
  "dgrad1x1|convbfp16 -n 64 -c 256 -H 14 -W 14 -k 1024 -y 1 -x 1 -F 2 --layout NHWC|bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg"
  "odd-fwd1x1|convfp16 -n 3 -c 64 -H 5 -W 3 -k 80 -y 1 -x 1 -F 1 --layout NHWC|bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg"
  "odd-fwd3x3g|convbfp16 -n 1 -c 128 -H 6 -W 7 -k 128 -y 2 -x 2 -u 2 -v 2 -g 2 -F 1 --layout NHWC|bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1"
  "odd-wgrad|convbfp16 -n 2 -c 64 -H 1 -W 16 -k 64 -y 1 -x 2 -u 1 -v 2 -F 4 --layout NHWC|bm=64,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg"
)
. scripts/lib/check.sh
log "== 0. ptxas on the ld=tma kernels (wgmma serialisation warnings C7510/C7511/C7515 are failures)"
for c in "${cases[@]}"; do
  IFS='|' read -r name prob cfg <<< "$c"
  tma_ptxas "$name" "$prob" "$cfg"
done
log "== 1+2. verification and A/B (ld=cp vs ld=tma, same config)"
for c in "${cases[@]}"; do
  IFS='|' read -r name prob cfg <<< "$c"
  tma_ab "$name" "$prob" "$cfg" 120
done
tables cp tma
log "== cuDNN and the matmul rate (same problems)"
cudnn_compare tma 240
log "== 3. short guided search, ld in {cp, tma}"
sed 's/^mma = .*/mma = ["wg", "wg1"]/' search-spaces/nvidia.toml > "$R/spaces/search.toml"
grep -q '^ld' "$R/spaces/search.toml" || sed -i '/^\[params\]/a ld = ["cp", "tma"]' "$R/spaces/search.toml"
for name in ${SEARCH:-fwd3x3}; do
  timeout 50 "$BIN" --problems "$R/spaces/$name.txt" --space "$R/spaces/search.toml" --arch sm_90 \
    --time 20 --quiet --db "$R/db-search.toml" --journal "$R/journal-search.jsonl" \
    --report "$R/report-search.json" >> "$R/log-search.txt" 2>&1
  log "search $name: exit $?"
done
python3 - "$R" <<'PY' | tee -a "$S"
import json, sys
try:
    for x in json.load(open(f"{sys.argv[1]}/report-search.json")):
        print(f"{x['time_us']:9.1f} us {x.get('tflops', 0):7.1f} TFLOP/s  {x.get('config')}  {x['problem']}")
except Exception as e:
    print(f"search report: {e}")
PY
tar czf "$OUT/tma-results.tgz" -C "$OUT" tma 2>/dev/null
