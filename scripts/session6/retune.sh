# Sourced by final-a.sh and final-c.sh: `retune SECONDS` re-tunes the suite's and the families'
# 16-bit NHWC problems (not the 8-channel groups nor the 3-channel stem, which wgmma cannot
# run) in search-spaces/nvidia-hopper.toml with `--time SECONDS` each, into $OUT/retune/, and
# merges the winners with the shipped database into $OUT/merged.toml. Needs B (the binary) and el.
retune() {
  local R=$OUT/retune
  mkdir -p "$R"
  cat scripts/suites/all.txt scripts/suites/families.txt | grep -v '^#' | grep -E '^conv(bfp16|fp16) ' \
    | grep NHWC | grep -v -E -- '-g (32|64|256) |-c 3 ' | sort -u > "$R/problems.txt"
  echo "== retune $(wc -l < "$R/problems.txt") problems, --time $1 $(el)"
  timeout 330 "$B" --problems "$R/problems.txt" --arch sm_90 --space search-spaces/nvidia-hopper.toml \
    --time "$1" --db "$R/db.toml" --journal "$R/j.jsonl" --report "$R/report.json" \
    > "$R/tune.log" 2>&1; echo "tune rc=$?"
  grep "^summary" "$R/tune.log" | cut -c1-260 | tail -30
  rm -f "$R"/*.lock
  "$B" db merge tuned-db/sm_90.toml "$R/db.toml" -o "$OUT/merged.toml" 2>&1 | tail -2
}
