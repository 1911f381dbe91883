#!/usr/bin/env bash
# Offline (no GPU): LLVM CPU of two builds on the same dry runs, alternating, codegen cache off.
#   Usage: scripts/session30/dry-ab.sh OLD_BIN NEW_BIN PROBLEMS ARCH BUDGET [ROUNDS]
# Prints, per run: wall s, candidates compiled, O3 / back-end / all codegen CPU seconds.
set -euo pipefail
old=$1 new=$2 problems=$3 arch=$4 budget=$5 rounds=${6:-2}
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  for b in old new; do
    bin=$old; [ "$b" = new ] && bin=$new
    s=$(date +%s.%N)
    CONVTUNE_CODEGEN_CACHE=off "$bin" --problems "$problems" --dry-run --arch "$arch" \
      --budget "$budget" --quiet --json 2>/dev/null > "$out/$b-$r.json"
    e=$(date +%s.%N)
    python3 - "$out/$b-$r.json" "$b" "$r" "$s" "$e" <<'PY'
import json, sys
path, b, r, s, e = sys.argv[1:]
ps = json.load(open(path))["problems"]
t = lambda f: round(sum(f(p) for p in ps), 1)
print(f"{b} round {r}: wall {float(e) - float(s):.1f} s, compiled {t(lambda p: p['compiled'])}, "
      f"O3 {t(lambda p: p['steps']['optimise_s'])} s, back end {t(lambda p: p['steps']['backend_s'])} s, "
      f"codegen {t(lambda p: p['stages']['codegen_s'])} s")
PY
  done
done
