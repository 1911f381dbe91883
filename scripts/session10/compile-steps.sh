#!/usr/bin/env bash
# Where one candidate's compile goes (issue 16), no GPU: `convtune compile` with the codegen
# cache off prints its steps (IR, cache key, O3, back end); run REPS times each for
#   nchw-9     the f32 NCHW bwd-data 5x5 s3 problem's shipped config (9 phases, one launch)
#   nchw-1     the same config on the stride-1 twin (one GEMM of the same shape)
#   nchw-9-bk64 the 9 phases with bk=64 (what the guided strategy proposes first)
#   fwd-3x3    the bf16 fwd 3x3 c256 28x28 shipped wgmma config (one launch)
#   Usage: [BIN=target/release/convtune] [REPS=3] bash scripts/session10/compile-steps.sh
set -uo pipefail
BIN=${BIN:-target/release/convtune}
REPS=${REPS:-3}
F32="v1:bm=32,bn=32,bk=16,wm=16,wn=32,st=4,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1"
F64="v1:bm=32,bn=32,bk=64,wm=32,wn=32,st=4,va=1,vb=1,vc=1,lds=swz,sk=1,rs=1"
run() { # name problem config-or-empty
  for _ in $(seq "$REPS"); do
    CONVTUNE_CODEGEN_CACHE=off /usr/bin/time -f "user %U s" "$BIN" compile --problem "$2" --arch sm_90 \
      ${3:+--config "$3"} -o /tmp/compile-steps.ptx 2>&1 | grep -E "^compile:|^user|ptx:" | tr '\n' ' ' |
      sed "s|^|$1: |"
    echo
  done
}
run nchw-9 "conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2" "$F32"
run nchw-1 "conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 1 -v 1 -F 2" "$F32"
run nchw-9-bk64 "conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2" "$F64"
run fwd-3x3 "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC" ""
rm -f /tmp/compile-steps.ptx
