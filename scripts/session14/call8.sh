#!/usr/bin/env bash
# Session 14, device call 8 (H200, < 120 s): after timings carry their cache state. The
# library's GPU tests; a 6 s search with the base build's journal (memset times, no cache
# state) resumed by this build, which must measure those candidates again (0 resumed timings).
#   Usage (repo root, on the device): bash scripts/session14/call8.sh
set -uo pipefail
. scripts/session11/lib.sh
xz -dc .carry/libtests.xz > /tmp/libtests && chmod +x /tmp/libtests
timeout 100 /tmp/libtests runtime:: --test-threads=1 > "$OUT/libtests.log" 2>&1
say "gpu tests rc=$?"; grep -E "test result|panicked|FAILED" "$OUT/libtests.log" | tee -a "$S"
R=/tmp/rs; mkdir -p "$R"
echo "convbfp16 -F 4 -n 64 -c 128 -H 28 -W 28 -k 512 -y 1 -x 1 --layout NHWC" > "$R/p.txt"
timeout 30 "$PWD/target/base/convtune" --problems "$R/p.txt" --arch sm_90 --budget 40 --db "$R/db.toml" --journal "$R/j.jsonl" --quiet > "$R/old.txt" 2>&1
say "base build rc=$? $(grep -h '^summary:' "$R/old.txt" | grep -o 'best.*resumed[^)]*)' | cut -c1-120)"
timeout 30 "$B" --problems "$R/p.txt" --arch sm_90 --budget 40 --db "$R/db2.toml" --journal "$R/j.jsonl" --quiet > "$R/new.txt" 2>&1
say "this build, same journal, rc=$? $(grep -h '^summary:' "$R/new.txt" | grep -o 'best.*resumed[^)]*)' | cut -c1-120)"
timeout 30 "$B" --problems "$R/p.txt" --arch sm_90 --budget 40 --db "$R/db3.toml" --journal "$R/j.jsonl" --quiet > "$R/again.txt" 2>&1
say "this build again rc=$? $(grep -h '^summary:' "$R/again.txt" | grep -o 'best.*resumed[^)]*)' | cut -c1-120)"
grep -c '"cache":"clean"' "$R/j.jsonl" | sed 's/^/clean-cache records: /' | tee -a "$S"
say "== done $(el)"
