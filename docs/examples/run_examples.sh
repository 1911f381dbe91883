#!/usr/bin/env bash
# Compiles a spread of problems with convtune and runs each through the CUDA driver with
# launch_manifest.py, checking against PyTorch in f64 (see docs/abi.md). Needs a GPU of the arch.
#   docs/examples/run_examples.sh [path/to/convtune] [arch]
set -u
BIN=${1:-target/release/convtune}
ARCH=${2:-sm_90}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d)
fail=0
run() { # name, problem, extra compile flags…
    local name=$1 problem=$2; shift 2
    if ! "$BIN" compile --problem "$problem" --arch "$ARCH" -o "$OUT/$name.ptx" \
            --manifest "$OUT/$name.json" "$@" >/dev/null; then
        echo "$name: compile failed"; fail=1; return
    fi
    python3 "$HERE/launch_manifest.py" "$OUT/$name.json" || fail=1
}
# The database's (or the heuristic's) config for each:
run fwd_bf16_nhwc   "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC"
run fwd_f32_nchw    "conv -n 2 -c 3 -H 17 -W 13 -k 8 -y 3 -x 3 -p 1 -q 2 -u 2 -v 1 -F 1"
run fwd_f16_groups  "convfp16 -n 2 -c 32 -H 9 -W 9 -k 64 -y 3 -x 3 -p 1 -q 1 -g 4 -F 1 --layout NHWC"
run bwd_data_stride "convbfp16 -n 2 -c 16 -H 11 -W 11 -k 32 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC"
run bwd_data_zero   "conv -n 2 -c 8 -H 9 -W 9 -k 8 -y 1 -x 1 -u 2 -v 2 -F 2"   # zero-init + GEMMs
run bwd_weight_f32  "conv -n 8 -c 16 -H 12 -W 12 -k 16 -y 3 -x 3 -p 1 -q 1 -F 4"
run seed_003        "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC"
# Split-K into an f32 workspace (zero-init, GEMM, finish) and a wgmma kernel with > 48 KiB shared:
run splitk_bf16     "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC" \
    --config "v1:bm=64,bn=64,bk=32,wm=32,wn=32,st=4,va=8,vb=8,vc=8,lds=swz,sk=4,rs=1"
run wgmma_optin     "convbfp16 -n 4 -c 64 -H 8 -W 8 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC" \
    --config "v2:bm=64,bn=128,bk=64,wm=64,wn=64,st=3,va=8,vb=8,vc=8,lds=swz,sk=1,rs=1,mma=wg"
rm -rf "$OUT"
exit $fail
