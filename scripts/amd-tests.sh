#!/usr/bin/env bash
# AMD GPU tests, the twin of gpu-tests.sh for a ROCm machine (never run yet: no AMD GPU was
# available when it was written). Builds convtune when cargo is here, then:
#   1. the device as convtune sees it (gcnArchName, CUs, HIP runtime and driver versions);
#   2. fault isolation: a short tune with the first candidate built to fault, which must be
#      recorded as a fault while the run goes on in a restarted worker;
#   3. a short tune of the seed problems on the GPU's own arch;
#   4. when PyTorch for ROCm is installed, MIOpen's time for the seed problems beside ours.
# Results go to $OUT (default /tmp/convtune-amd).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/convtune}
OUT=${OUT:-/tmp/convtune-amd}
BUDGET=${BUDGET:-40}
mkdir -p "$OUT"
if command -v cargo >/dev/null 2>&1; then
  cargo build --release || exit 1
fi
fail=0
step() { echo "== $*"; }

step "1. device"
if ! "$BIN" --problem "conv -n 1 -c 8 -H 6 -W 6 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1" --budget 1 \
     --db "$OUT/probe.toml" --journal "$OUT/probe.journal" 2>&1 | tee "$OUT/device.log"; then
  echo "no usable AMD GPU here"; exit 2
fi
grep -q "gfx" "$OUT/device.log" || { echo "FAIL: the device is not an AMD GPU"; exit 1; }

step "2. fault isolation"
"$BIN" --inject-faults 1 --problem "conv -n 1 -c 8 -H 6 -W 6 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1" \
  --budget 4 --strategy exhaustive --db "$OUT/fault.toml" --journal "$OUT/fault.journal" \
  2>&1 | tee "$OUT/fault.log"
if grep -q '"Fault"' "$OUT/fault.journal" 2>/dev/null && [ "$(wc -l < "$OUT/fault.journal")" -ge 4 ]; then
  echo "fault isolation: ok"
else
  echo "FAIL: fault isolation"; fail=1
fi

step "3. seed problems"
"$BIN" --problems scripts/suites/seeds.txt --budget "$BUDGET" --db "$OUT/seeds.toml" \
  --journal "$OUT/seeds.journal" --report "$OUT/seeds.json" 2>&1 | tee "$OUT/seeds.log" || fail=1

step "4. MIOpen through PyTorch-ROCm"
PY=${PYTHON:-python3}
if "$PY" -c "import torch,sys; sys.exit(0 if torch.version.hip else 1)" 2>/dev/null; then
  "$PY" scripts/compare-cudnn.py --convtune "$OUT/seeds.json" --json "$OUT/miopen.json" 2>&1 | tee "$OUT/miopen.log" || fail=1
else
  echo "PyTorch for ROCm not installed: no MIOpen comparison"
fi
echo "---- summary ----"
grep -hE "^(FAIL|fault isolation)" "$OUT"/*.log 2>/dev/null | tail -20
exit "$fail"
