#!/usr/bin/env bash
# Session 6, issue 13 item 1: TMA im2col loads of the activation (ld=tma on padded, strided
# and dilated operands) on the H200.
#   0. Each case's ld=tma kernel through ptxas -arch=sm_90a -v (serialisation warnings
#      C7510/C7511/C7515 are failures) and cuobjdump: PTX im2col/tile copies, SASS UTMALDG and
#      HGMMA counts.
#   1. Verification and timing through the tuner's worker: each case's config with ld=cp and
#      ld=tma (every candidate is checked against the reference kernel; a hung pipeline is the
#      worker's measure timeout, recorded in the journal, and the run goes on); A/B table.
#   2. cuDNN and the bf16 matmul rate on the same problems (scripts/compare-cudnn.py), in the
#      time left of the budget.
# Inputs: BIN (default target/release/convtune), OUT (default out). Writes
# $OUT/im2col-summary.txt and $OUT/im2col-results.tgz. Runs from the repo root; < 150 s.
set -uo pipefail
cd "${REPO:-$(dirname "$0")/../..}"
OUT=${OUT:-out}
BIN=${BIN:-target/release/convtune}
R=$OUT/im2col
mkdir -p "$R/spaces"
S=$OUT/im2col-summary.txt
: > "$S"
log() { echo "$*" | tee -a "$S"; }
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt" 2>&1
log "$(tail -1 "$R/gpu.txt")"

W1="bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1"
W2="bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1"
W3="bm=64,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg"
W4="bm=64,bn=64,bk=64,wm=64,wn=64,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg"
# name | problem | config (its ld is replaced by cp and tma)
cases=(
  "fwd3x3-28|convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC|$W1"
  "fwd3x3-56c128|convbfp16 -n 32 -c 128 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC|$W1"
  "fwd3x3-56c64|convbfp16 -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC|$W3"
  "fwd3x3-s2|convbfp16 -n 32 -c 128 -H 56 -W 56 -k 256 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 1 --layout NHWC|$W1"
  "fwd5x5|convbfp16 -n 32 -c 64 -H 28 -W 28 -k 128 -y 5 -x 5 -p 2 -q 2 -F 1 --layout NHWC|$W2"
  "fwd1x1-s2|convbfp16 -n 64 -c 256 -H 28 -W 28 -k 512 -y 1 -x 1 -u 2 -v 2 -F 1 --layout NHWC|$W1"
  "dgrad3x3|convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 2 --layout NHWC|$W1"
  "wgrad3x3|convbfp16 -n 16 -c 128 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC|$W4"
  "odd-fwd|convfp16 -n 3 -c 64 -H 5 -W 7 -k 80 -y 3 -x 3 -p 1 -q 1 -u 2 -v 1 -F 1 --layout NHWC|bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg"
  "odd-fwd-g|convbfp16 -n 1 -c 128 -H 6 -W 7 -k 128 -y 3 -x 3 -p 1 -q 1 -g 2 -F 1 --layout NHWC|bm=64,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1"
  "odd-dgrad-s2|convbfp16 -n 2 -c 64 -H 9 -W 7 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC|$W4"
)
. scripts/lib/check.sh
log "== 0. ptxas and SASS of the ld=tma kernels"
for c in "${cases[@]}"; do
  IFS='|' read -r name prob cfg <<< "$c"
  tma_ptxas "$name" "$prob" "$cfg"
done
log "== 1. verification and A/B through the worker (ld=cp vs ld=tma, same config) $((SECONDS - start)) s"
for c in "${cases[@]}"; do
  IFS='|' read -r name prob cfg <<< "$c"
  left=$((140 - (SECONDS - start)))
  [ "$left" -gt 15 ] || { log "$name: skipped (time budget)"; continue; }
  tma_ab "$name" "$prob" "$cfg" $(( left / 2 < 40 ? left / 2 : 40 ))
done
tables cp tma
left=$((145 - (SECONDS - start)))
log "== 2. cuDNN and the matmul rate (same problems), ${left} s left"
[ "$left" -gt 10 ] && cudnn_compare tma "$left" || log "cuDNN skipped (time budget)"
log "== done in $((SECONDS - start)) s"
tar czf "$OUT/im2col-results.tgz" -C "$OUT" im2col 2>/dev/null
