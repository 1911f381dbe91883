#!/usr/bin/env bash
# Session 14, device call 7 (H200, < 200 s): after folding the output check's and the L2
# sweep's launches into one `cuda::HandKernel`: the library's GPU tests, `selfcheck`, and one
# A/B round of call 5's pinned configs (base build: memset flush; this build: read sweep).
#   Usage (repo root, on the device): bash scripts/session14/call7.sh
set -uo pipefail
. scripts/session11/lib.sh
xz -dc .carry/libtests.xz > /tmp/libtests && chmod +x /tmp/libtests
timeout 150 /tmp/libtests runtime:: --test-threads=1 > "$OUT/libtests.log" 2>&1
say "gpu tests rc=$?"; grep -E "test result|panicked|FAILED" "$OUT/libtests.log" | tee -a "$S"
timeout 90 "$B" selfcheck --configs 2 > "$OUT/selfcheck.log" 2>&1
say "selfcheck rc=$?"; tail -1 "$OUT/selfcheck.log" | tee -a "$S"
R=/tmp/ab; mkdir -p "$R"
sed -n '/^bwdw1x1-28|/,/^P$/p' scripts/session14/call5.sh | grep '|' > "$R/pins.txt"
while IFS='|' read -r n p c; do
  echo "$p" > "$R/$n.p"
  "$B" space --problem "$p" --arch sm_90 --pin "$c" > "$R/$n.s.toml" 2>/dev/null || continue
  line="$n"
  for side in old new; do
    bin=$B; [ $side = old ] && bin=$PWD/target/base/convtune
    rm -f "$R"/*.db.toml* "$R"/*.jsonl
    t=$(timeout 60 "$bin" --problems "$R/$n.p" --space "$R/$n.s.toml" --strategy exhaustive --full-timing \
      --db "$R/$side.db.toml" --journal "$R/$side.jsonl" --quiet 2>&1 | grep -o 'best [0-9.]* us' | head -1)
    line="$line $side: $t"
  done
  say "$line"
done < "$R/pins.txt"
say "== done $(el)"
