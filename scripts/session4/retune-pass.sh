#!/usr/bin/env bash
# Session 4, call C: re-tune the problems the new knobs are for (the suite's bwd-weight entries
# with red = atomic|fixup|stream in the default space; the new families that found nothing in
# --time 8), then cuDNN on the same problems. The database comes back for `db merge` into
# tuned-db/sm_90.toml (merge keeps the faster entry per problem).
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/session4/unpack.sh
B=target/release/convtune
R=$OUT/retune; mkdir -p "$R"
{
  grep -h -- "-F 4" scripts/suites/all.txt | grep -v '^#'
  grep -v '^#' scripts/suites/families.txt | grep -E -- "-F 4|^conv -n"
} | sort -u > "$R/problems.txt"
wc -l < "$R/problems.txt"
timeout 330 "$B" --problems "$R/problems.txt" --arch sm_90 --time 18 --db "$R/db.toml" \
  --journal "$R/j.jsonl" --report "$R/report.json" > "$R/tune.log" 2>&1; echo "tune rc=$?"
grep "^summary" "$R/tune.log" | cut -c1-260
timeout 100 python3 scripts/compare-cudnn.py --convtune "$R/report.json" --json "$R/cudnn.json" > "$R/compare.txt" 2>&1
tail -14 "$R/compare.txt"
rm -f "$R"/*.lock
tar czf "$OUT/retune.tgz" -C "$OUT" retune
