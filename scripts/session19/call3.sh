#!/usr/bin/env bash
# Session 19, device call 3 (H200, < 480 s): the persistent walk's phases sharing one body (the
# whole body, producer included: the build of commit d865703, reverted after this call).
#  1. `convtune selfcheck --problems scripts/session19/walk.txt --space
#     scripts/session19/walk-space.toml --configs 6` (16-bit NHWC strided bwd-data on the walk:
#     class runs, uncovered pixels, dilation, mixed TMA/cp.async phases; both epilogues, ws and
#     wspp) and session 18's strided selfcheck (`--configs 4`);
#  2. A/B of the session's base build (.carry/convtune-base.xz) and this one on the shipped
#     strided bwd-data entries (scripts/ab-builds.sh);
#  3. what a 4-phase bf16 candidate costs the tuner (`--time 10`), base and new, and the new
#     build on its one-phase twin.
#   Usage (repo root, on the device): [LIMIT=470] bash scripts/session19/call3.sh
set -uo pipefail
. scripts/session11/lib.sh
left() { echo $(( ${LIMIT:-470} - $(date +%s) + t0 )); }
A=target/base/convtune
say "== 1a selfcheck walk $(el)"
selfcheck_step walk 150 --problems scripts/session19/walk.txt --space scripts/session19/walk-space.toml --configs 6
say "== 1b selfcheck strided --configs 4 $(el)"
selfcheck_step strided 80 --problems scripts/session18/strided.txt --configs 4
say "== 2 A/B base vs walk body, shipped strided bwd-data entries $(el)"
OUT=$OUT timeout 170 bash scripts/ab-builds.sh tuned-db/sm_90.toml '-F 2 .*-u [2-9] ' base=$A new=$B > "$OUT/ab.txt" 2>&1
say "rc=$? $(el)"; cut -c1-200 "$OUT/ab.txt" | tail -10 | tee -a "$S"
say "== 3 tuner cost, --time 10 $(el)"
T=/tmp/tune; mkdir -p "$T"
i=0
while read -r v p; do
  if [ "$(left)" -lt 25 ]; then say "skipped $v p$i: $(left) s left"; i=$((i + 1)); continue; fi
  bin=$B; [ "$v" = base ] && bin=$A
  timeout 40 "$bin" --problem "$p" --arch sm_90 --time 10 --db "$T/db$i.toml" --journal "$T/j$i.jsonl" \
    > "$T/log$i.txt" 2>&1
  say "$v p$i rc=$?: $(grep -h '^summary' "$T/log$i.txt" | grep -o 'best.*' | cut -c1-260) | $p"
  i=$((i + 1))
done <<'P'
base convbfp16 -F 2 -n 16 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 --layout NHWC
new convbfp16 -F 2 -n 16 -c 192 -H 35 -W 35 -k 192 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 --layout NHWC
new convbfp16 -F 2 -n 16 -c 192 -H 18 -W 18 -k 192 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 --layout NHWC
P
say "== done $(el)"
