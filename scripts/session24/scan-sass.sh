#!/usr/bin/env bash
# Compiles each `problem<TAB>config` line of PAIRS with BIN, assembles it with ptxas -O3 for
# sm_90, disassembles it and counts the dead writes that the ptxas IMAD.HI merge leaves
# (scripts/session24/deadmov.py) and the IMAD.HI with a register addend (what ptxas merges wrongly).
# Prints one line per pair: `dead<TAB>imad_hi_addend<TAB>problem<TAB>config`.
#   Usage: BIN=target/release/convtune bash scripts/session24/scan-sass.sh PAIRS [JOBS]
set -uo pipefail
PAIRS=$1; JOBS=${2:-2}
PTXAS=${CONVTUNE_PTXAS:-$(ls target/venv/lib/python3*/site-packages/nvidia/cu13/bin/ptxas)}
ND=${NVDISASM:-$(dirname "$PTXAS")/nvdisasm}
export BIN PTXAS ND
one() {
  local t; t=$(mktemp -d)
  IFS=$'\t' read -r p c <<< "$1"
  if "$BIN" compile --arch sm_90 --problem "$p" --config "$c" -o "$t/k.ptx" > "$t/log" 2>&1 \
     && "$PTXAS" -arch="$(awk '/^\.target/{gsub(",","",$2); print $2; exit}' "$t/k.ptx")" -O3 "$t/k.ptx" -o "$t/k.cubin" 2>> "$t/log" \
     && "$ND" -c "$t/k.cubin" > "$t/k.sass" 2>> "$t/log"; then
    n=$(python3 scripts/session24/deadmov.py "$t/k.sass" | awk 'NR==1{print $2}')
    n="$n"$'\t'$(grep -cE 'IMAD\.HI\.U32 R[0-9]+, R[0-9]+, (0x[0-9a-f]+|R[0-9]+), R[0-9]+ ' "$t/k.sass")
  else
    n="error:$(tail -1 "$t/log" | cut -c1-80)"
  fi
  printf '%s\t%s\t%s\n' "$n" "$p" "$c"
  rm -rf "$t"
}
export -f one
grep -v '^#' "$PAIRS" | grep -v '^$' | tr '\n' '\0' | xargs -0 -P "$JOBS" -I{} bash -c 'one "$1"' _ {}
