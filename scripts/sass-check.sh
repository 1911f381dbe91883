#!/usr/bin/env bash
# For every wgmma winner in a tuned database: compile its kernel to PTX (convtune compile),
# assemble it with ptxas for sm_90a (warnings shown: "wgmma serialized" would mean the
# accumulators were touched between issue and wait) and count the HGMMA instructions that
# cuobjdump --dump-sass finds. Usage: scripts/sass-check.sh DB.toml [BIN]
set -uo pipefail
db=$1
BIN=${2:-target/release/convtune}
PTXAS=$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1)
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
[ -x "$PTXAS" ] && [ -x "$CUOBJDUMP" ] || { echo "sass-check: ptxas/cuobjdump not found" >&2; exit 2; }
tmp=$(mktemp -d)
python3 - "$db" > "$tmp/list" <<'PY'
import sys, tomllib
d = tomllib.load(open(sys.argv[1], "rb"))
def walk(x):
    if isinstance(x, dict):
        if "config" in x and "problem" in x:
            yield x
        for v in x.values():
            yield from walk(v)
    elif isinstance(x, list):
        for v in x:
            yield from walk(v)
for e in walk(d):
    if "mma=wg" in e["config"]:
        print(e["problem"] + "\t" + e["config"])
PY
n=0
while IFS=$'\t' read -r problem config; do
  n=$((n + 1))
  "$BIN" compile --arch sm_90 --problem "$problem" --config "$config" -o "$tmp/k$n.ptx" > /dev/null || { echo "compile failed: $config"; continue; }
  warn=$("$PTXAS" -arch=sm_90a "$tmp/k$n.ptx" -o "$tmp/k$n.cubin" 2>&1 | grep -i warn | head -2)
  hgmma=$("$CUOBJDUMP" --dump-sass "$tmp/k$n.cubin" | grep -o 'HGMMA\.[0-9x]*\.F32\.BF16\|HGMMA\.[0-9x]*\.F32' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  echo "$config | ${problem:0:60} | HGMMA: ${hgmma:-none} | ptxas warnings: ${warn:-none}"
done < "$tmp/list"
echo "sass-check: $n wgmma winners checked"
rm -rf "$tmp"
