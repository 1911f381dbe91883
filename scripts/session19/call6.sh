#!/usr/bin/env bash
# Session 19, device call 6 (H200, < 200 s): the wgmma waits moved to the top of their blocks
# (src/codegen/ptx_waits.rs: ptxas no longer serialises half of the mma=wg1 walks, C7514) and
# the walk's consumers sharing one body for mma=wg1 too. A/B of the session's base build and
# this one on every shipped 16-bit entry (scripts/ab-builds.sh, both orders; each config
# verified before it is timed).
#   Usage (repo root, on the device): bash scripts/session19/call6.sh
set -uo pipefail
. scripts/session11/lib.sh
A=target/base/convtune
say "== A/B base vs waits-first, shipped 16-bit entries $(el)"
OUT=$OUT timeout 190 bash scripts/ab-builds.sh tuned-db/sm_90.toml '^conv(b?fp16)' base=$A new=$B > "$OUT/ab.txt" 2>&1
say "rc=$? $(el)"; cut -c1-200 "$OUT/ab.txt" | tail -34 | tee -a "$S"
rm -rf "$OUT/ab"
say "== done $(el)"
