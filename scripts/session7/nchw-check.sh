#!/usr/bin/env bash
# Session 7, issue 14 item 4: NCHW problems through the layout transform (`xf=nhwc|nhwc_out`)
# on the H200.
#   0. ptxas -arch=sm_90a -v on the wgmma cases (C7510/C7511/C7514/C7515 = serialised: failure).
#   1. Verification + timing through the tuner's worker, one pinned config a run (each
#      candidate is checked against the reference kernel before it is timed): the old best
#      config of each problem (xf=none, from tuned-db/sm_90.toml) against the new ones.
#   2. A short search per problem in the space that lists xf (hopper space for f16, built-in
#      space for f32), then cuDNN and the matmul rate in the same run.
# From the repo root with BIN (default target/release/convtune); results in $OUT/nchw-summary.txt
# and $OUT/nchw-results.tgz. About 4-6 minutes.
set -uo pipefail
cd "${REPO:-$(dirname "$0")/../..}"
OUT=${OUT:-out}
BIN=${BIN:-target/release/convtune}
R=$OUT/nchw
mkdir -p "$R/spaces"
. scripts/lib/check.sh
S=$OUT/nchw-summary.txt
: > "$S"
log() { echo "$*" | tee -a "$S"; }
T0=$(date +%s)
F16="convfp16 -n 32 -c 64 -H 27 -W 27 -k 96 -y 3 -x 3 -p 1 -q 1 -F 1"
F32="conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2"
# label | problem | config
cases=(
  "old|$F16|v1:bm=128,bn=64,bk=32,wm=64,wn=32,st=1,va=8,vb=1,vc=1,lds=swz,sk=1,rs=1"
  "oldwg|$F16|v2:bm=128,bn=64,bk=64,wm=64,wn=64,st=4,va=8,vb=1,vc=1,lds=swz,sk=1,rs=1,mma=wg"
  "ws|$F16|v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=2,vb=2,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,xf=nhwc"
  "ws128|$F16|v4:bm=128,bn=128,bk=64,wm=64,wn=128,st=4,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=ws,xf=nhwc"
  "tmaout|$F16|v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=2,vb=2,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=tma,xf=nhwc_out"
  "cp|$F16|v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=1,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=cp,xf=nhwc"
  "cpout|$F16|v4:bm=128,bn=256,bk=64,wm=64,wn=256,st=4,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg,red=atomic,ld=cp,xf=nhwc_out"
  "syncout|$F16|v4:bm=128,bn=64,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=sync,red=atomic,ld=cp,xf=nhwc_out"
  "old|$F32|v1:bm=32,bn=32,bk=64,wm=32,wn=32,st=4,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1"
  "cp|$F32|v4:bm=16,bn=32,bk=64,wm=16,wn=32,st=4,va=4,vb=4,vc=1,lds=swz,sk=1,rs=4,mma=sync,red=atomic,ld=cp,xf=nhwc"
  "cpout|$F32|v4:bm=16,bn=32,bk=64,wm=16,wn=32,st=4,va=4,vb=4,vc=4,lds=swz,sk=1,rs=4,mma=sync,red=atomic,ld=cp,xf=nhwc_out"
  "syncout|$F32|v4:bm=64,bn=64,bk=32,wm=32,wn=32,st=3,va=4,vb=4,vc=4,lds=swz,sk=1,rs=1,mma=sync,red=atomic,ld=cp,xf=nhwc_out"
)
labels="old oldwg ws ws128 tmaout cp cpout syncout"

log "== 0. compile (launches) and ptxas"
i=0
for c in "${cases[@]}"; do
  IFS='|' read -r label prob cfg <<< "$c"
  name="$label-$i"; i=$((i + 1))
  if ! "$BIN" compile --arch sm_90 --problem "$prob" --config "$cfg" -o "$R/$name.ptx" > "$R/$name.compile.txt" 2>&1; then
    log "$name: compile refused: $(tail -c 300 "$R/$name.compile.txt")"; continue
  fi
  log "$name: $(grep -c 'grid' "$R/$name.compile.txt") launches; $(grep -E '^  ptx:' "$R/$name.compile.txt")"
  [ -x "$PTXAS" ] && [[ $cfg == *mma=wg* ]] && log "$(ptxas_report "$name" "$R/$name.ptx" "$R")"
done

log "== 1. verification and timing, one pinned config a run"
i=0
for c in "${cases[@]}"; do
  IFS='|' read -r label prob cfg <<< "$c"
  name="$label-$i"; i=$((i + 1))
  echo "$prob" > "$R/spaces/$name.txt"
  "$BIN" space --arch sm_90 --problem "$prob" --pin "$cfg" > "$R/spaces/$name.toml" 2>> "$R/pin.txt" || { log "$name: pin refused"; continue; }
  timeout 60 "$BIN" --problems "$R/spaces/$name.txt" --space "$R/spaces/$name.toml" --arch sm_90 \
    --strategy exhaustive --quiet --db "$R/db-$label.toml" --journal "$R/journal-$label.jsonl" \
    --report "$R/report-$label.json" >> "$R/log-$label.txt" 2>&1
  log "$name: exit $?"
done
tables $labels

log "== 2. search (guided, ${SEARCH_T:-90} s a problem)"
echo "$F16" > "$R/f16.txt"; echo "$F32" > "$R/f32.txt"
timeout 150 "$BIN" --problems "$R/f16.txt" --space search-spaces/nvidia-hopper.toml --arch sm_90 --time "${SEARCH_T:-90}" \
  --quiet --db "$R/db-tuned.toml" --journal "$R/journal-tuned16.jsonl" --report "$R/report-tuned.json" >> "$R/log-tuned.txt" 2>&1
log "f16 search: exit $?"
timeout 150 "$BIN" --problems "$R/f32.txt" --arch sm_90 --time "${SEARCH_T:-90}" \
  --quiet --db "$R/db-tuned.toml" --journal "$R/journal-tuned32.jsonl" --report "$R/report-tuned.json" >> "$R/log-tuned.txt" 2>&1
log "f32 search: exit $?"
ab_table "$R" old tuned | tee -a "$S"
grep -h '"config"' "$R"/report-tuned.json | tee -a "$S"
python3 -c "import json;[print(x['config'],x['time_us'],x['problem']) for x in json.load(open('$R/report-tuned.json'))]" 2>&1 | tee -a "$S"

log "== cuDNN and the matmul rate (same problems)"
left=$(( 420 - ($(date +%s) - T0) ))
if [ "$left" -gt 20 ]; then cudnn_compare tuned "$left"; else log "no time left for cuDNN ($left s)"; fi
log "total $(( $(date +%s) - T0 )) s"
tar czf "$OUT/nchw-results.tgz" -C "$OUT" nchw 2>/dev/null
