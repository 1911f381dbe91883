#!/usr/bin/env bash
# Session 25, device calls 5 and 7 (H200): the build under test (.carry/convtune.xz) against a
# base build (.carry/convtune-base.xz): call 5, seeds in a batch of their own against the
# session's start; call 7, the concurrent enumeration against the build before it.
#  1. scripts/session10/tune-cost-ab.sh, `--time 10`, both builds on its four problems (time to
#     the first measured candidate, candidates/s);
#  2. `convtune selfcheck --configs 2` with the build under test (every direction and type).
#   Usage (repo root, on the device): bash scripts/session25/call5.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 tune-cost, base and new $(el)"
tune_cost 150 "$PWD/target/base/convtune" 'fwd-3x3 fwd-1x1 bwdw-3x3 nchw-9'
say "== 2 selfcheck $(el)"
timeout 200 "$B" selfcheck --configs 2 > "$OUT/selfcheck.log" 2>&1
say "rc=$? $(el)"; tail -4 "$OUT/selfcheck.log" | tee -a "$S"
say "== done $(el)"
