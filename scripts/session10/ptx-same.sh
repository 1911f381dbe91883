#!/usr/bin/env bash
# Do two builds generate the same modules? Compiles the same random sample of candidates (the
# random strategy, fixed seed) of a problem list with both binaries in dry runs, each into an
# empty codegen cache of its own, then compares the multisets of module hashes (a cache entry is
# the module's bytes; keys differ between builds because they hash machine.rs, contents must not).
#   Usage: A=old-binary B=target/release/convtune [ARCH=sm_90] [N=24] bash scripts/session10/ptx-same.sh [PROBLEMS]
set -euo pipefail
A=${A:?old binary}
B=${B:-target/release/convtune}
ARCH=${ARCH:-sm_90}
N=${N:-24}
LIST=${1:-}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
if [ -z "$LIST" ]; then
  LIST=$W/problems.txt
  cat > "$LIST" <<'P'
convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 1 --layout NHWC
convbfp16 -n 64 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1 --layout NHWC
convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC
conv -n 2 -c 16 -H 15 -W 13 -k 24 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2
convfp16 -n 2 -c 32 -H 15 -W 15 -k 32 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC
conv -n 2 -c 24 -H 13 -W 11 -k 40 -y 2 -x 1 -p 3 -q 2 -u 3 -v 2 -F 4 --layout NCHW
convfp16 -n 2 -c 32 -H 9 -W 9 -k 64 -y 3 -x 3 -p 1 -q 1 -g 4 -F 1 --layout NCHW
convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -F 2 --layout NHWC
P
fi
for side in A B; do
  bin=${!side}
  CONVTUNE_CODEGEN_CACHE=$W/$side /usr/bin/time -f "$side: %e s wall, %U s user" "$bin" --problems "$LIST" \
    --arch "$ARCH" --dry-run --strategy random --seed 7 --budget "$N" --quiet > "$W/$side.log" 2>&1 || true
  grep -E "s wall" "$W/$side.log"
  find "$W/$side" -type f -exec md5sum {} + | cut -d' ' -f1 | sort > "$W/$side.sums"
done
echo "modules: A $(wc -l < "$W/A.sums"), B $(wc -l < "$W/B.sums")"
if cmp -s "$W/A.sums" "$W/B.sums"; then
  echo "same: every module byte-identical"
else
  echo "DIFFERENT: $(comm -3 "$W/A.sums" "$W/B.sums" | wc -l) module hashes differ"
  exit 1
fi
