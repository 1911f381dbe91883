#!/usr/bin/env bash
# Mid-session GPU pass: selfcheck of the refactored build, A/B old vs new on shipped configs, short tune of seed 003.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/release .carry/oldbin
xz -dc .carry/convtune.xz > target/release/convtune; chmod +x target/release/convtune
xz -dc .carry/old/convtune.xz > .carry/oldbin/convtune; chmod +x .carry/oldbin/convtune
cp .carry/libffi.so.8 target/release/; cp .carry/libffi.so.8 .carry/oldbin/
export LD_LIBRARY_PATH=$PWD/target/release
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee $OUT/gpu.txt
echo "== selfcheck"; BIN=target/release/convtune CONFIGS=1 LOG=$OUT/selfcheck.log timeout 200 scripts/gpu-tests.sh 2>&1 | tail -5
echo "== A/B old(new-lowering-less) vs new on shipped configs"
OUT=$OUT timeout 150 scripts/db-vs-cudnn.sh scripts/session3/ab.toml .carry/oldbin/convtune target/release/convtune 2>&1 | tail -12
echo "== tune seed 003 (new)"
timeout 120 target/release/convtune --problem "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -u 1 -v 2 -F 2 --layout NHWC" --arch sm_90 --time 25 --db $OUT/t.toml --journal $OUT/t.jsonl --report $OUT/t.json 2>&1 | tail -4
timeout 120 python3 scripts/compare-cudnn.py --convtune $OUT/t.json 2>&1 | tail -4
cp -r $OUT/dbrun/*.txt $OUT/ 2>/dev/null; rm -rf $OUT/dbrun/spaces
