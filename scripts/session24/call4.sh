#!/usr/bin/env bash
# Session 24 device call 4 (H200): a wider self-check of the fixed bounds checks on every
# NVIDIA path: the sweep with 3 configs a problem (default space: mma.sync, cp.async, split-K,
# stream-K, and selfcheck::MISCOMPILED) and with 2 from the Hopper space (wgmma, TMA,
# warp-specialised, ping-pong, clusters).
#   Usage (repo root, on the device): bash scripts/session24/call4.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== selfcheck --configs 3 $(el)"
timeout 250 "$B" selfcheck --configs 3 --seed 24 > "$OUT/selfcheck.log" 2>&1
say "rc=$? $(el)"; grep -E "^selfcheck|failed$" "$OUT/selfcheck.log" | grep -v " 0 failed" | tail -6 | cut -c1-220 | tee -a "$S"
say "== selfcheck --space nvidia-hopper --configs 2 $(el)"
timeout 250 "$B" selfcheck --configs 2 --seed 24 --space search-spaces/nvidia-hopper.toml > "$OUT/selfcheck-hopper.log" 2>&1
say "rc=$? $(el)"; grep -E "^selfcheck|failed$" "$OUT/selfcheck-hopper.log" | grep -v " 0 failed" | tail -6 | cut -c1-220 | tee -a "$S"
say "== done $(el)"
