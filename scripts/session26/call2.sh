#!/usr/bin/env bash
# Session 26, device call 2 (H200): the lookup beside the enumeration and its heuristic without
# a whole-space ranking (build a0a8378), against the session's starting build (b324c7b):
#  1. `convtune lookup --candidates 4` wall time on first.sh's four problems, both builds, 3 each;
#  2. time to the first candidate (scripts/session26/first.sh, `--time 5`, 3 rounds);
#  3. `convtune selfcheck --configs 2` with this build.
#   Usage (repo root, on the device): bash scripts/session26/call2.sh
set -uo pipefail
. scripts/session11/lib.sh
say "== 1 lookup --candidates 4, wall s (old new, x3) $(el)"
while read -r p; do
  line=""
  for k in 1 2 3; do
    for tag in old new; do
      bin=$B; [ $tag = old ] && bin=$PWD/target/base/convtune
      /usr/bin/time -f "%e" -o /tmp/l.wall "$bin" lookup --problem "$p" --arch sm_90 --candidates 4 --db /tmp/none.toml > /dev/null 2>&1
      line+=" $tag $(tail -1 /tmp/l.wall)"
    done
  done
  say "$line  $p"
done <<'P'
convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC
convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC
convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC
conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2
P
say "== 2 first candidate, new and old, $(el)"
T=5 REPS=3 OUT=$OUT timeout 300 bash scripts/session26/first.sh 2>&1 | tee -a "$S"
tar czf "$OUT/first.tgz" -C "$OUT" first && rm -rf "$OUT/first"
say "== 3 selfcheck $(el)"
selfcheck_step c2 200 --configs 2
say "== done $(el)"
