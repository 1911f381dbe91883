#!/usr/bin/env bash
# Concurrent writers and kills against `convtune db merge` (issue 18):
#  1. WRITERS merges at once into one file, ROUNDS times, each adding one entry: entries lost.
#  2. KILLS merges of a large database killed with SIGKILL at a random moment: files left
#     partial (not parsing), temporary files left, and temporary files still there after one
#     more (unkilled) merge.
#   scripts/db-stress.sh [ROUNDS=200] [WRITERS=8] [KILLS=300] [ENTRIES=40000]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-200} WRITERS=${2:-8} KILLS=${3:-300} ENTRIES=${4:-40000}
cargo build --release --quiet
BIN=$PWD/target/release/convtune
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

# A database of n entries (batch sizes first..first+n-1), sealed with the whole-entry checksum
# (FNV-1a 64 over the fields in file order, each followed by a NUL; see src/db/entry.rs).
make_db() { # first n file
  python3 - "$1" "$2" "$3" <<'PY'
import sys
first, n, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def fnv(fields):
    h = 0xcbf29ce484222325
    for f in fields:
        for b in f.encode() + b"\0":
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "v2:%016x" % h
out = ['[header]', 'format = 1', 'arch = "sm_90"', 'entries = %d' % n]
cfg = "v1:bm=32,bn=64,bk=32,wm=16,wn=32,st=2,va=1,vb=1,vc=1,lds=pad,sk=1,rs=1"
keys = sorted("conv -F 1 -n %d -c 8 -H 8 -W 8 -k 8 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -g 1 -I NGCHW -f GKCYX -O NGCHW" % i
              for i in range(first, first + n))
for k in keys:
    f = [k, cfg, "10.0", "1.0", "1", "NVIDIA H200", "132", "13.0", "", "0.1.0", "2026-11-30"]
    out += ['', '[[entry]]', 'problem = "%s"' % k, 'config = "%s"' % cfg, 'time_us = 10.0',
            'tflops = 1.0', 'candidates_tried = 1',
            'fingerprint = { gpu = "NVIDIA H200", compute_units = 132, driver = "13.0" }',
            'convtune_version = "0.1.0"', 'date = "2026-11-30"', 'checksum = "%s"' % fnv(f)]
open(path, "w").write("\n".join(out) + "\n")
PY
}
count() { grep -c '^\[\[entry\]\]' "$1" || true; }
temps() { find "$DIR" -maxdepth 1 -name '.*convtune-tmp-*' | wc -l; }

# 1. Concurrent merges.
make_db 1 0 "$DIR/out.toml"
start=$(date +%s.%N)
for r in $(seq 0 $((ROUNDS - 1))); do
  pids=()
  for w in $(seq 0 $((WRITERS - 1))); do
    make_db $((1 + r * WRITERS + w)) 1 "$DIR/b$w.toml"
    "$BIN" db merge "$DIR/out.toml" "$DIR/b$w.toml" -o "$DIR/out.toml" >/dev/null 2>"$DIR/err$w" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "a merge failed:"; cat "$DIR"/err*; exit 1; }; done
done
want=$((ROUNDS * WRITERS)) got=$(count "$DIR/out.toml")
printf 'concurrent merges: %d rounds x %d writers: %d entries expected, %d present, %d lost (%.1f s)\n' \
  "$ROUNDS" "$WRITERS" "$want" "$got" $((want - got)) "$(echo "$(date +%s.%N) - $start" | bc)"

# 2. Kills during writes.
make_db 1 "$ENTRIES" "$DIR/big.toml"
make_db $((ENTRIES + 1)) 1000 "$DIR/more.toml"
cp "$DIR/big.toml" "$DIR/kill.toml"
partial=0 left=0
for k in $(seq 1 "$KILLS"); do
  "$BIN" db merge "$DIR/kill.toml" "$DIR/more.toml" -o "$DIR/kill.toml" >/dev/null 2>&1 &
  pid=$!
  sleep "0.$(printf '%03d' $((RANDOM % 400)))"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if ! "$BIN" db diff "$DIR/kill.toml" "$DIR/kill.toml" >/dev/null 2>&1; then
    partial=$((partial + 1))
    cp "$DIR/big.toml" "$DIR/kill.toml"
  fi
  left=$((left + $(temps)))
done
"$BIN" db merge "$DIR/kill.toml" "$DIR/more.toml" -o "$DIR/kill.toml" >/dev/null
echo "kills: $KILLS merges of a $ENTRIES-entry database killed: $partial partial files," \
  "$left temporary files seen between kills, $(temps) left after the next run"
