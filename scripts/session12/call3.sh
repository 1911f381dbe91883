#!/usr/bin/env bash
# Session 12, device call 3 (H200, < 300 s): the library's GPU tests (carried test binary, after
# the ptxas-for-the-device fix), then a new user's default search (`--time 10`, default
# strategy and space) on the 11 problems outside the suite of session 11, cuDNN in the same run
# (scripts/session11/call4.sh with SHORT_ONLY=1).
#   Usage (repo root, on the device): bash scripts/session12/call3.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 gpu lib tests $(el)"
xz -dc .carry/libtests.xz > /tmp/libtests && chmod +x /tmp/libtests
timeout 120 /tmp/libtests runtime::gpu_tests runtime::ptxas --test-threads=1 > "$OUT/libtests.log" 2>&1
say "rc=$?"; grep -E "^test |test result|panicked" "$OUT/libtests.log" | tee -a "$S"
say "== 2 unseen default search $(el)"
SHORT_ONLY=1 LIST=scripts/session12/unseen-all.txt bash scripts/session11/call4.sh > "$OUT/unseen.txt" 2>&1
say "rc=$? $(el)"; sed -n '/problem  /,$p' "$OUT/unseen.txt" | tee -a "$S"
say "== done $(el)"
