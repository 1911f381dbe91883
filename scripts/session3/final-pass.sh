#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/release target/wheels
xz -dc .carry/convtune.xz > target/release/convtune; chmod +x target/release/convtune
cp .carry/libffi.so.8 target/release/; cp .carry/wheels/*.whl target/wheels/; cp .carry/libffi.so.8 target/wheels/
export LD_LIBRARY_PATH=$PWD/target/release
echo "== selfcheck"; BIN=target/release/convtune CONFIGS=1 LOG=$OUT/selfcheck.log timeout 150 scripts/gpu-tests.sh 2>&1 | tail -3
echo "== ABI example (manifest + CUDA driver from Python)"; timeout 150 docs/examples/run_examples.sh target/release/convtune sm_90 > $OUT/abi-examples.txt 2>&1; echo rc=$?; tail -12 $OUT/abi-examples.txt
echo "== python package on the GPU"; timeout 240 scripts/python-gpu-check.sh target/wheels/convtune-0.1.0-cp38-abi3-linux_x86_64.whl scripts/suites/seeds.txt > $OUT/python-gpu.txt 2>&1; echo rc=$?; tail -25 $OUT/python-gpu.txt
