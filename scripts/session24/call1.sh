#!/usr/bin/env bash
# Session 24 device call 1 (H200): why 8 mma=sync configs give wrong results on one grouped
# bf16 problem (scripts/session23/wrong-c.txt). wrongdiag.py over a failing config and its
# passing sibling (two pairs): the error's pattern, JIT level 4 vs 0, ptxas -O3 vs -O0; the
# SASS of each; racecheck, synccheck and memcheck of the first at full size.
#   Usage (repo root, on the device): bash scripts/session24/call1.sh
set -uo pipefail
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
S=$OUT/summary.txt; : > "$S"; say() { echo "$*" | tee -a "$S"; }
site=/tmp/site
python3 -m pip install --quiet --no-deps --no-index --target "$site" .whl/convtune-*.whl > "$OUT/pip.log" 2>&1
P="convbfp16 -F 1 -n 64 -c 1024 -H 7 -W 7 -k 2048 -y 7 -x 7 -p 3 -q 3 -u 1 -v 1 -l 1 -j 1 -g 1024 -I NHWGC -f GKYXC -O NHWGC"
D=/tmp/diag
say "== wrongdiag $(el)"
PYTHONPATH=$site timeout 240 python3 scripts/session24/wrongdiag.py "$P" scripts/session24/diag.txt $D 2>&1 | grep -v Warning | tee -a "$S"
say "rc=$? $(el)"
for c in $D/*-O3.cubin; do cuobjdump -sass "$c" > "${c%.cubin}.sass" 2>&1; done
C0=$(grep -v '^#' scripts/session24/diag.txt | head -1)
for tool in racecheck synccheck memcheck; do
  say "== $tool $(el)"
  PYTHONPATH=$site timeout 150 compute-sanitizer --tool $tool python3 scripts/session23/race.py "$P" "$C0" > "$D/$tool.log" 2>&1
  say "rc=$? $(el)"; grep -E "SUMMARY|launched|Error|hazard" "$D/$tool.log" | head -5 | tee -a "$S"
done
tar -C /tmp -cJf "$OUT/diag.tar.xz" diag
say "== done $(el)"
