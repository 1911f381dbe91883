# Sourced by the session-11 device calls from the repo root: unpacks the carried build
# (scripts/session5/unpack.sh), names it B, and gives `el` (seconds since start) and `say`
# (print and append to $OUT/summary.txt).
. scripts/session5/unpack.sh
B=$PWD/target/release/convtune
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s]"; }
S=$OUT/summary.txt; : > "$S"
say() { echo "$*" | tee -a "$S"; }
