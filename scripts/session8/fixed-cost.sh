#!/usr/bin/env bash
# Fixed cost of a problem on the development machine (issue 16): the `summary:` line's
# enumerate and rank times of a dry run limited to 5 s, per problem, for a binary (argument 1,
# default target/release/convtune), over the built-in space and nvidia-hopper.toml.
# The codegen cache is off (every run compiles what it picks), so "compiled" counts are fair.
set -u
bin=${1:-target/release/convtune}
export CONVTUNE_CODEGEN_CACHE=off
# Before session 8 the dry run ranked the whole space before compiling, and `--time` did not
# stop that: such a run is killed after LIMIT seconds.
LIMIT=${LIMIT:-40}
problems=(
  "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 -F 2 --layout NHWC"
  "conv -n 32 -c 32 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -F 2"
  "conv -n 16 -c 64 -H 48 -W 48 -k 64 -y 5 -x 5 -p 2 -q 2 -u 3 -v 3 -F 2"
  "convbfp16 -n 64 -c 256 -H 28 -W 28 -k 256 -y 3 -x 3 -p 1 -q 1 -F 4 --layout NHWC"
  "convbfp16 -n 64 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -F 4 --layout NHWC"
  "convbfp16 -n 64 -c 128 -H 56 -W 56 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2 --layout NHWC"
)
one() { # budget args...: prints "legal | enumerate, rank | compiled | peak"
  local s
  s=$( { /usr/bin/time -f "peak %M KB" timeout "$LIMIT" "$bin" --problem "$p" --arch sm_90 \
        --dry-run --quiet ${space:+--space $space} "$@" 2>&1; } |
        grep -E "^summary:|^  raw|^peak|status" | tr '\n' ' ')
  if grep -q "status" <<<"$s"; then printf 'killed after %s s (ranking never ended)' "$LIMIT"; return; fi
  printf '%8s legal | %s | %3s compiled | %4d MB' "$(sed -E 's/.*legal ([0-9]+).*/\1/' <<<"$s")" \
    "$(sed -E 's/.*(enumerate [0-9.]+ s, rank [0-9.]+ s).*/\1/' <<<"$s")" \
    "$(sed -E 's/.*: ([0-9]+) compiled in.*/\1/' <<<"$s")" \
    $(( $(sed -E 's/.*peak ([0-9]+) KB.*/\1/' <<<"$s") / 1024 ))
}
echo "space    | first batch (--budget 32 --time 5)                          | whole run (--time 5)"
for space in "" "search-spaces/nvidia-hopper.toml"; do
  for p in "${problems[@]}"; do
    label=builtin; [ -n "$space" ] && label=hopper
    printf '%-7s | %s | %s | %s\n' "$label" \
      "$(one --budget 32 --time 5)" "$(one --time 5)" "${p:0:58}"
  done
done
