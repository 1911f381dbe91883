#!/usr/bin/env bash
# Session 11, device call 1 (H200, < 560 s): the GPU's word on session 10's kernels, which
# were verified only in the CPU emulator.
#  1. selfcheck of the Hopper space (ep=reg|tma sampled on every load path), of the cluster
#     kernels (scripts/session9/cluster-only.toml, after the CTA-scope arrival change) and of
#     the 16/32-row MN-major wgmma tiles (scripts/session10/nchw-small-tiles.toml);
#  2. scripts/session10/epi.sh: ep=reg against ep=tma on four shipped winners, cuDNN same run;
#  3. scripts/session10/cluster-ab.sh with the new build only: cl 1|2m|2n, same tiles;
#  4. the MN-major small tiles against the Hopper space on two bwd-weight problems, cuDNN.
# From the repo root with .carry/{convtune.xz,libffi.so.8}: bash scripts/session11/verify.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1a selfcheck hopper $(el)"
timeout 75 "$B" selfcheck --space search-spaces/nvidia-hopper.toml --configs 6 > "$OUT/self-hopper.log" 2>&1
say "rc=$?"; grep -v "^ok" "$OUT/self-hopper.log" | tail -6 | tee -a "$S"
grep -c "ep=tma" "$OUT/self-hopper.log" | sed 's/^/ep=tma lines: /' | tee -a "$S"
say "== 1b selfcheck clusters $(el)"
timeout 45 "$B" selfcheck --space scripts/session9/cluster-only.toml > "$OUT/self-cluster.log" 2>&1
say "rc=$?"; grep -v "^ok" "$OUT/self-cluster.log" | tail -6 | tee -a "$S"
say "== 1c selfcheck MN-major small tiles $(el)"
timeout 30 "$B" selfcheck --problems scripts/session10/nchw-problems.txt \
  --space scripts/session10/nchw-small-tiles.toml --configs 8 > "$OUT/self-nchw.log" 2>&1
say "rc=$?"; grep -v "^ok" "$OUT/self-nchw.log" | tail -6 | tee -a "$S"
say "== 2 epi $(el)"
mkdir -p .carry/epi && cp scripts/session10/epi/* .carry/epi/ && cp .carry/convtune.xz .carry/epi.xz
timeout 160 bash scripts/session10/epi.sh > "$OUT/epi.txt" 2>&1; say "rc=$?"
say "== 3 cluster $(el)"
T_NEW=24 timeout 130 bash scripts/session10/cluster-ab.sh "$B" - "$OUT/cl" > "$OUT/cluster.txt" 2>&1; say "rc=$?"
tar czf "$OUT/cl.tgz" -C "$OUT" cl 2>/dev/null && rm -rf "$OUT/cl"
say "== 4 nchw small tiles $(el)"
P=scripts/session10/nchw-problems.txt; N=$OUT/nchw; mkdir -p "$N"
for s in small:scripts/session10/nchw-small-tiles.toml hopper:search-spaces/nvidia-hopper.toml; do
  timeout 30 "$B" --problems $P --arch sm_90 --space "${s#*:}" --time 12 --db "$N/${s%%:*}.toml" \
    --journal "$N/${s%%:*}.jsonl" --report "$N/${s%%:*}.json" --quiet > "$N/${s%%:*}.txt" 2>&1
  say "${s%%:*} rc=$?"; rm -f "$N"/*.lock
done
timeout 25 python3 scripts/compare-cudnn.py $P --convtune "$N/small.json" > "$N/cudnn.txt" 2>&1
say "cudnn rc=$?"
python3 scripts/lib/report-rows.py "$N/hopper.json" "$N/small.json" | tee -a "$S"
tail -6 "$N/cudnn.txt" | tee -a "$S"
tar czf "$OUT/nchw.tgz" -C "$OUT" nchw 2>/dev/null && rm -rf "$N"
tar czf "$OUT/self.tgz" -C "$OUT" self-hopper.log self-cluster.log self-nchw.log 2>/dev/null && rm -f "$OUT"/self-*.log
say "== done $(el)"
