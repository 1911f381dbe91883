#!/usr/bin/env bash
# Session 6, issue 13 step 2: the warp-specialised main loop (`ld=ws`) on the H200.
#   0. ptxas -arch=sm_90a -v on the ld=ws kernels: C7508 (setmaxnreg ignored) and C7510/C7511/
#      C7514/C7515 (wgmma serialised) are failures; registers; HGMMA and UTMALDG in the SASS.
#   1. Verification through the tuner's worker (every candidate checked against the reference
#      kernel; a hung pipeline is the worker's measure timeout, recorded in the journal, and the
#      run goes on): each case with ld=cp, tma and ws, plus small odd shapes with ld=ws.
#   2. Timing: the same configs with ld=cp vs tma vs ws (A/B table), cuDNN and the bf16 matmul
#      rate in the same run (scripts/compare-cudnn.py).
# Runs from the repo root with BIN (default target/release/convtune); results in
# $OUT/ws-summary.txt and $OUT/ws-results.tgz. About 2-3 minutes.
set -uo pipefail
cd "${REPO:-$(dirname "$0")/../..}"
OUT=${OUT:-out}
BIN=${BIN:-target/release/convtune}
R=$OUT/ws
mkdir -p "$R/spaces"
. scripts/lib/check.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt" 2>&1
S=$OUT/ws-summary.txt
: > "$S"
log() { echo "$*" | tee -a "$S"; }
T0=$(date +%s)

# name | problem | config (its ld is replaced); the big bf16 layers of tma-check.sh
cases=(
  "fwd3x3|convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC|bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic"
  "fwd1x1|convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC|bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic"
  "seed003|convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC|bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=8,mma=wg,red=atomic"
  "wgrad1x1|convbfp16 -n 64 -c 512 -H 7 -W 7 -k 2048 -y 1 -x 1 -F 4 --layout NHWC|bm=64,bn=64,bk=64,wm=64,wn=64,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic"
)
# Small odd shapes, ld=ws only: partial tiles with the producer's cp.async (padded 3x3),
# groups, split-K through the fix-up (its barriers are the consumers' named barrier).
odd=(
  "odd-fwd3x3|convfp16 -n 3 -c 64 -H 5 -W 3 -k 80 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC|bm=64,bn=64,bk=64,wm=64,wn=64,st=2,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic"
  "odd-fwdg|convbfp16 -n 1 -c 128 -H 6 -W 7 -k 128 -y 2 -x 2 -u 2 -v 2 -g 2 -F 1 --layout NHWC|bm=128,bn=128,bk=64,wm=64,wn=128,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg1,red=atomic"
  "odd-wgrad-fixup|convbfp16 -n 4 -c 64 -H 4 -W 8 -k 128 -y 1 -x 1 -F 4 --layout NHWC|bm=128,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=2,rs=1,mma=wg,red=fixup"
)

log "== 0. ptxas on the ld=ws kernels"
for c in "${cases[@]}" "${odd[@]}"; do
  IFS='|' read -r name prob cfg <<< "$c"
  if ! "$BIN" compile --arch sm_90 --problem "$prob" --config "v3:$cfg,ld=ws" -o "$R/$name.ptx" > "$R/$name.compile.txt" 2>&1; then
    log "$name: compile refused: $(tail -c 300 "$R/$name.compile.txt")"
    continue
  fi
  if [ -x "$PTXAS" ]; then
    log "$(ptxas_report "$name" "$R/$name.ptx" "$R")"
  fi
  log "  $(grep -o -E '\.maxnreg [0-9]+|\.maxntid [0-9]+' "$R/$name.ptx" | sort -u | tr '\n' ' ')"
done
[ -x "$PTXAS" ] || log "ptxas not found"

log "== 1+2. verification and A/B (ld=cp vs tma vs ws, same config; every run through the worker)"
for c in "${cases[@]}"; do
  IFS='|' read -r name prob cfg <<< "$c"
  for ld in cp tma ws; do worker_run "$name" "$prob" "$cfg" "$ld" 40; done
done
for c in "${odd[@]}"; do
  IFS='|' read -r name prob cfg <<< "$c"
  worker_run "$name" "$prob" "$cfg" ws 40
done
tables cp tma ws

log "== cuDNN and the matmul rate (same problems)"
left=$(( 190 - ($(date +%s) - T0) ))
if [ "$left" -gt 20 ]; then
  cudnn_compare ws "$left"
else
  log "no time left for cuDNN ($left s)"
fi
log "total $(( $(date +%s) - T0 )) s"
tar czf "$OUT/ws-results.tgz" -C "$OUT" ws 2>/dev/null
