#!/usr/bin/env bash
# Which shipped winners' PTX does a build change? Compiles every entry of a tuned database with
# two binaries (`convtune compile`, codegen cache off) and prints the entries whose modules
# differ (problem<TAB>config), then a count.
#   Usage: A=old-binary B=target/release/convtune bash scripts/session10/db-ptx-same.sh [tuned-db/sm_90.toml]
set -uo pipefail
A=${A:?old binary}
B=${B:-target/release/convtune}
DB=${1:-tuned-db/sm_90.toml}
ARCH=$(basename "$DB" .toml)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
python3 - "$DB" > "$W/entries.tsv" <<'PY'
import sys, tomllib
for e in tomllib.load(open(sys.argv[1], "rb"))["entry"]:
    print(f'{e["problem"]}\t{e["config"]}')
PY
same=0 diff=0
while IFS=$'\t' read -r p c; do
  for side in A B; do
    CONVTUNE_CODEGEN_CACHE=off "${!side}" compile --problem "$p" --arch "$ARCH" --config "$c" \
      -o "$W/$side.ptx" > /dev/null 2>&1 || echo "$side failed" > "$W/$side.ptx"
  done
  if cmp -s "$W/A.ptx" "$W/B.ptx"; then same=$((same + 1)); else diff=$((diff + 1)); printf 'differs\t%s\t%s\n' "$p" "$c"; fi
done < "$W/entries.tsv"
echo "entries: $same byte-identical, $diff differ"
