#!/usr/bin/env bash
# Session 19, device call 4 (H200, < 200 s): why the walk's shared phase body ran slower on
# the shipped entries (call 3: 0.836, 0.967, 0.788). A/B/C on the shipped strided bwd-data
# entries (scripts/ab-builds.sh): the session's base build, the shared body (shared), and the
# shared body with the producer's loads emitted per phase (prodsep: this session's experiment
# build with ZZ_PRODSEP=1, through a wrapper).
#   Usage (repo root, on the device): bash scripts/session19/call4.sh
set -uo pipefail
. scripts/session11/lib.sh
A=target/base/convtune
mkdir -p target/v1
printf '#!/bin/sh\nZZ_PRODSEP=1 exec %s "$@"\n' "$B" > target/v1/convtune && chmod +x target/v1/convtune
say "== A/B/C base, shared, prodsep $(el)"
OUT=$OUT timeout 170 bash scripts/ab-builds.sh tuned-db/sm_90.toml '-F 2 .*-u [2-9] ' base=$A shared=$B \
  prodsep=target/v1/convtune > "$OUT/ab.txt" 2>&1
say "rc=$? $(el)"; cut -c1-200 "$OUT/ab.txt" | tail -12 | tee -a "$S"
rm -rf "$OUT/ab"
say "== done $(el)"
